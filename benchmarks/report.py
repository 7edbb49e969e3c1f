"""Size and load time of a `cigeval report` page of many samples.

    python benchmarks/report.py [--samples 10000] [--generators 8] [--judges 1] [--side 256]

Writes synthetic results records (seven tasks, several generators, one distinct output image
per sample, sources shared by the generators of one prompt, a tool image on the editing
tasks, realistic lengths of reasoning and tool text), builds the report with
``cigeval.report.write_report``, and prints the build time, the page size in MB and, when
``/usr/bin/chromium`` and playwright are installed, the time headless Chromium takes to load
the page from file:// until the first page of cards is shown, then to filter and to page.

    python benchmarks/report.py --versus-decoding --samples 2000 --side 512 [--format jpg]

times the ``cigeval report`` CLI (whole process) against reading the same records with json
and decoding each image once (issue 33), alternated ``--runs`` times: wall and CPU, medians.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cigeval.report import write_report
from cigeval.results import ResultsWriter
from cigeval.score import Score
from cigeval.tasks import get_task, task_names
from cigeval.testing.browser import CHROMIUM, CHROMIUM_ARGS

WORDS = ("the", "red", "car", "on", "a", "wet", "street", "beside", "small", "dog", "under",
         "soft", "evening", "light")  # fmt: skip


_BACKGROUNDS: dict[tuple[int, int], Image.Image] = {}


def _background(index: int, side: int) -> Image.Image:
    """One of 16 backgrounds: a tinted gradient with a little grain, made once."""
    key = (index % 16, side)
    if key not in _BACKGROUNDS:
        rng = random.Random(index % 16)
        gradient = Image.linear_gradient("L").resize((side, side))
        tints = [rng.randrange(256) for _ in "RGB"]
        channels = [gradient.point([(v + tint) // 2 for v in range(256)]) for tint in tints]
        grain = Image.effect_noise((side, side), 12).convert("RGB")
        _BACKGROUNDS[key] = Image.blend(Image.merge("RGB", channels), grain, 0.08)
    return _BACKGROUNDS[key]


def picture(path: Path, seed: int, side: int) -> str:
    """A picture made to compress roughly like a photograph (a gradient, soft shapes, a little
    grain); its sha256."""
    rng = random.Random(seed)
    image = _background(seed, side).copy()
    draw = ImageDraw.Draw(image)
    for _ in range(8):
        x, y = rng.randrange(side), rng.randrange(side)
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((x, y, x + side // 3, y + side // 4), fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(1.5))
    if path.suffix == ".png":
        image.save(path, compress_level=1)
    else:
        image.save(path, quality=90)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_results(
    folder: Path, samples: int, generators: int, judge: int, side: int, suffix: str = ".png"
) -> Path:
    """One results file of ``samples`` records (judge number ``judge``), written by cigeval's
    own :class:`~cigeval.results.ResultsWriter`; the images are ``suffix`` files."""
    rng = random.Random(judge)
    tasks = task_names()[:7]
    images = folder / "images"
    images.mkdir(exist_ok=True)
    path = folder / f"judge{judge}.jsonl"
    writer = ResultsWriter(path, resume=False)
    try:
        for n in range(samples):
            prompt_id, generator = divmod(n, generators)
            task = tasks[prompt_id % len(tasks)]
            spec = get_task(task)
            files: dict[str, str] = {}
            input_images: dict[str, str] = {}
            for role in spec.image_roles:
                if role == "subjects":
                    role = "subject_1"
                name = f"{role}-{n}" if role == "output" else f"{role}-p{prompt_id}"
                name += suffix
                seed = n if role == "output" else prompt_id * 31 + len(role)
                target = images / name
                if target.exists():
                    sha = hashlib.sha256(target.read_bytes()).hexdigest()
                else:
                    sha = picture(target, seed, side)
                input_images[role] = sha
                files[sha] = str(target)
            subs = []
            for question in spec.sub_questions:
                tool_ids: dict[str, str] = {}
                if "source" in input_images and question.id == "over_editing":
                    tool_ids = {"output": input_images["output"]}
                subs.append(
                    {
                        "question_id": question.id,
                        "question": question.question,
                        "score": float(rng.randint(0, 10)),
                        "scale": [0.0, 10.0],
                        "reasoning": sentence(rng, 60),
                        "tool": "Difference" if tool_ids else None,
                        "tool_query": None,
                        "tool_output": sentence(rng, 40) if tool_ids else None,
                        "tool_steps": [],
                        "note": None,
                        "error": None,
                        "judgments": None,
                        "tool_image_ids": tool_ids,
                    }
                )
            ok = rng.random() > 0.02
            record = {
                "id": f"p{prompt_id}-g{generator}",
                "task": task,
                "rubric": "cigeval",
                "status": "ok" if ok else "error",
                "score": min(s["score"] for s in subs) / 10 if ok else None,
                "sub_scores": subs if ok else [],
                "model": f"generator-{generator}",
                "human": round(rng.random(), 2),
                "conditions": {"prompt": sentence(rng, 12)},
                "input_images": input_images,
                "image_files": files,
                "judge": f"bench:judge-{judge}",
                "usage": {"calls": 3},
                "config": {"rubric": "cigeval", "aggregate": "min"},
                "provenance": {"cigeval_version": "bench", "judges": []},
            }
            if not ok:
                record["error"] = "ParseError: no score after 2 re-asks"
            writer.write(Score.from_record(record))
    finally:
        writer.close()
    return path


def load_in_chromium(page_path: Path) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright not installed: no load time (pip install playwright)")
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        page.goto(page_path.as_uri(), timeout=120_000)
        page.wait_for_selector("#cg-cards .cg-card", timeout=120_000)
        loaded = time.perf_counter() - started
        cards = page.locator("#cg-cards .cg-card").count()
        # in-page time of one interaction: the script's work plus the layout it causes
        timed = """([id, value]) => {
            const start = performance.now(), element = document.getElementById(id);
            if (value === null) element.click();
            else { element.value = value; element.dispatchEvent(new Event("change")); }
            document.body.offsetHeight;
            return performance.now() - start;
        }"""
        filtered = page.evaluate(timed, ["cg-status", "error"])
        errors = page.locator("#cg-cards .cg-card").count()
        page.evaluate(timed, ["cg-status", ""])
        sorted_ms = page.evaluate(timed, ["cg-sort", "score-asc"])
        paged = page.evaluate(timed, ["cg-next", None])
        browser.close()
    print(f"headless Chromium: load to first {cards} cards {loaded:.2f} s")
    print(f"  in page: filter by status {filtered:.0f} ms ({errors} cards), "
          f"sort by score {sorted_ms:.0f} ms, next page {paged:.0f} ms")  # fmt: skip


#: The baseline of issue 33: read the records with json, decode each image they name once.
BASELINE = """
import json, sys
from PIL import Image
paths = {}
with open(sys.argv[1], encoding="utf-8") as handle:
    for line in handle:
        paths.update(json.loads(line).get("image_files") or {})
for path in paths.values():
    with Image.open(path) as image:
        image.convert("RGB")
print(len(paths))
"""


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its child processes included) of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, capture_output=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def versus_decoding(args: argparse.Namespace) -> None:
    """``cigeval report`` (the CLI in a subprocess, start-up included) against the baseline
    (json + one Pillow decode per image, in a subprocess too), alternated, medians."""
    folder = Path(args.data or tempfile.mkdtemp(prefix="cigeval-report-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "judge1.jsonl"
    if not results.exists():
        started = time.perf_counter()
        write_results(folder, args.samples, args.generators, 1, args.side, f".{args.format}")
        print(f"records and images written in {time.perf_counter() - started:.1f} s")
    images = len(list((folder / "images").iterdir()))
    print(f"{args.samples} records ({results.stat().st_size / 1e6:.1f} MB), {images} distinct "
          f"{args.side}x{args.side} {args.format} images in {folder}")  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    baseline = [sys.executable, "-c", BASELINE, str(results)]
    report = [sys.executable, "-m", "cigeval", "report", str(results), "-o"]
    kinds = {"baseline": baseline, "report": report, "again": report}
    if args.before:
        kinds["before"] = report
    times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for run in range(args.runs):
        for kind, command in kinds.items():
            out = [str(folder / f"{kind}.html")] if kind != "baseline" else []
            code = {"PYTHONPATH": str(Path(args.before).resolve())} if kind == "before" else {}
            # an empty cache for each run's report and before (every image decoded); again
            # reads the one report filled
            cache = folder / f"cache-{run}-{'report' if kind == 'again' else kind}"
            code["CIGEVAL_CACHE_DIR"] = str(cache)
            times[kind].append(_timed([*command, *out], {**env, **code}))
        for cache in folder.glob(f"cache-{run}-*"):
            shutil.rmtree(cache)
        base = times["baseline"][-1][0]
        print(f"run {run + 1}: " + ", ".join(
            f"{kind} {wall:.2f} s wall ({wall / base:.2f}x), {cpu:.1f} s CPU"
            for kind, (wall, cpu) in ((k, v[-1]) for k, v in times.items())))  # fmt: skip
    medians = {k: [statistics.median(t[i] for t in v) for i in (0, 1)] for k, v in times.items()}
    base = medians["baseline"][0]
    print("medians: " + ", ".join(f"{kind} {wall:.2f} s wall ({wall / base:.2f}x), {cpu:.1f} s "
          "CPU" for kind, (wall, cpu) in medians.items()))  # fmt: skip
    print("(report: an empty thumbnail cache; again: the same report with the cache filled; "
          "before: the report of the --before checkout)")  # fmt: skip
    if not args.data:
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--generators", type=int, default=8)
    parser.add_argument("--judges", type=int, default=1)
    parser.add_argument("--side", type=int, default=256, help="side of the synthetic images")
    parser.add_argument(
        "--versus-decoding",
        action="store_true",
        help="time the `cigeval report` CLI against reading the records with json and "
        "decoding each image once (issue 33); use with --samples 2000 --side 512",
    )
    parser.add_argument("--runs", type=int, default=3, help="alternated runs of each side")
    parser.add_argument("--format", choices=("png", "jpg"), default="png", help="image files")
    parser.add_argument("--data", help="keep the records and images in this folder (reused)")
    parser.add_argument("--before", metavar="CHECKOUT", help="with --versus-decoding: also "
                        "time the report of another checkout of cigeval")  # fmt: skip
    args = parser.parse_args()
    if args.versus_decoding:
        versus_decoding(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        paths = [
            write_results(folder, args.samples, args.generators, j, args.side)
            for j in range(1, args.judges + 1)
        ]
        made = time.perf_counter() - started
        images = len(list((folder / "images").iterdir()))
        print(f"{args.samples} samples x {args.judges} judge(s), {images} image files "
              f"({args.side}px), written in {made:.1f} s")  # fmt: skip
        started = time.perf_counter()
        out = folder / "report.html"
        report = write_report(paths, out)
        built = time.perf_counter() - started
        size = out.stat().st_size / 1e6
        thumbs = report.catalog.total_bytes() / 1e6
        count = len(report.catalog.thumbnails)
        print(f"report written in {built:.1f} s: {size:.1f} MB "
              f"({count} thumbnails, {thumbs:.1f} MB of them)")  # fmt: skip
        if CHROMIUM.exists():
            load_in_chromium(out)
        else:
            print(f"{CHROMIUM} not found: no load time (bash scripts/setup_test.sh installs it)")


if __name__ == "__main__":
    main()
