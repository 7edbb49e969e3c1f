"""cigeval against the simplest client a user could write: the same calls, the same images.

    python benchmarks/client_overhead.py [--runs 3] [--concurrency 1 16 64 128]
        [--latency 0.25 1.0] [--size 512] [--baselines files jpeg75] [--all]
        [--reply-parsing official|strict] [--compare [LABEL=]CHECKOUT ...]

The other client is ``openai.AsyncOpenAI`` plus an ``asyncio.Semaphore`` of C samples: for
each sample it sends exactly the requests cigeval sends, in the order they wait for each
other (captured first from cigeval itself: the planning call, then the judge calls at once
under ``--reply-parsing strict``, or one after another under ``official``, the ``paper``
default, as the official code asks its sub-questions). It comes in two baselines, measured
beside each other in the same rounds:

* ``minimal`` (``files``): each image read from its file and base64-encoded when a message is
  built (the OpenAI documentation's ``encode_image``); its bodies match cigeval's under
  ``--image-encoding original``;
* ``minimal-jpeg75`` (``jpeg75``): as the official CIGEval client prepares every image for
  every call: opened with Pillow, EXIF-transposed, converted to RGB, saved as JPEG at
  quality 75 and base64-encoded, per call; its bodies match cigeval's default ``jpeg75``.

Each appends one line per sample to a JSONL file. cigeval runs ``Evaluator.run`` (the
``cigeval evaluate`` path: resume, one record per sample, the writer), with no response cache.

Every sample has its own photo-like images (a gradient under noise, which PNG compresses
about as badly as a photograph), so no cache by content can help either client. The judge is
``benchmarks/fake_server.py --light`` in its own process: it answers cigeval's prompts with
the rule judge after cutting the image data out of the body, so it does almost no work.

Each (client, C, latency) is one fresh process; within each of ``--runs`` rounds the two
clients alternate (the order flips every round). Per run it measures records/s, the
process's CPU seconds (user + system, all threads) per HTTP request the server received,
and the peak resident memory above the process's memory before the run, divided by C
("memory per sample in flight"). The table gives min / median / max over the rounds and the
ratio cigeval / baseline of each round's pair, for each baseline. ``--all`` adds the other
rows of issue 22's target table: a fully cached re-run against the first run (CPU), the
tools' timings (``benchmarks/tools_speed.py`` when present), the command-line start-up, the
report build.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

MODEL = "bench-model"
# The minimal client's two baselines, by the --baselines name: the files as they are (or
# cigeval's encoding), and the official client's decode + JPEG q75 + base64 for every call.
BASELINES = {"files": "minimal", "jpeg75": "minimal-jpeg75"}
TASK_ROUNDS = 7
#: The concept images the planner of a multi-concept sample shows joined, as one image.
SUBJECTS = ("subject_1", "subject_2")


# --- measuring a process ---------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak_memory() -> int:
    """Reset the kernel's peak-RSS mark of this process; return the current RSS in KiB."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _status_kib("VmRSS")


def peak_memory_kib() -> int:
    """The most resident memory this process held since :func:`reset_peak_memory`."""
    return _status_kib("VmHWM")


# --- the sample set --------------------------------------------------------------------------


def write_sample_set(folder: Path, count: int, size: int, first: int = 0) -> Path:
    """``count`` samples of the seven tasks, each with images and wording of its own (sets
    made with different ``first`` share none); the samples file."""
    import numpy as np
    from PIL import Image, ImageDraw

    from cigeval.testing.samples_factory import seven_task_samples, variant

    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 200, size, dtype=np.float32)
    base = ramp[None, :, None] + ramp[:, None, None] * 0.2
    noise = [rng.normal(0, 12, (size, size, 3)).astype(np.float32) for _ in range(4)]
    made = [first * 4]

    def picture(name: str, index: int) -> str:
        shift = (index * 37) % size
        tint = np.array([index % 40, (index * 7) % 40, (index * 13) % 40], dtype=np.float32)
        pixels = base + np.roll(noise[index % 4], shift, axis=1) + tint
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(
            images / name, compress_level=1
        )
        made[0] += 1
        return f"images/{name}"

    def mask(name: str, index: int) -> str:
        image = Image.new("RGB", (size, size), "black")
        corner = size // 8 + index % (size // 4)
        ImageDraw.Draw(image).rectangle(
            (corner, corner, corner + size // 3, corner + size // 4), fill="white"
        )
        image.save(images / name)
        return f"images/{name}"

    templates = seven_task_samples(folder / "small")
    with (folder / "samples.jsonl").open("w") as handle:
        for n in range(count):
            template = json.loads(json.dumps(templates[n % len(templates)]))  # own images dict
            sample = variant(template, f"{folder.name}-{template['id']}-{n}", f" #{first + n}")
            found = sample["images"]
            for role, value in list(found.items()):
                if role == "subjects":
                    found[role] = [
                        picture(f"{n}-subject{i}.png", made[0]) for i in range(len(value))
                    ]
                elif role == "mask":
                    found[role] = mask(f"{n}-mask.png", first + n)
                else:
                    found[role] = picture(f"{n}-{role}.png", made[0])
            handle.write(json.dumps(sample) + "\n")
    return folder / "samples.jsonl"


def image_files_by_role(sample: dict[str, Any]) -> dict[str, str]:
    """The file of each image role as cigeval names them (``subjects`` -> ``subject_1``...)."""
    roles: dict[str, str] = {}
    for role, value in sample["images"].items():
        if role == "subjects":
            roles.update({f"subject_{i}": v for i, v in enumerate(value, start=1)})
        else:
            roles[role] = value
    return roles


def encoding_settings(encoding: str | None, reply_parsing: str | None = None) -> dict[str, Any]:
    """The EvalConfig overrides choosing how images reach the judge and how replies are read
    (none for cigeval's defaults, or for a checkout that predates a setting: it sends original
    files, and reads replies strictly, its sub-questions asked at once)."""
    from cigeval.config import EvalConfig

    settings = {"image_encoding": encoding, "reply_parsing": reply_parsing}
    return {
        name: value
        for name, value in settings.items()
        if value is not None and name in EvalConfig.model_fields
    }


def capture_calls(
    samples_path: Path, encoding: str | None = None, reply_parsing: str | None = None
) -> dict[str, Any]:
    """The requests cigeval makes for each sample, in the order they depend on each other:
    ``{"encoding": ..., "reply_parsing": ..., "samples": {id: {"settings": {...}, "stages":
    [[messages, ...]]}}}``: the calls of a stage are sent at once, each stage once the one
    before has its replies (the plan, then the judge calls at once under strict reply
    parsing, or one after another as the official code asks them under official parsing).
    A message is ``{"role": ..., "parts": [["text", str] | ["image", role], ...]}``."""
    from cigeval.config import RunConfig
    from cigeval.evaluation import Evaluator
    from cigeval.messages import ImagePart, ModelRequest, ModelResponse
    from cigeval.sample import iter_samples_file
    from cigeval.testing import rule_judge

    reply = rule_judge()
    seen: list[ModelRequest] = []
    stage_of: list[int] = []  # the stage of each request in seen
    in_flight = [0]

    class Recorder:
        identity = "bench:recorder"

        async def complete(self, request: ModelRequest) -> ModelResponse:
            # A call made while another waits for its reply is of the other's stage.
            stage = stage_of[-1] if in_flight[0] else (stage_of[-1] + 1 if stage_of else 0)
            seen.append(request)
            stage_of.append(stage)
            in_flight[0] += 1
            try:
                await asyncio.sleep(0.01)  # the calls sent at once are all made by now
                return ModelResponse(reply(request), MODEL)
            finally:
                in_flight[0] -= 1

    evaluator = Evaluator(
        Recorder(),
        run_config=RunConfig(use_cache=False, preflight=False),
        **encoding_settings(encoding, reply_parsing),
    )
    captured: dict[str, Any] = {}

    async def capture() -> None:
        for line in iter_samples_file(samples_path):
            seen.clear()
            stage_of.clear()
            score = await evaluator.evaluate_async(line)
            assert score.status == "ok", score.error
            calls = []
            for request in seen:
                messages = []
                for message in request.messages:
                    parts = [
                        ["image", part.label]
                        if isinstance(part, ImagePart)
                        else ["text", part.text]
                        for part in message.parts
                    ]
                    messages.append({"role": message.role, "parts": parts})
                calls.append(messages)
            settings = {
                "temperature": seen[0].settings.temperature,
                "max_tokens": seen[0].settings.max_tokens,
            }
            if seen[0].settings.seed is not None:
                settings["seed"] = seen[0].settings.seed
            stages: list[list[Any]] = [[] for _ in range(stage_of[-1] + 1)]
            for stage, call in zip(stage_of, calls, strict=True):
                stages[stage].append(call)
            captured[score.id] = {"settings": settings, "stages": stages}

    asyncio.run(capture())
    used = getattr(evaluator.config, "image_encoding", "original")
    parsing = getattr(evaluator.config, "reply_parsing", "strict")
    return {"encoding": used, "reply_parsing": parsing, "samples": captured}


# --- the two clients -------------------------------------------------------------------------


def minimal_client(
    url: str,
    plan: dict[str, Any],
    samples_path: Path,
    count: int,
    concurrency: int,
    out: Path,
    reencode: bool = False,
) -> None:
    """What a user would write: AsyncOpenAI, a semaphore, each image encoded per message:
    the file's bytes, or with ``reencode`` decoded and encoded as JPEG q75 (official client)."""
    import openai

    lines = [json.loads(line) for line in samples_path.read_text().splitlines()[:count]]
    folder = samples_path.parent
    jpeg75 = reencode

    def encode_image(path: Path) -> str:
        if jpeg75:  # as the official CIGEval code prepares each image for each request
            from PIL import Image, ImageOps

            with Image.open(path) as opened:
                image = ImageOps.exif_transpose(opened).convert("RGB")
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG")
            return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()
        with open(path, "rb") as handle:
            return "data:image/png;base64," + base64.b64encode(handle.read()).decode("utf-8")

    def joined_image(paths: list[Path]) -> str:
        from PIL import Image, ImageOps

        from cigeval.sample import join_side_by_side

        halves = []
        for path in paths:
            with Image.open(path) as opened:
                halves.append(ImageOps.exif_transpose(opened).convert("RGB"))
        buffer = io.BytesIO()
        join_side_by_side(halves).save(buffer, format="JPEG" if jpeg75 else "PNG")
        mime = "image/jpeg" if jpeg75 else "image/png"
        return f"data:{mime};base64," + base64.b64encode(buffer.getvalue()).decode()

    async def run() -> None:
        client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY")
        semaphore = asyncio.Semaphore(concurrency)
        with out.open("a") as results:

            async def ask(
                messages: list[dict[str, Any]], files: dict[str, str], settings: dict[str, Any]
            ) -> str:
                built = []
                for message in messages:
                    content: list[dict[str, Any]] = []
                    for kind, value in message["parts"]:
                        if kind == "text":
                            content.append({"type": "text", "text": value})
                        elif value in files:
                            uri = encode_image(folder / files[value])
                            content.append({"type": "image_url", "image_url": {"url": uri}})
                        else:  # the planner's two concept images joined side by side
                            uri = joined_image([folder / files[r] for r in SUBJECTS])
                            content.append({"type": "image_url", "image_url": {"url": uri}})
                    built.append({"role": message["role"], "content": content})
                response = await client.chat.completions.create(
                    model=MODEL, messages=built, **settings
                )
                return response.choices[0].message.content or ""

            async def judge(sample: dict[str, Any]) -> None:
                calls = plan["samples"][sample["id"]]
                files = image_files_by_role(sample)
                async with semaphore:
                    replies = []
                    for stage in calls["stages"]:
                        replies += await asyncio.gather(
                            *(ask(m, files, calls["settings"]) for m in stage)
                        )
                    results.write(json.dumps({"id": sample["id"], "replies": replies}) + "\n")
                    results.flush()

            await asyncio.gather(*(judge(sample) for sample in lines))
        await client.close()

    asyncio.run(run())


def cigeval_client(
    url: str,
    samples_path: Path,
    count: int,
    concurrency: int,
    out: Path,
    cache_dir: Path | None = None,
    encoding: str | None = None,
    reply_parsing: str | None = None,
) -> None:
    """``Evaluator.run``: what ``cigeval evaluate`` does, into a results file."""
    from cigeval import Evaluator  # the run (resume, records), not only the judge
    from cigeval.config import RunConfig

    # The knob's name differs between versions (retry_backoff_s, backoff_base_s).
    backoff = next(n for n in ("retry_backoff_s", "backoff_base_s") if n in RunConfig.model_fields)
    run_config = RunConfig(
        concurrency=concurrency,
        use_cache=cache_dir is not None,
        cache_dir=cache_dir,
        preflight=False,
        **{backoff: 0.05},
    )
    evaluator = Evaluator(
        f"openai:{MODEL}@{url}",
        run_config=run_config,
        **encoding_settings(encoding, reply_parsing),
    )
    result = evaluator.run(samples_path, out=out, limit=count, quiet=True)
    assert result.summary.statuses["ok"] == count, result.render()


def worker(args: argparse.Namespace) -> None:
    """One measured run in this (fresh) process; prints its figures as one JSON line."""
    samples_path = Path(args.samples)
    warm = Path(args.warm)
    folder = Path(tempfile.mkdtemp(prefix="cigeval-client-"))
    plan = json.loads(Path(args.plan).read_text()) if args.plan else {}
    cache = folder / "cache" if args.client == "cigeval-cached" else None

    def one(path: Path, count: int, out: Path) -> None:
        if args.client in BASELINES.values():
            reencode = args.client == BASELINES["jpeg75"]
            minimal_client(args.url, plan, path, count, args.concurrency, out, reencode)
        else:
            settings = (plan["encoding"], plan.get("reply_parsing"))
            cigeval_client(args.url, path, count, args.concurrency, out, cache, *settings)

    one(warm, len(warm.read_text().splitlines()), folder / "warm.jsonl")  # imports, first calls
    figures: dict[str, float] = {}
    rounds = ("first", "cached") if cache is not None else ("run",)
    for name in rounds:
        before = server_requests(args.url)
        baseline = reset_peak_memory()
        started, cpu = time.perf_counter(), time.process_time()
        one(samples_path, args.count, folder / f"{name}.jsonl")
        figures[f"{name}_wall_s"] = time.perf_counter() - started
        figures[f"{name}_cpu_s"] = time.process_time() - cpu
        figures[f"{name}_peak_mib"] = (peak_memory_kib() - baseline) / 1024
        figures[f"{name}_requests"] = server_requests(args.url) - before
    shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(figures), flush=True)


def server_requests(url: str) -> int:
    """Requests the benchmark server has answered so far."""
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats") as response:
        return int(json.loads(response.read())["requests"])


# --- the comparison --------------------------------------------------------------------------


def run_worker(
    client: str, url: str, paths: dict[str, Any], count: int, concurrency: int
) -> dict[str, float]:
    """One measured run of ``client`` in a fresh process."""
    kind, checkout = client, paths["checkouts"].get(client, ROOT)
    if client not in BASELINES.values():
        kind = "cigeval-cached" if client == "cigeval-cached" else "cigeval"
    command = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--url",
        url,
        "--checkout",
        str(checkout),
        "--samples",
        str(paths["samples"]),
        "--warm",
        str(paths["warm"]),
        "--plan",
        str(paths["plan"]),
        "--count",
        str(count),
        "--concurrency",
        str(concurrency),
    ]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{client} worker failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def spread(values: list[float], digits: int = 2) -> str:
    """min / median / max of ``values``."""
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low:.{digits}f} / {mid:.{digits}f} / {high:.{digits}f}"


def samples_for(concurrency: int) -> int:
    """Samples per run: two waves of C (at least 8)."""
    return max(8, 2 * concurrency)


def compare(args: argparse.Namespace, paths: dict[str, Any]) -> dict[str, Any]:
    """The paired runs; prints the table and returns each cigeval's ratios by (latency, C)."""
    from fake_server import ServerProcess

    baselines = [BASELINES[name] for name in args.baselines]
    judges = ["cigeval", *args.compare]
    clients = [*baselines, *judges]
    rows: dict[tuple[float, int], dict[str, list[dict[str, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for latency in args.latency:
        with ServerProcess(latency, light=True) as server:
            for round_number in range(args.runs):
                for concurrency in args.concurrency:
                    turn = round_number % len(clients)
                    for client in clients[turn:] + clients[:turn]:
                        count = samples_for(concurrency)
                        figures = run_worker(client, server.url, paths, count, concurrency)
                        rows[(latency, concurrency)][client].append(figures)
                        print(
                            f"  latency {latency:g} s, C={concurrency:>3}, round "
                            f"{round_number + 1}: {client:14} {_brief(figures)}",
                            flush=True,
                        )
    print()
    print(
        f"{args.size}x{args.size} photo-like PNG images, each sample's its own; cigeval's "
        f"image encoding: {paths['encoding']}; reply parsing: {paths['reply_parsing']} "
        f"(stages per sample: {paths['stages']}); baselines: {', '.join(baselines)} (the files "
        f"as they are; JPEG q75 re-encoded per call); {args.runs} alternated rounds; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPU cores"
    )
    for label, checkout in args.compare.items():
        print(f"{label}: cigeval of {checkout}")
    print(
        "records/s (share of the ideal C / (calls in a row x latency)), client CPU ms per HTTP "
        "request, "
        "peak memory MiB per sample in flight: min / median / max over the rounds"
    )
    print(
        f"{'lat s':>5} {'C':>4} {'client':14} {'records/s':>20} {'ideal':>6} "
        f"{'CPU ms/request':>22} {'MiB/sample in flight':>24}"
    )
    pairings = [f"{judge} / {baseline}" for judge in judges for baseline in baselines]
    ratios: dict[str, dict[str, dict[tuple[float, int], list[float]]]] = {
        pairing: defaultdict(dict) for pairing in pairings
    }
    for (latency, concurrency), measured in sorted(rows.items()):
        ideal = concurrency / (paths["in_a_row"] * latency)
        for client in clients:
            runs = measured[client]
            rates = [samples_for(concurrency) / r["run_wall_s"] for r in runs]
            cpu = [r["run_cpu_s"] / r["run_requests"] * 1000 for r in runs]
            memory = [r["run_peak_mib"] / concurrency for r in runs]
            print(
                f"{latency:>5g} {concurrency:>4} {client:14} {spread(rates, 1):>20} "
                f"{statistics.median(rates) / ideal:>6.0%} {spread(cpu):>22} "
                f"{spread(memory):>24}"
            )
        for pairing in pairings:
            client, baseline = pairing.split(" / ")
            pairs = list(zip(measured[client], measured[baseline], strict=True))
            key = (latency, concurrency)
            ratios[pairing]["throughput"][key] = [
                m["run_wall_s"] / c["run_wall_s"] for c, m in pairs
            ]
            ratios[pairing]["cpu"][key] = [
                (c["run_cpu_s"] / c["run_requests"]) / (m["run_cpu_s"] / m["run_requests"])
                for c, m in pairs
            ]
            ratios[pairing]["memory"][key] = [
                max(c["run_peak_mib"], 0.1) / max(m["run_peak_mib"], 0.1) for c, m in pairs
            ]
    for pairing in pairings:
        print()
        print(f"{pairing}, each round's pair: min / median / max")
        print(
            f"{'lat s':>5} {'C':>4} {'throughput':>20} {'CPU per request':>20} {'peak memory':>20}"
        )
        found = ratios[pairing]
        for key in sorted(found["cpu"]):
            latency, concurrency = key
            print(
                f"{latency:>5g} {concurrency:>4} {spread(found['throughput'][key]):>20} "
                f"{spread(found['cpu'][key]):>20} {spread(found['memory'][key]):>20}"
            )
    return ratios


def _brief(figures: dict[str, float]) -> str:
    return (
        f"{figures['run_wall_s']:6.2f} s wall, {figures['run_cpu_s']:6.2f} s CPU, "
        f"{int(figures['run_requests']):>4} requests, peak +{figures['run_peak_mib']:.0f} MiB"
    )


def cached_rerun(args: argparse.Namespace, paths: dict[str, Any]) -> list[float]:
    """CPU of a fully cached re-run over CPU of the first run (same process, C=16)."""
    from fake_server import ServerProcess

    ratios = []
    with ServerProcess(0.25, light=True) as server:
        for _ in range(args.runs):
            figures = run_worker("cigeval-cached", server.url, paths, 64, 16)
            ratios.append(figures["cached_cpu_s"] / figures["first_cpu_s"])
            print(
                f"  cached re-run: first {figures['first_cpu_s']:.2f} s CPU "
                f"({int(figures['first_requests'])} requests), re-run "
                f"{figures['cached_cpu_s']:.2f} s CPU ({int(figures['cached_requests'])} "
                "requests)",
                flush=True,
            )
    return ratios


def other_rows(args: argparse.Namespace) -> list[str]:
    """The other rows of the target table, as the benchmarks that measure them print them."""
    lines = []
    tools = HERE / "tools_speed.py"
    if tools.exists():
        done = subprocess.run(
            [sys.executable, str(tools)], capture_output=True, text=True, check=False
        )
        lines += ["=== python benchmarks/tools_speed.py", *done.stdout.splitlines()]
    command = [
        sys.executable,
        str(args.checkout / "benchmarks" / "cli_startup.py"),
        "--repeats",
        "5",
    ]
    if args.compare:
        command += ["--compare", str(next(iter(args.compare.values())))]
    startup = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=args.checkout
    )
    lines += [
        "=== " + " ".join(["python benchmarks/cli_startup.py", *command[2:]]),
        *startup.stdout.splitlines(),
    ]
    if args.report_samples:
        report = subprocess.run(
            [sys.executable, str(HERE / "report.py"), "--samples", str(args.report_samples)],
            capture_output=True,
            text=True,
            check=False,
        )
        lines += [
            f"=== python benchmarks/report.py --samples {args.report_samples}",
            *report.stdout.splitlines(),
        ]
    return lines


def print_targets(args: argparse.Namespace, ratios: dict[str, Any], cached: list[float]) -> None:
    """The rows of issues 22 and 33's target table measured as ratios in this run."""
    for pairing, found in ratios.items():
        client, baseline = pairing.split(" / ")
        print()
        print(
            f"target table, {'this checkout' if client == 'cigeval' else client} vs {baseline} "
            "(ratios measured in this run; medians of the round pairs)"
        )
        cpu = {k: statistics.median(v) for k, v in found["cpu"].items()}
        speed = {k: statistics.median(v) for k, v in found["throughput"].items()}
        memory = {k: statistics.median(v) for k, v in found["memory"].items() if k[1] >= 16}
        print("| figure | measured | target |")
        print("|---|---|---|")
        print(
            f"| client CPU per call, {args.size}², vs {baseline} | "
            f"{statistics.median(cpu.values()):.2f}× (every C and latency: "
            f"{min(cpu.values()):.2f}–{max(cpu.values()):.2f}×) | ≤ 0.8× |"
        )
        print(
            f"| throughput vs {baseline}, every C | {min(speed.values()):.2f}–"
            f"{max(speed.values()):.2f}× | ≥ 1.0× |"
        )
        if memory:
            print(
                f"| peak memory per sample in flight vs {baseline} (C ≥ 16) | "
                f"{min(memory.values()):.2f}–{max(memory.values()):.2f}× | ≤ 1.0× |"
            )
        if cached and client == "cigeval" and baseline == BASELINES[args.baselines[0]]:
            print(
                f"| fully cached re-run, CPU vs first run | {statistics.median(cached):.2f}× "
                f"({min(cached):.2f}–{max(cached):.2f}×) | ≤ 0.25× |"
            )


def _in_a_row(plan: dict[str, Any]) -> float:
    """The sample set's stages per sample (calls in a row), on average."""
    return statistics.mean(len(sample["stages"]) for sample in plan["samples"].values())


def _stage_counts(plan: dict[str, Any]) -> str:
    """The sample set's calls in a row and calls per sample, on average, in words."""
    found = list(plan["samples"].values())
    calls = statistics.mean(sum(map(len, sample["stages"])) for sample in found)
    return f"{_in_a_row(plan):.2f} in a row, {calls:.2f} calls"


def compare_checkouts(given: list[str]) -> dict[str, Path]:
    """``--compare``'s checkouts by label: ``LABEL=PATH``, or ``before`` / ``other-N``."""
    found: dict[str, Path] = {}
    for number, item in enumerate(given, start=1):
        label, _, path = item.rpartition("=")
        if not label:
            label = "before" if len(given) == 1 else f"other-{number}"
        found[label] = Path(path).resolve()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="alternated rounds (>= 3)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 128])
    parser.add_argument("--latency", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--size", type=int, default=512, help="side of the images")
    parser.add_argument(
        "--baselines",
        nargs="+",
        choices=list(BASELINES),
        default=list(BASELINES),
        help="the minimal client's baselines: files (each file's bytes as they are) and "
        "jpeg75 (decode + JPEG q75 + base64 per call, as the official client)",
    )
    parser.add_argument(
        "--image-encoding",
        choices=["jpeg75", "original"],
        default=None,
        help="how both clients send images (default: cigeval's default); a --checkout or "
        "--compare older than the setting always sends original files",
    )
    parser.add_argument(
        "--reply-parsing",
        choices=["official", "strict"],
        default=None,
        help="how every cigeval reads replies (default: its method's, official under paper: "
        "sub-questions asked one after another, as the minimal client then asks them too); a "
        "checkout older than the setting reads them strictly",
    )
    parser.add_argument(
        "--checkout",
        type=Path,
        default=ROOT,
        help="the cigeval checkout measured (default: this one)",
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        default=[],
        metavar="[LABEL=]CHECKOUT",
        help="other checkouts, measured alternately with the rest (labelled 'before' when "
        "only one is given without a label)",
    )
    parser.add_argument(
        "--all", action="store_true", help="add the other rows: cached re-run, tools, CLI start-up"
    )
    parser.add_argument(
        "--report-samples",
        type=int,
        default=0,
        help="with --all: also build a report of this many samples (10000)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--samples", help=argparse.SUPPRESS)
    parser.add_argument("--warm", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(args.checkout.resolve()))
    args.compare = compare_checkouts(args.compare)
    if args.worker:
        args.client = args.worker
        args.concurrency = args.concurrency[0]
        worker(args)
        return
    folder = Path(tempfile.mkdtemp(prefix="cigeval-client-overhead-"))
    started = time.perf_counter()
    count = max(samples_for(max(args.concurrency)), 64)
    samples_path = write_sample_set(folder / "set", count, args.size)
    warm_path = write_sample_set(folder / "warm", 7, args.size, first=count)
    plan = capture_calls(samples_path, args.image_encoding, args.reply_parsing)
    warm = capture_calls(warm_path, args.image_encoding, args.reply_parsing)
    plan["samples"].update(warm["samples"])
    plan_path = folder / "plan.json"
    plan_path.write_text(json.dumps(plan))
    print(
        f"sample set: {count} samples, made in {time.perf_counter() - started:.0f} s; "
        "server: fake_server.py --light",
        flush=True,
    )
    checkouts = {"cigeval": args.checkout.resolve(), "cigeval-cached": args.checkout.resolve()}
    checkouts.update(args.compare)
    paths = {
        "samples": samples_path,
        "warm": warm_path,
        "plan": plan_path,
        "encoding": plan["encoding"],
        "reply_parsing": plan["reply_parsing"],
        "stages": _stage_counts(plan),
        "in_a_row": _in_a_row(plan),
        "checkouts": checkouts,
    }
    ratios = compare(args, paths)
    cached = cached_rerun(args, paths) if args.all else []
    print_targets(args, ratios, cached)
    if args.all:
        print()
        print("\n".join(other_rows(args)))
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
