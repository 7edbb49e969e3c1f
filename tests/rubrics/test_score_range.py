"""The range a results record's score must lie in is looked up in the rubric registry as it is
now, never from a stale cache."""

from __future__ import annotations

from dataclasses import dataclass

from cigeval.rubrics.registry import RUBRICS, record_score_range, register_rubric


@dataclass
class _Ranged:
    name: str
    description: str = "a rubric that scores from 1 to 5"
    score_range: tuple[float, float] = (1.0, 5.0)

    def validate(self, sample: object) -> None:
        return None

    async def evaluate(self, run: object) -> object:
        raise NotImplementedError


def test_a_rubric_registered_after_its_name_was_looked_up_gets_its_own_range() -> None:
    record = {"id": "s1", "rubric": "late_ranged", "status": "ok", "score": 4.0}
    with RUBRICS.scoped():
        assert record_score_range(record) == (0.0, 1.0)  # not registered yet: the default
        register_rubric(_Ranged("late_ranged"))
        assert record_score_range(record) == (1.0, 5.0)
    assert record_score_range(record) == (0.0, 1.0)  # unregistered again


def test_the_range_a_record_carries_wins_over_its_rubric() -> None:
    with RUBRICS.scoped():
        register_rubric(_Ranged("carried_ranged"))
        record = {"id": "s1", "rubric": "carried_ranged", "score_range": [0, 10]}
        assert record_score_range(record) == (0.0, 10.0)
        assert record_score_range({"id": "s2", "rubric": "carried_ranged", "score_range": "x"}) == (
            1.0,
            5.0,
        )


def test_built_in_rubrics_are_not_imported_for_their_range_and_declare_none() -> None:
    import subprocess
    import sys

    from cigeval.rubrics.base import DEFAULT_SCORE_RANGE, score_range_of
    from cigeval.rubrics.registry import BUILTIN_RUBRICS

    # record_score_range answers 0 to 1 for a built-in without loading it: true only while
    # no built-in declares another range
    for name in BUILTIN_RUBRICS:
        assert score_range_of(RUBRICS.get(name)) == DEFAULT_SCORE_RANGE, name
    code = (
        "import sys; from cigeval.rubrics.registry import record_score_range as r; "
        "assert r({'id': '1', 'rubric': 'cigeval'}) == (0.0, 1.0); "
        "assert r({'id': '2', 'rubric': 'viescore'}) == (0.0, 1.0); "
        "print(sorted(m for m in sys.modules if m.startswith(('cigeval.agent', 'langgraph'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
