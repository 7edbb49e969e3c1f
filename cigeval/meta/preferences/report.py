"""The preference meta-evaluation of one file: accuracies per task, inconsistent items, notes,
as JSON (:meth:`PreferenceReport.to_dict`) and as a table (:meth:`PreferenceReport.table`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cigeval.meta.preferences.accuracy import PreferenceRow, Rate, preference_rows
from cigeval.meta.preferences.items import PreferenceItem
from cigeval.meta.preferences.layouts import LoadedPreferences


@dataclass
class PreferenceReport:
    """Accuracies of a judge's preferences against the human ones (first row: all tasks)."""

    source: str
    layout: str
    rows: list[PreferenceRow]
    level: float
    n_boot: int
    seed: int
    inconsistent: list[PreferenceItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "source": self.source,
            "layout": self.layout,
            "level": self.level,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "rows": [row.as_dict() for row in self.rows],
            "inconsistent_items": [item.id for item in self.inconsistent],
            "notes": self.notes,
        }

    def table(self) -> str:
        """A readable table."""
        lines = [
            f"{self.source} ({self.layout} layout): judge vs human preferences, "
            f"{self.level:.0%} bootstrap intervals over items ({self.n_boot} resamples, seed "
            f"{self.seed})",
            f"  {'task':<22} {'items':>6} {'pairs':>6}  {'with ties':<24} {'without ties':<24} "
            f"{'per order':<24} group accuracy (K: value [interval] n)",
        ]
        for row in self.rows:
            groups = "; ".join(
                f"K={k}: {format_rate(rate)} n={rate.total:g}"
                for k, rate in sorted(row.groups.items())
            )
            lines.append(
                f"  {row.task[:22]:<22} {row.items:>6} {row.comparisons:>6}  "
                f"{format_rate(row.with_ties):<24} {format_rate(row.without_ties):<24} "
                f"{format_rate(row.per_order):<24} {groups}"
            )
        overall = self.rows[0] if self.rows else None
        if overall is not None and overall.inconsistent is not None:
            rate = overall.inconsistent
            shown = ", ".join(item.id for item in self.inconsistent[:10])
            more = " ..." if len(self.inconsistent) > 10 else ""
            lines.append(
                "inconsistent across presentation orders (answer turned into a tie): "
                f"{rate.correct:g} of {rate.total:g} items" + (f": {shown}{more}" if shown else "")
            )
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def format_rate(rate: Rate) -> str:
    """``0.672 [0.640, 0.703]`` (``-`` when nothing counted)."""
    if rate.value is None:
        return "-"
    interval = "" if rate.low is None else f" [{rate.low:.3f}, {rate.high:.3f}]"
    return f"{rate.value:.3f}{interval}"


def preference_report(
    loaded: LoadedPreferences,
    source: str = "preferences",
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PreferenceReport:
    """The accuracies of ``loaded``'s items (items without any human label are left out)."""
    labelled = [i for i in loaded.items if any(c.human is not None for c in i.comparisons)]
    notes = list(loaded.notes)
    if len(labelled) < len(loaded.items):
        notes.append(f"{len(loaded.items) - len(labelled)} item(s) carry no human label; left out")
    if not labelled:
        notes.append("no item carries a human label: nothing to score")
    return PreferenceReport(
        source=source,
        layout=loaded.layout,
        rows=preference_rows(labelled, n_boot, level, seed) if labelled else [],
        level=level,
        n_boot=n_boot,
        seed=seed,
        inconsistent=[i for i in labelled if i.inconsistent],
        notes=notes,
    )
