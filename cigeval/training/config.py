"""The settings of a fine-tuning run: two recipes, the paper's and one for a single GPU.

The paper (§4.3) fine-tunes Qwen2-VL-7B / Qwen2.5-VL-7B with Megatron-LM: AdamW, learning rate
1e-5, a cosine schedule with 3 % warm-up, batch size 128 and sequence length 32,768, every
weight trained. ``recipe="paper"`` is that: full fine-tuning, an effective batch of 128 reached
by gradient accumulation, sequences capped at 32,768 tokens. ``recipe="lora"`` (the default,
a departure from the paper) trains a LoRA adapter that fits one small GPU, with the paper's
learning rate, schedule and warm-up, a batch of 8 and no cap (LoRA often wants a higher
learning rate, e.g. 1e-4: try it on your data). An explicit flag overrides either recipe.
Fields with a ``flag`` become ``cigeval finetune`` flags (see :mod:`cigeval.cli._flags`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cigeval._caller import in_callers_words
from cigeval._flag import flag

#: The language model's attention and MLP projections of Qwen2-VL / Qwen2.5-VL. A regex, since
#: Qwen2.5-VL's vision tower reuses the MLP names and should stay as it is.
DEFAULT_LORA_TARGETS = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
)


#: What ``recipe="paper"`` sets when the flag is not given: the paper's batch and sequence cap.
PAPER_RECIPE: dict[str, Any] = {"effective_batch": 128, "max_length": 32768}

_LORA_FIELDS = ("lora_rank", "lora_alpha", "lora_dropout", "lora_targets")


class FinetuneConfig(BaseModel):
    """How ``cigeval finetune`` trains: schedule, batch, LoRA, precision, checkpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: Literal["lora", "paper"] = Field(
        "lora",
        description="lora: a LoRA adapter for one small GPU (a departure from the paper); "
        "paper: the paper's full fine-tuning (every weight, effective batch 128 by gradient "
        "accumulation, lr 1e-5, cosine, warm-up 0.03, sequences capped at 32768 tokens)",
        json_schema_extra=flag("--recipe"),
    )
    epochs: float = Field(
        3.0, gt=0, description="passes over the data", json_schema_extra=flag("--epochs")
    )
    max_steps: int | None = Field(
        None,
        gt=0,
        description="stop after this many optimizer steps (overrides `epochs`)",
        json_schema_extra=flag("--max-steps"),
    )
    learning_rate: float = Field(
        1e-5,
        gt=0,
        description="peak learning rate (paper: 1e-5)",
        json_schema_extra=flag("--learning-rate"),
    )
    lr_scheduler: Literal["cosine", "linear", "constant", "constant_with_warmup"] = Field(
        "cosine",
        description="learning-rate schedule (paper: cosine)",
        json_schema_extra=flag("--lr-scheduler"),
    )
    warmup_ratio: float = Field(
        0.03,
        ge=0,
        lt=1,
        description="fraction of the steps spent warming up (paper: 0.03)",
        json_schema_extra=flag("--warmup-ratio"),
    )
    batch_size: int = Field(
        1,
        ge=1,
        description="conversations per device and step",
        json_schema_extra=flag("--batch-size"),
    )
    gradient_accumulation: int = Field(
        8,
        ge=1,
        description="steps whose gradients add up before each update (lora recipe)",
        json_schema_extra=flag("--gradient-accumulation"),
    )
    effective_batch: int | None = Field(
        None,
        ge=1,
        description="conversations per update over all devices, reached by gradient "
        "accumulation (paper recipe: 128); replaces `gradient_accumulation`",
        json_schema_extra=flag("--effective-batch"),
    )
    max_length: int | None = Field(
        None,
        ge=1,
        description="cap on a conversation's tokens, longer ones are cut (paper recipe: "
        "32768; lora: no cap, since a cut through image tokens cannot train)",
        json_schema_extra=flag("--max-length"),
    )
    lora_rank: int = Field(16, ge=1, description="LoRA rank", json_schema_extra=flag("--lora-rank"))
    lora_alpha: int | None = Field(
        None,
        ge=1,
        description="LoRA alpha (default: twice the rank)",
        json_schema_extra=flag("--lora-alpha"),
    )
    lora_dropout: float = Field(
        0.05, ge=0, lt=1, description="LoRA dropout", json_schema_extra=flag("--lora-dropout")
    )
    lora_targets: str = Field(
        DEFAULT_LORA_TARGETS,
        description="regex of the module names that get LoRA weights (default: the language "
        "model's attention and MLP projections)",
        json_schema_extra=flag("--lora-targets", metavar="REGEX"),
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
        json_schema_extra=flag("--save-steps"),
    )
    logging_steps: int = Field(
        1,
        ge=1,
        description="log the loss every N steps",
        json_schema_extra=flag("--logging-steps"),
    )
    seed: int = Field(
        0,
        description="seed of the data order and the LoRA initialisation",
        json_schema_extra=flag("--seed"),
    )
    merge: bool = Field(
        True,
        description="write the merged model beside the adapter",
        json_schema_extra=flag("--no-merge", negate=True),
    )
    chat_template: Path | None = Field(
        None,
        description="Jinja chat template to train with (generation markers around the "
        "assistant replies), for base models whose template cigeval cannot use",
        json_schema_extra=flag("--chat-template", metavar="FILE"),
    )

    @model_validator(mode="before")
    @classmethod
    def _recipe_defaults(cls, data: Any) -> Any:
        """The paper recipe's batch and sequence cap, unless given."""
        if isinstance(data, dict) and data.get("recipe") == "paper":
            data = {**data}
            for name, value in PAPER_RECIPE.items():
                if data.get(name) is None:
                    data[name] = value
        return data

    @model_validator(mode="after")
    def _consistent(self) -> FinetuneConfig:
        if self.effective_batch is not None and "gradient_accumulation" in self.model_fields_set:
            raise ValueError(
                f"give {_option('effective_batch')} or {_option('gradient_accumulation')}, "
                "not both (the first sets the second)"
            )
        lora_given = [f for f in _LORA_FIELDS if f in self.model_fields_set]
        if self.full and lora_given:
            names = ", ".join(_option(f) for f in lora_given)
            paper = in_callers_words("--recipe paper", "recipe='paper'")
            raise ValueError(f"{names}: LoRA settings do not apply to {paper}")
        return self

    @property
    def full(self) -> bool:
        """Whether every weight is trained (the paper recipe) rather than a LoRA adapter."""
        return self.recipe == "paper"

    def accumulation(self, devices: int = 1) -> int:
        """Gradient accumulation steps: from ``effective_batch`` when set (it must be a
        multiple of ``batch_size`` times the number of devices), else as given."""
        if self.effective_batch is None:
            return self.gradient_accumulation
        per_step = self.batch_size * max(1, devices)
        if self.effective_batch % per_step:
            raise ValueError(
                f"an effective batch of {self.effective_batch} is not a multiple of batch size "
                f"{self.batch_size} x {max(1, devices)} device(s); change "
                f"{_option('batch_size')} or {_option('effective_batch')}"
            )
        return self.effective_batch // per_step

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


def _option(field: str) -> str:
    """A FinetuneConfig field in the caller's words: its flag in a command, else its name."""
    return in_callers_words("--" + field.replace("_", "-"), field)
