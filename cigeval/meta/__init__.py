"""Meta-evaluation: how well an evaluator agrees with the ImagenHub human ratings.

Load scores (:func:`load_scores`), optionally combine several sources per image
(:func:`combine_scores`), correlate them with the shipped human ratings per task and generator
(:func:`meta_evaluate`) or compute the human-vs-human baseline (:func:`human_baseline`); both
return a :class:`MetaResult` with ``.tasks``, ``.average``, ``.per_model``, ``.coverage`` and
``.to_dict()``. Splits (:func:`make_split`) and trajectory export
(:func:`export_trajectories`) support fine-tuning work. See docs/meta-evaluation.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.meta.autometrics import load_autometrics
    from cigeval.meta.average import (
        AVERAGINGS,
        Rounding,
        average_correlations,
        average_tasks,
        paper_rounding,
    )
    from cigeval.meta.cells import BadCell
    from cigeval.meta.combine import combine_scores
    from cigeval.meta.evaluate import coverage_table, human_baseline, meta_evaluate
    from cigeval.meta.frames import split_runs
    from cigeval.meta.human import (
        DIMENSIONS,
        EXCLUDED_BY_DEFAULT,
        benchmark_samples,
        load_human_ratings,
        load_rater_ratings,
    )
    from cigeval.meta.result import MetaResult, rows_table, rows_to_dict
    from cigeval.meta.scores import (
        load_cigeval_results,
        load_scores,
        load_viescore_tsv,
        records_to_frame,
    )
    from cigeval.meta.selection import Selection, selection_of
    from cigeval.meta.split import Split, load_split, make_split, samples_of_records, save_split
    from cigeval.meta.trajectories import ExportReport, MissingImage, export_trajectories
    from cigeval.stats import METHODS, bootstrap_ci, correlation

#: Public names, each loaded from its module on first access (so importing one module of
#: the package, e.g. :mod:`cigeval.meta.human`, loads no other; ``cigeval.stats`` lives
#: outside the package).
_LAZY = {
    "average_correlations": ".average",
    "average_tasks": ".average",
    "AVERAGINGS": ".average",
    "BadCell": ".cells",
    "benchmark_samples": ".human",
    "bootstrap_ci": "cigeval.stats",
    "combine_scores": ".combine",
    "correlation": "cigeval.stats",
    "coverage_table": ".evaluate",
    "DIMENSIONS": ".human",
    "EXCLUDED_BY_DEFAULT": ".human",
    "export_trajectories": ".trajectories",
    "ExportReport": ".trajectories",
    "human_baseline": ".evaluate",
    "load_autometrics": ".autometrics",
    "load_cigeval_results": ".scores",
    "load_human_ratings": ".human",
    "load_rater_ratings": ".human",
    "load_scores": ".scores",
    "load_split": ".split",
    "load_viescore_tsv": ".scores",
    "make_split": ".split",
    "meta_evaluate": ".evaluate",
    "MetaResult": ".result",
    "METHODS": "cigeval.stats",
    "MissingImage": ".trajectories",
    "paper_rounding": ".average",
    "records_to_frame": ".scores",
    "Rounding": ".average",
    "rows_table": ".result",
    "rows_to_dict": ".result",
    "samples_of_records": ".split",
    "save_split": ".split",
    "Selection": ".selection",
    "selection_of": ".selection",
    "Split": ".split",
    "split_runs": ".frames",
}

__all__ = [
    "AVERAGINGS",
    "DIMENSIONS",
    "EXCLUDED_BY_DEFAULT",
    "METHODS",
    "BadCell",
    "ExportReport",
    "MetaResult",
    "MissingImage",
    "Rounding",
    "Selection",
    "Split",
    "average_correlations",
    "average_tasks",
    "benchmark_samples",
    "bootstrap_ci",
    "combine_scores",
    "correlation",
    "coverage_table",
    "export_trajectories",
    "human_baseline",
    "load_autometrics",
    "load_cigeval_results",
    "load_human_ratings",
    "load_rater_ratings",
    "load_scores",
    "load_split",
    "load_viescore_tsv",
    "make_split",
    "meta_evaluate",
    "paper_rounding",
    "records_to_frame",
    "rows_table",
    "rows_to_dict",
    "samples_of_records",
    "save_split",
    "selection_of",
    "split_runs",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
