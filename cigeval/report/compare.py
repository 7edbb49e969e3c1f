"""The report's Compare section: every generator against a baseline, paired per condition
(:func:`cigeval.compare`), as tables and a forest plot in inline SVG; and for runs of the
preference rubrics (``pairwise``, ``pointwise``), the accuracy against the human labels in
the records and the pairs whose presentation orders disagreed.

Every text from a record is escaped here; the section is plain HTML and SVG (no script).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from cigeval.comparisons import CompareResult, PairedDifference, compare
from cigeval.comparisons.bradley_terry import BradleyTerryRanking
from cigeval.comparisons.inputs import is_preference_record
from cigeval.comparisons.paired import ALL_TASKS
from cigeval.comparisons.result import format_p, format_signed
from cigeval.report.plots import _svg, _text
from cigeval.results.fingerprint import fingerprint_of
from cigeval.results.record import generator_of
from cigeval.results.run import Run, score_of

_ACCENT, _MUTED, _GRID, _INK = "#2b6cb0", "#999", "#e3e3e3", "#222"
#: Rows of the forest plot at most (the table lists all).
_FOREST_ROWS = 60
#: Inconsistent pairs listed at most.
_INCONSISTENT_SHOWN = 50


def default_baseline(runs: Sequence[Run]) -> str | None:
    """The generator of the first scored record (None when fewer than two generators)."""
    seen: dict[str, None] = {}
    for run in runs:
        for record in run.records:
            if score_of(record) is not None and record.get("model") not in (None, ""):
                seen.setdefault(generator_of(record), None)
    return next(iter(seen)) if len(seen) >= 2 else None


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
            parts.append(
                f'<div class="cg-box"><span class="cg-warn">no comparison: {escape(str(exc))}'
                "</span></div>"
            )
        else:
            unnamed = sum(
                1
                for run in runs
                for r in run.records
                if r.get("model") in (None, "") and not is_preference_record(r)
            )
            parts.append(_comparison_html(result, picked=baseline is None, unnamed=unnamed))
    body = "".join(p for p in parts if p)
    if not body:
        return ""
    return f'<h2 id="cg-compare">Compare</h2><div id="cg-compare-body">{body}</div>'


# -- paired comparisons --------------------------------------------------------------------


def _comparable(run: Run) -> Run:
    """The run's records that name a generator and are no preference (preferences are scored
    in their own part; a record without ``model`` is no competitor to pair)."""
    kept = [
        r for r in run.records if not is_preference_record(r) and r.get("model") not in (None, "")
    ]
    return run if len(kept) == len(run.records) else dataclasses.replace(run, records=kept)


def _comparison_html(result: CompareResult, picked: bool, unnamed: int = 0) -> str:
    how = " (the first generator in the files; choose another with --baseline)" if picked else ""
    parts = [
        f'<div class="cg-note">baseline <b>{escape(result.baseline)}</b>{escape(how)}: the '
        f"mean paired difference (generator - baseline) on the conditions both answered, "
        f"with its {result.level:.0%} paired bootstrap interval ({result.n_boot} resamples of "
        "the conditions); wins/ties/losses per condition; Wilcoxon signed-rank p, "
        "Holm-corrected across the generators. See docs/comparisons.md.</div>"
    ]
    for group in result.groups:
        parts.append('<div class="cg-box">')
        parts.append(
            f"<h3>settings {escape(group.fingerprint)} · judge {escape(group.judge)} · "
            f"{len(group.generators)} generators · {group.conditions} conditions</h3>"
        )
        if group.averaged:
            parts.append(
                f'<div class="cg-note">{group.averaged} records shared a generator and a '
                "condition; their scores were averaged before pairing</div>"
            )
        for view in group.judges:
            if len(group.judges) > 1:
                parts.append(f"<h3>judge view: {escape(view.judge)}</h3>")
            paired = [d for d in view.differences if d.n > 0]
            if not paired:
                parts.append('<div class="cg-note">no condition answered by both</div>')
                continue
            parts.append(_differences_table(paired, result.level))
            parts.append(forest_svg(paired, result.level, view.judge))
            if view.ranking is not None:
                parts.append(_ranking_table(view.ranking, result.level))
        parts.append("</div>")
    extra = [
        f"{escape(s.source)}: {s.count} record(s) of {escape(s.generator)}: {escape(s.reason)}"
        for s in result.set_aside
    ] + [escape(note) for note in result.notes]
    if unnamed:
        extra.append(
            f"{unnamed} record(s) name no generator (no model field): they are in the "
            "leaderboard and the score distributions, never paired"
        )
    if extra:
        items = "".join(f"<li>{line}</li>" for line in extra)
        parts.append(
            f'<div class="cg-box cg-problems"><b>Never paired, and notes</b><ul>{items}</ul></div>'
        )
    return "".join(parts)


def _differences_table(rows: list[PairedDifference], level: float) -> str:
    body = []
    for d in rows:
        interval = (
            f"{format_signed(d.mean_difference)}"
            f'<span class="cg-ci"> [{format_signed(d.low)}, {format_signed(d.high)}]</span>'
        )
        win_rate = "–" if d.win_rate is None else f"{d.win_rate:.0%}"
        note = f'<br><span class="cg-ci">{escape(d.note)}</span>' if d.note else ""
        cls = ' class="cg-sig"' if d.interval_excludes_zero else ""
        body.append(
            f"<tr{cls}><td>{escape(d.generator)}</td><td>{escape(d.task)}</td>"
            f"<td class='num'>{d.n}</td>"
            f"<td class='num'>{_fmt(d.mean_baseline)}</td><td class='num'>{_fmt(d.mean_generator)}"
            f"</td><td class='num'>{interval}{note}</td>"
            f"<td class='num'>{d.wins}/{d.ties}/{d.losses}</td><td class='num'>{win_rate}</td>"
            f"<td class='num'>{format_p(d.p_value)}</td><td class='num'>{format_p(d.p_holm)}</td>"
            "</tr>"
        )
    return (
        '<table class="cg-t cg-compare-table"><tr><th>generator</th><th>task</th><th>pairs</th>'
        f"<th>baseline mean</th><th>generator mean</th><th>difference ({level:.0%} interval)</th>"
        "<th>wins/ties/losses</th><th>win rate</th><th>p</th><th>p (Holm)</th></tr>"
        f"{''.join(body)}</table>"
    )


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _ranking_table(ranking: BradleyTerryRanking, level: float) -> str:
    if ranking.note:
        return f'<div class="cg-note">Bradley–Terry ranking: none ({escape(ranking.note)})</div>'
    rows = "".join(
        f"<tr><td class='num'>{s.rank}</td><td>{escape(s.generator)}</td>"
        f"<td class='num'>{format_signed(s.strength)}"
        + (
            ""
            if s.low is None or s.generator == ranking.baseline
            else f'<span class="cg-ci"> [{format_signed(s.low)}, {format_signed(s.high)}]</span>'
        )
        + f"</td><td class='num'>{s.p_beats_baseline:.2f}</td><td class='num'>{s.games}</td></tr>"
        for s in ranking.strengths
    )
    return (
        f"<h3>Bradley–Terry ranking ({ranking.conditions} conditions)</h3>"
        '<table class="cg-t"><tr><th>rank</th><th>generator</th>'
        f"<th>strength vs {escape(ranking.baseline)} ({level:.0%} interval)</th>"
        f"<th>P(beats {escape(ranking.baseline)})</th><th>games</th></tr>{rows}</table>"
    )


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

    body = []
    for tick in (-limit, -limit / 2, 0.0, limit / 2, limit):
        x = x_of(tick)
        colour = _INK if tick == 0 else _GRID
        body.append(
            f'<line x1="{x:.1f}" y1="16" x2="{x:.1f}" y2="{height - 16:.1f}" stroke="{colour}"/>'
        )
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
                f'<line x1="{x_of(d.low):.1f}" y1="{y:.1f}" x2="{x_of(d.high):.1f}" '
                f'y2="{y:.1f}" stroke="{colour}" stroke-width="2"/>'
            )
        assert d.mean_difference is not None
        body.append(
            f'<circle cx="{x_of(d.mean_difference):.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
            f"<title>{escape(d.generator)} · {escape(d.task)}: {d.mean_difference:+.3f} "
            f"[{format_signed(d.low)}, {format_signed(d.high)}], n={d.n}</title></circle>"
        )
        win = "" if d.win_rate is None else f" win {d.win_rate:.0%}"
        body.append(_text(right + 8, y + 4, f"{d.mean_difference:+.3f}{win}", size=10, fill=_MUTED))
    title = (
        f"{judge}: mean paired difference from the baseline with {level:.0%} paired bootstrap "
        "interval"
    )
    return _svg(right + 110, height, body, title).replace("<svg ", '<svg class="cg-forest" ', 1)


# -- preference runs -----------------------------------------------------------------------


def _preference_records(run: Run) -> list[dict[str, Any]]:
    return [r for r in run.records if is_preference_record(r)]


def _preferences_html(runs: Sequence[Run], n_boot: int, level: float, seed: int) -> str:
    """One box per preference run and settings group (fingerprints are never pooled)."""
    from cigeval.results import last_record_per_id

    parts = []
    for run in runs:
        by_setting: dict[str, list[dict[str, Any]]] = {}
        for record in last_record_per_id(_preference_records(run)):
            by_setting.setdefault(fingerprint_of(record), []).append(record)
        for fingerprint, latest in by_setting.items():
            parts.append(_preference_box(run.label, fingerprint, latest, n_boot, level, seed))
    return "".join(parts)


def _preference_box(
    label: str,
    fingerprint: str,
    latest: list[dict[str, Any]],
    n_boot: int,
    level: float,
    seed: int,
) -> str:
    """The accuracy table and the inconsistent pairs of one preference run's settings group."""
    from cigeval.meta.preferences import LoadedPreferences, preference_report
    from cigeval.meta.preferences.items import item_from_record

    items = [i for i in (item_from_record(r) for r in latest) if i is not None]
    report = preference_report(
        LoadedPreferences(items, "cigeval"), label, n_boot=n_boot, level=level, seed=seed
    )
    table = (
        _accuracy_table(report.rows, level)
        if report.rows
        else '<div class="cg-note">no record carries a human label to score</div>'
    )
    return (
        f'<div class="cg-box cg-preferences"><h3>Preferences: {escape(label)} (settings '
        f"{escape(fingerprint)})</h3>{table}{_inconsistent_html(latest)}</div>"
    )


def _accuracy_table(rows: list[Any], level: float) -> str:
    from cigeval.meta.preferences.report import format_rate

    def groups(row: Any) -> str:
        return "<br>".join(
            f"K={k}: {format_rate(r)} (n={r.total:g})" for k, r in sorted(row.groups.items())
        )

    body = "".join(
        f"<tr><td>{escape(row.task)}</td><td class='num'>{row.items}</td>"
        f"<td class='num'>{row.comparisons}</td><td class='num'>{format_rate(row.with_ties)}</td>"
        f"<td class='num'>{format_rate(row.without_ties)}</td>"
        f"<td class='num'>{format_rate(row.per_order)}</td><td class='num'>{groups(row)}</td>"
        "</tr>"
        for row in rows
    )
    return (
        '<table class="cg-t cg-accuracy"><tr><th>task</th><th>items</th><th>pairs</th>'
        "<th>accuracy with ties</th><th>without ties</th><th>per order</th>"
        f"<th>group accuracy</th></tr>{body}</table>"
        f'<div class="cg-note">agreement with the human labels in the records, {level:.0%} '
        "bootstrap intervals over items; see docs/comparisons.md for how each is counted</div>"
    )


def _inconsistent_html(records: Sequence[Mapping[str, Any]]) -> str:
    inconsistent = [r for r in records if r["details"].get("consistent") is False]
    decided = [r for r in records if isinstance(r["details"].get("consistent"), bool)]
    if not decided:
        return ""
    head = (
        f"<h3>Pairs whose presentation orders disagreed: {len(inconsistent)} of {len(decided)}</h3>"
    )
    if not inconsistent:
        return head
    rows = []
    for record in inconsistent[:_INCONSISTENT_SHOWN]:
        orders = "; ".join(
            f"{' '.join(map(str, o.get('order') or []))} → "
            + " > ".join(" = ".join(map(str, g)) for g in o.get("ranking") or [])
            for o in record["details"].get("orders") or []
            if isinstance(o, Mapping)
        )
        rows.append(
            f"<tr><td>{escape(str(record['id']))}</td><td>{escape(str(record.get('task', '?')))}"
            f"</td><td>{escape(orders)}</td><td>{escape(str(record.get('human', '')))}</td></tr>"
        )
    more = len(inconsistent) - _INCONSISTENT_SHOWN
    tail = f'<div class="cg-note">… and {more} more</div>' if more > 0 else ""
    return (
        f'{head}<table class="cg-t cg-inconsistent"><tr><th>sample</th><th>task</th>'
        f"<th>order shown → ranking given</th><th>human</th></tr>{''.join(rows)}</table>{tail}"
    )
