"""Offline judges for the probe tests: one that looks at the images, and ones that do not.

``probe_judge(scorer)`` returns a reply function for :class:`cigeval.ScriptedBackend` or
:class:`cigeval.testing.openai_server.FakeOpenAIServer`. It answers the prompts of the ``cigeval``
rubric (planning through :func:`cigeval.rule_judge`, then one score per sub-question), of
``viescore`` (the SC list and the PQ pair) and of the factor rubrics (the strict JSON object),
reading the images out of the request. What it scores comes from ``scorer``:

- :func:`seeing_scorer` compares the images, rule by rule (colours named in the prompt present
  in the output, what changed between source and output, the control's edges in the output);
- :func:`constant_scorer` ignores everything;
- :func:`text_scorer` reads only the text (the prompt or instruction), never the images.

These are test doubles for the probe machinery, not evaluators: never report their scores.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from cigeval.messages import ImagePart, ModelRequest, TextPart
from cigeval.testing import repair_reply, rule_judge, template_of

#: Colours the judge recognises, by name (its own estimates, not the probe set's values).
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (225, 35, 35),
    "blue": (35, 75, 225),
    "green": (35, 165, 65),
    "yellow": (245, 215, 35),
    "orange": (250, 145, 25),
    "purple": (145, 55, 185),
    "brown": (125, 75, 35),
    "gray": (128, 128, 128),
}
#: A scorer: (question id, the images shown in order, the text condition) -> 0-10.
Scorer = Callable[[str, list[Image.Image], str], float]


def _pixels(image: Image.Image, side: int = 64) -> np.ndarray:
    return np.asarray(image.convert("RGB").resize((side, side), Image.Resampling.BOX), float)


def colour_share(image: Image.Image, colour: str) -> float:
    """Fraction of the image's pixels close to a named colour."""
    distance = np.linalg.norm(_pixels(image) - np.array(PALETTE[colour]), axis=-1)
    return float((distance < 60).mean())


def colours_named(text: str) -> list[str]:
    """The palette colours a text names, in order of appearance."""
    found = [(m.start(), m.group(1)) for m in re.finditer(r"\b(\w+)\b", text.lower())]
    return [word for _, word in found if word in PALETTE]


def changed_mask(source: Image.Image, output: Image.Image) -> np.ndarray:
    """Where the output differs clearly from the source (at the source's size)."""
    resized = output.convert("RGB").resize(source.size, Image.Resampling.BILINEAR)
    return np.abs(_pixels(source) - _pixels(resized)).max(axis=-1) > 48


def _edit_success(source: Image.Image, output: Image.Image, instruction: str) -> float:
    changed = changed_mask(source, output)
    if changed.mean() < 0.003:
        return 0  # nothing was edited
    targets = colours_named(instruction)
    if not targets:
        return 5
    pixels = _pixels(output.resize(source.size))[changed]
    distance = np.linalg.norm(pixels - np.array(PALETTE[targets[-1]]), axis=-1)
    return 9 if (distance < 60).mean() >= 0.4 else 2


def _minimal_change(source: Image.Image, output: Image.Image) -> float:
    share = changed_mask(source, output).mean()
    if share < 0.003:
        return 10
    return 9 if share <= 0.25 else 5 if share <= 0.5 else 1


def _prompt_following(output: Image.Image, prompt: str) -> float:
    colours = colours_named(prompt)
    if not colours:
        return 5
    present = sum(colour_share(output, c) >= 0.003 for c in colours)
    return round(10 * present / len(colours))


def _subject_similarity(reference: Image.Image, output: Image.Image) -> float:
    dominant = max((c for c in PALETTE if c != "gray"), key=lambda c: colour_share(reference, c))
    return 9 if colour_share(output, dominant) >= 0.005 else 1


def _edges(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").filter(ImageFilter.FIND_EDGES)) > 40


def _control_following(control: Image.Image, output: Image.Image) -> float:
    wanted = np.asarray(control.convert("L")) > 128
    found = _edges(output.resize(control.size)).astype(np.uint8) * 255
    near = np.asarray(Image.fromarray(found).filter(ImageFilter.MaxFilter(7))) > 0
    if not wanted.any():
        return 5
    return round(10 * float((wanted & near).sum() / wanted.sum()))


def _quality(output: Image.Image) -> float:
    return 8 if float(np.asarray(output.convert("L"), float).std()) > 8 else 2


def seeing_scorer(question: str, images: list[Image.Image], condition: str) -> float:
    """Scores by looking at the images (the output is always the last one shown)."""
    output = images[-1]
    if question in ("edit_success", "alignment", "completeness", "plausibility"):
        return _edit_success(images[0], output, condition)
    if question in (
        "over_editing",
        "background_preservation",
        "unchanged_regions",
        "global_consistency",
        "identity_preservation",
    ):
        return _minimal_change(images[0], output)
    if question in (
        "subject_similarity",
        "concept_similarity",
        "concept_1_similarity",
        "concept_2_similarity",
    ):
        return _subject_similarity(images[0], output)
    if question == "control_following":
        return _control_following(images[0], output)
    if question == "prompt_following":
        return _prompt_following(output, condition)
    return _quality(output)


def constant_scorer(score: float = 7) -> Scorer:
    """A scorer that gives every question the same score, whatever it is shown."""
    return lambda question, images, condition: score


def text_scorer(question: str, images: list[Image.Image], condition: str) -> float:
    """Scores from the text alone: more colour words, a higher score; images never read."""
    return min(10, 5 + 2 * len(colours_named(condition)))


def request_parts(request: ModelRequest | dict[str, Any]) -> list[str | Image.Image]:
    """The texts and images of a request's messages, in order (either request form)."""
    parts: list[str | Image.Image] = []
    if isinstance(request, ModelRequest):
        for message in request.messages:
            for part in message.parts:
                if isinstance(part, TextPart):
                    parts.append(part.text)
                elif isinstance(part, ImagePart):
                    parts.append(Image.open(io.BytesIO(part.image.data)))
        return parts
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content or []:
            if part.get("type") == "text":
                parts.append(part["text"])
            elif part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                parts.append(Image.open(io.BytesIO(base64.b64decode(data))))
    return parts


def _condition(text: str) -> str:
    found = re.findall(r"^(?:Text [Pp]rompt|Editing instruction): (.+)$", text, re.MULTILINE)
    return found[-1] if found else ""


def _numbered_images(parts: list[str | Image.Image]) -> dict[int, Image.Image]:
    """Images by the number of the ``Image N: ...`` label just before them."""
    images: dict[int, Image.Image] = {}
    for before, part in itertools.pairwise(parts):
        match = re.match(r"Image (\d+):", before) if isinstance(before, str) else None
        if match and isinstance(part, Image.Image):
            images[int(match.group(1))] = part
    return images


def _justification(factor: str) -> str:
    words = f"the {factor} judgement rests on the visible colours and shapes in both images"
    return words + " compared region by region across the whole picture frame here"


def probe_judge(scorer: Scorer = seeing_scorer) -> Callable[[Any], str]:
    """A reply function answering the cigeval, viescore and factor-rubric prompts."""
    planner = rule_judge()

    def reply(request: Any) -> str:
        parts = request_parts(request)
        text = "\n".join(p for p in parts if isinstance(p, str))
        images = [p for p in parts if isinstance(p, Image.Image)]
        repaired = repair_reply(text) if not images else None
        if repaired is not None:  # the official reading's repair request
            return repaired
        if "### Task" in text or ("scene graph" in text.lower() and "RULES:" not in text):
            return planner(request)
        if "ASPECT 1 (" in text:  # viescore SC: one score per aspect
            numbered = _numbered_images(parts)
            scores = []
            for block in text.split("ASPECT ")[1:]:
                question = block.split("(", 1)[1].split(")", 1)[0]
                uses = [int(n) for n in re.findall(r"Image (\d+)", block.split("\n", 1)[0])]
                shown = [numbered[n] for n in uses]
                scores.append(scorer(question, shown, _condition(block)))
            return json.dumps({"score": scores, "reasoning": "compared the images"})
        if "perceptual quality" in text:  # viescore PQ
            score = scorer("quality", images, "")
            return json.dumps({"score": [score, score], "reasoning": "looked at the output"})
        if "_factor_results" in text:  # a factor rubric
            image_id = re.search(r'whose value is "([^"]*)" verbatim', text)
            key = re.search(r'"(\w+_factor_results)"', text)
            assert image_id is not None and key is not None, "not a factor-rubric prompt"
            factors = re.findall(r"^\[\d+\] (\w+) \(", text, re.MULTILINE)
            instruction = _condition(text)
            results = {}
            for factor in factors:
                ten = scorer(factor, images, instruction)
                results[factor] = {
                    "score": 1 + round(6 * ten / 10),
                    "justification": _justification(factor),
                }
            return json.dumps({"image_id": image_id.group(1), key.group(1): results})
        if "Step 1. Below are a source image" in text:  # lmm_score, one edited image
            if "Do not compute an overall score" not in text:
                return "Described and analysed; scores follow when asked."
            instruction = _condition(text)
            lmm_factors = {
                "S_acc": scorer("edit_success", images, instruction),
                "S_pre": scorer("over_editing", images, instruction),
                "S_qua": scorer("quality", images[-1:], instruction),
                "S_real": scorer("quality", images[-1:], instruction),
            }
            tens = {k: max(1, min(10, round(v))) for k, v in lmm_factors.items()}
            return json.dumps({"image_1": {**tens, "reason": "compared source and edit"}})
        question = template_of(text) or "quality"
        score = scorer(question, images, _condition(text))
        return json.dumps({"score": score, "reasoning": f"{question}: compared the images"})

    return reply
