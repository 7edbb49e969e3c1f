"""A default run is the paper's method: per task, the requests it sends compared with a table
of what the official evaluate pass (HITsz-TMG/Agentic-CIGEval, ``evaluate.py``) sends: the
images and their order (as JPEG bytes at quality 75), the condition lines, the tools it runs,
the Grounding query and the tool text. ``--method extended`` gives 0.2's behaviour."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageOps

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.config import EvalConfig
from cigeval.messages import ImagePart, ModelRequest
from cigeval.prompts import paper_templates as paper_names
from cigeval.prompts.exact import fill as fill_exact
from cigeval.sample import sample_from_dict
from cigeval.tasks import TASK_IDS
from cigeval.testing import request_text, rule_judge
from cigeval.tools import GroundingTool
from cigeval.tools.registry import TOOLS
from tests.judge_view import (
    RecordingDetector,
    fidelity_samples,
    fill,
    judge_view,
    plan_task_ids,
    planner_name,
)
from tests.tools.test_official_difference import reference_box, reference_highlight

# no preflight: the scripted judges never ask for Grounding, whose weights are not here
NO_CACHE = RunConfig(use_cache=False, preflight=False)
FOCUS = fill_exact(paper_names.FOCUS, ())  # the built-in paper layout's tool text
COORDINATES = re.compile(r"\[\d+, \d+, \d+, \d+\]")
HIGHLIGHT_TOOLS = ("Grounding", "Difference")


@dataclass(frozen=True)
class Official:
    """One sub-question as the official evaluate pass judges it."""

    images: tuple[str, ...]  # roles, in order
    conditions: tuple[str, ...]  # condition lines, placeholders for the sample's fields
    query: str  # what Highlight grounds
    tools: tuple[str, ...]  # the planned tools it runs


ALL = ("Grounding", "Scene Graph", "Difference")
NO_DIFFERENCE = ("Grounding", "Scene Graph")
PROMPT = ("Text Prompt: {prompt}",)  # the official prompts' label
INSTRUCTION = ("Editing instruction: {instruction}",)

#: The official evaluate pass, task by task: the planner's images, then each sub-question.
PAPER: dict[str, tuple[tuple[str, ...], dict[str, Official]]] = {
    "text_guided_ig": (
        ("output",),
        {"prompt_following": Official(("output",), PROMPT, "{prompt}", NO_DIFFERENCE)},
    ),
    "mask_guided_ie": (
        ("source", "output"),
        {
            "edit_success": Official(("source", "output"), INSTRUCTION, "{instruction}", ALL),
            "over_editing": Official(("source", "output"), INSTRUCTION, "{instruction}", ALL),
        },
    ),
    "text_guided_ie": (
        ("source", "output"),
        {
            "edit_success": Official(
                ("source", "output"), INSTRUCTION, "{instruction}", NO_DIFFERENCE
            ),
            "over_editing": Official(
                ("source", "output"), INSTRUCTION, "{instruction}", NO_DIFFERENCE
            ),
        },
    ),
    "subject_driven_ig": (
        ("subject", "output"),
        {
            "subject_similarity": Official(
                ("subject", "output"), ("Subject: {subject}",), "{prompt}", NO_DIFFERENCE
            ),
            "prompt_following": Official(("output",), PROMPT, "{prompt}", NO_DIFFERENCE),
        },
    ),
    "subject_driven_ie": (
        ("source", "subject", "output"),
        {
            "subject_similarity": Official(
                ("subject", "output"), ("Subject: {subject}",), "{subject}", NO_DIFFERENCE
            ),
            "background_preservation": Official(
                ("source", "output"), (), "background", NO_DIFFERENCE
            ),
        },
    ),
    "multi_concept_ic": (
        ("subject", "output"),
        {
            "concept_1_similarity": Official(
                ("subject_1", "output"),
                ("Subject: {concepts[0]}", *PROMPT),
                "{concepts[0]}",
                NO_DIFFERENCE,
            ),
            "concept_2_similarity": Official(
                ("subject_2", "output"),
                ("Subject: {concepts[1]}", *PROMPT),
                "{concepts[1]}",
                NO_DIFFERENCE,
            ),
            "prompt_following": Official(("output",), PROMPT, "{prompt}", NO_DIFFERENCE),
        },
    ),
    "control_guided_ig": (
        ("control", "output"),
        {
            "control_following": Official(("control", "output"), (), "{prompt}", NO_DIFFERENCE),
            "prompt_following": Official(("output",), PROMPT, "{prompt}", NO_DIFFERENCE),
        },
    ),
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("paper")
    return folder, fidelity_samples(folder)


def official_pixels(folder: Path, fields: dict[str, Any], role: str) -> np.ndarray:
    """The pixels the official code loads for a role (EXIF-transposed RGB; the concept halves
    cut from the side-by-side image)."""
    images = fields["images"]
    name = images["subject"] if role in ("subject_1", "subject_2") else images[role]
    image = ImageOps.exif_transpose(Image.open(folder / name)).convert("RGB")
    if role in ("subject_1", "subject_2"):
        middle = round(image.width * 0.5)
        box = (0, 0, middle, image.height) if role == "subject_1" else (middle, 0, *image.size)
        image = image.crop(box)
    return np.asarray(image)


def jpeg(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")  # Pillow's default quality: 75
    return buffer.getvalue()


def choose(tool: str | None) -> Any:
    """A planner choosing ``tool`` for every question (None: no tool); scores of 6."""

    def reply(request: ModelRequest) -> str:
        text = request_text(request)
        if "### Task" in text:
            ids = plan_task_ids(text)
            named = planner_name(tool, text)
            entries = [
                {"task_id": i, "reasoning": "-", "used": "yes" if tool else "no",
                 "tool": named or "None", "query": "thing"}
                for i in ids
            ]  # fmt: skip
            return json.dumps(entries)
        return rule_judge(default_score=6)(request)

    return reply


def run(folder: Path, task: str, fields: dict[str, Any], tool: str | None, **config: Any):
    backend = ScriptedBackend(choose(tool))
    detector = RecordingDetector()
    with TOOLS.scoped():
        TOOLS.register("Grounding", GroundingTool(detector=detector), replace=True)  # type: ignore[arg-type]
        sample = sample_from_dict({"id": task, "task": task, **fields}, base_dir=folder)
        score = Evaluator(backend, run_config=NO_CACHE, **config).evaluate(sample)
    assert score.status == "ok", score.error
    return score, backend.requests, detector


def judge_requests(requests: list[ModelRequest], questions: dict[str, Official]) -> dict:
    """The first-round judge request of each sub-question, told apart by its rules and its
    images (the two concept questions by their condition)."""
    found = {}
    for request in requests:
        text = request_text(request)
        if "RULES:" not in text:
            continue
        view = judge_view(request)
        roles = tuple(role for role, _ in view.images)
        for qid, official in questions.items():
            concept = re.fullmatch(r"concept_(\d)_similarity", qid)
            if roles != official.images:
                continue
            if concept and f"subject_{concept.group(1)}" not in roles:
                continue
            found[qid] = (request, view)
    return found


def _image_parts(request: ModelRequest) -> list[ImagePart]:
    return [p for m in request.messages for p in m.parts if isinstance(p, ImagePart)]


@pytest.mark.parametrize("task", TASK_IDS)
def test_without_tools_the_requests_are_the_official_ones(samples, task: str) -> None:
    folder, by_task = samples
    fields = by_task[task]
    planner_images, questions = PAPER[task]
    score, requests, _ = run(folder, task, fields, None)
    plan = next(r for r in requests if "### Task" in request_text(r))
    planned = _image_parts(plan)
    assert tuple(p.label for p in planned) == planner_images
    for part in planned:  # the side-by-side concept image whole, as the official planner
        assert part.image.data == jpeg(official_pixels(folder, fields, str(part.label)))
    assert '"query"' not in request_text(plan)  # the official planner names no query
    judged = judge_requests(requests, questions)
    assert sorted(judged) == sorted(questions)
    for qid, official in questions.items():
        request, view = judged[qid]
        assert view.conditions == [fill(line, fields) for line in official.conditions], qid
        parts = [p for p in request.messages[-1].parts if isinstance(p, ImagePart)]
        for part, role in zip(parts, official.images, strict=True):
            assert part.image.mime == "image/jpeg"
            assert part.image.data == jpeg(official_pixels(folder, fields, role)), (qid, role)
        assert "highlighted parts" not in view.text and '"objects"' not in view.text
        assert request.messages[0].role == "user" and len(request.messages) == 1
    assert all(s.tool is None and not s.degraded for s in score.sub_scores)


@pytest.mark.parametrize("tool", ALL)
@pytest.mark.parametrize("task", TASK_IDS)
def test_each_planned_tool_runs_where_the_official_pass_runs_it(
    samples, task: str, tool: str
) -> None:
    folder, by_task = samples
    fields = by_task[task]
    _, questions = PAPER[task]
    score, requests, detector = run(folder, task, fields, tool)
    judged = judge_requests(requests, questions)
    for sub in score.sub_scores:
        official = questions[sub.question_id]
        request, view = judged[sub.question_id]
        runs = tool in official.tools
        assert (sub.tool == tool) is runs, sub.question_id
        assert not COORDINATES.search(view.text), sub.question_id  # never box coordinates
        if not runs:
            assert sub.degraded and "only in mask_guided_ie" in (sub.note or "")
            assert "highlighted parts" not in view.text
            continue
        assert not sub.degraded and sub.note is None
        # the tool text sits inside the rules, before the objective
        rules, objective = view.text.index("RULES:"), view.text.index("Your task is to judge")
        if tool in HIGHLIGHT_TOOLS:
            assert rules < view.text.index(FOCUS) < objective, sub.question_id
        else:
            assert view.text.count('"objects"') == len(official.images), sub.question_id
            assert rules < view.text.index('"objects"') < objective, sub.question_id
        if tool == "Grounding":
            assert sub.tool_query == fill(official.query, fields)
            assert fill(official.query, fields) in detector.queries
        parts = [p for p in request.messages[-1].parts if isinstance(p, ImagePart)]
        shown = _expected_images(folder, fields, official.images, tool)
        for part, role in zip(parts, official.images, strict=True):
            assert part.image.data == jpeg(shown[role]), (sub.question_id, role)


def _expected_images(
    folder: Path, fields: dict[str, Any], roles: tuple[str, ...], tool: str
) -> dict[str, np.ndarray]:
    """What the official code shows after ``tool``: Highlight dims all but the found box (the
    recording detector finds the top-left quarter, cut to whole pixels); MaskFocus dims all
    but the official Difference box in both images; Scene Graph leaves the images."""
    pixels = {role: official_pixels(folder, fields, role) for role in roles}
    if tool == "Grounding":
        return {
            role: reference_highlight(p, [0, 0, int(p.shape[1] / 2), int(p.shape[0] / 2)])
            for role, p in pixels.items()
        }
    if tool == "Difference":
        first, second = roles
        box, _ = reference_box(pixels[first], pixels[second])
        return {role: reference_highlight(p, box) for role, p in pixels.items()}
    return pixels


def test_text_guided_editing_does_not_run_the_planners_difference(samples) -> None:
    folder, by_task = samples
    score, _, _ = run(folder, "text_guided_ie", by_task["text_guided_ie"], "Difference")
    for sub in score.sub_scores:
        assert sub.tool is None and sub.degraded
        # the tool as the judge named it, and the option in Python's words
        assert sub.note == (
            "judged without a tool: the judge chose MaskFocus (Difference), which the paper's "
            "method runs only in mask_guided_ie, not in text_guided_ie (tool_use='any' runs it)"
        )
        assert [(s.tool, s.error is not None) for s in sub.tool_steps] == [("Difference", True)]
    fallbacks = [e for e in score.trace.events if e.type == "error" and e.stage == "fallback"]
    assert len(fallbacks) == 2
    # the same choice under --tool-use any runs it
    anywhere, _, _ = run(
        folder, "text_guided_ie", by_task["text_guided_ie"], "Difference", tool_use="any"
    )
    assert all(s.tool == "Difference" and not s.degraded for s in anywhere.sub_scores)


def test_sampling_left_to_the_provider_is_recorded_so(samples) -> None:
    folder, by_task = samples
    score, requests, _ = run(folder, "text_guided_ig", by_task["text_guided_ig"], None)
    settings = {(r.settings.temperature, r.settings.max_tokens, r.settings.seed) for r in requests}
    assert settings == {(None, None, None)}  # nothing sent (tests/test_official_requests.py)
    record = score.to_record()
    for name in ("temperature", "max_tokens", "seed"):
        assert record["config"][name] == "provider default"
        assert record["provenance"]["sampling"][name] == "provider default"


def test_records_name_the_method(samples) -> None:
    folder, by_task = samples
    paper, _, _ = run(folder, "text_guided_ig", by_task["text_guided_ig"], None)
    extended, _, _ = run(
        folder, "text_guided_ig", by_task["text_guided_ig"], None, method="extended"
    )
    for score, method in ((paper, "paper"), (extended, "extended")):
        record = score.to_record()
        assert record["config"]["method"] == method
        assert record["provenance"]["method"] == method


#: Version 0.2's settings, which ``--method extended`` keeps.
SETTINGS_0_2 = {
    "temperature": 0.0,
    "max_tokens": 1024,
    "seed": 0,
    "request_layout": "cigeval",
    "scene_graph_calls": "per_image",
    "scene_graph_text": "json",
    "image_encoding": "original",
    "tool_use": "any",
    "tool_text": "detailed",
    "planner_prompt": "extended",
    "scoring_rules": "extended",
    "scene_graph_prompt": "extended",
    "highlight_large_boxes": "undimmed",
    "grounding": {
        "box_threshold": 0.35,
        "text_threshold": 0.25,
        "boxes": "all",
        "queries": "planner",
        "query_form": "phrases",
    },
    "difference": {
        "blur_kernel": 5,
        "measure": "max_channel",
        "threshold": 30,
        "dilation": 7,
        "min_area_fraction": 0.0005,
        "area_of": "pixels",
        "max_regions": 20,
        "steps": "cigeval",
        "mask": "split",
    },
}


def test_the_extended_method_is_version_0_2s_behaviour(samples) -> None:
    record = EvalConfig(method="extended").record()
    for name, value in SETTINGS_0_2.items():
        if isinstance(value, dict):
            assert {k: record[name][k] for k in value} == value, name
        else:
            assert record[name] == value, name
    # and its requests: original files byte for byte, box lists for the judge
    folder, by_task = samples
    fields = by_task["text_guided_ie"]
    score, requests, _ = run(folder, "text_guided_ie", fields, "Grounding", method="extended")
    plan = next(r for r in requests if "### Task" in request_text(r))
    source = next(p for p in _image_parts(plan) if p.label == "source")
    assert source.image.data == (folder / fields["images"]["source"]).read_bytes()
    judge_texts = [request_text(r) for r in requests if "RULES:" in request_text(r)]
    assert all(COORDINATES.search(text) for text in judge_texts)
    assert all(s.tool_query == "thing" for s in score.sub_scores)  # the planner's query


def test_explicit_settings_win_over_the_method() -> None:
    config = EvalConfig(tool_text="detailed", difference={"threshold": 40})
    assert config.method == "paper" and config.tool_text == "detailed"
    assert config.difference.threshold == 40 and config.difference.steps == "official"
    assert config.model_fields_set == {"tool_text", "difference"}
    again = EvalConfig.model_validate(
        {**config.model_dump(exclude_unset=True), "method": "extended"}
    )
    assert again.tool_text == "detailed" and again.difference.threshold == 40
    assert again.difference.steps == "cigeval" and again.image_encoding == "original"
    # the presets still fill in the tools' settings, and their own flags override them
    preset = EvalConfig(method="extended", grounding={"preset": "official", "box_threshold": 0.3})
    assert (preset.grounding.box_threshold, preset.grounding.text_threshold) == (0.3, 0.2)
    assert preset.grounding.queries == "official" and preset.tool_text == "detailed"


def test_both_concepts_take_the_official_planners_one_choice(samples) -> None:
    """The official planner is asked about the two concept similarities as one task; the
    evaluate pass gives both its choice. Under the extended planner prompt each is asked."""
    folder, by_task = samples
    fields = by_task["multi_concept_ic"]
    asked: list[str] = []

    def planner(request: ModelRequest) -> str:
        text = request_text(request)
        if "### Task" in text:
            asked.append(text)
            ids = plan_task_ids(text)
            first = {"task_id": "1", "used": "yes", "tool": planner_name("Scene Graph", text)}
            rest = [{"task_id": i, "used": "no", "tool": "None"} for i in ids[1:]]
            return json.dumps([first, *rest])
        return rule_judge(default_score=6)(request)

    sample = sample_from_dict({"id": "m", "task": "multi_concept_ic", **fields}, base_dir=folder)
    paper = Evaluator(ScriptedBackend(planner), run_config=NO_CACHE).evaluate(sample)
    # the official planner's two tasks: both concepts, then the prompt
    assert re.findall(r"Multi-concept Image Composition Task (\d+): ", asked[0]) == ["1", "2"]
    tools = {s.question_id: s.tool for s in paper.sub_scores}
    assert tools == {
        "concept_1_similarity": "Scene Graph",
        "concept_2_similarity": "Scene Graph",
        "prompt_following": None,
    }
    extended = Evaluator(
        ScriptedBackend(planner),
        run_config=NO_CACHE,
        planner_prompt="extended",
        request_layout="cigeval",
    ).evaluate(sample)
    assert len(re.findall(r"- task_id \d+:", asked[1])) == 3
    assert [s.tool for s in extended.sub_scores] == ["Scene Graph", None, None]
