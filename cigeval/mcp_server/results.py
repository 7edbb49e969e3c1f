"""What the MCP tools answer, as pydantic models (the SDK derives each tool's output schema
from them): a judgement, the task list, a probe run. Made from cigeval's own values."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from cigeval.probes.report import ProbeReport, Tally
from cigeval.score import Evidence, Score, SubScore
from cigeval.tasks.spec import TaskSpec


class SubScoreResult(BaseModel):
    """One sub-question's judgement."""

    question_id: str = Field(description="The sub-question's id, e.g. 'edit_success'.")
    question: str = Field(description="The sub-question in words.")
    score: float | None = Field(description="The judge's score on `scale` (None: none given).")
    scale: tuple[float, float] = Field(description="Lowest and highest possible score.")
    reasoning: str = Field(description="The judge's reason for the score.")
    tool: str | None = Field(description="The tool whose output the judge was shown, if any.")
    tool_query: str | None = Field(None, description="What the tool was asked for.")
    degraded: bool = Field(False, description="Judged without the tool the plan chose.")
    note: str | None = Field(None, description="How the judging departed from the plan.")
    error: str | None = Field(None, description="Why this sub-question has no score.")
    evidence: list[Evidence] = Field(
        default_factory=list,
        description="Regions a tool pointed the judge at (boxes in the pixels of the image "
        "`role` names); empty when no tool found any.",
    )

    @classmethod
    def of(cls, sub: SubScore) -> SubScoreResult:
        """The result of a cigeval sub-score."""
        return cls(
            question_id=sub.question_id,
            question=sub.question,
            score=sub.score,
            scale=sub.scale,
            reasoning=sub.reasoning,
            tool=sub.tool,
            tool_query=sub.tool_query,
            degraded=sub.degraded,
            note=sub.note,
            error=sub.error,
            evidence=list(sub.evidence),
        )


class CalibratedResult(BaseModel):
    """The score on the human scale, from the server's calibration file (docs/calibration.md)."""

    value: float | None = Field(description="The calibrated value (None: see `note`).")
    interval: tuple[float, float] | None = Field(
        description="The interval the human score lies in at the file's coverage (e.g. 90%)."
    )
    abstain: bool = Field(False, description="The interval is wider than the abstention limit.")
    note: str | None = Field(None, description="Why there is no calibrated value.")


class JudgeResult(BaseModel):
    """The judge's verdict on one image."""

    id: str = Field(description="The sample's id (the one given, else 'judge_image-N').")
    task: str
    status: Literal["ok", "error"] = Field(description="ok: judged; error: see `error`.")
    score: float | None = Field(
        description="The score, 0-1 (the paper's method: the lowest sub-score / 10)."
    )
    error: str | None = Field(None, description="Why the image could not be judged.")
    sub_scores: list[SubScoreResult]
    judge: str | None = Field(description="The judge model(s).")
    rubric: str
    method: str | None = Field(description="paper (the CIGEval paper's method) or extended.")
    images: dict[str, str] = Field(description="sha256 of each image shown, by role.")
    usage: dict[str, int] = Field(description="Model calls and tokens spent.")
    calibrated: CalibratedResult | None = Field(
        None,
        description="The score on the human scale with its interval, when the server was "
        "started with --calibration; `score` stays the judge's own.",
    )
    summary: str = Field(description="The judgement in a few readable lines.")

    @classmethod
    def of(cls, score: Score) -> JudgeResult:
        """The result of a cigeval Score."""
        return cls(
            id=score.id,
            task=score.task,
            status=score.status,
            score=score.value,
            error=score.error,
            sub_scores=[SubScoreResult.of(s) for s in score.sub_scores],
            judge=score.judge,
            rubric=score.rubric,
            method=score.config.get("method"),
            images=dict(score.input_images),
            usage=dict(score.usage),
            calibrated=None if score.calibrated is None else CalibratedResult(**score.calibrated),
            summary=score.summary(reasoning=True),
        )


class SubQuestionInfo(BaseModel):
    """A sub-question of a task and the images it shows the judge."""

    id: str
    question: str
    images: list[str]


class TaskInfo(BaseModel):
    """A task the judge knows: what a sample of it needs, and what is asked."""

    id: str = Field(description="The id judge_image takes as `task`.")
    title: str
    text_fields: list[str] = Field(description="Text conditions a sample needs.")
    optional_text_fields: list[str]
    image_roles: list[str] = Field(description="Image roles a sample needs (`output`: judged).")
    optional_image_roles: list[str]
    sub_questions: list[SubQuestionInfo]

    @classmethod
    def of(cls, spec: TaskSpec) -> TaskInfo:
        """The description of a registered task."""
        return cls(
            id=spec.id,
            title=spec.title,
            text_fields=list(spec.text_fields),
            optional_text_fields=list(spec.optional_text_fields),
            image_roles=list(spec.image_roles),
            optional_image_roles=list(spec.optional_image_roles),
            sub_questions=[
                SubQuestionInfo(id=q.id, question=q.question, images=list(q.image_roles))
                for q in spec.sub_questions
            ],
        )


class TaskList(BaseModel):
    """Every task the judge knows."""

    tasks: list[TaskInfo]


class ProbeOutcome(BaseModel):
    """One probe: a synthetic case whose right answer is known, and whether the judge gave it."""

    id: str = Field(description="<task>/<kind>, e.g. 'text_guided_ie/blank_output'.")
    status: Literal["passed", "failed", "error"]
    description: str
    expected: str = Field(description="What the judge should have done.")
    measured: list[dict[str, Any]] = Field(description="Each check as measured.")
    error: str | None = None


class ProbeSummary(BaseModel):
    """Does the judge look at the images? The probe run's tallies and each probe."""

    judge: str
    pass_rate: float | None = Field(description="Passed / run (None: none ran).")
    passed: int
    failed: int
    errors: int
    by_task: dict[str, Tally]
    by_kind: dict[str, Tally]
    probes: list[ProbeOutcome]
    skipped: list[str] = Field(description="Probes not run for this judge, with the reason.")

    @classmethod
    def of(cls, report: ProbeReport) -> ProbeSummary:
        """The summary of a probe report."""
        return cls(
            judge=report.judge,
            pass_rate=report.pass_rate,
            passed=report.passed,
            failed=report.failed,
            errors=report.errors,
            by_task=report.by_task,
            by_kind=report.by_kind,
            probes=[
                ProbeOutcome(
                    id=p.id,
                    status=p.status,
                    description=p.description,
                    expected=p.expected,
                    measured=[c.model_dump(mode="json", exclude_none=True) for c in p.checks],
                    error=p.error,
                )
                for p in report.probes
            ],
            skipped=[f"{s.id}: {s.reason}" for s in report.skipped],
        )
