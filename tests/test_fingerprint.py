"""The run fingerprint: equal for the same settings, different (and named) when one differs."""

from pathlib import Path

from cigeval import Evaluator, ScriptedBackend
from cigeval.results.fingerprint import (
    differing_settings,
    fingerprint_of,
    settings_of_record,
)
from cigeval.testing import rule_judge
from cigeval.testing.samples_factory import make_image


def _record(tmp_path: Path, **overrides):
    sample = {
        "id": "t2i",
        "task": "text_guided_ig",
        "prompt": "a red square",
        "images": {"output": str(tmp_path / make_image(tmp_path / "out.png", "red"))},
    }
    judge = Evaluator(ScriptedBackend(rule_judge()), tools=(), **overrides)
    return judge.evaluate(sample).to_record()


def test_same_settings_same_fingerprint_and_it_is_stored(tmp_path):
    first, second = _record(tmp_path), _record(tmp_path)
    assert first["fingerprint"] == second["fingerprint"]
    assert fingerprint_of(first) == first["fingerprint"]


def test_a_setting_that_changes_scores_changes_the_fingerprint_and_is_named(tmp_path):
    base, other = _record(tmp_path), _record(tmp_path, aggregate="mean", temperature=0.5)
    assert base["fingerprint"] != other["fingerprint"]
    assert differing_settings(settings_of_record(base), settings_of_record(other)) == [
        "config.aggregate",
        "config.temperature",
    ]


def test_old_records_without_a_fingerprint_get_the_same_one_computed(tmp_path):
    record = _record(tmp_path)
    stored = record.pop("fingerprint")
    assert fingerprint_of(record) == stored
