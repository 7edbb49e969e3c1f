"""``cigeval finetune``: supervised fine-tuning of a vision-language judge with TRL.

Two recipes (:mod:`cigeval.training.config`): a LoRA adapter (the default, one GPU) or the
paper's full fine-tuning (every weight; effective batch 128 by gradient accumulation).

Everything that can be checked is checked before the model loads: the data (every line), the
base model's tokenizer, image processor and chat template, and that each conversation renders
with its images and has assistant tokens to learn from. The loss is on the assistant turns
only (the thoughts, tool requests and scores), as in the paper (§3.4). A run resumes from its
last checkpoint when the same command is run again; the output layout is in
:mod:`cigeval.training.outputs`.

torch, transformers, trl, peft and datasets are imported here, inside functions (the optional
``train`` extra), never when cigeval is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval._digest import file_sha256
from cigeval.errors import ConfigError, InputError, MissingDependency
from cigeval.training.config import FinetuneConfig
from cigeval.training.data import TrainingRow, load_training_data
from cigeval.training.outputs import (
    ADAPTER,
    CHECKPOINTS,
    FULL_MODEL,
    LOG_FILE,
    MERGED,
    RUN_FILE,
)
from cigeval.training.processor import load_vl_processor, training_chat_template, use_chat_template

RUN_FORMAT = "cigeval-finetune/1"
#: Files and folders of a run, removed by ``restart`` (nothing else in OUT is touched).
_RUN_ENTRIES = (RUN_FILE, LOG_FILE, CHECKPOINTS, ADAPTER, MERGED, FULL_MODEL)


@dataclass
class FinetuneResult:
    """What a fine-tuning run produced and how it went.

    A LoRA run writes ``adapter`` (and ``merged`` unless told not to); a full fine-tuning run
    (the paper recipe) writes the whole tuned model to ``model``.
    """

    out: str
    adapter: str | None
    merged: str | None
    steps: int
    train_loss: float | None
    runtime_s: float
    train_tokens_per_s: float | None
    trainable_parameters: int
    total_parameters: int
    peak_memory_bytes: int | None
    device: str
    bf16: bool
    resumed_from: str | None
    chat_template: str
    recipe: str = "lora"
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form."""
        return asdict(self)


def base_model_path(spec: str) -> str:
    """The hub id or local folder of an ``hf:<id or path>`` base model spec."""
    prefix, sep, name = spec.partition(":")
    if not sep or prefix != "hf" or not name.strip():
        raise ConfigError(
            f"the base model must be given as hf:<hub id or local folder>, got {spec!r}"
        )
    name = name.strip()
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    if name.startswith((".", "/", "~")):
        raise ConfigError(f"the base model folder {name!r} does not exist")
    return name


def _imports() -> dict[str, Any]:
    try:
        import datasets
        import peft
        import torch
        import transformers
        import trl
    except ImportError as exc:
        raise MissingDependency(
            exc.name or "trl", "train", "Fine-tuning (cigeval finetune)"
        ) from exc
    return {
        "torch": torch,
        "transformers": transformers,
        "trl": trl,
        "peft": peft,
        "datasets": datasets,
    }


def _check_rendering(rows: list[TrainingRow], processor: Any, template: str) -> None:
    """Every conversation renders, with one image token per image and assistant tokens."""
    tokenizer = getattr(processor, "tokenizer", processor)
    image_token = getattr(processor, "image_token", None) or "<|image_pad|>"
    image_id = tokenizer.convert_tokens_to_ids(image_token)
    problems = []
    for row in rows:
        try:
            rendered = tokenizer.apply_chat_template(
                row.messages,
                chat_template=template,
                tokenize=True,
                return_dict=True,
                return_assistant_tokens_mask=True,
            )
        except Exception as exc:  # the template is user code: any failure names the line
            problems.append(f"line {row.line}: the chat template cannot render it ({exc})")
            continue
        ids = list(rendered["input_ids"])
        if ids.count(image_id) != len(row.images):
            problems.append(
                f"line {row.line}: the chat template renders {ids.count(image_id)} image "
                f"token(s) for {len(row.images)} image(s)"
            )
        if not any(rendered.get("assistant_masks") or []):
            problems.append(f"line {row.line}: no assistant tokens to learn from once rendered")
    if problems:
        shown = "\n  ".join(problems[:20])
        raise InputError(f"{len(problems)} conversation(s) cannot be trained on:\n  {shown}")


def _prepare_out(out: Path, record: dict[str, Any], restart: bool) -> dict[str, Any] | None:
    """Make ``out`` ready; the previous run's record when this run continues it."""
    run_file = out / RUN_FILE
    if restart:
        for name in _RUN_ENTRIES:
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    if run_file.is_file():
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read {run_file}: {exc}; use {_restart()}") from exc
        keys = ("base_path", "data_sha256", "settings")
        changed = [k for k in keys if previous.get(k) != record[k]]
        if changed:
            raise ConfigError(
                f"{out} holds a run with a different {', '.join(changed)}; use another "
                f"{_out()}, or {_restart()} to discard that run"
            )
        return dict(previous)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(
            f"{out} exists and is not a `cigeval finetune` folder; pick another {_out()}"
        )
    out.mkdir(parents=True, exist_ok=True)
    return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)


def _log_callback(modules: dict[str, Any], path: Path) -> Any:
    """A trainer callback appending every log (loss, learning rate, ...) to ``path``."""

    class JsonlLog(modules["transformers"].TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            entry = {"step": state.global_step, "max_steps": state.max_steps, **(logs or {})}
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")

    return JsonlLog()


def _absolute_base(adapter: Path, base_path: str) -> None:
    """Record the base model in the adapter config as the folder it was trained from."""
    config_file = adapter / "adapter_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = base_path
    config_file.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _tokens_per_second(metrics: dict[str, Any]) -> float | None:
    """Input tokens (text and image, no padding) per second of this session's training."""
    tokens, runtime = metrics.get("num_input_tokens_seen"), metrics.get("train_runtime")
    if not tokens or not runtime:
        return None
    return round(float(tokens) / float(runtime), 1)


def _peak_memory(torch: Any, cuda: bool) -> int | None:
    if cuda:
        return int(torch.cuda.max_memory_allocated())
    try:
        import resource
    except ImportError:
        return None
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale


def finetune(
    data: str | Path,
    base: str,
    out: str | Path,
    config: FinetuneConfig | None = None,
    *,
    restart: bool = False,
    progress: bool = True,
    report: Callable[[str], None] | None = None,
    callbacks: list[Any] | None = None,
) -> FinetuneResult:
    """Fine-tune ``base`` (``hf:<id|dir>``) on ``data`` (JSONL conversations).

    With the default LoRA recipe writes the adapter and the merged model (unless
    ``config.merge`` is off), with ``recipe="paper"`` the fully tuned model (``out/model``);
    and in both the run record and the log to ``out``. A run in ``out`` with the same base,
    data and settings is resumed from its last checkpoint, and a finished one is not trained
    again. ``restart`` discards a
    previous run first. ``report`` receives progress notes (default: stderr); ``callbacks``
    are extra ``transformers.TrainerCallback`` objects.
    """
    config = config or FinetuneConfig()
    say = report or (lambda text: print(text, file=sys.stderr))
    data, out = Path(data), Path(out)
    base_path = base_model_path(base)
    rows = load_training_data(data)
    record: dict[str, Any] = {
        "format": RUN_FORMAT,
        "base": base,
        "base_path": base_path,
        "data": str(data.resolve()),
        "data_sha256": file_sha256(data),
        "conversations": len(rows),
        "settings": config.run_settings(),
        "config": config.model_dump(mode="json"),
    }
    previous = _prepare_out(out, record, restart)
    if previous is not None and previous.get("status") == "done" and previous.get("result"):
        say(f"{out} already holds this finished run; nothing to do ({_restart()} trains again)")
        return FinetuneResult(**previous["result"])

    modules = _imports()
    torch, transformers = modules["torch"], modules["transformers"]
    processor = load_vl_processor(base_path)
    template, source = training_chat_template(processor, config.chat_template)
    use_chat_template(processor, template)
    say(f"chat template: {source}")
    _check_rendering(rows, processor, template)

    cuda = bool(torch.cuda.is_available())
    bf16 = config.bf16 if config.bf16 is not None else cuda and torch.cuda.is_bf16_supported()
    checkpointing = config.gradient_checkpointing
    checkpointing = cuda if checkpointing is None else checkpointing
    try:
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            base_path, dtype=torch.bfloat16 if bf16 else torch.float32
        )
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"could not load {base!r} as a vision-language model: {exc}") from exc
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    versions = {name: getattr(m, "__version__", "?") for name, m in modules.items()}
    from cigeval._version import __version__

    record.update(
        status="running", versions={"cigeval": __version__, **versions}, started=time.time()
    )
    _write_json(out / RUN_FILE, {**(previous or {}), **record})

    trainer = _trainer(
        modules, model, processor, rows, config, out, bf16, checkpointing, cuda, progress
    )
    if not progress:  # without a progress bar the trainer prints each log instead
        trainer.remove_callback(transformers.PrinterCallback)
    for callback in callbacks or []:
        trainer.add_callback(callback)
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in trainer.model.parameters())
    last = None
    if (out / CHECKPOINTS).is_dir():
        last = transformers.trainer_utils.get_last_checkpoint(str(out / CHECKPOINTS))
    if last is not None:
        say(f"resuming from {last}")
    started = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=last)
    runtime = time.perf_counter() - started

    adapter = merged = full = None
    if config.full:
        full = out / FULL_MODEL
        trainer.model.config.use_cache = True
        trainer.save_model(str(full))
        processor.save_pretrained(str(full))
    else:
        adapter = out / ADAPTER
        trainer.save_model(str(adapter))
        processor.save_pretrained(str(adapter))
        _absolute_base(adapter, base_path)
        if config.merge:
            merged = out / MERGED
            model = trainer.model.merge_and_unload()
            model.config.use_cache = True
            model.save_pretrained(str(merged))
            processor.save_pretrained(str(merged))
    metrics = output.metrics or {}
    result = FinetuneResult(
        out=str(out),
        adapter=str(adapter) if adapter is not None else None,
        merged=str(merged) if merged is not None else None,
        steps=int(output.global_step),
        train_loss=float(output.training_loss) if output.training_loss is not None else None,
        runtime_s=round(runtime, 3),
        train_tokens_per_s=_tokens_per_second(metrics),
        trainable_parameters=int(trainable),
        total_parameters=int(total),
        peak_memory_bytes=_peak_memory(torch, cuda),
        device="cuda" if cuda else "cpu",
        bf16=bool(bf16),
        resumed_from=last,
        chat_template=source,
        recipe=config.recipe,
        model=str(full) if full is not None else None,
    )
    _write_json(out / RUN_FILE, {**record, "status": "done", "result": result.to_dict()})
    return result


def _trainer(
    modules: dict[str, Any],
    model: Any,
    processor: Any,
    rows: list[TrainingRow],
    config: FinetuneConfig,
    out: Path,
    bf16: bool,
    checkpointing: bool,
    cuda: bool,
    progress: bool,
) -> Any:
    trl, peft = modules["trl"], modules["peft"]
    dataset = modules["datasets"].Dataset.from_list([row.to_dataset_row() for row in rows])
    try:
        accumulation = config.accumulation(_devices())
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    arguments = trl.SFTConfig(
        output_dir=str(out / CHECKPOINTS),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=accumulation,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler,
        warmup_steps=config.warmup_ratio,  # below 1: a fraction of the steps
        logging_steps=config.logging_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=2,
        bf16=bf16,
        use_cpu=not cuda,
        gradient_checkpointing=checkpointing,
        activation_checkpointing=checkpointing,
        assistant_only_loss=True,
        # the paper's cap cuts longer conversations (TRL says so if a cut splits an image's
        # tokens); without a cap nothing is cut
        max_length=config.max_length,
        include_num_input_tokens_seen="non_padding",
        report_to="none",
        seed=config.seed,
        dataloader_pin_memory=cuda,
        dataloader_num_workers=0,
        disable_tqdm=not progress,
    )
    lora = None
    if not config.full:
        lora = peft.LoraConfig(
            r=config.lora_rank,
            lora_alpha=config.alpha,
            lora_dropout=config.lora_dropout,
            target_modules=config.lora_targets,
            task_type="CAUSAL_LM",
        )
    try:
        return trl.SFTTrainer(
            model=model,
            args=arguments,
            train_dataset=dataset,
            processing_class=processor,
            peft_config=lora,
            callbacks=[_log_callback(modules, out / LOG_FILE)],
        )
    except ValueError as exc:
        if "target" in str(exc).lower():
            targets = in_callers_words(
                f"--lora-targets {config.lora_targets!r}", f"lora_targets={config.lora_targets!r}"
            )
            raise ConfigError(f"{targets}: {exc}") from exc
        raise


def _devices() -> int:
    """How many processes train together (``WORLD_SIZE`` under torchrun/accelerate, else 1):
    the effective batch is batch size x accumulation x this."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _restart() -> str:
    """The option that discards a run's folder, in the caller's words."""
    return in_callers_words("--restart", "restart=True")


def _out() -> str:
    """The output folder's option, in the caller's words."""
    return in_callers_words("--out", "out folder")
