"""Scores as a pandas DataFrame, for analysis in research code and notebooks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cigeval.score import Score

if TYPE_CHECKING:
    import pandas as pd


def to_frame(scores: Iterable[Score | dict[str, Any]]) -> pd.DataFrame:
    """One row per sample: id, task, rubric, model, status, score, error, judge, ``degraded``
    (how many sub-questions were judged without the tool the plan chose; 0 for none), one
    column per dimension (``dim.SC``...) and per sub-question (``sub.<question id>``), calls
    and tokens.

    Accepts Scores or result records (``Score.to_record`` dicts, e.g. from
    :func:`cigeval.read_records`). pandas is imported here, on first use.
    """
    import pandas as pd

    rows = []
    for item in scores:
        score = item if isinstance(item, Score) else Score.from_record(item)
        row: dict[str, Any] = {
            "id": score.id,
            "task": score.task,
            "rubric": score.rubric,
            "model": score.passthrough.get("model"),
            "status": score.status,
            "score": score.value,
            "error": score.error,
            "judge": score.judge,
            "degraded": len(score.degraded_questions),
        }
        row.update({f"dim.{name}": value for name, value in score.dimensions.items()})
        row.update({f"sub.{s.question_id}": s.score for s in score.sub_scores})
        row.update({f"tool.{s.question_id}": s.tool for s in score.sub_scores})
        if score.spread:
            row.update({f"spread.{k}": v for k, v in score.spread.items()})
        row.update({k: score.usage.get(k) for k in ("calls", "prompt_tokens", "completion_tokens")})
        rows.append(row)
    return pd.DataFrame(rows)
