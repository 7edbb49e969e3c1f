"""Which generator is better, and how sure: paired comparisons of generators judged on the
same conditions (``cigeval compare``, :func:`compare`, docs/comparisons.md).

Modules: :mod:`~cigeval.comparisons.inputs` (records, the condition each answers, judge views),
:mod:`~cigeval.comparisons.paired` (paired bootstrap interval, signed-rank test, Holm),
:mod:`~cigeval.comparisons.bradley_terry` (the ranking of three or more generators),
:mod:`~cigeval.comparisons.comparison` (:func:`compare`), :mod:`~cigeval.comparisons.result`.
"""

from cigeval.comparisons.bradley_terry import BradleyTerryRanking, Strength
from cigeval.comparisons.comparison import compare
from cigeval.comparisons.inputs import condition_key
from cigeval.comparisons.paired import PairedDifference, holm, paired_interval, signed_rank_p
from cigeval.comparisons.result import CompareResult, JudgeComparison, SettingsGroup

__all__ = [
    "BradleyTerryRanking",
    "CompareResult",
    "JudgeComparison",
    "PairedDifference",
    "SettingsGroup",
    "Strength",
    "compare",
    "condition_key",
    "holm",
    "paired_interval",
    "signed_rank_p",
]
