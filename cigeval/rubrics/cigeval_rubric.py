"""The agentic CIGEval rubric (the default): sub-questions, tools, 0-10 judgements, min."""

from __future__ import annotations

from cigeval.agent.graph import AgentContext, run_agent
from cigeval.rubrics.base import aggregate_scores
from cigeval.runtime import SampleRun
from cigeval.sample import Sample
from cigeval.score import Score
from cigeval.tasks.spec import get_task
from cigeval.tools import resolve_tools
from cigeval.tools.base import Tool


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
        """The tools offered to the planner: config.tools, or all registered tools."""
        return resolve_tools(run.config.tools)

    async def evaluate(self, run: SampleRun) -> Score:
        """Plan, act, judge each sub-question; aggregate."""
        spec = get_task(run.sample.task)
        sub_scores = await run_agent(AgentContext(run, spec, self.offered_tools(run)))
        failed = [s for s in sub_scores if s.score is None]
        score = Score(
            id=run.sample.id,
            task=run.sample.task,
            rubric=self.name,
            status="ok",
            sub_scores=sub_scores,
        )
        if failed:
            score.status = "error"
            score.error = "; ".join(f"{s.question_id}: {s.error}" for s in failed)
            return score
        values = [s.score for s in sub_scores if s.score is not None]
        score.value = aggregate_scores(values, run.config.aggregate) / 10.0
        return score
