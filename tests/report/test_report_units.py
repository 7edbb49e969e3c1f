"""The report's parts without a browser: escaping, statistics, leaderboard, problems, cards."""

from __future__ import annotations

import hashlib
import json
import math
import re

import pytest
from PIL import Image

import cigeval
from cigeval.cli import main
from cigeval.report import bootstrap_mean_interval, build_report, report_html
from cigeval.report.cards import image_order
from cigeval.report.stats import human_agreement, judge_agreement, leaderboard
from cigeval.score import Score, SubScore

EVIL = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"


def record(sid, model, score, task="text_guided_ig", **extra):
    base = {
        "id": sid,
        "task": task,
        "status": "ok" if score is not None else "error",
        "score": score,
        "sub_scores": [],
        "model": model,
        "judge": "scripted:j",
    }
    if score is None:
        base["error"] = "ParseError: no score"
    return {**base, **extra}


def test_bootstrap_interval_contains_the_mean_and_is_seeded():
    values = [0.1, 0.4, 0.5, 0.7, 0.9, 0.3, 0.6]
    low, high = bootstrap_mean_interval(values, 500, 0.95, seed=1)
    mean = sum(values) / len(values)
    assert low < mean < high
    assert (low, high) == bootstrap_mean_interval(values, 500, 0.95, seed=1)
    assert (low, high) != bootstrap_mean_interval(values, 500, 0.95, seed=2)
    narrow = bootstrap_mean_interval(values, 500, 0.5, seed=1)
    assert low <= narrow[0] <= narrow[1] <= high
    assert bootstrap_mean_interval([0.4], 100) == (0.4, 0.4)
    assert all(math.isnan(v) for v in bootstrap_mean_interval([], 100))


def test_a_mean_of_few_distinct_scores_is_resampled_as_counts_with_the_same_interval(
    monkeypatch,
):
    import numpy as np

    import cigeval.stats as stats

    values = (np.random.default_rng(3).integers(0, 11, 500) / 10).tolist()
    counted = stats.bootstrap_mean_interval(values, 4000, seed=1)
    monkeypatch.setattr(stats, "_COUNTS_FROM", 10**9)  # every resample drawn index by index
    indexed = stats.bootstrap_mean_interval(values, 4000, seed=1)
    assert counted != indexed  # two samplers of one distribution
    assert counted == pytest.approx(indexed, abs=0.005)
    half_width = 1.96 * np.std(values) / np.sqrt(len(values))  # the normal approximation
    assert counted == pytest.approx((np.mean(values) - half_width, np.mean(values) + half_width),
                                    abs=0.005)  # fmt: skip


def test_leaderboard_ranks_two_generators_with_counts_and_errors():
    records = [record(f"a{i}", "A", 0.8 + 0.01 * i) for i in range(5)]
    records += [record(f"b{i}", "B", 0.2 + 0.01 * i, task="text_guided_ie") for i in range(4)]
    records += [record("b-err", "B", None), record("nomodel", None, 0.5)]
    run = cigeval.report.run_from_scores(records)
    board = leaderboard(run, n_boot=200, seed=0)
    # records naming no generator are no competitor: their own row, never ranked (issue 24)
    assert board.ranking == ["A", "B"] and board.unranked == ["(no model)"]
    assert [board.rank(g) for g in board.ranking] == [1, 2]
    assert board.rank("(no model)") is None and board.overall["(no model)"].n == 1
    html = build_report(records, n_boot=50).fragment()
    rows = [r for r in html.split("<tr>") if "</td>" in r and 'class="num"' in r]
    assert [r.split("</td>")[0:2] for r in rows[:3]] == [
        ["<td>1", "<td>A"],
        ["<td>2", "<td>B"],
        ["<td>–", "<td>(no model)"],
    ]
    a, b = board.overall["A"], board.overall["B"]
    assert a.n == 5 and a.errors == 0 and a.mean == pytest.approx(0.82)
    assert a.low is not None and a.high is not None and a.low <= a.mean <= a.high
    assert b.n == 4 and b.errors == 1
    assert board.by_task["B"]["text_guided_ig"].n == 0
    assert board.by_task["B"]["text_guided_ig"].errors == 1
    assert board.by_task["B"]["text_guided_ie"].mean == pytest.approx(0.215)
    assert "text_guided_ie" not in board.by_task["A"]


def test_human_correlation_and_judge_agreement():
    first = [record(f"s{i}", "A", i / 10, human=i / 10 + 0.05) for i in range(8)]
    second = [record(f"s{i}", "A", 1 - i / 10) for i in range(8)]
    run_a = cigeval.report.run_from_scores(first, label="a")
    run_b = cigeval.report.run_from_scores(second, label="b")
    (agreement,) = human_agreement(run_a, n_boot=100)
    assert agreement.n == 8 and agreement.spearman == pytest.approx(1.0)
    assert human_agreement(run_b) == []
    both = judge_agreement(run_a, run_b)
    assert both.n == 8 and both.spearman == pytest.approx(-1.0)
    assert both.mean_abs_diff == pytest.approx(sum(abs(2 * i / 10 - 1) for i in range(8)) / 8)


def test_missing_images_and_unreadable_lines_are_listed_not_fatal(tmp_path):
    image = tmp_path / "out.png"
    Image.new("RGB", (40, 30), "red").save(image)
    good = record("good", "A", 0.5, input_images={"output": "a" * 64},
                  image_files={"a" * 64: image.name})  # fmt: skip
    gone = record("gone", "A", 0.4, input_images={"output": "b" * 64, "source": "c" * 64},
                  image_files={"b" * 64: str(tmp_path / "deleted.png")})  # fmt: skip
    results = tmp_path / "results.jsonl"
    lines = [json.dumps(good), "\xff not utf8", json.dumps(gone), '{"no": "id"}']
    results.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    report = build_report([results], n_boot=50)
    page = report.to_html()
    assert [r["id"] for r in report.runs[0].records] == ["good", "gone"]
    assert "a" * 64 in report.catalog.thumbnails  # a path relative to the results file
    reasons = {(m.sample_id, m.role): m.reason for m in report.catalog.missing}
    assert reasons[("gone", "output")].startswith("file not found")
    assert reasons[("gone", "source")] == "the record names no file for it"
    assert "line 4: not a results record" in page and "line 2: not" in page
    assert "sample &#39;gone&#39;, image output" in page
    data = json.loads(page.split('id="cg-data">')[1].split("</script>")[0])
    gone_card = next(c["html"] for c in data["samples"] if c["id"] == "gone")
    assert gone_card.count('class="cg-missing"') == 2 and "data-img" not in gone_card
    report.early_cards = None  # cards rendered after the thumbnails rather than during: the same
    assert report.to_html().split('id="cg-data">')[1] == page.split('id="cg-data">')[1]


def test_an_ok_record_without_a_number_is_listed_and_counted_as_an_error(tmp_path):
    results = tmp_path / "results.jsonl"
    rows = [record("fine", "A", 0.5), record("words", "A", 0.5), record("nan", "A", 0.5)]
    rows[1]["score"] = "high"
    rows[2]["score"] = float("nan")
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = build_report([results], n_boot=50)
    assert len(report.problems) == 2
    assert "sample 'words' says ok but its score 'high' is not a finite" in report.problems[0]
    assert "sample 'nan'" in report.problems[1]
    overall = report.leaderboards[0].overall["A"]
    assert (overall.n, overall.errors, overall.mean) == (1, 2, 0.5)
    assert "sample &#39;words&#39; says ok" in report.to_html()


def test_cards_escape_model_text_everywhere():
    hostile = record(
        EVIL, EVIL, 0.5, task=EVIL, human={"O": EVIL},
        conditions={"prompt": EVIL}, error=EVIL,
        sub_scores=[{"question_id": EVIL, "question": EVIL, "score": 5, "reasoning": EVIL,
                     "tool": EVIL, "tool_query": EVIL, "tool_output": EVIL, "note": EVIL,
                     "error": EVIL, "tool_image_ids": {EVIL: "d" * 64}}],
    )  # fmt: skip
    fragment = report_html([hostile], n_boot=10)
    assert "<script>" not in fragment and "<img src=x" not in fragment
    assert fragment.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 6
    page = build_report([hostile], n_boot=10).to_html()
    assert page.count("<script") == 2  # the data block and the page's own script


def test_image_order_follows_the_task_with_the_output_last():
    assert image_order("mask_guided_ie", ["output", "mask", "source"]) == [
        "source", "mask", "output"
    ]  # fmt: skip
    assert image_order("multi_concept_ic", ["output", "subject_2", "subject_1"]) == [
        "subject_1", "subject_2", "output"
    ]  # fmt: skip
    assert image_order("no_such_task", ["output", "b", "a"]) == ["a", "b", "output"]


def _score_with_images() -> Score:
    sub = SubScore(question_id="edit_success", question="Was it edited?", score=6,
                   reasoning=EVIL, tool="Difference", tool_query="the car",
                   tool_output="2 regions differ", tool_image_ids={"output": "e" * 64})  # fmt: skip
    sub._tool_images["output"] = Image.new("RGB", (20, 20), "blue")
    score = Score(id="s1", task="text_guided_ie", status="ok", value=0.6, sub_scores=[sub],
                  judge="openai:gpt-x", input_images={"output": "1" * 64, "source": "2" * 64},
                  passthrough={"model": "GenA",
                               "conditions": {"instruction": "make it red"}})  # fmt: skip
    score._images.update({"output": Image.new("RGB", (30, 30), "red"),
                          "source": Image.new("RGB", (30, 30), "white")})  # fmt: skip
    return score


def test_score_to_html_shows_condition_judge_tool_text_and_images_in_order():
    card = _score_with_images().to_html()
    assert card == _score_with_images()._repr_html_()
    assert "make it red" in card and "openai:gpt-x" in card and "GenA" in card
    assert "2 regions differ" in card and "query: the card" not in card
    assert "query: the car" in card
    assert card.index(">source</figure>") < card.index(">output</figure>")
    assert card.count("data:image/png;base64,") == 3  # source, output, the tool's image
    assert "<script>window" not in card


def test_report_html_of_scores_and_of_a_dataframe():
    scores = [_score_with_images()]
    fragment = cigeval.report_html(scores, n_boot=20)
    assert "GenA" in fragment and "data:image/png;base64," in fragment and "<script" not in fragment
    frame = cigeval.to_frame(scores)
    from_frame = cigeval.report_html(frame, n_boot=20)
    assert "GenA" in from_frame and "Was it edited?" not in from_frame
    assert "edit_success" in from_frame and "0.600" in from_frame


def test_report_statistics_equal_scipys_without_loading_it():
    import numpy as np
    from scipy import stats

    from cigeval.stats import bootstrap_ci, bootstrap_indices, correlation, percentile_interval

    rng = np.random.default_rng(3)
    judged = rng.integers(0, 11, 60) / 10  # ties, as 0-10 scores have
    humans = np.clip(judged + rng.normal(0, 0.2, 60), 0, 1).round(1)
    assert correlation(humans, judged, "spearman") == pytest.approx(
        stats.spearmanr(humans, judged).statistic, abs=1e-12
    )
    assert correlation(humans, judged, "pearson") == pytest.approx(
        stats.pearsonr(humans, judged).statistic, abs=1e-12
    )
    # the interval is the percentile interval of scipy's Spearman over the same draws
    draws = bootstrap_indices(60, 500, np.random.default_rng(7))
    with np.errstate(invalid="ignore"):
        rhos = [stats.spearmanr(humans[d], judged[d]).statistic for d in draws]
    assert bootstrap_ci(humans, judged, "spearman", 500, 0.9, 7) == pytest.approx(
        percentile_interval(np.array(rhos), 0.9), abs=1e-12
    )
    assert math.isnan(correlation(np.array([0.5] * 3), np.array([0.1, 0.2, 0.3]), "spearman"))


def test_building_a_report_loads_neither_scipy_nor_pandas_nor_the_judges_code(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "r.jsonl"
    records = [record(f"s{i}", "AB"[i % 2], i / 20, human=i / 20) for i in range(20)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code = (
        "import sys\nfrom cigeval.cli import main\n"
        f"assert main(['report', {str(path)!r}, '--out', {str(tmp_path / 'r.html')!r}]) == 0\n"
        "print(*(m in sys.modules for m in ('scipy', 'pandas', 'asyncio', 'pydantic', "
        "'langgraph', 'openai')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["False"] * 6, done.stderr


def test_thumbnails_from_worker_processes_equal_the_threads_ones(tmp_path, monkeypatch):
    import cigeval.report.images as images

    files = {}
    for n in range(6):
        path = tmp_path / f"i{n}.png"
        Image.effect_noise((80, 60), 40 + n).convert("RGB").save(path)
        files[f"{n:064x}"] = str(path)
    (tmp_path / "bad.png").write_bytes(b"not an image")
    files["f" * 64] = str(tmp_path / "bad.png")
    files["e" * 64] = str(tmp_path / "gone.png")

    def catalog():
        made = images.ImageCatalog(side=32)
        for sha in files:
            made.request(sha, sample_id=sha[:4], role="output", files=files, base_dir=None)
        return made

    monkeypatch.setattr(images.os, "cpu_count", lambda: 2)
    threads = catalog()
    threads.resolve()
    monkeypatch.setattr(images, "PROCESSES_FROM", 2)
    ran: list[bool] = []
    in_processes = images.ImageCatalog._in_processes

    def watched(self, batch, workers):
        ran.append(in_processes(self, batch, workers))
        return ran[-1]

    monkeypatch.setattr(images.ImageCatalog, "_in_processes", watched)
    processes = catalog()
    processes.resolve()
    assert ran == [True]  # the worker processes made them
    assert len(processes.thumbnails) == 6
    assert processes.thumbnails == threads.thumbnails
    assert [(m.sha256, m.reason.split(" (")[0]) for m in processes.missing] == [
        ("e" * 64, f"file not found: {tmp_path / 'gone.png'}"),
        ("f" * 64, "cannot be read"),
    ]
    assert [str(m) for m in processes.missing] == [str(m) for m in threads.missing]


def _decoded(uri):
    import base64
    import io

    mime, data = uri.split(";base64,")
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return mime.removeprefix("data:"), image.convert("RGB")


@pytest.mark.parametrize(
    ("size", "suffix"), [((512, 384), ".jpg"), ((1000, 260), ".png"), ((250, 250), ".jpg")]
)
def test_a_thumbnail_fits_the_side_and_looks_like_the_image(tmp_path, size, suffix):
    """Whatever the path (JPEG decoded at a reduced size, whole-factor reduction, the bilinear
    rest), the thumbnail has the fitted size and is close to a careful Lanczos downscale."""
    import numpy as np

    from cigeval.report.images import _read_thumbnail

    width, height = size
    ramp = np.linspace(0, 255, width, dtype=np.float32)[None, :].repeat(height, 0)
    rows = np.linspace(0, 255, height, dtype=np.float32)[:, None].repeat(width, 1)
    pixels = np.stack([ramp, rows, (ramp + rows) / 2], axis=-1).astype(np.uint8)
    original = Image.fromarray(pixels)
    original.paste((200, 30, 30), (width // 4, height // 4, width // 2, height // 2))
    path = tmp_path / f"picture{suffix}"
    original.save(path, quality=95)
    mime, thumb = _decoded(_read_thumbnail(path, 192)[0])
    scale = 192 / max(size)
    assert thumb.size == (round(width * scale), round(height * scale))
    assert mime == "image/jpeg"  # a photograph-like picture: many colours
    with Image.open(path) as reference:
        expected = np.asarray(reference.convert("RGB").resize(thumb.size, Image.LANCZOS))
    difference = np.abs(np.asarray(thumb, dtype=float) - expected)
    assert difference.mean() < 3.0, difference.mean()


def test_a_mask_stays_a_sharp_png_and_a_small_image_keeps_its_size(tmp_path):
    from cigeval.report.images import thumbnail_data_uri

    mask = Image.new("L", (400, 300), 0)
    mask.paste(255, (100, 100, 300, 200))
    mime, thumb = _decoded(thumbnail_data_uri(mask, 192))
    assert mime == "image/png" and thumb.size == (192, 144)
    assert thumb.getpixel((96, 72)) == (255, 255, 255) and thumb.getpixel((5, 5)) == (0, 0, 0)
    assert mask.size == (400, 300)  # the caller's image is not changed
    drawing = Image.new("RGBA", (60, 40), (0, 128, 255, 255))
    mime, thumb = _decoded(thumbnail_data_uri(drawing, 192))
    assert mime == "image/png" and thumb.size == (60, 40)
    assert thumb.getpixel((30, 20)) == (0, 128, 255)


def test_palette_bit_and_16_bit_images_get_thumbnails_that_keep_their_look(tmp_path):
    import numpy as np

    from cigeval.report.images import _read_thumbnail

    drawing = Image.new("P", (400, 200), 0)
    drawing.putpalette([255, 255, 255, 200, 30, 30, 20, 90, 200] + [0] * 759)
    drawing.paste(1, (0, 0, 200, 200))
    drawing.paste(2, (300, 50, 400, 150))
    bits = Image.new("1", (300, 300), 0)
    bits.paste(1, (150, 0, 300, 300))
    ramp = np.linspace(0, 65535, 640)[None, :].repeat(480, 0).astype(np.uint16)
    images = {"drawing.png": drawing, "bits.png": bits, "depth.png": Image.fromarray(ramp)}
    thumbs = {}
    for name, image in images.items():
        image.save(tmp_path / name)
        thumbs[name] = _decoded(_read_thumbnail(tmp_path / name, 192)[0])
    mime, thumb = thumbs["drawing.png"]  # palette colours are not blended: a sharp PNG
    assert mime == "image/png" and thumb.size == (192, 96)
    assert {c for _, c in thumb.getcolors()} == {(255, 255, 255), (200, 30, 30), (20, 90, 200)}
    mime, thumb = thumbs["bits.png"]
    assert mime == "image/png" and thumb.size == (192, 192)
    assert {c for _, c in thumb.getcolors()} == {(0, 0, 0), (255, 255, 255)}
    mime, thumb = thumbs["depth.png"]  # 16-bit: shown by its high byte, not clipped to white
    row = np.asarray(thumb.convert("L"))[0]
    assert thumb.size == (192, 144) and row[0] < 3 and 120 < row[96] < 136 and row[-1] > 252


def _judge_view_files(folder):
    """Image files whose pixels the judge is not shown as they are stored: (role, path)."""
    import numpy as np
    from PIL.Image import Exif

    ramp = np.linspace(0, 255, 240, dtype=np.uint8)[None, :].repeat(160, 0)
    photo = Image.fromarray(np.stack([ramp, ramp[:, ::-1], ramp // 2], axis=-1))
    photo.paste((220, 40, 40), (0, 0, 60, 160))
    exif = Exif()
    exif[0x0112] = 6  # the camera was turned: shown rotated by 90 degrees
    photo.save(folder / "turned.jpg", exif=exif, quality=95)
    glass = photo.convert("RGBA")
    glass.putalpha(Image.fromarray(np.where(ramp > 128, 255, 0).astype(np.uint8)))
    glass.save(folder / "glass.png")  # transparent on its left: white, as the judge sees it
    depth = (np.linspace(1000, 3000, 240)[None, :].repeat(160, 0)).astype(np.uint16)
    Image.fromarray(depth).save(folder / "depth.png")  # 16-bit, rescaled min to max
    cut = Image.new("RGBA", (240, 160), (255, 255, 255, 0))
    cut.paste((255, 255, 255, 255), (60, 40, 180, 120))
    cut.save(folder / "cut.png")  # an edit mask drawn by its alpha channel
    return [("output", folder / "turned.jpg"), ("output", folder / "glass.png"),
            ("output", folder / "depth.png"), ("mask", folder / "cut.png")]  # fmt: skip


def test_a_thumbnail_shows_a_file_as_the_judge_is_shown_it(tmp_path):
    import numpy as np

    from cigeval.images import load_image

    files, records = _judge_view_files(tmp_path), []
    for n, (role, path) in enumerate(files):
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        rec = record(f"s{n}", "A", 0.5, task="mask_guided_ie", input_images={role: sha})
        records.append({**rec, "image_files": {sha: str(path)}})
    report = build_report(records, n_boot=10, thumbnail_cache=False)
    assert not report.catalog.missing
    for n, (role, path) in enumerate(files):
        seen = load_image(path, role=role, mask=role == "mask").pixels()
        sha = records[n]["input_images"][role]
        _, thumb = _decoded(report.catalog.thumbnails[sha])
        expected = np.asarray(seen.resize(thumb.size, Image.LANCZOS), dtype=float)
        difference = np.abs(np.asarray(thumb, dtype=float) - expected).mean()
        assert difference < 4.0, (path.name, difference)
        inline = cigeval.report.cards.inline_image_tag(records[n], {})(sha, role).src
        _, shown = _decoded(inline)  # the Jupyter card reads the file the same way
        expected = np.asarray(seen.resize(shown.size, Image.LANCZOS), dtype=float)
        assert np.abs(np.asarray(shown, dtype=float) - expected).mean() < 4.0, path.name


def _photo(path, seed):
    Image.effect_noise((90, 70), 30 + seed).convert("RGB").save(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _photo_records(folder, count):
    out = []
    for n in range(count):
        sha = _photo(folder / f"out{n}.png", n)
        rec = record(f"s{n}", "AB"[n % 2], 0.1 * (n % 10), input_images={"output": sha})
        out.append({**rec, "image_files": {sha: str(folder / f"out{n}.png")}})
    return out


def _cached(folder):
    """How many thumbnails the cache in ``folder`` holds (0 when it has no index)."""
    import sqlite3

    index = folder / "cache.sqlite3"
    if not index.exists():
        return 0
    with sqlite3.connect(index) as connection:
        return connection.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def test_thumbnail_cache_hit_changed_image_and_off(tmp_path, monkeypatch):
    import cigeval.report.images as images

    records = _photo_records(tmp_path, 3)
    cache = tmp_path / "cache"
    decoded: list[object] = []
    opened = images.Image.open
    monkeypatch.setattr(images.Image, "open", lambda f: decoded.append(f) or opened(f))

    first = build_report(records, n_boot=10, thumbnail_cache=cache).catalog.thumbnails
    assert len(decoded) == 3 and _cached(cache) == 3
    again = build_report(records, n_boot=10, thumbnail_cache=cache).catalog.thumbnails
    assert len(decoded) == 3 and again == first  # every one from the cache
    # a file changed since the run (the record's sha256 is now stale): made anew, from it
    _photo(tmp_path / "out1.png", 99)
    changed = build_report(records, n_boot=10, thumbnail_cache=cache).catalog.thumbnails
    assert len(decoded) == 4 and _cached(cache) == 4
    assert [changed[sha] == first[sha] for sha in first] == [True, False, True]
    off = build_report(records, n_boot=10, thumbnail_cache=False).catalog.thumbnails
    assert len(decoded) == 7 and off == changed and _cached(cache) == 4
    # the CLI: on by default in $CIGEVAL_CACHE_DIR/thumbnails, off with --no-thumbnail-cache
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "user-cache"))
    argv = ["report", str(results), "-o", str(tmp_path / "r.html"), "--bootstrap", "10"]
    assert main([*argv, "--no-thumbnail-cache"]) == 0
    assert len(decoded) == 10 and not (tmp_path / "user-cache").exists()
    assert main(argv) == 0
    assert len(decoded) == 13 and _cached(tmp_path / "user-cache" / "thumbnails") == 3


def test_a_thumbnail_cache_that_cannot_be_used_only_costs_time(tmp_path):
    records = _photo_records(tmp_path, 3)
    shown = build_report(records, n_boot=10, thumbnail_cache=False).catalog.thumbnails
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cache.sqlite3").write_bytes(b"not a database" * 100)
    for cache in (in_the_way, broken):
        for _ in range(2):  # made, and made again: nothing could be kept
            report = build_report(records, n_boot=10, thumbnail_cache=cache)
            assert report.catalog.thumbnails == shown and not report.catalog.missing
    assert in_the_way.read_text() == "not a folder"


def test_a_report_again_starts_no_worker_for_cached_thumbnails(tmp_path, monkeypatch):
    import cigeval.report.images as images

    more = _photo_records(tmp_path, 8)
    records = more[:6]
    cache = tmp_path / "cache"
    monkeypatch.setattr(images, "PROCESSES_FROM", 3)
    started: list[int] = []
    in_processes = images.ImageCatalog._in_processes
    watched = lambda self, files, n: started.append(len(files)) or in_processes(self, files, n)  # noqa: E731
    monkeypatch.setattr(images.ImageCatalog, "_in_processes", watched)
    first = build_report(records, n_boot=10, workers=2, thumbnail_cache=cache).catalog.thumbnails
    assert started == [6] and len(first) == 6  # the first report: 6 files for the workers
    decoded: list[object] = []
    opened = images.Image.open
    monkeypatch.setattr(images.Image, "open", lambda f: decoded.append(f) or opened(f))
    again = build_report(records, n_boot=10, workers=2, thumbnail_cache=cache).catalog.thumbnails
    assert started == [6] and decoded == [] and again == first  # all read from the cache
    # two samples added since: only theirs are made, by threads (fewer than PROCESSES_FROM)
    grown = build_report(more, n_boot=10, workers=2, thumbnail_cache=cache).catalog.thumbnails
    assert started == [6] and len(decoded) == 2 and len(grown) == 8
    assert {sha: grown[sha] for sha in first} == first


def test_the_page_is_the_same_with_one_worker_or_several_processes(tmp_path, monkeypatch):
    import cigeval.report.images as images

    records = _photo_records(tmp_path, 12)
    records[5]["image_files"] = {}  # one image with no file: listed the same way by both
    monkeypatch.setattr(images, "PROCESSES_FROM", 2)
    monkeypatch.setattr(images, "_BATCH", 3)
    ran: list[bool] = []
    in_processes = images.ImageCatalog._in_processes
    watched = lambda self, *args: ran.append(in_processes(self, *args)) or ran[-1]  # noqa: E731
    monkeypatch.setattr(images.ImageCatalog, "_in_processes", watched)
    stamp = re.compile(r"written \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    pages = []
    for workers in (1, 3):
        report = build_report(records, n_boot=20, workers=workers, thumbnail_cache=False)
        assert len(report.catalog.thumbnails) == 11 and len(report.catalog.missing) == 1
        pages.append(stamp.sub("", report.to_html()))
    assert ran == [True]  # the second page's thumbnails came from 3 worker processes
    assert pages[0] == pages[1]


def _bars(svg: str) -> int:
    return svg.count('class="cg-bar"')


def test_records_without_a_model_get_distributions_and_no_empty_axis():
    # issue 32: unranked records drew an empty leaderboard axis and distributions without bars
    tasks = ["text_guided_ig"] * 5 + ["text_guided_ie"] * 4
    records = [record(f"s{i}", None, i / 10, task=task) for i, task in enumerate(tasks)]
    records.append(record("f1", None, 3.0, rubric="five", score_range=[1, 5]))
    html = build_report(records, n_boot=20).fragment()
    # one box per rubric (records of other settings are never pooled), each with its plots
    boxes = html.split("<h3>Score distributions</h3>")[1:]
    assert len(boxes) == 2
    plots = [box.split("</svg>")[0] for box in boxes]
    assert _bars(plots[0]) == 9 and "n=5" in plots[0] and "n=4" in plots[0]
    assert _bars(plots[1]) == 1 and "(no model)" in plots[1] and ">5</text>" in plots[1]
    svgs = [part.split("</svg>")[0] for part in html.split("<svg")[1:]]
    boards = [svg for svg in svgs if "mean score per generator" in svg]
    assert len(boards) == 2 and all("<circle" in b and "(no model)" in b for b in boards)
    assert "Compare" not in html  # no generator, so nothing to pair


def test_distributions_bin_over_the_rubrics_range():
    records = [record(f"s{i}", "A", v, rubric="five", score_range=[1, 5])
               for i, v in enumerate([1.0, 1.2, 5.0])]  # fmt: skip
    html = build_report(records, n_boot=20).fragment()
    plot = html.split("Score distributions</h3>")[1].split("</svg>")[0]
    assert _bars(plot) == 2 and "<title>1–1.4: 2</title>" in plot and "4.6–5: 1" in plot
    assert ">1</text>" in plot and ">5</text>" in plot  # the axis of the rubric's range


def test_the_compare_section_pairs_only_records_that_name_a_generator():
    # issue 32: "(no model)" rows of "no condition answered by both" around the one real row
    records = []
    for i in range(6):
        for model in ("GenA", "GenB", None):
            records.append(record(f"{model}-{i}", model, 0.1 * i + (0.1 if model == "GenB" else 0),
                                  conditions={"prompt": f"p{i}"}))  # fmt: skip
    records.append(record("lonely", "GenC", 0.5, conditions={"prompt": "nobody else"}))
    compare = build_report(records, n_boot=20).compare_html
    table = compare.split("cg-compare-table")[1].split("</table>")[0]
    assert "GenB" in table and "(no model)" not in table and "GenC" not in table
    assert "no condition answered by both" not in table
    assert "6 record(s) name no generator (no model field)" in compare
