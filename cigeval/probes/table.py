"""The printed form of a probe report: a task x kind table, then what failed and why."""

from __future__ import annotations

from cigeval.probes.kinds import PROBE_KINDS
from cigeval.probes.report import CheckResult, ProbeReport, Tally
from cigeval.probes.task_scenes import TASK_SCENES

#: Column headers of the table, by kind (kept short so the table fits a terminal).
SHORT_NAMES = {
    "blank_output": "blank",
    "unchanged_source": "unchanged",
    "wrong_output": "wrong_out",
    "wrong_subject": "wrong_subj",
    "ignored_control": "ignore_ctl",
    "jpeg_reencode": "jpeg",
    "small_resize": "resize",
    "repeat": "repeat",
    "spread": "spread",
}
#: What a cell says, by probe status.
CELLS = {"passed": "pass", "failed": "FAIL", "error": "err", "skipped": "skip"}


def _rate(tally: Tally | None) -> str:
    if tally is None or not tally.total:
        return "-"
    return f"{tally.passed}/{tally.total} {100 * tally.passed / tally.total:.0f}%"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def describe_check(check: CheckResult) -> str:
    """One line for a measured check, e.g. ``edit_success must drop: 0.90 -> 0.90``."""
    what = f"{check.target} must {check.expected.replace('_', ' ')}"
    if check.expected == "not_tie":
        scores = ", ".join(_number(s) for s in check.scores or [])
        return f"{what}: scores {scores} span {_number(check.spread)} (minimum {check.threshold})"
    limit = {"drop": "margin", "not_drop": "tolerance", "hold": "tolerance"}[check.expected]
    return (
        f"{what}: {_number(check.reference)} -> {_number(check.probe)} "
        f"(change {check.delta:+.2f}, {limit} {check.threshold})"
    )


def render_table(report: ProbeReport) -> str:
    """The report as text: header line, task x kind table, then failed and errored probes."""
    status: dict[tuple[str, str], str] = {(p.task, p.kind): p.status for p in report.probes}
    for skipped in report.skipped:
        status.setdefault((skipped.task, skipped.kind), "skipped")
    kinds = [k for k in PROBE_KINDS if any(kind == k for _, kind in status)]
    order = list(TASK_SCENES)
    tasks = sorted(
        dict.fromkeys(task for task, _ in status),
        key=lambda t: order.index(t) if t in order else len(order),
    )
    rate = "-" if report.pass_rate is None else f"{100 * report.pass_rate:.1f}%"
    lines = [
        f"Probes of judge {report.judge} (rubric {report.rubric}): "
        f"{report.passed}/{report.total} passed ({rate}), {report.failed} failed, "
        f"{report.errors} error(s), {len(report.skipped)} skipped",
        "",
    ]
    headers = ["task", *(SHORT_NAMES.get(k, k) for k in kinds), "passed"]
    rows = [
        [
            task,
            *(CELLS.get(status.get((task, k), ""), "-") for k in kinds),
            _rate(report.by_task.get(task)),
        ]
        for task in tasks
    ]
    rows.append(["all tasks", *(_rate(report.by_kind.get(k)) for k in kinds), _rate_all(report)])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        cells = (str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    failed = [p for p in report.probes if p.status == "failed"]
    if failed:
        lines += ["", "Failed:"]
        for probe in failed:
            for check in probe.checks:
                if not check.passed:
                    lines.append(f"  {probe.id}: {describe_check(check)}")
    errors = [p for p in report.probes if p.status == "error"]
    if errors:
        lines += ["", "Errors:"]
        lines += [f"  {p.id}: {p.error}" for p in errors]
    return "\n".join(lines)


def _rate_all(report: ProbeReport) -> str:
    return _rate(Tally(passed=report.passed, failed=report.failed, errors=report.errors))
