"""`cigeval finetune --recipe paper`: the paper's full fine-tuning beside the LoRA default.

The recipe's settings are read back from the arguments the TRL/transformers trainer received
and from the model it trained; a short full fine-tune runs on the CPU with a tiny random model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.training import FinetuneConfig, finetune, resolve_model_folder

from .support import write_data

pytest.importorskip("trl")
pytest.importorskip("peft")


def test_the_recipes_settings() -> None:
    paper, lora = FinetuneConfig(recipe="paper"), FinetuneConfig()
    assert (paper.full, paper.effective_batch, paper.max_length) == (True, 128, 32768)
    assert (paper.learning_rate, paper.lr_scheduler, paper.warmup_ratio) == (1e-5, "cosine", 0.03)
    assert paper.accumulation(devices=1) == 128 and paper.accumulation(devices=4) == 32
    assert FinetuneConfig(recipe="paper", batch_size=4).accumulation(devices=2) == 16
    assert (lora.full, lora.effective_batch, lora.max_length, lora.accumulation()) == (
        False,
        None,
        None,
        8,
    )
    # an explicit flag overrides the recipe
    assert FinetuneConfig(recipe="paper", max_length=4096).max_length == 4096
    with pytest.raises(ValueError, match="not a multiple of batch size 3"):
        FinetuneConfig(recipe="paper", batch_size=3).accumulation()
    with pytest.raises(ValueError, match="LoRA settings do not apply"):
        FinetuneConfig(recipe="paper", lora_rank=8)
    with pytest.raises(ValueError, match="not both"):
        FinetuneConfig(effective_batch=16, gradient_accumulation=2)


class _Stop(Exception):
    """Raised by :class:`_Capture` once the trainer has shown its arguments."""


class _Capture:
    """A trainer callback that keeps the arguments and the model at the start of training."""

    def __init__(self) -> None:
        self.args: Any = None
        self.model: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.args, self.model = args, kwargs["model"]
        raise _Stop


def _arguments(tiny_model: Path, folder: Path, config: FinetuneConfig) -> _Capture:
    capture = _Capture()
    data = write_data(folder / "data", 2)
    with pytest.raises(_Stop):
        finetune(
            data, f"hf:{tiny_model}", folder / "out", config, progress=False, callbacks=[capture]
        )
    return capture


def test_the_paper_recipe_reaches_the_trainer(tiny_model: Path, tmp_path: Path) -> None:
    seen = _arguments(tiny_model, tmp_path, FinetuneConfig(recipe="paper"))
    args = seen.args
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps == 128
    assert args.learning_rate == 1e-5 and str(args.lr_scheduler_type.value) == "cosine"
    assert args.warmup_steps == 0.03  # below 1: a fraction of the steps
    assert args.max_length == 32768 and args.assistant_only_loss
    assert args.optim.value.startswith("adamw")
    # full fine-tuning: no adapter, every weight trains
    assert not hasattr(seen.model, "peft_config")
    assert all(p.requires_grad for p in seen.model.parameters())


def test_the_lora_default_reaches_the_trainer(tiny_model: Path, tmp_path: Path) -> None:
    seen = _arguments(tiny_model, tmp_path, FinetuneConfig())
    args = seen.args
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (1, 8)
    assert args.max_length is None and args.learning_rate == 1e-5
    assert hasattr(seen.model, "peft_config")
    frozen = [p for p in seen.model.parameters() if not p.requires_grad]
    trained = [p for p in seen.model.parameters() if p.requires_grad]
    assert frozen and trained and sum(p.numel() for p in trained) < sum(p.numel() for p in frozen)


def test_a_short_full_fine_tune_on_the_cpu(tiny_model: Path, tmp_path: Path, capsys) -> None:
    from safetensors.torch import load_file

    data = write_data(tmp_path / "data", 4)
    out = tmp_path / "out"
    argv = ["finetune", str(data), "--base", f"hf:{tiny_model}", "--out", str(out)]
    argv += ["--recipe", "paper", "--effective-batch", "4", "--batch-size", "2"]
    argv += ["--max-steps", "2", "--learning-rate", "0.01", "--warmup-ratio", "0", "--quiet"]
    assert main(argv) == 0
    summary = capsys.readouterr().err  # what was written: a diagnostic (docs/cli.md)
    assert "(paper recipe)" in summary and f"tuned model: {out / 'model'}" in summary
    run = json.loads((out / "finetune.json").read_text())
    assert run["config"]["recipe"] == "paper" and run["config"]["effective_batch"] == 4
    assert run["result"]["steps"] == 2 and run["result"]["adapter"] is None
    assert run["result"]["trainable_parameters"] == run["result"]["total_parameters"]
    assert not (out / "adapter").exists() and not (out / "merged").exists()
    base = load_file(tiny_model / "model.safetensors")
    tuned = load_file(out / "model" / "model.safetensors")
    assert base.keys() == tuned.keys()
    changed = {k for k in base if not (base[k] == tuned[k]).all()}
    # beyond LoRA's projections: the vision tower and the norms train too
    assert any("visual" in k for k in changed)
    assert any("norm" in k and "visual" not in k for k in changed)
    assert resolve_model_folder(str(out)).weights == str(out / "model")
