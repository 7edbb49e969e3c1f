"""The agentic CIGEval rubric (the default): sub-questions, tools, 0-10 judgements, min."""

from __future__ import annotations

from cigeval.rules import aggregate
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import Verdict
from cigeval.tasks import get_task
from cigeval.tools import Tool, resolve_tools


class CigevalRubric:
    """CIGEval (arXiv 2504.07046): an LMM agent judges each sub-question of the task with the
    help of a tool it picks, and the score is the aggregate (min by default) of the 0-10
    sub-scores, divided by 10.
    """

    name = "cigeval"
    description = "Agentic evaluation with tools; score = min(sub-scores) / 10."
    #: The score is the aggregate of the 0-10 sub-scores / 10, so ensembles may combine
    #: judges per sub-question before aggregating.
    combines_sub_scores = True

    def validate(self, sample: Sample) -> None:
        """Check the task's required text fields and images."""
        get_task(sample.task).validate_sample(sample)

    def offered_tools(self, run: SampleRun) -> list[Tool]:
        """The tools offered to the planner: config.tools, or the registered tools the method
        offers (Zoom under ``extended`` only)."""
        return resolve_tools(run.config.tools, run.config.method)

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Plan, act and judge each sub-question; the score is their aggregate / 10."""
        from cigeval.agent.graph import AgentContext, run_agent  # langgraph loads here

        sub_scores = await run_agent(AgentContext(run, run.task, self.offered_tools(run)))
        failed = [s for s in sub_scores if s.score is None]
        if failed:
            return Verdict.failure(
                "; ".join(f"{s.question_id}: {s.error}" for s in failed), sub_scores=sub_scores
            )
        values = [s.score for s in sub_scores if s.score is not None]
        return Verdict(value=aggregate(values, run.config.aggregate) / 10.0, sub_scores=sub_scores)
