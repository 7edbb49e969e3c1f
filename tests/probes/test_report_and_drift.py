"""Probe reports read back as written; drift between reports of changed and unchanged judges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigeval import RunConfig, ScriptedBackend
from cigeval.errors import ConfigError
from cigeval.probes import (
    ProbeReport,
    compare_reports,
    load_report,
    render_drift,
    render_table,
    run_probes,
)
from cigeval.testing.probe_judges import constant_scorer, probe_judge

TASKS = ["text_guided_ie", "control_guided_ig"]


def report(folder: Path, scorer: object = None) -> ProbeReport:
    reply = probe_judge() if scorer is None else probe_judge(scorer)  # type: ignore[arg-type]
    judge = ScriptedBackend(reply)
    return run_probes(
        judge, folder, tasks=TASKS, run_config=RunConfig(use_cache=False, preflight=False)
    )


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> ProbeReport:
    return report(tmp_path_factory.mktemp("seeing"))


def test_a_report_reads_back_as_written(seeing: ProbeReport, tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    seeing.save(path)
    again = load_report(path)
    assert again == seeing
    assert again.by_task["text_guided_ie"].pass_rate == 1.0
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="version 99"):
        load_report(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read probe report"):
        load_report(path)


def test_an_unchanged_judge_shows_no_drift(seeing: ProbeReport, tmp_path: Path) -> None:
    drift = compare_reports(seeing, report(tmp_path))
    assert not drift.changed
    assert drift.status_changes == [] and drift.score_changes == []
    assert drift.scores_compared > 30 and drift.max_score_change == 0
    assert "no change beyond the tolerance" in render_drift(drift)


def test_a_changed_judge_shows_flips_and_moved_scores(seeing: ProbeReport, tmp_path: Path) -> None:
    blind = report(tmp_path, constant_scorer(7))
    drift = compare_reports(seeing, blind)
    assert drift.changed
    assert drift.pass_rate.old == 1.0 and drift.pass_rate.new == pytest.approx(6 / 14)
    flips = {c.id for c in drift.status_changes}
    assert (
        "control_guided_ig/ignored_control" in flips and "text_guided_ie/jpeg_reencode" not in flips
    )
    moved = {(c.sample_id, c.target) for c in drift.score_changes}
    assert ("text_guided_ie/blank_output", "score") in moved  # 0.1 -> 0.7
    assert ("text_guided_ie/unchanged_source", "edit_success") in moved  # 0.0 -> 0.7
    assert drift.by_kind["blank_output"].delta == -1.0
    text = render_drift(drift)
    assert "CHANGED" in text and "text_guided_ie/blank_output score: 0.10 -> 0.70" in text


def test_probes_that_showed_other_inputs_are_not_compared(seeing: ProbeReport) -> None:
    edited = seeing.model_copy(deep=True)
    edited.probes[0].fingerprint = "0" * 64
    edited.probes[0].probe.score = 0.42  # type: ignore[union-attr]
    drift = compare_reports(seeing, edited)
    assert drift.changed_inputs == [seeing.probes[0].id]
    assert not drift.changed  # its score is not compared: the judge saw other inputs
    assert drift.only_old == [] and drift.only_new == []


def test_the_table_marks_skipped_and_inapplicable_cells(tmp_path: Path) -> None:
    judge = ScriptedBackend(probe_judge())
    fidelity = run_probes(
        judge,
        tmp_path,
        tasks=["text_guided_ig", "text_guided_ie"],
        rubric="image_preservation",
        run_config=RunConfig(use_cache=False, preflight=False),
    )
    lines = render_table(fidelity).splitlines()
    header = lines[2].split()
    ig = dict(zip(header, lines[3].split(), strict=False))
    ie = dict(zip(header, lines[4].split(), strict=False))
    assert ig["blank"] == "skip" and ig["unchanged"] == "-"  # no such probe for text_guided_ig
    assert ie["unchanged"] == "pass" and ie["wrong_out"] == "skip"
    assert "12/12" not in lines[0] and "6/6 passed" in lines[0]
