"""Fine-tuning a vision-language judge on cigeval's trajectories (paper §3.4, §4.5).

:func:`finetune` trains a LoRA adapter with TRL's ``SFTTrainer`` (loss on the assistant turns
only) from the JSONL that ``cigeval meta export-trajectories`` writes, and saves the adapter
and the merged model; ``hf:<output folder>`` then judges with it. The heavy packages (torch,
transformers, trl, peft, datasets: the ``train`` extra) load only when training starts.

- :class:`FinetuneConfig`: the settings (the paper's learning rate, schedule and warm-up).
- :func:`load_training_data`: read and check a data file, every problem with its line.
- :func:`resolve_model_folder`: the weights behind a model, an adapter or a run folder.
- :func:`save_random_qwen_vl`: a randomly initialised Qwen-VL model for tests and benchmarks.
"""

from cigeval.training.config import DEFAULT_LORA_TARGETS, FinetuneConfig
from cigeval.training.data import TrainingRow, load_training_data
from cigeval.training.outputs import ModelFolder, resolve_model_folder
from cigeval.training.processor import (
    QWEN_VL_TRAINING_TEMPLATE,
    load_vl_processor,
    training_chat_template,
)
from cigeval.training.random_model import save_random_qwen_vl
from cigeval.training.trainer import FinetuneResult, base_model_path, finetune

__all__ = [
    "DEFAULT_LORA_TARGETS",
    "QWEN_VL_TRAINING_TEMPLATE",
    "FinetuneConfig",
    "FinetuneResult",
    "ModelFolder",
    "TrainingRow",
    "base_model_path",
    "finetune",
    "load_training_data",
    "load_vl_processor",
    "resolve_model_folder",
    "save_random_qwen_vl",
    "training_chat_template",
]
