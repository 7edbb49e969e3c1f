"""cigeval: judge AI-generated and AI-edited images with an agentic LMM (CIGEval) and more.

Quick start::

    import cigeval
    score = cigeval.evaluate(
        {"id": "1", "task": "text_guided_ie", "instruction": "make the car red",
         "images": {"source": "src.png", "output": "out.png"}},
        model="openai:gpt-4o-2024-05-13",
    )
    score.value, score.sub_scores

Heavy dependencies (torch, transformers, OCR) load only when a tool or backend needs them.
"""

from cigeval.backends import Backend, ScriptedBackend, resolve_backend
from cigeval.combine import combine, spread
from cigeval.config import DifferenceConfig, EvalConfig, GroundingConfig, RunConfig
from cigeval.ensemble import EnsembleConfig
from cigeval.errors import (
    BackendError,
    CigevalError,
    ConfigError,
    InputError,
    MissingDependency,
    ParseError,
    ToolError,
)
from cigeval.frames import to_frame
from cigeval.results_io import ResultsWriter, read_records
from cigeval.rubrics import Rubric, get_rubric, register_rubric, rubric_names
from cigeval.runner import (
    Evaluator,
    evaluate,
    evaluate_async,
    evaluate_many,
    evaluate_many_async,
)
from cigeval.sample import Sample, SampleImages, iter_samples_file
from cigeval.score import Score, SubScore
from cigeval.tasks import TASK_IDS, SubQuestion, TaskSpec, get_task, register_task
from cigeval.tools import Tool, ToolContext, ToolResult, get_tool, register_tool
from cigeval.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "TASK_IDS",
    "Backend",
    "BackendError",
    "CigevalError",
    "ConfigError",
    "DifferenceConfig",
    "EnsembleConfig",
    "EvalConfig",
    "Evaluator",
    "GroundingConfig",
    "InputError",
    "MissingDependency",
    "ParseError",
    "ResultsWriter",
    "Rubric",
    "RunConfig",
    "Sample",
    "SampleImages",
    "Score",
    "ScriptedBackend",
    "SubQuestion",
    "SubScore",
    "TaskSpec",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Trace",
    "__version__",
    "combine",
    "evaluate",
    "evaluate_async",
    "evaluate_many",
    "evaluate_many_async",
    "get_rubric",
    "get_task",
    "get_tool",
    "iter_samples_file",
    "read_records",
    "register_rubric",
    "register_task",
    "register_tool",
    "resolve_backend",
    "rubric_names",
    "spread",
    "to_frame",
]
