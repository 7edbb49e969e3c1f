"""Probes against offline judges: one that looks at the images must pass, ones that do not
must fail a clear share; every rubric that yields a score, and ensembles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cigeval import RunConfig, ScriptedBackend
from cigeval.backends import CachedBackend, ResponseCache
from cigeval.evaluation import Evaluator
from cigeval.evaluation._sync import run_sync
from cigeval.probes import ProbeReport, build_probe_set, run_probe_set, run_probes
from cigeval.tasks.ids import TASK_IDS
from cigeval.testing import rule_judge
from cigeval.testing.probe_judges import constant_scorer, probe_judge, request_parts, text_scorer

#: The scripted judges never ask for Grounding (no weights here): no preflight.
NO_CACHE = RunConfig(cache_dir=None, use_cache=False, preflight=False)

SEVEN = set(TASK_IDS)
BLIND_JUDGES = {
    "rule_judge": rule_judge(),
    "constant": probe_judge(constant_scorer(7)),
    "text_only": probe_judge(text_scorer),
}


def probes(folder: Path, reply: Any, rubric: str = "cigeval", **options: Any) -> ProbeReport:
    model = options.pop("model", None) or ScriptedBackend(reply)
    return run_probes(model, folder, rubric=rubric, run_config=NO_CACHE, **options)


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> ProbeReport:
    return probes(tmp_path_factory.mktemp("seeing"), probe_judge())


@pytest.mark.parametrize("rubric", ["cigeval", "viescore"])
def test_a_judge_that_sees_the_images_passes_every_probe(
    rubric: str, seeing: ProbeReport, tmp_path: Path
) -> None:
    report = seeing if rubric == "cigeval" else probes(tmp_path, probe_judge(), rubric)
    assert report.rubric == rubric
    assert (report.passed, report.total, report.errors, report.skipped) == (48, 48, 0, [])
    assert report.pass_rate == 1.0
    assert set(report.by_task) == SEVEN
    assert list(report.by_kind) == [
        "blank_output",
        "unchanged_source",
        "wrong_output",
        "wrong_subject",
        "ignored_control",
        "jpeg_reencode",
        "small_resize",
        "repeat",
        "spread",
    ]
    for result in report.probes:
        assert result.passed and result.status == "passed" and result.checks
        if result.kind != "spread":
            assert result.reference is not None and result.probe is not None
            assert result.reference.score is not None and result.probe.score is not None
            assert result.probe.reasoning and all(result.probe.reasoning.values())
    unchanged = report.probe("text_guided_ie/unchanged_source")
    assert unchanged is not None
    assert [(c.target, c.measured_by, c.passed) for c in unchanged.checks] == [
        ("edit_success", "sub_score", True),
        ("over_editing", "sub_score", True),
    ]
    assert unchanged.checks[0].probe == 0.0  # the seeing judge saw that nothing was edited


@pytest.mark.parametrize("judge", list(BLIND_JUDGES))
def test_judges_that_ignore_the_images_fail_every_drop_and_tie_probe(
    judge: str, tmp_path: Path
) -> None:
    report = probes(tmp_path, BLIND_JUDGES[judge])
    assert report.errors == 0 and report.total == 48
    assert report.pass_rate is not None and report.pass_rate <= 0.75
    assert report.passed == 21  # the 21 must-hold probes, nothing else
    for result in report.probes:
        assert result.passed == (result.group == "must_hold"), result.id


def test_blind_viescore_judges_fail_too(tmp_path: Path) -> None:
    for name in ("constant", "text_only"):
        report = probes(tmp_path / name, BLIND_JUDGES[name], "viescore")
        assert report.total == 48 and report.pass_rate == 21 / 48


@pytest.mark.parametrize(
    ("rubric", "kinds_run", "blind_passes"),
    [
        ("instruction_fidelity", 7, 3),  # edit_success probes read its score
        ("image_preservation", 6, 4),  # no edit_success: wrong_output is skipped
        ("edit_quality", 5, 3),  # no sub-question probes at all
        ("lmm_score", 5, 3),
    ],
)
def test_rubrics_without_the_tasks_sub_questions(
    rubric: str, kinds_run: int, blind_passes: int, tmp_path: Path
) -> None:
    tasks = ["text_guided_ig", "text_guided_ie"]
    report = probes(tmp_path / "seeing", probe_judge(), rubric, tasks=tasks)
    assert set(report.by_task) == {"text_guided_ie"}  # text_guided_ig has no instruction
    assert report.total == kinds_run and report.pass_rate == 1.0
    ig_skips = [s for s in report.skipped if s.task == "text_guided_ig"]
    assert len(ig_skips) == 6 and all("does not take it" in s.reason for s in ig_skips)
    blind = probes(tmp_path / "blind", probe_judge(constant_scorer(7)), rubric, tasks=tasks)
    assert blind.pass_rate is not None and blind.pass_rate <= 0.75
    assert (blind.passed, blind.total) == (blind_passes, kinds_run)
    if rubric == "instruction_fidelity":
        unchanged = report.probe("text_guided_ie/unchanged_source")
        assert unchanged is not None
        assert [(c.target, c.measured_by) for c in unchanged.checks] == [("edit_success", "score")]
    if rubric == "image_preservation":
        skipped = {s.id: s.reason for s in report.skipped}
        assert "reports no edit_success score" in skipped["text_guided_ie/wrong_output"]


def test_an_ensemble_of_two_judges(tmp_path: Path) -> None:
    judges = [
        ScriptedBackend(probe_judge(), name="a"),
        ScriptedBackend(probe_judge(constant_scorer(9)), name="b"),
    ]
    tasks = ["mask_guided_ie", "control_guided_ig"]
    report = probes(tmp_path, None, model=judges, tasks=tasks)
    assert report.judge == "scripted:a,scripted:b"
    assert report.config["ensemble"]["combine"] == "mean"
    # the blind member halves every move: the margins still hold, the spreads shrink
    assert report.total == 14 and report.pass_rate == 1.0
    blank = report.probe("mask_guided_ie/blank_output")
    assert blank is not None and blank.probe is not None and blank.reference is not None
    assert blank.reference.score == pytest.approx(0.9) and blank.probe.score == pytest.approx(0.5)


def _is_uniform(request: Any) -> bool:
    images = [p for p in request_parts(request) if not isinstance(p, str)]
    return any(all(low == high for low, high in image.getextrema()) for image in images)


def test_probes_whose_samples_fail_are_errors_not_passes(tmp_path: Path) -> None:
    seeing = probe_judge()
    report = probes(
        tmp_path, lambda request: "I refuse." if _is_uniform(request) else seeing(request)
    )
    blanks = [p for p in report.probes if p.kind == "blank_output"]
    assert {p.status for p in blanks} == {"error"} and not any(p.passed for p in blanks)
    first = blanks[0]
    assert first.error is not None and "sample text_guided_ig/blank_output" in first.error
    # the official reading (the paper default): unreadable, repaired in vain, asked 3 times
    assert "the official code drops this sample" in first.error
    assert (report.errors, report.passed, report.total) == (7, 41, 48)
    assert report.pass_rate == pytest.approx(41 / 48)
    spread = report.probe("text_guided_ig/spread")  # the other outputs still spread
    assert spread is not None and spread.passed and len(spread.checks[0].scores or []) == 2


def test_a_failed_reference_stops_its_task_without_asking_more(tmp_path: Path) -> None:
    seeing = probe_judge()

    def reply(request: Any) -> str:
        text = "\n".join(p for p in request_parts(request) if isinstance(p, str))
        return "no" if "roof of the house" in text else seeing(request)

    probe_set = build_probe_set(tmp_path, tasks=["text_guided_ie", "text_guided_ig"])
    evaluated: list[str] = []
    evaluator = Evaluator(ScriptedBackend(reply), run_config=NO_CACHE)
    report = run_sync(
        run_probe_set(evaluator, probe_set, on_score=lambda item, _: evaluated.append(item.key))
    )
    failed = [p for p in report.probes if p.task == "text_guided_ie"]
    assert len(failed) == 7 and {p.status for p in failed} == {"error"}
    assert all("reference sample text_guided_ie/reference" in (p.error or "") for p in failed)
    assert [k for k in evaluated if k.startswith("text_guided_ie")] == ["text_guided_ie/reference"]
    assert report.by_task["text_guided_ig"].pass_rate == 1.0


def test_the_repeat_is_asked_past_the_cache_and_bypass_asks_everything(tmp_path: Path) -> None:
    tasks = ["text_guided_ig", "multi_concept_ic"]
    inner = ScriptedBackend(probe_judge())
    cached = CachedBackend(inner, ResponseCache(tmp_path / "cache"))
    first = probes(tmp_path / "one", None, model=cached, tasks=tasks)
    asked_first = len(inner.requests)
    second = probes(tmp_path / "two", None, model=cached, tasks=tasks)
    # only the repeats reach the model: planner + one call per sub-question of each reference
    assert len(inner.requests) - asked_first == (1 + 1) + (1 + 3)
    repeat = second.probe("multi_concept_ic/repeat")
    assert repeat is not None and repeat.probe is not None and repeat.probe.fresh
    assert second.pass_rate == first.pass_rate == 1.0
    before = len(inner.requests)
    probes(tmp_path / "three", None, model=cached, tasks=tasks, bypass_cache=True)
    uncached = ScriptedBackend(probe_judge())
    probes(tmp_path / "four", None, model=uncached, tasks=tasks)
    assert len(inner.requests) - before == len(uncached.requests)
