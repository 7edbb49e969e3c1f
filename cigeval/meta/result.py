"""The outcome of a meta-evaluation: task and average correlation, per-model detail, coverage."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from cigeval.meta.agreement import TieAgreement
from cigeval.meta.average import Rounding
from cigeval.meta.reliability import Reliability
from cigeval.tasks.ids import PAPER_TASK_ORDER

#: Column headers of the readable table (the task names of the paper's Table 3).
TASK_LABELS: dict[str, str] = {
    "text_guided_ig": "Text-Guided IG",
    "mask_guided_ie": "Mask-Guided IE",
    "text_guided_ie": "Text-Guided IE",
    "control_guided_ig": "Control-Guided IG",
    "subject_driven_ig": "Subject-Driven IG",
    "subject_driven_ie": "Subject-Driven IE",
    "multi_concept_ic": "Multi-Concept IC",
}

#: Columns of the coverage table, in order.
COVERAGE_COLUMNS: tuple[str, ...] = (
    "n_human",
    "n_evaluator",
    "human_only",
    "evaluator_only",
    "failed",
    "missing",
    "partial",
    "used",
)


def _json_number(value: float | None, digits: int | None = None) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(float(value), digits) if digits is not None else float(value)


def _format(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "—"  # not computed for this row (e.g. a task an automatic metric does not score)
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


@dataclass
class MetaResult:
    """Agreement of one evaluator with the human ratings.

    ``tasks`` maps task ids (paper order) to the averaged correlation, ``average`` is the
    average over tasks (computed as ``averaging`` says: paper or fisher_z; None when the
    evaluator was correlated on only some tasks). ``rounding`` says how many decimals were kept
    at each step. ``per_model`` (DataFrame indexed by task, model: rho, n, undefined) and
    ``coverage`` (DataFrame indexed by task, model: the counts in :data:`COVERAGE_COLUMNS`)
    give the detail; ``ci`` holds bootstrap intervals when asked for; ``fingerprint`` names
    the run the scores come from (cigeval results).
    """

    evaluator: str
    dimension: str
    method: str
    averaging: str
    rounding: Rounding
    nan_policy: str
    tasks: dict[str, float]
    average: float | None
    per_model: pd.DataFrame
    coverage: pd.DataFrame
    ci: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    #: Within-prompt win/tie/loss agreement (:mod:`cigeval.meta.agreement`), beside the
    #: correlations; None where it was not computed.
    tie_agreement: TieAgreement | None = None
    #: Agreement between the judgements recorded per image (:mod:`cigeval.meta.reliability`),
    #: for cigeval results whose records hold several; None otherwise.
    reliability: Reliability | None = None

    @property
    def round_to(self) -> int | None:
        """Decimals kept of every average (None: not rounded)."""
        return self.rounding.averages

    @property
    def undefined(self) -> list[tuple[str, str, str]]:
        """(task, model, reason) of every cell whose correlation is undefined."""
        rows = self.per_model[self.per_model["undefined"] != ""]
        return [
            (*cast(tuple[str, str], key), str(reason)) for key, reason in rows["undefined"].items()
        ]

    def coverage_totals(self) -> dict[str, int]:
        """The coverage counts summed over all (task, model) cells."""
        return {c: int(self.coverage[c].sum()) for c in COVERAGE_COLUMNS}

    def tasks_frame(self) -> pd.DataFrame:
        """One row (the evaluator) with the tasks as columns in paper order plus ``average``."""
        row = {**self.tasks, "average": self.average}
        return pd.DataFrame([row], index=[self.evaluator])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"tasks": {...}, "average": rho, ...}``; undefined values are None."""
        per_model: dict[str, dict[str, Any]] = {}
        for key, row in self.per_model.iterrows():
            task, model = cast(tuple[str, str], key)
            per_model.setdefault(str(task), {})[str(model)] = {
                "rho": _json_number(row["rho"]),
                "n": int(row["n"]),
                **({"undefined": row["undefined"]} if row["undefined"] else {}),
            }
        coverage: dict[str, dict[str, dict[str, int]]] = {}
        for key, row in self.coverage.iterrows():
            task, model = cast(tuple[str, str], key)
            coverage.setdefault(str(task), {})[str(model)] = {
                c: int(row[c]) for c in COVERAGE_COLUMNS
            }
        out: dict[str, Any] = {
            "tasks": {t: _json_number(v) for t, v in self.tasks.items()},
            "average": _json_number(self.average),
            "evaluator": self.evaluator,
            "dimension": self.dimension,
            "method": self.method,
            "averaging": self.averaging,
            "rounding": self.rounding.to_dict(),
            "nan_policy": self.nan_policy,
            "coverage": {"totals": self.coverage_totals(), "per_model": coverage},
            "per_model": per_model,
            "undefined": [{"task": t, "model": m, "reason": r} for t, m, r in self.undefined],
        }
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        if self.tie_agreement is not None:
            out["tie_aware"] = self.tie_agreement.to_dict()
        if self.reliability is not None:
            out["reliability"] = self.reliability.to_dict()
        if self.ci is not None:
            out["ci"] = self.ci
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def coverage_line(self) -> str:
        """One line saying which images were correlated and which were left out, and why."""
        t = self.coverage_totals()
        line = (
            f"coverage: {t['used']} of {t['n_human']} human-rated images used; "
            f"human-only {t['human_only']}, evaluator-only {t['evaluator_only']}, "
            f"failed {t['failed']}, missing {t['missing']}"
        )
        if t["partial"]:
            line += f" (of which {t['partial']} scored by only some sources)"
        return line

    def title(self) -> str:
        """What the values are: method, dimension, averaging and rounding."""
        rounding = self.rounding.describe()
        return (
            f"{self.method.capitalize()} correlation with human {self.dimension} ratings "
            f"(averaging: {self.averaging}" + (f", {rounding}" if rounding else "") + ")"
        )

    def table(self, per_model: bool = False) -> str:
        """A readable table: tasks as columns in the paper's Table 3 order, then the average."""
        return rows_table([self], per_model=per_model)


def rows_table(results: list[MetaResult], per_model: bool = False) -> str:
    """Several evaluators (or runs) as rows of one table, tasks as columns in paper order.

    A task a row was not correlated on shows as "—"; an undefined value as "n/a". Each row's
    coverage line, undefined cells and notes follow, named by the row when there are several.
    """
    present = {t for r in results for t in r.tasks}
    order = [t for t in PAPER_TASK_ORDER if t in present]
    order += sorted(present - set(order))
    headers = [TASK_LABELS.get(t, t) for t in order] + ["Average"]
    cells = [[_format(r.tasks.get(t)) for t in order] + [_format(r.average)] for r in results]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    name_width = max(9, *(len(r.evaluator) for r in results))

    def line(name: str, values: list[str]) -> str:
        padded = [v.rjust(w) for v, w in zip(values, widths, strict=True)]
        return " | ".join([name.ljust(name_width), *padded])

    lines = [
        results[0].title(),
        line("Evaluator", headers),
        "-+-".join(["-" * name_width] + ["-" * w for w in widths]),
    ]
    for result, row in zip(results, cells, strict=True):
        lines.append(line(result.evaluator, row))
        if result.ci is not None:
            bounds = [result.ci["tasks"].get(t) for t in order] + [result.ci["average"]]
            text = ["n/a" if b is None or None in b else f"{b[0]:.2f}..{b[1]:.2f}" for b in bounds]
            lines.append(line(f"{int(result.ci['level'] * 100)}% CI", text))
    several = len(results) > 1
    for result in results:
        named = f" ({result.evaluator})" if several else ""
        lines.append(result.coverage_line().replace("coverage:", f"coverage{named}:", 1))
        if result.tie_agreement is not None:
            lines.append(f"{result.tie_agreement.line()}{named}")
        if result.reliability is not None:
            lines.append(f"{result.reliability.line()}{named}")
        for task, model, reason in result.undefined:
            lines.append(f"undefined{named}: {task} / {model}: {reason}")
        lines.extend(f"note{named}: {n}" for n in result.notes)
    if per_model:
        for result in results:
            lines.append("")
            if several:
                lines.append(result.evaluator)
            detail = result.per_model.join(result.coverage[["failed", "missing", "used"]])
            lines.append(detail.to_string(float_format=lambda v: f"{v:.4f}"))
    return "\n".join(lines)


def rows_to_dict(results: list[MetaResult]) -> dict[str, Any]:
    """The JSON form of one result (:meth:`MetaResult.to_dict`), or ``{"rows": [...]}`` for
    several (one per run fingerprint or automatic metric)."""
    if len(results) == 1:
        return results[0].to_dict()
    return {"rows": [r.to_dict() for r in results]}
