"""Reports of judged runs: one self-contained HTML page with the leaderboard (bootstrap
intervals, ranking, agreement with human ratings and between judges), plots, the run's
provenance and one card per sample (``cigeval report``, docs/report.md).

Runs come from :mod:`cigeval.results.run`, statistics from :mod:`cigeval.stats`. Modules:
:mod:`~cigeval.report.images` (thumbnails by hash), :mod:`~cigeval.report.stats` (leaderboard
and agreement), :mod:`~cigeval.report.plots` (inline SVG), :mod:`~cigeval.report.cards` (one
sample's HTML, also the Jupyter card), :mod:`~cigeval.report.provenance`,
:mod:`~cigeval.report.page`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.report.page import Report, build_report, json_for_script
    from cigeval.results.run import Run, load_run, run_from_scores
    from cigeval.stats import bootstrap_mean_interval


def _as_records(scores: Any) -> list[Any]:
    if hasattr(scores, "to_dict") and hasattr(scores, "columns"):  # a pandas DataFrame
        from cigeval.results.run import frame_records

        return frame_records(scores)
    return list(scores)


def report_html(scores: Any, *, max_cards: int = 20, **options: Any) -> str:
    """The report of Scores (or result records, or a :func:`cigeval.to_frame` DataFrame) as
    static HTML for a notebook: leaderboard, plots and the first ``max_cards`` cards.

    ``options`` go to :func:`build_report` (``n_boot``, ``level``, ``seed``, ...). Show it with
    ``IPython.display.HTML(cigeval.report_html(scores))``; :func:`write_report` writes the
    whole interactive page.
    """
    from cigeval.report.page import build_report

    return build_report(_as_records(scores), **options).fragment(max_cards)


def write_report(sources: Iterable[Any] | Any, out: str | Path, **options: Any) -> Report:
    """Write the interactive report of results files, Scores or a DataFrame to ``out``."""
    from cigeval.report.page import build_report

    if isinstance(sources, str | Path):
        sources = [sources]
    report = build_report(_as_records(sources), **options)
    report.write(out)
    return report


__all__ = [
    "Report",
    "Run",
    "bootstrap_mean_interval",
    "build_report",
    "json_for_script",
    "load_run",
    "report_html",
    "run_from_scores",
    "write_report",
]

# Loaded on first use: a worker process making thumbnails imports report.images alone.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("Report", "build_report", "json_for_script"), ".page"),
        **dict.fromkeys(("Run", "load_run", "run_from_scores"), "cigeval.results.run"),
        "bootstrap_mean_interval": "cigeval.stats",
    },
    __all__,
)
