"""Fine-tuning and local judging speed on a randomly initialised Qwen-VL model.

    python benchmarks/finetune.py                      # tiny model, CPU: checks the plumbing
    python benchmarks/finetune.py --size 7b            # the real 7B architecture: needs a GPU

It builds a random model (``cigeval.training.save_random_qwen_vl``: the published Qwen2-VL-7B /
Qwen2.5-VL-7B architecture at ``--size 7b``), makes training data the way users do (an agent
run with two rounds, answered offline by ``cigeval.rule_judge``, exported with
``export_trajectories``; the images are scaled to ``--image-size``), then measures:

- LoRA training: tokens/s (text and image tokens, no padding) after the first step, peak
  memory (GPU: ``torch.cuda.max_memory_allocated``; CPU: the process's peak RSS), LoRA
  parameters and adapter size;
- judging with the ``hf:`` backend: samples/s and model calls/s of ``Evaluator`` runs with
  one request per ``generate`` call and with batching (``--local-batch-size``).

A random model's replies are gibberish, so judged samples end as parse errors; each call still
generates ``--max-new-tokens`` tokens (a random model seldom stops early), which is what the
timing measures. Figures are printed and written to ``--json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, peak_rss_mib, samples  # noqa: F401  (puts the repo on sys.path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _training_data(work: Path, count: int, image_size: int) -> Path:
    """Export the conversations of a two-round agent run, images scaled to ``image_size``."""
    from PIL import Image

    from cigeval import Evaluator, ScriptedBackend
    from cigeval.config import RunConfig
    from cigeval.meta import export_trajectories
    from cigeval.testing import rule_judge

    folder = work / "samples"
    judge = ScriptedBackend(rule_judge(request_tool="Difference"))
    evaluator = Evaluator(
        judge, run_config=RunConfig(use_cache=False, image_dir=work / "images"), max_rounds=2
    )
    batch = samples(folder, count)
    records = [s.to_record() for s in evaluator.evaluate_many(batch)]
    raw = work / "export.jsonl"
    export_trajectories(records, raw)
    data = work / "train.jsonl"
    scaled: dict[str, str] = {}
    rows = []
    for line in raw.read_text().splitlines():
        row = json.loads(line)
        if row.get("purpose") == "plan":
            continue
        for index, path in enumerate(row["images"]):
            if path not in scaled:
                target = work / "scaled" / f"{len(scaled)}.png"
                target.parent.mkdir(parents=True, exist_ok=True)
                with Image.open(path) as image:
                    image.convert("RGB").resize((image_size, image_size)).save(target)
                scaled[path] = str(target)
            row["images"][index] = scaled[path]
        rows.append(row)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _steady_tokens_per_s(log_file: Path) -> float | None:
    """Training tokens/s between the first and the last logged step (warm-up left out)."""
    entries = [json.loads(x) for x in log_file.read_text().splitlines()]
    steps = [e for e in entries if "loss" in e and "train_runtime" in e]
    if len(steps) < 2:
        return None
    first, last = steps[0], steps[-1]
    tokens = float(last["num_input_tokens_seen"]) - float(first["num_input_tokens_seen"])
    seconds = float(last["train_runtime"]) - float(first["train_runtime"])
    return tokens / seconds if seconds > 0 else None


def _train(model: Path, data: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    from cigeval.training import FinetuneConfig, finetune

    config = FinetuneConfig(
        max_steps=args.steps,
        batch_size=args.batch_size,
        gradient_accumulation=1,
        save_steps=10_000,
        lora_rank=args.lora_rank,
        merge=False,
    )
    result = finetune(data, f"hf:{model}", out, config, progress=False, report=lambda _: None)
    assert result.adapter is not None  # the LoRA recipe writes an adapter
    adapter_bytes = (Path(result.adapter) / "adapter_model.safetensors").stat().st_size
    return {
        "steps": result.steps,
        "device": result.device,
        "bf16": result.bf16,
        "runtime_s": result.runtime_s,
        "tokens_per_s_overall": result.train_tokens_per_s,
        "tokens_per_s_after_first_step": _steady_tokens_per_s(out / "train_log.jsonl"),
        "peak_memory_gib": (result.peak_memory_bytes or 0) / 2**30,
        "peak_memory_kind": "GPU allocated" if result.device == "cuda" else "process RSS",
        "lora_parameters": result.trainable_parameters,
        "total_parameters": result.total_parameters,
        "adapter_mib": adapter_bytes / 2**20,
    }


def _judge(model: Path, work: Path, args: argparse.Namespace, batch: int) -> dict[str, Any]:
    from cigeval import Evaluator
    from cigeval.config import RunConfig

    evaluator = Evaluator(
        f"hf:{model}",
        run_config=RunConfig(use_cache=False, local_batch_size=batch, concurrency=args.concurrency),
        tools=(),
        max_tokens=args.max_new_tokens,
        max_parse_retries=0,
    )
    warm = samples(work / "judge", 1, tag="warm")
    evaluator.evaluate_many(warm)  # loads the model
    batch_samples = samples(work / "judge", args.judge_samples, tag=f"b{batch}-")
    started = time.perf_counter()
    scores = evaluator.evaluate_many(batch_samples)
    seconds = time.perf_counter() - started
    calls = sum(len(s.trace.model_calls()) for s in scores)
    sizes = getattr(evaluator.backend, "batch_sizes", None)
    return {
        "local_batch_size": batch,
        "samples": len(scores),
        "calls": calls,
        "seconds": seconds,
        "samples_per_s": len(scores) / seconds,
        "calls_per_s": calls / seconds,
        "largest_batch": max(sizes) if sizes else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("tiny", "7b"), default="tiny")
    parser.add_argument("--kind", choices=("qwen2_5_vl", "qwen2_vl"), default="qwen2_5_vl")
    parser.add_argument("--steps", type=int, default=6, help="training steps")
    parser.add_argument("--batch-size", type=int, default=2, help="training batch size")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=None, help="default: 112 / 448")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: 16 / 64")
    parser.add_argument("--judge-samples", type=int, default=14)
    parser.add_argument("--concurrency", type=int, default=8, help="samples judged at once")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--workdir", type=Path, help="default: a temporary folder")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    big = args.size == "7b"
    args.image_size = args.image_size or (448 if big else 112)
    args.max_new_tokens = args.max_new_tokens or (64 if big else 16)

    import torch

    from cigeval.training import save_random_qwen_vl

    cuda = torch.cuda.is_available()
    if big and not cuda:
        sys.exit("--size 7b needs a GPU (the model alone is about 16 GB in bfloat16)")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cigeval-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = save_random_qwen_vl(
        work / "model",
        args.kind,
        args.size,
        dtype=torch.bfloat16 if big else None,
        device="cuda" if big else None,
        max_pixels=args.image_size * args.image_size,
    )
    if cuda:
        torch.cuda.empty_cache()
    built = time.perf_counter() - started
    data = _training_data(work, 14, args.image_size)
    rows = len(data.read_text().splitlines())
    figures: dict[str, Any] = {
        "model": f"random {args.kind} ({args.size})",
        "device": torch.cuda.get_device_name()
        if cuda
        else f"CPU, {torch.get_num_threads()} threads",
        "torch": torch.__version__,
        "image_size": args.image_size,
        "training_rows": rows,
        "build_s": built,
    }
    out = work / "run"
    shutil.rmtree(out, ignore_errors=True)
    figures["training"] = _train(model, data, out, args)
    figures["judging"] = []
    for batch in args.batch_sizes:
        gc.collect()  # the previous phase's model
        if cuda:
            torch.cuda.empty_cache()
        figures["judging"].append(_judge(model, work, args, batch))
    _print(figures, args)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


def _print(figures: dict[str, Any], args: argparse.Namespace) -> None:
    train = figures["training"]
    print(f"{figures['model']} on {figures['device']}, torch {figures['torch']}")
    print(
        f"training data: {figures['training_rows']} conversations (two-round agent run), "
        f"images {args.image_size}x{args.image_size}"
    )
    precision = "bf16" if train["bf16"] else "fp32"
    print(
        f"LoRA r={args.lora_rank}: {train['lora_parameters']:,} of {train['total_parameters']:,} "
        f"parameters trainable, adapter {train['adapter_mib']:.2f} MiB"
    )
    steady = train["tokens_per_s_after_first_step"]
    print(
        f"training ({train['device']}, {precision}, batch {args.batch_size}, {train['steps']} "
        f"steps): {steady or 0:,.0f} tokens/s after the first step "
        f"({train['tokens_per_s_overall'] or 0:,.0f} overall); peak memory "
        f"{train['peak_memory_gib']:.2f} GiB ({train['peak_memory_kind']})"
    )
    print(
        f"judging with hf: ({args.max_new_tokens} new tokens per call, "
        f"concurrency {args.concurrency}):"
    )
    for row in figures["judging"]:
        print(
            f"  local batch size {row['local_batch_size']:>2}: {row['samples_per_s']:.2f} "
            f"samples/s, {row['calls_per_s']:.2f} calls/s ({row['calls']} calls in "
            f"{row['seconds']:.1f} s, largest batch {row['largest_batch']})"
        )
    first, last = figures["judging"][0], figures["judging"][-1]
    print(
        f"  batching speed-up: {last['samples_per_s'] / first['samples_per_s']:.2f}x "
        f"(batch {last['local_batch_size']} vs {first['local_batch_size']}, same run)"
    )


if __name__ == "__main__":
    main()
