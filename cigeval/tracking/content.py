"""What a tracked run sends to an experiment tracker, the same for every tracker: the settings
and fingerprint, the summary figures (per task and per generator, with bootstrap intervals),
and one table row per sample.

The figures describe the whole results file (what ``cigeval report`` shows), earlier runs
resumed into it included; one record per sample id, the last one written winning.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval._version import __version__
from cigeval.config import RUN_FILE_FIELDS
from cigeval.report.stats import Cell, cell
from cigeval.results.jsonl import last_record_per_id, read_records
from cigeval.results.record import generator_of
from cigeval.results.run import score_of

if TYPE_CHECKING:
    from cigeval.runs.result import RunResult

#: Bootstrap settings of the intervals (the report's defaults).
N_BOOT, LEVEL, SEED = 1000, 0.95, 0
#: The image roles shown in a table row, in this order, when the sample has them.
TABLE_IMAGE_ROLES = ("output", "source", "mask", "subject", "control")


def results_of(result: RunResult) -> list[dict[str, Any]]:
    """The records of the run's results file, one per sample id."""
    return last_record_per_id(read_records(result.out))


def fingerprints(records: list[dict[str, Any]]) -> list[str]:
    """The distinct run fingerprints of the records (one when every setting was the same)."""
    return sorted({str(r["fingerprint"]) for r in records if r.get("fingerprint")})


def run_config(result: RunResult, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The settings that made the scores, and how the run ran: nested, JSON-ready."""
    judges: dict[str, dict[str, Any]] = {}
    for record in records:
        for judge in (record.get("provenance") or {}).get("judges") or []:
            entry = judges.setdefault(
                str(judge.get("judge")), {"endpoint": judge.get("endpoint"), "served_models": []}
            )
            for name in judge.get("served_models") or []:
                if name not in entry["served_models"]:
                    entry["served_models"].append(name)
    prints = fingerprints(records)
    return {
        "cigeval_version": __version__,
        "fingerprint": prints[0] if len(prints) == 1 else ",".join(prints),
        "results": str(result.out),
        "judges": judges,
        "eval": result.config.record(),
        "ensemble": result.ensemble.model_dump(mode="json"),
        "run": result.run_config.model_dump(mode="json", exclude=set(RUN_FILE_FIELDS)),
        "engine": result.engine.model_dump(mode="json"),
        "options": result.run_config.model_dump(mode="json", include=set(RUN_FILE_FIELDS)),
    }


def run_figures(result: RunResult, records: list[dict[str, Any]]) -> dict[str, float]:
    """Flat summary figures: this run's counts (``run/...``), and for the results file the
    mean score with its bootstrap interval, n and errors overall (``score/...``), per task
    (``task/<task>/...``), per generator (``generator/<g>/...``) and per generator and task
    (``generator/<g>/<task>/...``). Missing values (no ok sample) are left out."""
    figures: dict[str, float] = {}
    run = result.as_dict()
    for key in ("ok", "error", "skipped_already_done", "model_calls", "cached_calls"):
        figures[f"run/{key}"] = float(run.get(key) or 0)
    for key in ("prompt_tokens", "completion_tokens", "wall_s", "cost_usd"):
        if run.get(key) is not None:
            figures[f"run/{key}"] = float(run[key])
    groups: dict[tuple[str, ...], tuple[list[float], list[int]]] = defaultdict(lambda: ([], [0]))
    for record in records:
        task, generator = str(record.get("task", "?")), generator_of(record)
        value = score_of(record)
        keys: list[tuple[str, ...]] = [
            ("score",),
            ("task", task),
            ("generator", generator),
            ("generator", generator, task),
        ]
        for group in keys:
            scores, errors = groups[group]
            if value is None:
                errors[0] += 1
            else:
                scores.append(value)
    for group, (scores, errors) in groups.items():
        summary = cell(scores, errors[0], N_BOOT, LEVEL, SEED)
        figures.update(_cell_figures("/".join(metric_name(k) for k in group), summary))
    return figures


def _cell_figures(prefix: str, summary: Cell) -> dict[str, float]:
    out = {f"{prefix}/n": float(summary.n), f"{prefix}/errors": float(summary.errors)}
    for name in ("mean", "low", "high"):
        value = getattr(summary, name)
        if value is not None:
            out[f"{prefix}/{name}"] = float(value)
    return out


def metric_name(text: str) -> str:
    """``text`` as one part of a metric name every tracker accepts (letters, digits, ``_``,
    ``-``, ``.`` and spaces; anything else becomes ``_``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\- ]", "_", text).strip()
    return cleaned or "_"


def table_columns() -> list[str]:
    """The columns of the records table (images excluded)."""
    return [
        "id",
        "task",
        "generator",
        "status",
        "score",
        "human",
        "sub_scores",
        "error",
        "judge",
        "fingerprint",
    ]


def table_row(record: dict[str, Any]) -> list[Any]:
    """One sample's row of the records table (see :func:`table_columns`)."""
    subs = "; ".join(
        f"{s.get('question_id')}={s.get('score')}" for s in record.get("sub_scores") or []
    )
    human = record.get("human")
    return [
        str(record.get("id")),
        str(record.get("task")),
        generator_of(record),
        str(record.get("status")),
        score_of(record),
        human if isinstance(human, int | float) and not isinstance(human, bool) else None,
        subs,
        record.get("error"),
        record.get("judge"),
        record.get("fingerprint"),
    ]


def image_paths(record: dict[str, Any], base_dir: Path | None = None) -> dict[str, Path]:
    """The image files shown to the judge for the table's roles (role -> file), where they
    can still be read."""
    roles = record.get("input_images") or {}
    files = record.get("image_files") or {}
    found: dict[str, Path] = {}
    for role in TABLE_IMAGE_ROLES:
        where = files.get(roles.get(role, ""))
        if not where:
            continue
        path = Path(where)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if path.is_file():
            found[role] = path
    return found


def probe_figures(report: Any) -> dict[str, float]:
    """Flat figures of a probe report (:class:`cigeval.probes.ProbeReport`): the pass rate
    and counts overall (``probe/...``), per task (``probe/task/<task>/...``) and per probe
    kind (``probe/kind/<kind>/...``)."""
    figures: dict[str, float] = {}

    def add(prefix: str, passed: int, failed: int, errors: int, rate: float | None) -> None:
        figures.update(
            {
                f"{prefix}/passed": float(passed),
                f"{prefix}/failed": float(failed),
                f"{prefix}/errors": float(errors),
            }
        )
        if rate is not None:
            figures[f"{prefix}/pass_rate"] = float(rate)

    add("probe", report.passed, report.failed, report.errors, report.pass_rate)
    for group, tallies in (("task", report.by_task), ("kind", report.by_kind)):
        for name, tally in tallies.items():
            prefix = f"probe/{group}/{metric_name(name)}"
            add(prefix, tally.passed, tally.failed, tally.errors, tally.pass_rate)
    return figures
