"""The folder ``cigeval finetune`` writes, and how a tuned model is found again for judging.

Layout of ``OUT``::

    finetune.json      base model, data, settings, results (written first, updated at the end)
    train_log.jsonl    one line per logged step (loss, learning rate, tokens, ...)
    checkpoints/       the trainer's checkpoints (the adapter, optimizer and scheduler state)
    adapter/           the LoRA adapter plus the tokenizer, image processor and chat template
    merged/            the base model with the adapter merged in (unless --no-merge)
    model/             the fully tuned model (--recipe paper: no adapter, no merge)

``hf:OUT``, ``hf:OUT/merged``, ``hf:OUT/adapter`` and ``hf:OUT/model`` all judge with the
tuned model; an adapter folder (any PEFT adapter: ``adapter_config.json``) is loaded onto its
base model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cigeval.errors import ConfigError

RUN_FILE = "finetune.json"
LOG_FILE = "train_log.jsonl"
CHECKPOINTS = "checkpoints"
ADAPTER = "adapter"
MERGED = "merged"
FULL_MODEL = "model"


@dataclass(frozen=True)
class ModelFolder:
    """Where a model's weights are: a full model, or a base model plus a LoRA adapter."""

    weights: str
    adapter: str | None = None

    @property
    def processor(self) -> str:
        """Where its tokenizer and image processor are (the adapter folder keeps copies)."""
        if self.adapter is not None and (Path(self.adapter) / "tokenizer_config.json").is_file():
            return self.adapter
        return self.weights


def _adapter_base(adapter: Path) -> str:
    try:
        config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the adapter config in {adapter}: {exc}") from exc
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not isinstance(base, str) or not base:
        raise ConfigError(
            f"{adapter / 'adapter_config.json'} does not name its base model "
            "(base_model_name_or_path)"
        )
    beside = adapter / base
    if not Path(base).is_absolute() and not Path(base).exists() and beside.exists():
        return str(beside.resolve())
    return base


def resolve_model_folder(name: str) -> ModelFolder:
    """The weights behind ``hf:<name>``: a model folder or hub id, an adapter, or a run folder."""
    path = Path(name)
    if not path.is_dir():
        return ModelFolder(name)
    if (path / RUN_FILE).is_file() and not (path / "config.json").is_file():
        if (path / FULL_MODEL / "config.json").is_file():
            return ModelFolder(str(path / FULL_MODEL))
        if (path / MERGED / "config.json").is_file():
            return ModelFolder(str(path / MERGED))
        if (path / ADAPTER / "adapter_config.json").is_file():
            path = path / ADAPTER
        else:
            raise ConfigError(
                f"{path} holds an unfinished `cigeval finetune` run (no {FULL_MODEL}/, "
                f"{MERGED}/ nor {ADAPTER}/ yet); run the same command again to resume it"
            )
    if (path / "adapter_config.json").is_file():
        return ModelFolder(_adapter_base(path), str(path))
    return ModelFolder(str(path))
