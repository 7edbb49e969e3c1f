"""Plots of a report as small inline SVG: no plotting library, no network.

The geometry is computed here as :class:`Shape` values; the template ``assets/svg.j2`` writes
them out and escapes every label. Sizes are in SVG user units and the SVGs scale to their
container.
"""

from __future__ import annotations

from typing import NamedTuple

from cigeval.report.render import render
from cigeval.report.stats import HumanAgreement, Leaderboard

_INK, _MUTED, _ACCENT, _GRID = "#222", "#777", "#2b6cb0", "#e3e3e3"


class Shape(NamedTuple):
    """One SVG element: its tag, attributes (name, value) in order, text and children."""

    tag: str
    attrs: tuple[tuple[str, str], ...]
    text: str | None = None
    children: tuple[Shape, ...] = ()


def shape(
    tag: str, text: str | None = None, children: tuple[Shape, ...] = (), /, **attrs: object
) -> Shape:
    """A :class:`Shape`; attribute names are written with ``-`` for ``_`` (``class_`` is
    ``class``), floats to one decimal."""
    return Shape(
        tag,
        tuple(
            (
                name.rstrip("_").replace("_", "-"),
                f"{value:.1f}" if isinstance(value, float) else str(value),
            )
            for name, value in attrs.items()
        ),
        text,
        children,
    )


def _text(
    x: float, y: float, text: str, anchor: str = "start", size: int = 11, **style: str
) -> Shape:
    return shape("text", text, x=float(x), y=float(y), font_size=size, text_anchor=anchor, **style)


def _svg(
    width: float, height: float, body: list[Shape], title: str, css_class: str | None = None
) -> str:
    return str(
        render(
            "svg.j2",
            width=f"{width:.0f}",
            height=f"{height:.0f}",
            body=body,
            title=title,
            ink=_INK,
            css_class=css_class,
        )
    )


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def leaderboard_svg(board: Leaderboard, level: float) -> str:
    """Each generator's mean score over all tasks with its interval, best first; records that
    name no generator after them, unranked. "" when no row has a record."""
    rows = [*board.ranking, *board.unranked]
    if not rows:
        return ""
    left, right, row = 190.0, 460.0, 22.0
    height = 40 + row * len(rows)
    body: list[Shape] = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * (right - left)
        body.append(shape("line", x1=x, y1=18, x2=x, y2=float(height - 14), stroke=_GRID))
        body.append(_text(x, height - 2, f"{tick:g}", "middle", 10, fill=_MUTED))
    for index, generator in enumerate(rows):
        y = 30 + index * row
        c = board.overall[generator]
        rank = board.rank(generator)
        label = _short(generator) if rank is None else f"{rank}. {_short(generator)}"
        body.append(_text(left - 8, y + 4, label, "end"))
        if c.mean is None:
            body.append(_text(left + 4, y + 4, f"no score ({c.errors} errors)", fill=_MUTED))
            continue
        if c.low is not None and c.high is not None:
            x1, x2 = (left + v * (right - left) for v in (c.low, c.high))
            body.append(shape("line", x1=x1, y1=y, x2=x2, y2=y, stroke=_ACCENT, stroke_width=2))
        x = left + c.mean * (right - left)
        body.append(shape("circle", cx=x, cy=y, r=4, fill=_ACCENT))
        body.append(_text(right + 8, y + 4, f"{c.mean:.3f} (n={c.n})", size=10, fill=_MUTED))
    title = f"{board.run}: mean score per generator with {level:.0%} bootstrap interval"
    return _svg(right + 90, height, body, title)


#: Scores of one plot row (a generator, with its rubric when a run has several) per task,
#: and the range its rubric gives them.
Distribution = tuple[dict[str, list[float]], tuple[float, float]]


def distributions_svg(
    run: str, tasks: list[str], rows: dict[str, Distribution], bins: int = 10
) -> str:
    """Histograms of the scores, one small plot per row (generator, and rubric when a run
    has several) and task (columns), binned over the row's score range. "" without rows."""
    if not rows:
        return ""
    cell_w, cell_h, label_w, head = 120.0, 54.0, 150.0, 30.0
    width = label_w + cell_w * max(1, len(tasks)) + 10
    height = head + cell_h * len(rows) + 16
    body: list[Shape] = []
    for column, task in enumerate(tasks):
        x = label_w + column * cell_w + cell_w / 2
        body.append(_text(x, 14, _short(task, 20), "middle", 10))
    ranges = {score_range for _, score_range in rows.values()}
    if len(ranges) == 1:
        low, high = next(iter(ranges))
        body.append(_text(label_w, height - 3, f"{low:g}", "start", 9, fill=_MUTED))
        body.append(_text(width - 14, height - 3, f"{high:g}", "end", 9, fill=_MUTED))
    for row, (name, (by_task, (low, high))) in enumerate(rows.items()):
        y0 = head + row * cell_h
        label = _short(name, 22) if len(ranges) == 1 else f"{_short(name, 16)} [{low:g}–{high:g}]"
        body.append(_text(label_w - 8, y0 + cell_h / 2 + 4, label, "end", 10))
        for column, task in enumerate(tasks):
            values = by_task.get(task, [])
            x0 = label_w + column * cell_w + 4
            w, h = cell_w - 8, cell_h - 10
            body.append(shape("rect", x=x0, y=y0, width=w, height=h, fill="none", stroke=_GRID))
            if not values:
                body.append(_text(x0 + w / 2, y0 + h / 2 + 4, "–", "middle", 10, fill=_MUTED))
                continue
            counts = [0] * bins
            span = (high - low) or 1.0
            for v in values:
                counts[min(bins - 1, max(0, int((v - low) / span * bins)))] += 1
            top = max(counts)
            bar = w / bins
            for index, count in enumerate(counts):
                if count:
                    bh = (h - 2) * count / top
                    edges = (low + span * index / bins, low + span * (index + 1) / bins)
                    tip = shape("title", f"{edges[0]:g}–{edges[1]:g}: {count}")
                    body.append(
                        shape("rect", None, (tip,), class_="cg-bar", x=x0 + index * bar + 0.5,
                              y=y0 + h - bh, width=bar - 1, height=bh, fill=_ACCENT)
                    )  # fmt: skip
            body.append(_text(x0 + w - 2, y0 + 10, f"n={len(values)}", "end", 9, fill=_MUTED))
    title = f"{run}: distribution of scores per generator and task"
    return _svg(width, height, body, title)


def human_scatter_svg(run: str, agreements: list[HumanAgreement]) -> str:
    """Judge score against human rating, one small square plot per task."""
    side, gap, head, per_row = 150.0, 36.0, 34.0, 6
    rows = max(1, -(-len(agreements) // per_row))
    width = gap + (side + gap) * min(per_row, max(1, len(agreements)))
    height = (head + side + 30) * rows
    body: list[Shape] = []
    for index, agreement in enumerate(agreements):
        x0 = gap + (index % per_row) * (side + gap)
        top = (index // per_row) * (head + side + 30)
        group: list[Shape] = []
        group.append(_text(x0 + side / 2, 12, _short(agreement.task, 24), "middle", 10))
        rho = "–" if agreement.spearman is None else f"{agreement.spearman:.2f}"
        group.append(
            _text(x0 + side / 2, 26, f"Spearman {rho}, n={agreement.n}", "middle", 9, fill=_MUTED)
        )
        group.append(
            shape("rect", x=x0, y=head, width=side, height=side, fill="none", stroke=_GRID)
        )
        for judge, human in agreement.pairs:
            cx, cy = x0 + human * side, head + (1 - judge) * side
            group.append(shape("circle", cx=cx, cy=cy, r=2.5, fill=_ACCENT, fill_opacity="0.5"))
        group.append(_text(x0 + side / 2, head + side + 14, "human", "middle", 9, fill=_MUTED))
        group.append(
            _text(x0 - 6, head + side / 2, "judge", "middle", 9, fill=_MUTED,
                  transform=f"rotate(-90 {x0 - 6:.1f} {head + side / 2:.1f})")
        )  # fmt: skip
        body.append(shape("g", None, tuple(group), transform=f"translate(0 {top:.0f})"))
    return _svg(width, height, body, f"{run}: judge score against human rating per task")
