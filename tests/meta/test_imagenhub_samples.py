"""ImagenHub samples end to end: write samples, judge them over HTTP, correlate with people."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.cli import main
from cigeval.messages import ImagePart, ModelRequest
from cigeval.meta import load_human_ratings
from cigeval.meta.imagenhub_samples import imagenhub_samples, sample_for
from cigeval.sample import sample_from_dict
from cigeval.tasks.labels import condition_label
from cigeval.testing import request_text, rule_judge, template_of
from cigeval.testing.openai_server import FakeOpenAIServer

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


def test_subject_driven_generation_samples_carry_their_subject_name() -> None:
    samples = list(imagenhub_samples("/nowhere", tasks=["subject_driven_ig"]))
    assert len(samples) == 150 * 4  # four generators of the published tables
    names = {s["metadata"]["uid"]: s["subject"] for s in samples}
    assert len(names) == 150 and all(names.values())
    # each name is the one the prompt speaks of, and the raw ImagenHub id rides along
    assert all(s["subject"] in s["prompt"] for s in samples)
    first = next(s for s in samples if s["metadata"]["uid"] == "sample_0.jpg")
    assert (first["subject"], first["metadata"]["subject_id"]) == ("backpack", "backpack")
    dog = {s["metadata"]["subject_id"]: s["subject"] for s in samples}
    assert dog["dog2"] == "dog" and dog["red_cartoon"] == "red cartoon"


def test_multi_concept_samples_carry_both_names_left_first(shared: Path) -> None:
    samples = list(imagenhub_samples("/nowhere", tasks=["multi_concept_ic"]))
    assert len(samples) == 102 * 3
    concepts = {s["metadata"]["uid"]: s["concepts"] for s in samples}
    assert len(concepts) == 102
    assert all(len(pair) == 2 and all(pair) for pair in concepts.values())
    assert all(all(name in s["prompt"] for name in s["concepts"]) for s in samples)
    # [left, right] exactly as ImagenHub pastes them (concept1 left), never re-ordered
    source = shared / "data" / "imagenhub_extra" / "conditions_extra.jsonl"
    published = {
        row["uid"]: row["concepts"]
        for row in map(json.loads, source.read_text(encoding="utf-8").splitlines())
        if row["task"] == "ImagenHub_Multi-Concept_IC"
    }
    assert concepts == published
    assert concepts["sample_0.jpg"] == ["wooden pot", "cat"]
    assert concepts["sample_20.jpg"][0] != concepts["sample_20.jpg"][1]


def test_the_extra_names_ship_unchanged_with_their_provenance(shared: Path) -> None:
    from importlib import resources

    folder = resources.files("cigeval.data").joinpath("imagenhub_extra")
    shipped = folder.joinpath("conditions_extra.jsonl").read_bytes()
    original = shared / "data" / "imagenhub_extra" / "conditions_extra.jsonl"
    assert shipped == original.read_bytes()
    readme = folder.joinpath("README.md").read_text(encoding="utf-8")
    assert "3c723b08d88485752ee683aba7d9fc05387a43df" in readme
    assert "56c8ad86f9f2ac4e43e0776e21104a5345222639" in readme


def _condition_lines(request: ModelRequest) -> list[str]:
    text = request.messages[-1].text_content()
    return [line for line in text.splitlines() if line.startswith(f"{condition_label('subject')}:")]


def _roles(request: ModelRequest) -> list[str]:
    return [str(p.label) for p in request.messages[-1].parts if isinstance(p, ImagePart)]


def test_the_judge_sees_the_subject_and_concept_names(tmp_path: Path, capsys) -> None:
    museum = tmp_path / "museum"
    wanted = {
        ("subject_driven_ig", "DreamBooth", "sample_0.jpg"),
        ("multi_concept_ic", "CustomDiffusion", "sample_0.jpg"),
    }
    for task, model, uid in wanted:
        for role, path in sample_for(task, model, uid, museum)["images"].items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            size = (80, 40) if role == "subject" else (48, 48)
            Image.new("RGB", size, (90, 120, 30)).save(path, format="JPEG")
    out = tmp_path / "samples.jsonl"
    argv = ["meta", "imagenhub-samples", "--museum", str(museum), "--out", str(out)]
    assert main([*argv, "--task", "subject_driven_ig", "--task", "multi_concept_ic"]) == 0
    assert "wrote 2 samples" in capsys.readouterr().err
    written = {s["task"]: s for s in map(json.loads, out.read_text().splitlines())}
    assert written["subject_driven_ig"]["subject"] == "backpack"
    assert written["multi_concept_ic"]["concepts"] == ["wooden pot", "cat"]

    requests: dict[str, list[ModelRequest]] = {}
    for task, fields in written.items():
        backend = ScriptedBackend(rule_judge())
        sample = sample_from_dict(fields, base_dir=tmp_path)
        score = Evaluator(backend, run_config=RunConfig(use_cache=False), tools=()).evaluate(sample)
        assert score.status == "ok", score.error
        requests[task] = [r for r in backend.requests if "RULES:" in request_text(r)]

    subject = [
        r
        for r in requests["subject_driven_ig"]
        if template_of(request_text(r)) == "subject_similarity"
    ]
    assert len(subject) == 1
    assert f"{condition_label('subject')}: backpack" in _condition_lines(subject[0])
    by_half = {}
    for request in requests["multi_concept_ic"]:
        if template_of(request_text(request)) == "concept_similarity":
            half = next(role for role in _roles(request) if role.startswith("subject_"))
            by_half[half] = _condition_lines(request)
    left = f"{condition_label('concepts[0]')}: wooden pot"
    right = f"{condition_label('concepts[1]')}: cat"
    assert left in by_half["subject_1"] and right not in by_half["subject_1"]
    assert right in by_half["subject_2"] and left not in by_half["subject_2"]


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
