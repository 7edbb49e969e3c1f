"""The ``cigeval finetune`` command: fine-tuning a judge on exported trajectories (a LoRA
adapter by default; ``--recipe paper`` for the paper's full fine-tuning).

The training code (and torch, transformers, trl, peft) loads only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cigeval.cli._common import EXIT_OK, EXIT_USAGE
from cigeval.cli._flags import add_config_flags, build_config
from cigeval.errors import CigevalError
from cigeval.terminal import safe_text
from cigeval.training.config import FinetuneConfig


def configure_finetune_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``finetune``."""
    p.description = (
        "Supervised fine-tuning with TRL, the loss on the assistant turns only, "
        "from the JSONL `cigeval meta export-trajectories` writes. By default a LoRA adapter "
        "for one small GPU (OUT/adapter, OUT/merged); --recipe paper trains every weight as "
        "the paper did (effective batch 128, lr 1e-5, cosine, warm-up 0.03, sequences capped "
        "at 32768 tokens; OUT/model). Also writes OUT/finetune.json and OUT/train_log.jsonl; "
        "judge with `--model hf:OUT`. Running the same command again resumes from the last "
        "checkpoint. Needs: pip install 'cigeval[train]'."
    )
    p.add_argument("data", type=Path, metavar="DATA.jsonl", help="training conversations")
    p.add_argument(
        "--base",
        required=True,
        metavar="MODEL",
        help="base model: hf:<hub id or local folder> (e.g. hf:Qwen/Qwen2.5-VL-7B-Instruct)",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    add_config_flags(p, FinetuneConfig)
    p.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="train in bfloat16 (default: on a GPU that supports it)",
    )
    p.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="recompute activations to save memory (default: on a GPU)",
    )
    p.add_argument(
        "--restart", action="store_true", help="discard a previous run in --out and start over"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _summary(result: Any) -> str:
    """What was trained and where it went, with the commands that use it."""
    precision = "bfloat16" if result.bf16 else "float32"
    lines = [
        f"trained {result.steps} steps on {result.device} ({precision}) in {result.runtime_s:.1f} s"
    ]
    if result.train_loss is not None:
        lines.append(f"final training loss: {result.train_loss:.4f}")
    if result.train_tokens_per_s:
        lines.append(f"training tokens/s: {result.train_tokens_per_s:,.0f}")
    kind = "LoRA" if result.adapter else "trained"
    trained = f"{result.trainable_parameters:,} of {result.total_parameters:,}"
    lines.append(f"{kind} parameters: {trained} ({result.recipe} recipe)")
    if result.adapter:
        lines.append(f"adapter: {result.adapter}")
    if result.merged:
        lines.append(f"merged model: {result.merged}")
    if result.model:
        lines.append(f"tuned model: {result.model}")
    lines.append(f"judge with: cigeval evaluate SAMPLES.jsonl --model hf:{result.out} --out ...")
    if result.merged or result.model:
        serve = f"vllm serve {result.merged or result.model} --served-model-name cigeval-judge"
    else:
        serve = f"vllm serve BASE --enable-lora --lora-modules cigeval-judge={result.adapter}"
    lines.append(f"or serve it with vLLM: {serve} (then --model openai:cigeval-judge@URL)")
    return "\n".join(lines)


def run_finetune(args: argparse.Namespace) -> int:
    """The ``finetune`` command."""
    from cigeval.training import finetune

    config = build_config(
        args,
        FinetuneConfig,
        base={"bf16": args.bf16, "gradient_checkpointing": args.gradient_checkpointing},
    )
    if not args.data.is_file():
        print(f"cigeval finetune: error: no such data file: {args.data}", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = finetune(
            args.data, args.base, args.out, config, restart=args.restart, progress=not args.quiet
        )
    except CigevalError as exc:
        print(f"cigeval finetune: error: {safe_text(exc, lines=True)}", file=sys.stderr)
        return EXIT_USAGE
    print(_summary(result), file=sys.stderr)  # what was written: a diagnostic, not data
    return EXIT_OK
