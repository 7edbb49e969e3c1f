"""ImagenHub samples end to end: write samples, judge them over HTTP, correlate with people."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from cigeval.cli import main
from cigeval.meta import load_human_ratings
from cigeval.meta.imagenhub_samples import imagenhub_samples, sample_for
from cigeval.testing import request_text, rule_judge
from tests.openai_server import FakeOpenAIServer

TASK, FOLDER = "subject_driven_ie", "ImagenHub_Subject-Driven_IE"
PER_MODEL = 15


def test_every_rated_image_gets_one_sample_with_the_right_inputs():
    samples = list(imagenhub_samples("/nowhere"))
    assert len(samples) == 4801
    assert len({s["id"] for s in samples}) == 4801
    by_task = {s["task"]: s for s in samples}
    sdie = by_task["subject_driven_ie"]
    assert sdie["images"]["source"].endswith(f"{FOLDER}/input/{sdie['metadata']['uid']}")
    assert sdie["images"]["subject"].endswith(f"{FOLDER}/token/{sdie['metadata']['uid']}")
    assert sdie["subject"] and set(sdie["human"]) == {"SC", "PQ", "O"}
    assert by_task["control_guided_ig"]["control_type"] in {
        "canny",
        "hed",
        "depth",
        "openpose",
        "seg",
        "scribble",
        "mlsd",
        "grayscale",
        "pose",
        "normal",
    }
    assert "source" not in by_task["multi_concept_ic"]["images"]
    assert by_task["text_guided_ig"]["images"].keys() == {"output"}


def museum_with_brightness_coded_outputs(root: Path) -> dict[str, float]:
    """Images for the first PER_MODEL samples of each generator of TASK; each output's grey
    level encodes its human SC, so a judge reading brightness agrees with people."""
    human = load_human_ratings(tasks=[TASK])
    made: dict[str, float] = {}
    for model in sorted(set(human.index.get_level_values("model"))):
        rows = human.xs(model, level="model").xs(TASK, level="task").head(PER_MODEL)
        for uid, row in rows.iterrows():
            sample = sample_for(TASK, model, str(uid), root)
            for role, path in sample["images"].items():
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                level = round(255 * float(row["SC"])) if role == "output" else 128
                Image.new("RGB", (16, 16), (level, level, level)).save(path, format="JPEG")
            made[sample["id"]] = float(row["SC"])
    return made


def brightness_judge() -> Any:
    planner = rule_judge()

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        if "RULES:" not in text:
            return planner(body)
        urls = [
            p["image_url"]["url"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "image_url"
        ]
        data = base64.b64decode(urls[-1].split(",", 1)[1])  # the output is shown last
        grey = Image.open(io.BytesIO(data)).convert("L").getpixel((8, 8))
        return json.dumps({"score": round(grey / 25.5, 1), "reasoning": "brightness"})

    return reply


def test_samples_to_evaluate_to_meta(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    made = museum_with_brightness_coded_outputs(tmp_path / "museum")
    samples, results = tmp_path / "samples.jsonl", tmp_path / "results.jsonl"
    assert (
        main(
            [
                "meta",
                "imagenhub-samples",
                "--museum",
                str(tmp_path / "museum"),
                "--out",
                str(samples),
                "--task",
                TASK,
            ]
        )
        == 0
    )
    written = [json.loads(line) for line in samples.read_text().splitlines()]
    assert {s["id"] for s in written} == set(made)
    out, err = capsys.readouterr()
    assert f"left out {154 * 3 - len(made)} samples" in err
    assert f"wrote {len(made)} samples to {samples}" in err and out == ""  # docs/cli.md
    with FakeOpenAIServer(brightness_judge()) as server:
        status = main(
            [
                "evaluate",
                str(samples),
                "--model",
                "openai:judge",
                "--base-url",
                server.base_url,
                "--out",
                str(results),
                "--quiet",
                "--tools",
                "",
            ]
        )
    assert status == 0
    capsys.readouterr()
    assert main(["meta", "imagenhub", "--scores", str(results), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # the judge read the human SC off each image: perfect rank agreement per generator
    per_model = report["per_model"][TASK]
    assert len(per_model) == 3
    assert all(m["rho"] > 0.99 and m["n"] == PER_MODEL for m in per_model.values())
    assert abs(report["tasks"][TASK] - 0.7616) < 1e-3  # paper averaging: tanh(mean rho = 1)
    totals = report["coverage"]["totals"]
    assert totals["used"] == len(made)
    assert totals["human_only"] == 4801 - len(made)


def test_an_empty_museum_is_a_usage_error(tmp_path: Path, capsys):
    (tmp_path / "empty").mkdir()
    assert (
        main(
            [
                "meta",
                "imagenhub-samples",
                "--museum",
                str(tmp_path / "empty"),
                "--out",
                str(tmp_path / "s.jsonl"),
            ]
        )
        == 2
    )
    assert "is it the ImagenHub image folder" in capsys.readouterr().err
