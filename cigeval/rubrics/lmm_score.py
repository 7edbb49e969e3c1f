"""LMM Score (EditEval): several edited images of one source judged together in a conversation.

The protocol runs as one multi-turn conversation with the judge:

1. the source image, task indicator and instruction: describe the source and the edit;
2. the four factors: say what each one means for this case;
3. the edited images, one per turn (or a few per turn when there are many, so the number of
   turns stays bounded): analyse each along the factors, no scores yet;
4. scores: strict JSON, four 1-10 integers per image (ties discouraged).

cigeval computes S_all = 0.4 S_acc + 0.3 S_pre + 0.2 S_qua + 0.1 S_real itself and ranks the
images by S_all (1 = best; ties share the best rank, "1224" competition ranking).
"""

from __future__ import annotations

import math
from typing import Any

from cigeval.errors import InputError, ParseError
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.rubrics._shared import (
    choice_option,
    failed_verdict,
    int_option,
    render_for,
    rubric_options,
)
from cigeval.rubrics.lmm_results import (
    WEIGHTS,
    ImageScores,
    competition_ranks,
    image_keys,
    parse_lmm_scores,
    tie_warnings,
)
from cigeval.sample import Sample
from cigeval.sample_run import SampleRun
from cigeval.score import SubScore, Verdict

#: Sample.metadata keys that may hold one display label per edited image (e.g. method names).
LABEL_KEYS = ("labels", "methods")
OPTIONS = ("images_per_turn", "max_analysis_turns", "value")


def edited_roles(sample: Sample) -> list[str]:
    """Roles of the edited images: ``output_1..N`` from images.outputs, else ``output``."""
    outputs = sample.images.outputs
    if outputs:
        return [f"output_{i}" for i in range(1, len(outputs) + 1)]
    return ["output"] if sample.images.output is not None else []


def image_labels(sample: Sample, count: int) -> list[str | None]:
    """One label per edited image from ``metadata['labels']`` (or ``['methods']``), or Nones."""
    for key in LABEL_KEYS:
        labels = sample.metadata.get(key)
        if labels is None:
            continue
        if not isinstance(labels, list) or len(labels) != count:
            raise InputError(
                f"metadata.{key} must list one label per edited image ({count})", sample.id
            )
        return [None if x is None else str(x) for x in labels]
    return [None] * count


def score_skeleton(count: int) -> str:
    """The answer layout shown to the judge, one line per image; the middle of a long list is
    elided so the prompt stays short for 10+ images."""
    fields = ", ".join(f'"{f}": <1-10>' for f in WEIGHTS)
    keys = image_keys(count)
    shown = keys if count <= 4 else [keys[0], keys[1], "...", keys[-1]]
    lines = ["  ..." if k == "..." else f'  "{k}": {{{fields}, "reason": "<...>"}}' for k in shown]
    return "{\n" + ",\n".join(lines) + "\n}"


def batches(count: int, per_turn: int) -> list[range]:
    """Image numbers (1-based) grouped into turns of at most ``per_turn``."""
    return [range(s, min(s + per_turn, count + 1)) for s in range(1, count + 1, per_turn)]


class LmmScoreRubric:
    """LMM Score: describe, define factors, analyse each edited image, then score them all.

    Input: images.source, images.outputs (1..N; a single images.output also works),
    instruction, optional task_indicator, optional metadata.labels / metadata.methods (shown
    in the results only: the judge never sees method names). Options (``rubric_options``):
    ``images_per_turn`` (default: ceil(N / max_analysis_turns)), ``max_analysis_turns``
    (default 8: up to 8 images one per turn, as in the original protocol), ``value``
    (``"mean"``: mean S_all / 10, the default; ``"first"``: image 1's S_all / 10).
    """

    name = "lmm_score"
    description = (
        "LMM Score: N edited images of one source compared in one conversation; "
        "S_all = 0.4 acc + 0.3 pre + 0.2 qua + 0.1 real (1-10), ranks per image."
    )

    def validate(self, sample: Sample) -> None:
        """Require the source, one or more edited images and the instruction."""
        problems = []
        if sample.images.source is None:
            problems.append("missing image 'source' (images.source)")
        if not edited_roles(sample):
            problems.append("missing edited images (images.outputs, a list)")
        if not sample.instruction:
            problems.append("missing text field 'instruction'")
        if problems:
            raise InputError("rubric lmm_score: " + "; ".join(problems), sample.id)
        image_labels(sample, len(edited_roles(sample)))

    def _per_turn(self, options: dict[str, Any], count: int) -> int:
        turns = int_option(options, "max_analysis_turns", 8)
        default = max(1, math.ceil(count / turns))
        return int_option(options, "images_per_turn", default)

    async def _say(self, run: SampleRun, conversation: list[Message], purpose: str) -> str:
        """Send the conversation, append the reply as the assistant's turn, return it."""
        reply = await run.judge.call(f"rubric:lmm_score:{purpose}", conversation)
        conversation.append(Message.text("assistant", reply.strip() or "(no reply)"))
        return reply

    async def evaluate(self, run: SampleRun) -> Verdict:
        """Run the conversation; a failed Verdict (no numbers) if the scores never parse."""
        options = rubric_options(run, self.name, OPTIONS)
        value_mode = choice_option(options, "value", "mean", ("mean", "first"))
        sample = run.sample
        roles = edited_roles(sample)
        count = len(roles)
        labels = image_labels(sample, count)
        per_turn = self._per_turn(options, count)

        conversation = [Message.text("system", render_for(run, "rubric_lmm_system.j2"))]
        conversation.append(
            Message(
                "user",
                (
                    TextPart(render_for(run, "rubric_lmm_step1.j2")),
                    ImagePart(run.encode(run.loaded["source"]), "source"),
                    TextPart(
                        render_for(
                            run,
                            "rubric_lmm_step1_tail.j2",
                            task_indicator=sample.task_indicator,
                            instruction=sample.instruction,
                        )
                    ),
                ),
            )
        )
        description = await self._say(run, conversation, "describe")
        conversation.append(
            Message.text(
                "user", render_for(run, "rubric_lmm_step2.j2", count=count, per_turn=per_turn)
            )
        )
        factor_notes = await self._say(run, conversation, "factors")

        analyses: dict[int, str] = {}
        for group in batches(count, per_turn):
            parts: list[TextPart | ImagePart] = []
            for number in group:
                parts.append(TextPart(f"Edited image {number}:"))
                parts.append(
                    ImagePart(run.encode(run.loaded[roles[number - 1]]), f"image_{number}")
                )
            parts.append(
                TextPart(
                    render_for(
                        run, "rubric_lmm_analyse.j2", first=group[0], last=group[-1], count=count
                    )
                )
            )
            conversation.append(Message("user", tuple(parts)))
            analysis = await self._say(run, conversation, "analyse")
            analyses.update(dict.fromkeys(group, analysis))

        skeleton = score_skeleton(count)
        conversation.append(
            Message.text(
                "user", render_for(run, "rubric_lmm_score.j2", count=count, skeleton=skeleton)
            )
        )
        base = {
            "images_per_turn": per_turn,
            "source_description": description,
            "factor_notes": factor_notes,
        }
        try:
            results = await run.judge.ask(
                "rubric:lmm_score:score", conversation, lambda t: parse_lmm_scores(t, count)
            )
        except ParseError as exc:
            return failed_verdict(exc, base)
        return self._score(run, results, labels, analyses, value_mode, base)

    def _score(
        self,
        run: SampleRun,
        results: list[ImageScores],
        labels: list[str | None],
        analyses: dict[int, str],
        value_mode: str,
        base: dict[str, Any],
    ) -> Verdict:
        totals = [r.s_all for r in results]
        ranks = competition_ranks(totals)
        images = [
            {
                "image": r.key,
                "index": i,
                "label": labels[i - 1],
                **r.sub_scores,
                "S_all": r.s_all,
                "rank": rank,
                "reason": r.reason,
            }
            for i, (r, rank) in enumerate(zip(results, ranks, strict=True), start=1)
        ]
        value = (sum(totals) / len(totals) if value_mode == "mean" else totals[0]) / 10.0
        sub_scores = [
            SubScore(
                question_id=r.key,
                question=f"Edited image {i}"
                + (f" ({labels[i - 1]})" if labels[i - 1] else "")
                + ": S_all on 1-10",
                score=r.s_all,
                scale=(1, 10),
                reasoning=r.reason or analyses.get(i, ""),
            )
            for i, r in enumerate(results, start=1)
        ]
        return Verdict(
            value=value,
            sub_scores=sub_scores,
            details={
                **base,
                "images": images,
                "weights": dict(WEIGHTS),
                "rank_convention": "1 = highest S_all; ties share the best rank (1224)",
                "value_mapping": "mean S_all / 10"
                if value_mode == "mean"
                else "S_all of image_1 / 10",
                "warnings": tie_warnings(results),
                "analyses": [analyses.get(i, "") for i in range(1, len(results) + 1)],
            },
        )
