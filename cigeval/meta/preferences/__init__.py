"""Preference meta-evaluation: how often a judge's preferences between candidates agree with
people's, counted as GenAI-Bench, MMRB2 and EditReward-Bench count them
(``cigeval meta preferences``, docs/comparisons.md).

:func:`load_preferences` reads a file in one of the published layouts (or cigeval's own
pairwise results, or a generic JSONL) into :class:`PreferenceItem` objects;
:func:`preference_report` computes the accuracies with bootstrap intervals, per task.
"""

from cigeval.meta.preferences.accuracy import PreferenceRow, Rate, agrees, preference_rows
from cigeval.meta.preferences.items import Comparison, PreferenceItem
from cigeval.meta.preferences.layouts import LAYOUTS, LoadedPreferences, load_preferences
from cigeval.meta.preferences.report import PreferenceReport, preference_report

__all__ = [
    "LAYOUTS",
    "Comparison",
    "LoadedPreferences",
    "PreferenceItem",
    "PreferenceReport",
    "PreferenceRow",
    "Rate",
    "agrees",
    "load_preferences",
    "preference_report",
    "preference_rows",
]
