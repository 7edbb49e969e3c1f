"""The settings of a fine-tuning run: the paper's recipe (§4.3) as defaults.

The paper fully fine-tunes Qwen2-VL-7B / Qwen2.5-VL-7B with AdamW, learning rate 1e-5, a cosine
schedule with 3 % warm-up and batch size 128. cigeval trains a LoRA adapter instead (one GPU);
the learning rate, schedule and warm-up are the paper's, the rest are settings of its own
(LoRA often wants a higher learning rate, e.g. 1e-4: try it on your data).
Fields with a ``flag`` become ``cigeval finetune`` flags (see :mod:`cigeval.cli._flags`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The language model's attention and MLP projections of Qwen2-VL / Qwen2.5-VL. A regex, since
#: Qwen2.5-VL's vision tower reuses the MLP names and should stay as it is.
DEFAULT_LORA_TARGETS = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
)


def _flag(name: str, **extra: Any) -> dict[str, Any]:
    return {"flag": name, **extra}


class FinetuneConfig(BaseModel):
    """How ``cigeval finetune`` trains: schedule, batch, LoRA, precision, checkpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epochs: float = Field(
        3.0, gt=0, description="passes over the data", json_schema_extra=_flag("--epochs")
    )
    max_steps: int | None = Field(
        None,
        gt=0,
        description="stop after this many optimizer steps (overrides --epochs)",
        json_schema_extra=_flag("--max-steps"),
    )
    learning_rate: float = Field(
        1e-5,
        gt=0,
        description="peak learning rate (paper: 1e-5)",
        json_schema_extra=_flag("--learning-rate"),
    )
    lr_scheduler: Literal["cosine", "linear", "constant", "constant_with_warmup"] = Field(
        "cosine",
        description="learning-rate schedule (paper: cosine)",
        json_schema_extra=_flag("--lr-scheduler"),
    )
    warmup_ratio: float = Field(
        0.03,
        ge=0,
        lt=1,
        description="fraction of the steps spent warming up (paper: 0.03)",
        json_schema_extra=_flag("--warmup-ratio"),
    )
    batch_size: int = Field(
        1,
        ge=1,
        description="conversations per device and step",
        json_schema_extra=_flag("--batch-size"),
    )
    gradient_accumulation: int = Field(
        8,
        ge=1,
        description="steps whose gradients add up before each update",
        json_schema_extra=_flag("--gradient-accumulation"),
    )
    lora_rank: int = Field(
        16, ge=1, description="LoRA rank", json_schema_extra=_flag("--lora-rank")
    )
    lora_alpha: int | None = Field(
        None,
        ge=1,
        description="LoRA alpha (default: twice the rank)",
        json_schema_extra=_flag("--lora-alpha"),
    )
    lora_dropout: float = Field(
        0.05, ge=0, lt=1, description="LoRA dropout", json_schema_extra=_flag("--lora-dropout")
    )
    lora_targets: str = Field(
        DEFAULT_LORA_TARGETS,
        description="regex of the module names that get LoRA weights (default: the language "
        "model's attention and MLP projections)",
        json_schema_extra=_flag("--lora-targets", metavar="REGEX"),
    )
    bf16: bool | None = Field(
        None, description="train in bfloat16 (default: on a GPU that supports it)"
    )
    gradient_checkpointing: bool | None = Field(
        None, description="recompute activations to save memory (default: on a GPU)"
    )
    save_steps: int = Field(
        50,
        ge=1,
        description="write a checkpoint every N steps",
        json_schema_extra=_flag("--save-steps"),
    )
    logging_steps: int = Field(
        1,
        ge=1,
        description="log the loss every N steps",
        json_schema_extra=_flag("--logging-steps"),
    )
    seed: int = Field(
        0,
        description="seed of the data order and the LoRA initialisation",
        json_schema_extra=_flag("--seed"),
    )
    merge: bool = Field(
        True,
        description="do not also write the merged model (only the adapter)",
        json_schema_extra=_flag("--no-merge", negate=True),
    )
    chat_template: Path | None = Field(
        None,
        description="Jinja chat template to train with (generation markers around the "
        "assistant replies), for base models whose template cigeval cannot use",
        json_schema_extra=_flag("--chat-template", metavar="FILE"),
    )

    @property
    def alpha(self) -> int:
        """The LoRA alpha in use."""
        return self.lora_alpha if self.lora_alpha is not None else 2 * self.lora_rank

    def run_settings(self) -> dict[str, Any]:
        """The settings that must match for a run to resume from another's checkpoints."""
        settings = self.model_dump(mode="json")
        for free in ("save_steps", "logging_steps", "merge"):
            settings.pop(free)
        return settings
