"""The agentic CIGEval rubric (the default): sub-questions, tools, 0-10 judgements, min."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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

        ctx = AgentContext(run, run.task, self.offered_tools(run))
        if run.config.reply_parsing == "official":
            from cigeval.agent.official_flow import OfficialDrop, run_official

            try:
                sub_scores = await run_official(ctx)
            except OfficialDrop as exc:
                return Verdict.failure(str(exc))
        else:
            sub_scores = await run_agent(ctx)
        failed = [s for s in sub_scores if s.score is None]
        if failed:
            return Verdict.failure(
                "; ".join(f"{s.question_id}: {s.error}" for s in failed), sub_scores=sub_scores
            )
        values = [s.score for s in sub_scores if s.score is not None]
        return Verdict(value=aggregate(values, run.config.aggregate) / 10.0, sub_scores=sub_scores)

    def replay_disagreement(self, record: Mapping[str, Any], aggregate_rule: str) -> str | None:
        """Why a stored record of this rubric does not follow from the replies its trace
        holds, or None when it does: each sub-score (and its judgement event) is read again
        from the last judge reply of its sub-question, as the agent reads it, and the score is
        their ``aggregate_rule`` / 10. The caller checks those replies against the cached
        answers (:mod:`cigeval.evaluation.replay`), so a stored record claiming a score its
        answers do not give is never replayed."""
        from cigeval.agent.judging import Judgement, parse_judge_reply

        judged: dict[str, tuple[float, str]] = {}
        events: dict[str, tuple[float, str]] = {}
        for event in record.get("trace") or []:
            question = event.get("question_id")
            if event.get("type") == "model_call" and event.get("purpose") == "judge":
                reply = parse_judge_reply(str(event.get("reply", "")), False, [])
                assert isinstance(reply, Judgement)  # no tool may be asked for
                judged[question] = (float(reply.score), reply.reasoning)  # the last one counts
            elif event.get("type") == "judgement":
                events[question] = (float(event.get("score")), str(event.get("reasoning")))
        values = []
        for sub in record.get("sub_scores") or []:
            question = sub.get("question_id")
            stored = (sub.get("score"), sub.get("reasoning"))
            if judged.get(question) != stored or events.get(question) != stored:
                return f"sub-question {question}: the record does not say what its reply says"
            values.append(judged[question][0])
        asked = sorted(str(s.get("question_id")) for s in record.get("sub_scores") or [])
        if not values or sorted(str(q) for q in judged) != asked:
            return "the record's sub-questions are not those its replies answer"
        claimed = record.get("score")
        if not isinstance(claimed, float | int) or not math.isclose(
            claimed, aggregate(values, aggregate_rule) / 10.0, rel_tol=0, abs_tol=1e-12
        ):
            return "the record's score is not the aggregate of its sub-scores"
        return None
