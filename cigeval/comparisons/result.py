"""What :func:`cigeval.compare` returns: the paired differences per settings group and judge,
the Bradley–Terry ranking, what was set aside, as JSON (:meth:`CompareResult.to_dict`) and as
a readable table (:meth:`CompareResult.table`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.comparisons.bradley_terry import BradleyTerryRanking
from cigeval.comparisons.inputs import SetAside
from cigeval.comparisons.paired import ALL_TASKS, PairedDifference


@dataclass
class JudgeComparison:
    """Every generator against the baseline under one judge view (a judge, or an ensemble's
    ``combined`` score): overall rows first, then one row per task."""

    judge: str
    differences: list[PairedDifference] = field(default_factory=list)
    ranking: BradleyTerryRanking | None = None

    def overall(self) -> list[PairedDifference]:
        """The rows over all tasks."""
        return [d for d in self.differences if d.task == ALL_TASKS]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "judge": self.judge,
            "differences": [d.as_dict() for d in self.differences],
            "bradley_terry": None if self.ranking is None else self.ranking.as_dict(),
        }


@dataclass
class SettingsGroup:
    """Records judged with the same settings (one run fingerprint), compared among themselves.

    ``averaged`` counts records that shared a generator and a condition with another record
    (several seeds of one prompt, say): their scores are averaged before pairing.
    """

    fingerprint: str
    judge: str
    sources: list[str]
    generators: list[str]
    conditions: int
    averaged: int = 0
    judges: list[JudgeComparison] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "fingerprint": self.fingerprint,
            "judge": self.judge,
            "sources": self.sources,
            "generators": self.generators,
            "conditions": self.conditions,
            "averaged_records": self.averaged,
            "judges": [j.as_dict() for j in self.judges],
        }


@dataclass
class CompareResult:
    """The comparison of every generator with ``baseline`` (see docs/comparisons.md)."""

    baseline: str
    level: float
    n_boot: int
    seed: int
    groups: list[SettingsGroup] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The baseline was not given: the generator of the first scored record.
    baseline_picked: bool = False

    def differences(self) -> list[PairedDifference]:
        """Every paired difference of every group and judge view."""
        return [d for g in self.groups for j in g.judges for d in j.differences]

    def to_dict(self) -> dict[str, Any]:
        """The whole result as JSON-ready values."""
        return {
            "baseline": self.baseline,
            "baseline_picked": self.baseline_picked,
            "level": self.level,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "interval": "percentile bootstrap of the mean paired difference (conditions resampled)",
            "test": "Wilcoxon signed-rank (two-sided, tied pairs dropped); p_holm: Holm's "
            "correction across the generators compared with the baseline",
            "groups": [g.as_dict() for g in self.groups],
            "set_aside": [s.as_dict() for s in self.set_aside],
            "notes": self.notes,
        }

    def table(self) -> str:
        """A readable table of the result."""
        picked = (
            " (the first generator in the input; choose another with "
            f"{in_callers_words('--baseline', 'baseline=')})"
            if self.baseline_picked
            else ""
        )
        lines = [
            f"baseline {self.baseline}{picked}: mean paired difference (generator - baseline) "
            f"with its {self.level:.0%} paired bootstrap interval ({self.n_boot} resamples, "
            f"seed {self.seed}); Wilcoxon signed-rank p, Holm-corrected across generators"
        ]
        for group in self.groups:
            lines.append("")
            lines.append(
                f"settings {group.fingerprint} (judge {group.judge}; "
                f"{', '.join(group.sources)}): {len(group.generators)} generators, "
                f"{group.conditions} conditions"
                + (f", {group.averaged} repeated records averaged" if group.averaged else "")
            )
            for view in group.judges:
                lines.append(f"judge {view.judge}")
                lines.extend(_difference_rows(view.differences, self.level))
                if view.ranking is not None:
                    lines.extend(_ranking_lines(view.ranking, self.level))
        if self.set_aside:
            lines.append("")
            lines.append("set aside (never paired):")
            lines.extend(
                f"  {s.source}: {s.count} record(s) of {s.generator}: {s.reason}"
                for s in self.set_aside
            )
        if self.notes:
            lines.append("")
            lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def format_p(value: float | None) -> str:
    """A p-value for a table: 3 significant digits, ``<1e-6`` below that."""
    if value is None:
        return "-"
    return "<1e-6" if value < 1e-6 else f"{value:.3g}"


def format_signed(value: float | None) -> str:
    """A difference with its sign, 3 decimals."""
    return "-" if value is None else f"{value:+.3f}"


def _difference_rows(rows: list[PairedDifference], level: float) -> list[str]:
    nowhere = {d.generator for d in rows if d.n == 0 and d.task == ALL_TASKS}
    unpaired = [d for d in rows if d.n == 0 and (d.task == ALL_TASKS or d.generator not in nowhere)]
    rows = [d for d in rows if d.n > 0]
    out = _paired_rows(rows, level) if rows else []
    if unpaired:  # one line, not a row of dashes each
        listed = "; ".join(
            f"{d.generator}"
            + ("" if d.task == ALL_TASKS else f" on {d.task}")
            + f" ({d.only_generator} condition(s))"
            for d in unpaired
        )
        out.append(f"  no condition shared with the baseline: {listed}")
    return out


def _paired_rows(rows: list[PairedDifference], level: float) -> list[str]:
    header = (
        f"  {'generator':<18} {'task':<20} {'n':>5}  {'baseline':>8} {'generator':>9}  "
        f"{'difference [' + format(level, '.0%') + ' interval]':<30} {'W/T/L':<13} "
        f"{'p':>7} {'p (Holm)':>8}"
    )
    out = [header]
    for d in rows:
        mean_b = "-" if d.mean_baseline is None else f"{d.mean_baseline:.3f}"
        mean_g = "-" if d.mean_generator is None else f"{d.mean_generator:.3f}"
        interval = (
            f"{format_signed(d.mean_difference)} [{format_signed(d.low)}, {format_signed(d.high)}]"
        )
        out.append(
            f"  {d.generator[:18]:<18} {d.task[:20]:<20} {d.n:>5}  {mean_b:>8} {mean_g:>9}  "
            f"{interval:<30} {f'{d.wins}/{d.ties}/{d.losses}':<13} "
            f"{format_p(d.p_value):>7} {format_p(d.p_holm):>8}"
            + (f"  ({d.note})" if d.note else "")
        )
    return out


def _ranking_lines(ranking: BradleyTerryRanking, level: float) -> list[str]:
    if ranking.note:
        return [f"  Bradley-Terry: none ({ranking.note})"]
    out = [
        f"  Bradley-Terry strength relative to {ranking.baseline} (log-odds of winning a "
        f"condition, {level:.0%} bootstrap interval), from {ranking.conditions} conditions:"
    ]
    for s in ranking.strengths:
        if s.generator == ranking.baseline:
            out.append(f"    {s.rank}. {s.generator}: 0 (the baseline)")
            continue
        interval = "" if s.low is None else f" [{format_signed(s.low)}, {format_signed(s.high)}]"
        out.append(
            f"    {s.rank}. {s.generator}: {format_signed(s.strength)}{interval}, "
            f"P(beats {ranking.baseline}) = {s.p_beats_baseline:.2f}"
        )
    return out
