"""A calibration file applied where scores are made: ``evaluate --calibration``,
``Evaluator(calibration=...)`` and ``serve``; one fitted for another judge is refused before
anything is judged."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import cigeval
from cigeval.calibration import binding_of_record
from cigeval.cli import main
from cigeval.errors import InputError
from cigeval.results.jsonl import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.calibration.synthetic import linear_calibration
from tests.cli_support import evaluate_cli


def expected(score: float) -> dict[str, Any]:
    low, high = (0.0, 0.6) if score < 0.5 else (0.3, 1.0)
    return {"value": pytest.approx(0.1 + 0.8 * score), "interval": [low, high]}


def test_evaluate_with_a_calibration_keeps_the_raw_score_and_adds_value_and_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])
    scores = {"edit_success": 3, "prompt_following": 8}
    with FakeOpenAIServer(rule_judge(scores)) as server:
        assert evaluate_cli(server, samples, tmp_path / "first.jsonl") == 0
        first = next(iter(read_records(tmp_path / "first.jsonl")))
        cal = tmp_path / "cal.json"
        linear_calibration(binding_of_record(first)).save(cal)
        out = tmp_path / "results.jsonl"
        assert evaluate_cli(server, samples, out, "--calibration", str(cal)) == 0
        # a file fitted for another judge: refused, nothing judged, the mismatch named
        other = binding_of_record(first).model_copy(update={"judges": ("openai:other-model",)})
        linear_calibration(other).save(tmp_path / "other.json")
        capsys.readouterr()
        refused = tmp_path / "refused.jsonl"
        status = evaluate_cli(
            server, samples, refused, "--calibration", str(tmp_path / "other.json")
        )
    assert status == 2 and not refused.exists()
    error = capsys.readouterr().err
    assert "judges" in error and "openai:other-model" in error
    records = list(read_records(out))
    assert len(records) == 3 and all(r["status"] == "ok" for r in records)
    for record in records:
        assert record["calibrated"] == expected(record["score"])
    assert any(r["score"] < 0.5 for r in records) and any(r["score"] >= 0.5 for r in records)
    # the report shows raw, calibrated and interval: from the records, or from --calibration
    for results, extra in ((out, []), (tmp_path / "first.jsonl", ["--calibration", str(cal)])):
        page = tmp_path / f"{results.stem}.html"
        argv = ["report", str(results), "-o", str(page), "--bootstrap", "20", *extra]
        assert main(argv) == 0
        html = page.read_text(encoding="utf-8")
        low = next(r for r in records if r["score"] < 0.5)
        shown = f"{low['score']:.3f} · calibrated {0.1 + 0.8 * low['score']:.3f} [0.000, 0.600]"
        assert shown in html and "<th>calibrated</th>" in html
    other_page = tmp_path / "other.html"
    argv = ["report", str(tmp_path / "first.jsonl"), "-o", str(other_page)]
    assert main([*argv, "--calibration", str(tmp_path / "other.json")]) == 2
    assert not other_page.exists()


def test_evaluator_takes_a_calibration_and_refuses_a_votes_file(tmp_path: Path) -> None:
    judge = cigeval.ScriptedBackend(rule_judge(default_score=7))
    plain = cigeval.Evaluator(judge, tools=(), preflight=False)
    calibration = linear_calibration(binding_of_record(plain.identity_record()))
    path = tmp_path / "cal.json"
    calibration.save(path)
    evaluator = cigeval.Evaluator(judge, tools=(), preflight=False, calibration=str(path))
    sample = seven_task_samples(tmp_path)[0]
    sample["images"] = {role: str(tmp_path / name) for role, name in sample["images"].items()}
    score = evaluator.evaluate(sample)
    assert score.value == pytest.approx(0.7)
    assert score.calibrated == expected(0.7)
    assert score.to_record()["calibrated"] == score.calibrated
    assert cigeval.Score.from_record(score.to_record()).calibrated == score.calibrated
    votes = json.loads(calibration.to_json())
    votes["kind"] = "votes"
    with pytest.raises(InputError, match="votes calibration"):
        cigeval.Evaluator(judge, tools=(), preflight=False, calibration=votes)


@pytest.mark.skipif(not importlib.util.find_spec("fastapi"), reason="the serve extra")
def test_serve_answers_with_the_calibrated_value(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from cigeval.serve.app import create_app
    from cigeval.serve.settings import ServeConfig
    from tests.serve.support import make_evaluator, t2i_item

    with FakeOpenAIServer(rule_judge(default_score=4)) as server:
        evaluator = make_evaluator(server.base_url)
        evaluator.use_calibration(
            linear_calibration(binding_of_record(evaluator.identity_record()))
        )
        app = create_app(evaluator, ServeConfig(warmup=False))
        with TestClient(app) as client:
            answer = client.post("/v1/score", json={"items": [t2i_item(0)]})
    (result,) = answer.json()["results"]
    assert result["score"] == pytest.approx(0.4)
    assert result["calibrated"] == expected(0.4)
