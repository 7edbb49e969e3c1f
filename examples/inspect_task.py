"""The shipped example samples judged by cigeval inside inspect_ai (docs/inspect.md).

Each sample already has its output image, so the task has no solver step: inspect runs no
model of its own (no ``--model`` is needed), and the cigeval scorer shows the judge every
image of every sample::

    pip install 'cigeval[inspect]'
    inspect eval examples/inspect_task.py -T judge=openai:my-vlm@http://localhost:8000/v1

``judge`` is any cigeval judge spec; its calls are model events of each sample's
transcript. Grounding is left out by default (``tools``) so that no GroundingDINO weights are
needed; pass ``-T tools=Grounding,Difference,Scene Graph`` where they can be loaded. For an
eval whose solver makes the images, give ``inspect_samples(..., outputs=False)`` and a
solver: see docs/inspect.md.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

from cigeval.integrations.inspect_ai import inspect_samples, inspect_scorer

SAMPLES = Path(__file__).resolve().parent / "samples.jsonl"


@task
def cigeval_examples(
    judge: str = "openai:gpt-4o-2024-05-13", tools: str = "Difference,Scene Graph"
) -> Task:
    """The example samples of every task, scored by the cigeval judge ``judge``."""
    return Task(
        dataset=inspect_samples(SAMPLES),
        solver=[],  # the outputs are in the samples: nothing to generate
        scorer=inspect_scorer(judge, tools=tools),
    )
