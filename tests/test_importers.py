"""Generator benchmarks' output folders judged as they lie (``cigeval evaluate --from``):
GenEval's ``<idx>/samples/<n>.png`` + ``<idx>/metadata.jsonl`` and T2I-CompBench's
``samples/<prompt>_<index>.png``, with their tags kept for ``--group-by`` leaderboards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from cigeval.cli import main
from cigeval.errors import ConfigError
from cigeval.importers import folder_samples
from cigeval.results.record import group_of
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer

PROMPTS = [
    {"tag": "single_object", "include": [{"class": "bench", "count": 1}], "prompt": "a bench"},
    {"tag": "counting", "include": [{"class": "cow", "count": 2}], "prompt": "two cows"},
]


def _image(path: Path, colour: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (48, 40), colour).save(path)


def geneval_folder(root: Path, name: str, shade: int) -> Path:
    """A GenEval output folder: two prompts of two samples each, GenEval's grid.png, a stray
    file in samples/, and a third prompt folder whose metadata.jsonl is missing."""
    folder = root / name
    for index, metadata in enumerate(PROMPTS):
        prompt = folder / f"{index:05d}"
        prompt.mkdir(parents=True)
        (prompt / "metadata.jsonl").write_text(json.dumps(metadata) + "\n")
        _image(prompt / "grid.png", (0, 0, 0))
        for sample in range(2):
            _image(prompt / "samples" / f"{sample:04d}.png", (shade, 40 * sample, 90))
    (folder / "00000" / "samples" / "notes.txt").write_text("not an image")
    _image(folder / "00002" / "samples" / "0000.png", (9, 9, 9))
    return folder


def test_a_geneval_folder_is_judged_without_conversion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first = geneval_folder(tmp_path, "sdxl", 200)
    second = geneval_folder(tmp_path, "mine", 120)
    out = tmp_path / "runs" / "geneval.jsonl"
    with FakeOpenAIServer(rule_judge(default_score=6)) as server:
        argv = ["evaluate", "--from", "geneval", str(first), "--from", "geneval", str(second)]
        argv += ["--model", "openai:judge", "--base-url", server.base_url, "--out", str(out)]
        argv += ["--tools", "Difference,Scene Graph", "--quiet", "--group-by", "tag"]
        status = main(argv)
    err = capsys.readouterr().err
    assert status == 1  # the prompt folder without metadata.jsonl: its sample's error record
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(records) == 10
    ok = records["sdxl/00001/0001"]
    assert ok["status"] == "ok" and ok["task"] == "text_guided_ig" and ok["model"] == "sdxl"
    assert ok["conditions"] == {"prompt": "two cows"}
    assert ok["metadata"]["tag"] == "counting" and ok["metadata"]["sample"] == 1
    assert ok["metadata"]["include"] == [{"class": "cow", "count": 2}]
    broken = records["mine/00002/0000"]
    assert broken["status"] == "error" and "without metadata.jsonl" in broken["error"]
    assert "notes.txt" in err  # left out, as GenEval leaves it out, and said
    assert "mean scores by tag:" in err and "counting" in err and "single_object" in err
    # positions follow the folders: every generator's prompts and samples in order
    order = sorted(records, key=lambda i: records[i]["provenance"]["input_position"])
    assert order[:5] == [f"sdxl/0000{p}/000{s}" for p in (0, 1) for s in (0, 1)] + [
        "sdxl/00002/0000"
    ]
    # the two generators pair on their prompts, with no baseline named
    assert main(["compare", str(out), "--bootstrap", "20"]) == 0
    table = capsys.readouterr().out
    assert "baseline sdxl (the first generator" in table and "mine" in table
    # a leaderboard by GenEval's tag
    page = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(page), "--group-by", "tag"]) == 0
    html = page.read_text()
    assert "columns: tag" in html and "<th>counting</th>" in html
    assert "<th>single_object</th>" in html


def test_t2i_compbench_folders_per_category(tmp_path: Path) -> None:
    root = tmp_path / "sd15"
    _image(root / "color" / "samples" / "a green bench and a blue bowl_000001.png", (0, 90, 0))
    _image(root / "color" / "samples" / "a green bench and a blue bowl_000000.png", (0, 99, 0))
    _image(root / "spatial" / "samples" / "a horse on the right of a car_000003.png", (5, 5, 5))
    (root / "spatial" / "samples" / "README").write_text("left out")
    lines = folder_samples([("t2i-compbench", root)])
    samples = [line.sample for line in lines]
    assert all(s is not None for s in samples)
    assert [s.id for s in samples] == [
        "sd15/color/000000",
        "sd15/color/000001",
        "sd15/spatial/000003",
    ]
    horse = samples[2]
    assert horse.prompt == "a horse on the right of a car" and horse.task == "text_guided_ig"
    assert horse.metadata == {
        "benchmark": "t2i-compbench",
        "category": "spatial",
        "question_id": 3,
    }
    assert [line.line_number for line in lines] == [1, 2, 3]
    # a single samples/ folder: its parent names the category
    only = folder_samples([("t2i-compbench", root / "color" / "samples")], generator="sd")
    assert [line.sample.id for line in only if line.sample] == [
        "sd/color/000000",
        "sd/color/000001",
    ]


def test_folder_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown folder format 'imagenhub'"):
        folder_samples([("imagenhub", tmp_path)])
    with pytest.raises(ConfigError, match="geneval folder not found"):
        folder_samples([("geneval", tmp_path / "absent")])
    (tmp_path / "a" / "out").mkdir(parents=True)
    (tmp_path / "b" / "out").mkdir(parents=True)
    with pytest.raises(ConfigError, match="two folders of generator 'out'"):
        folder_samples([("geneval", tmp_path / "a" / "out"), ("geneval", tmp_path / "b" / "out")])


def test_group_of_reads_fields_metadata_and_dotted_paths() -> None:
    record = {
        "task": "text_guided_ig",
        "model": "sdxl",
        "metadata": {"tag": "counting", "seed": 3, "include": [{"class": "cow"}]},
        "conditions": {"prompt": "two cows"},
    }
    assert group_of(record, "model") == "sdxl"
    assert group_of(record, "seed") == "3" and group_of(record, "tag") == "counting"
    assert group_of(record, "metadata.include") == '[{"class": "cow"}]'
    assert group_of(record, "prompt") == "two cows"
    assert group_of(record, "category") == "(none)"
