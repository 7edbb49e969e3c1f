"""The report's Compare section: every generator against a baseline, paired per condition
(:func:`cigeval.compare`), as tables and a forest plot in inline SVG; and for runs of the
preference rubrics (``pairwise``, ``pointwise``), the accuracy against the human labels in
the records and the pairs whose presentation orders disagreed.

The template ``assets/compare.j2`` lays the section out and escapes every text from a record;
the section is plain HTML and SVG (no script).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from cigeval._caller import in_callers_words
from cigeval.comparisons import CompareResult, PairedDifference, compare
from cigeval.comparisons.inputs import is_preference_record
from cigeval.comparisons.paired import ALL_TASKS
from cigeval.comparisons.result import format_p, format_signed
from cigeval.report.plots import Shape, _svg, _text, shape
from cigeval.report.render import macro
from cigeval.results.fingerprint import fingerprint_of
from cigeval.results.record import generator_of
from cigeval.results.run import Run, first_in_input, score_of

_ACCENT, _MUTED, _GRID, _INK = "#2b6cb0", "#999", "#e3e3e3", "#222"
#: Rows of the forest plot at most (the table lists all).
_FOREST_ROWS = 60
#: Inconsistent pairs listed at most.
_INCONSISTENT_SHOWN = 50


def default_baseline(runs: Sequence[Run]) -> str | None:
    """The generator of the scored record first in the input (the samples' order where the
    records keep it, else the files'; None when fewer than two generators)."""
    scored = [
        record
        for run in runs
        for record in run.records
        if score_of(record) is not None and record.get("model") not in (None, "")
    ]
    if len({generator_of(record) for record in scored}) < 2:
        return None
    first = first_in_input(scored)
    return None if first is None else generator_of(first)


def compare_section(
    runs: Sequence[Run], baseline: str | None, n_boot: int, level: float, seed: int
) -> str:
    """The Compare section's HTML ("" when there is nothing to compare)."""
    parts = [_preferences_html(runs, n_boot, level, seed)]
    scored = [_comparable(run) for run in runs]
    scored = [run for run in scored if run.records]
    chosen = baseline or default_baseline(scored)
    if chosen is not None:
        try:
            result = compare(scored, chosen, n_boot=n_boot, level=level, seed=seed)
        except Exception as exc:  # a report is still written; the section says why
            parts.append(_macro("failed")(str(exc)))
        else:
            unnamed = sum(
                1
                for run in runs
                for r in run.records
                if r.get("model") in (None, "") and not is_preference_record(r)
            )
            parts.append(_comparison_html(result, picked=baseline is None, unnamed=unnamed))
    body = Markup("").join(p for p in parts if p)
    return str(_macro("section")(body)) if body else ""


def _macro(name: str) -> Any:
    return macro(
        "compare.j2",
        name,
        pct=lambda value: f"{value:.0%}",
        number=_fmt,
        signed=format_signed,
        p_value=format_p,
        rate=_format_rate,
    )


def _format_rate(rate: Any) -> str:
    from cigeval.meta.preferences.report import format_rate

    return format_rate(rate)


# -- paired comparisons --------------------------------------------------------------------


def _comparable(run: Run) -> Run:
    """The run's records that name a generator and are no preference (preferences are scored
    in their own part; a record without ``model`` is no competitor to pair)."""
    kept = [
        r for r in run.records if not is_preference_record(r) and r.get("model") not in (None, "")
    ]
    return run if len(kept) == len(run.records) else dataclasses.replace(run, records=kept)


def _comparison_html(result: CompareResult, picked: bool, unnamed: int = 0) -> Markup:
    how = (
        " (the first generator in the input; choose another with "
        f"{in_callers_words('--baseline', 'baseline=')})"
        if picked
        else ""
    )
    groups = []
    for group in result.groups:
        views = []
        for view in group.judges:
            paired = [d for d in view.differences if d.n > 0]
            forest = Markup(forest_svg(paired, result.level, view.judge)) if paired else ""
            views.append((view, paired, forest))
        groups.append((group, views))
    notes = [
        f"{s.source}: {s.count} record(s) of {s.generator}: {s.reason}" for s in result.set_aside
    ]
    notes += result.notes
    if unnamed:
        notes.append(
            f"{unnamed} record(s) name no generator (no model field): they are in the "
            "leaderboard and the score distributions, never paired"
        )
    return Markup(_macro("comparison")(result, how, groups, notes))


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _axis_limit(rows: list[PairedDifference]) -> float:
    extent = max(
        (abs(v) for d in rows for v in (d.low, d.high, d.mean_difference) if v is not None),
        default=0.0,
    )
    if extent <= 0:
        return 0.1
    step = 10 ** math.floor(math.log10(extent))
    return math.ceil(extent / step * 1.0001) * step


def forest_svg(rows: list[PairedDifference], level: float, judge: str) -> str:
    """Each generator's mean paired difference with its interval, overall then per task,
    around a line at zero; intervals that exclude zero are drawn in colour."""
    shown = [d for d in rows if d.mean_difference is not None][:_FOREST_ROWS]
    left, right, row_height = 260.0, 620.0, 20.0
    height = 46 + row_height * max(1, len(shown))
    limit = _axis_limit(shown)

    def x_of(value: float) -> float:
        return left + (value + limit) / (2 * limit) * (right - left)

    body: list[Shape] = []
    for tick in (-limit, -limit / 2, 0.0, limit / 2, limit):
        x = x_of(tick)
        colour = _INK if tick == 0 else _GRID
        body.append(shape("line", x1=x, y1=16, x2=x, y2=float(height - 16), stroke=colour))
        label = f"{tick:+.3g}" if tick else "0"
        body.append(_text(x, height - 3, label, "middle", 10, fill=_MUTED))
    for index, d in enumerate(shown):
        y = 28 + index * row_height
        label = d.generator if d.task == ALL_TASKS else f"  {d.generator} · {d.task}"
        weight = "bold" if d.task == ALL_TASKS else "normal"
        body.append(_text(left - 8, y + 4, label[:40], "end", 11, font_weight=weight))
        colour = _ACCENT if d.interval_excludes_zero else _MUTED
        if d.low is not None and d.high is not None:
            body.append(
                shape("line", x1=x_of(d.low), y1=y, x2=x_of(d.high), y2=y, stroke=colour,
                      stroke_width=2)
            )  # fmt: skip
        assert d.mean_difference is not None
        tip = (
            f"{d.generator} · {d.task}: {d.mean_difference:+.3f} "
            f"[{format_signed(d.low)}, {format_signed(d.high)}], n={d.n}"
        )
        body.append(
            shape("circle", None, (shape("title", tip),), cx=x_of(d.mean_difference), cy=y, r=4,
                  fill=colour)
        )  # fmt: skip
        win = "" if d.win_rate is None else f" win {d.win_rate:.0%}"
        body.append(_text(right + 8, y + 4, f"{d.mean_difference:+.3f}{win}", size=10, fill=_MUTED))
    title = (
        f"{judge}: mean paired difference from the baseline with {level:.0%} paired bootstrap "
        "interval"
    )
    return _svg(right + 110, height, body, title, css_class="cg-forest")


# -- preference runs -----------------------------------------------------------------------


def _preference_records(run: Run) -> list[dict[str, Any]]:
    return [r for r in run.records if is_preference_record(r)]


def _preferences_html(runs: Sequence[Run], n_boot: int, level: float, seed: int) -> Markup:
    """One box per preference run and settings group (fingerprints are never pooled)."""
    from cigeval.results import last_record_per_id

    parts = []
    for run in runs:
        by_setting: dict[str, list[dict[str, Any]]] = {}
        for record in last_record_per_id(_preference_records(run)):
            by_setting.setdefault(fingerprint_of(record), []).append(record)
        for fingerprint, latest in by_setting.items():
            parts.append(_preference_box(run.label, fingerprint, latest, n_boot, level, seed))
    return Markup("").join(parts)


def _preference_box(
    label: str,
    fingerprint: str,
    latest: list[dict[str, Any]],
    n_boot: int,
    level: float,
    seed: int,
) -> Markup:
    """The accuracy table and the inconsistent pairs of one preference run's settings group."""
    from cigeval.meta.preferences import LoadedPreferences, preference_report
    from cigeval.meta.preferences.items import item_from_record

    items = [i for i in (item_from_record(r) for r in latest) if i is not None]
    report = preference_report(
        LoadedPreferences(items, "cigeval"), label, n_boot=n_boot, level=level, seed=seed
    )
    decided = [r for r in latest if isinstance(r["details"].get("consistent"), bool)]
    inconsistent = [
        (str(r["id"]), str(r.get("task", "?")), _orders(r), str(r.get("human", "")))
        for r in decided
        if r["details"].get("consistent") is False
    ]
    box = _macro("preference_box")
    return Markup(
        box(label, fingerprint, report.rows, level, inconsistent, len(decided), _INCONSISTENT_SHOWN)
    )


def _orders(record: Mapping[str, Any]) -> str:
    """The presentation orders of a preference record and the ranking given to each."""
    return "; ".join(
        f"{' '.join(map(str, o.get('order') or []))} → "
        + " > ".join(" = ".join(map(str, g)) for g in o.get("ranking") or [])
        for o in record["details"].get("orders") or []
        if isinstance(o, Mapping)
    )
