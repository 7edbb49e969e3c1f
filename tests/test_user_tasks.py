"""Tasks of your own: defined in Python or in a JSON/YAML file, judged end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

import cigeval
from cigeval.cli import main
from cigeval.errors import ConfigError, InputError
from cigeval.results import read_records
from cigeval.sample import sample_from_dict
from cigeval.tasks import SubQuestion, TaskSpec, get_task, load_tasks_file, task_names
from cigeval.tasks.registry import TASKS
from cigeval.testing import request_text
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image, write_jsonl
from tests.cli_support import evaluate_cli

LOGO_RULES = (
    "Score from 0 to 10 how intact the logo is in the second image. The requested style "
    "is {{ style }}."
)
TASKS_FILE = {
    "tasks": [
        {
            "id": "logo_restyle",
            "title": "Logo restyling",
            "text_fields": ["instruction", "style"],
            "image_roles": ["source", "reference", "output"],
            "image_labels": {"reference": "the style reference image"},
            "sub_questions": [
                {
                    "id": "logo_intact",
                    "question": "Is the logo still legible and unchanged in shape?",
                    "images": ["source", "output"],
                    "condition": "instruction",
                    "rules": LOGO_RULES,
                },
                {
                    "id": "style_match",
                    "question": "Does the output take on the style of the reference?",
                    "images": ["reference", "output"],
                    "condition": "style",
                    "rules": "style_rules.txt",
                },
            ],
        }
    ]
}
STYLE_RULES = "STYLE RULES: 10 when the palette and strokes match the reference."


@pytest.fixture(autouse=True)
def _scoped_tasks() -> Iterator[None]:
    with TASKS.scoped():
        yield


def _write_task_files(folder: Path) -> tuple[Path, Path]:
    (folder / "style_rules.txt").write_text(STYLE_RULES, encoding="utf-8")
    as_json = folder / "tasks.json"
    as_json.write_text(json.dumps(TASKS_FILE), encoding="utf-8")
    yaml = pytest.importorskip("yaml")
    as_yaml = folder / "tasks.yaml"
    as_yaml.write_text(yaml.safe_dump(TASKS_FILE), encoding="utf-8")
    return as_json, as_yaml


def _samples(folder: Path) -> Path:
    source = make_image(folder / "src.png", "white", (10, 10, 30, 30))
    reference = make_image(folder / "ref.png", "yellow", (5, 5, 50, 50), "purple", size=(48, 40))
    output = make_image(folder / "out.png", "white", (10, 10, 30, 30), "purple")
    sample = {
        "id": "logo-1",
        "task": "logo_restyle",
        "instruction": "Repaint the logo in the reference style",
        "style": "purple ink",
        "images": {"source": source, "reference": reference, "output": output},
    }
    return write_jsonl(folder / "samples.jsonl", [sample])


def test_a_python_task_runs_through_evaluate_with_its_own_rules(tmp_path: Path) -> None:
    spec = TaskSpec(
        id="caption_match",
        title="Caption matching",
        text_fields=("caption",),
        image_roles=("output",),
        sub_questions=(
            SubQuestion(
                id="caption_ok",
                question="Does the image show what the caption says?",
                image_roles=("output",),
                condition_field="caption",
                rules="CAPTION RULES: judge the caption {{ caption }} strictly.",
            ),
        ),
    )
    cigeval.register_task(spec)
    judge = cigeval.ScriptedBackend(cigeval.rule_judge(default_score=6))
    sample = {
        "id": "c1",
        "task": "caption_match",
        "caption": "a red kite",
        "images": {"output": Image.new("RGB", (16, 16), "red")},
    }
    score = cigeval.evaluate(
        sample, model=judge, run_config=cigeval.RunConfig(use_cache=False, preflight=False)
    )
    assert score.ok and score.value == 0.6
    plan, verdict = (request_text(r) for r in judge.requests)
    assert "Does the image show what the caption says?" in plan and "Caption: a red kite" in plan
    assert "RULES:\nCAPTION RULES: judge the caption a red kite strictly." in verdict
    assert "Caption: a red kite" in verdict


def test_fields_and_roles_a_task_does_not_declare_are_refused() -> None:
    with pytest.raises(InputError, match=r"unknown field\(s\) style, images.reference"):
        sample_from_dict(
            {
                "id": "x",
                "task": "text_guided_ig",
                "prompt": "p",
                "style": "s",
                "images": {"output": "o.png", "reference": "r.png"},
            }
        )
    with pytest.raises(InputError, match="unknown task 'no_such_task'; choose one of: "):
        sample_from_dict({"id": "x", "task": "no_such_task"})


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_a_file_task_loads_with_rules_from_text_and_from_a_file(tmp_path: Path, kind: str) -> None:
    as_json, as_yaml = _write_task_files(tmp_path)
    (spec,) = load_tasks_file(as_json if kind == "json" else as_yaml)
    assert spec.id == "logo_restyle" and get_task("Logo Restyle") is spec
    assert spec.sub_questions[1].rules == STYLE_RULES
    assert spec.role_label("reference") == "the style reference image"
    load_tasks_file(as_json)  # the same definition again: no clash


def test_the_cli_lists_validates_and_judges_a_file_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    as_json, as_yaml = _write_task_files(tmp_path)
    assert main(["tasks", "--tasks-file", str(as_yaml)]) == 0
    listed = capsys.readouterr().out
    assert "logo_restyle: Logo restyling" in listed and "style_match" in listed
    samples = _samples(tmp_path)
    assert main(["validate", str(samples), "--tasks-file", str(as_json)]) == 0
    out = tmp_path / "results.jsonl"
    with FakeOpenAIServer(cigeval.rule_judge(default_score=4)) as server:
        status = evaluate_cli(server, samples, out, "--tasks-file", str(as_json), "--tools", "")
        judged = [r.texts() for r in server.requests]
    assert status == 0
    (record,) = read_records(out)
    assert record["status"] == "ok" and record["score"] == 0.4
    assert [s["question_id"] for s in record["sub_scores"]] == ["logo_intact", "style_match"]
    rules = ["\n".join(texts) for texts in judged]
    assert any("The requested style is purple ink." in text for text in rules)
    assert any(STYLE_RULES in text and "Style: purple ink" in text for text in rules)
    assert any("Image 1: the style reference image" in text for text in rules)


def test_without_the_tasks_file_the_samples_are_invalid(tmp_path: Path) -> None:
    samples = _samples(tmp_path)
    assert "logo_restyle" not in task_names()
    assert main(["validate", str(samples)]) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["sub_questions"][0].update(images=["mask"]), "not among the task's roles"),
        (lambda t: t["sub_questions"][0].update(condition="caption"), "not one of the task's"),
        (lambda t: t["sub_questions"][0].update(rules="missing.txt"), "cannot read the rules"),
        (lambda t: t.pop("title"), "title: Field required"),
        (lambda t: t.update(id="bad id"), "should match pattern"),
    ],
)
def test_a_bad_tasks_file_is_a_usage_error_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str
) -> None:
    data = json.loads(json.dumps(TASKS_FILE))
    change(data["tasks"][0])
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_tasks_file(path)
    assert main(["tasks", "--tasks-file", str(path)]) == 2
    assert message in capsys.readouterr().err
