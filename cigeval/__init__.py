"""cigeval: judge AI-generated and AI-edited images with an agentic LMM (CIGEval) and more.

Quick start::

    import cigeval
    score = cigeval.evaluate(
        {"id": "1", "task": "text_guided_ie", "instruction": "make the car red",
         "images": {"source": "src.png", "output": "out.png"}},
        model="openai:gpt-4o-2024-05-13",
    )
    score.value, score.sub_scores

The names below are the public API; each loads on first use, so ``import cigeval`` stays
light (no langgraph, pandas, scipy, OpenCV, torch or transformers until something needs them).
Sub-packages hold the rest: :mod:`cigeval.tasks`, :mod:`cigeval.tools`,
:mod:`cigeval.rubrics`, :mod:`cigeval.backends`, :mod:`cigeval.results`, :mod:`cigeval.meta`,
:mod:`cigeval.comparisons`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports
from cigeval._version import __version__

if TYPE_CHECKING:
    from cigeval.backends import Backend, ScriptedBackend, register_backend
    from cigeval.comparisons import compare
    from cigeval.config import EnsembleConfig, EvalConfig, RunConfig, RunOptions
    from cigeval.engines import evaluate_dataset
    from cigeval.errors import CigevalError, ConfigError, InputError, ParseError
    from cigeval.evaluation import (
        evaluate,
        evaluate_async,
        evaluate_many,
        evaluate_many_async,
    )
    from cigeval.hf_datasets import dataset_samples
    from cigeval.meta.calibrate import calibrate
    from cigeval.report import report_html, write_report
    from cigeval.results import read_records, to_frame
    from cigeval.rubrics import Rubric, define_rubric, register_rubric
    from cigeval.runs import RunResult
    from cigeval.runs.evaluator import Evaluator
    from cigeval.sample import Sample, iter_samples_file
    from cigeval.score import Score, SubScore
    from cigeval.tasks import SubQuestion, TaskSpec, load_tasks_file, register_task
    from cigeval.testing import rule_judge
    from cigeval.tools import Tool, ToolContext, ToolResult, register_tool

#: Public name -> the module that defines it.
_PUBLIC: dict[str, str] = {
    # judging
    "evaluate": "cigeval.evaluation",
    "evaluate_async": "cigeval.evaluation",
    "evaluate_many": "cigeval.evaluation",
    "evaluate_many_async": "cigeval.evaluation",
    "Evaluator": "cigeval.runs.evaluator",
    "EvalConfig": "cigeval.config",
    "RunConfig": "cigeval.config",
    "EnsembleConfig": "cigeval.config",
    "evaluate_dataset": "cigeval.engines",
    "RunOptions": "cigeval.config",
    "RunResult": "cigeval.runs",
    # inputs and results
    "dataset_samples": "cigeval.hf_datasets",
    "Sample": "cigeval.sample",
    "iter_samples_file": "cigeval.sample",
    "Score": "cigeval.score",
    "SubScore": "cigeval.score",
    "read_records": "cigeval.results",
    "to_frame": "cigeval.results",
    "report_html": "cigeval.report",
    "write_report": "cigeval.report",
    "compare": "cigeval.comparisons",
    "calibrate": "cigeval.meta.calibrate",
    # extension points
    "TaskSpec": "cigeval.tasks",
    "SubQuestion": "cigeval.tasks",
    "register_task": "cigeval.tasks",
    "load_tasks_file": "cigeval.tasks",
    "Tool": "cigeval.tools",
    "ToolContext": "cigeval.tools",
    "ToolResult": "cigeval.tools",
    "register_tool": "cigeval.tools",
    "Rubric": "cigeval.rubrics",
    "register_rubric": "cigeval.rubrics",
    "define_rubric": "cigeval.rubrics",
    "Backend": "cigeval.backends",
    "register_backend": "cigeval.backends",
    # testing helpers
    "ScriptedBackend": "cigeval.backends",
    "rule_judge": "cigeval.testing",
    # errors
    "CigevalError": "cigeval.errors",
    "ConfigError": "cigeval.errors",
    "InputError": "cigeval.errors",
    "ParseError": "cigeval.errors",
}

__all__ = [
    "Backend",
    "CigevalError",
    "ConfigError",
    "EnsembleConfig",
    "EvalConfig",
    "Evaluator",
    "InputError",
    "ParseError",
    "Rubric",
    "RunConfig",
    "RunOptions",
    "RunResult",
    "Sample",
    "Score",
    "ScriptedBackend",
    "SubQuestion",
    "SubScore",
    "TaskSpec",
    "Tool",
    "ToolContext",
    "ToolResult",
    "__version__",
    "calibrate",
    "compare",
    "dataset_samples",
    "define_rubric",
    "evaluate",
    "evaluate_async",
    "evaluate_dataset",
    "evaluate_many",
    "evaluate_many_async",
    "iter_samples_file",
    "load_tasks_file",
    "read_records",
    "register_backend",
    "register_rubric",
    "register_task",
    "register_tool",
    "report_html",
    "rule_judge",
    "to_frame",
    "write_report",
]


__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, __all__)
