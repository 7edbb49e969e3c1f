"""The official reading of replies and plans under ``paper`` (issue 42).

Each quirk of the official client (docs/official-code.md, "How the official code reads a
reply") is a case: a task, the planner's reply and the judge's replies. Always, cigeval's run
of the case is checked against the documented expectation (the score, or the sample dropped;
how many requests of each kind; the note on a sub-score whose value a quirk changed). Where
``CIGEVAL_OFFICIAL_CLONE`` names a clone, the clone's own passes run on the same sample with
the same replies (tests/official_harness.py), and cigeval must send the same requests, body
for body, and reach the same score. A unit table checks the reading functions against the
clone's ``GPTResponse2JSON``, ``get_number``, ``check`` and ``preprocess``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.agent import official_reading as reading
from cigeval.cli.main import main
from cigeval.sample import sample_from_dict
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.judge_view import fidelity_samples
from tests.official_harness import CLONE, MODEL, OfficialClient, Script, canonical
from tests.official_stand_in import write_stand_in

NO_CACHE = RunConfig(use_cache=False, preflight=False)
needs_clone = pytest.mark.skipif(
    not CLONE, reason="set CIGEVAL_OFFICIAL_CLONE to a clone of HITsz-TMG/Agentic-CIGEval"
)


def plan(*tools: str, **keys: Any) -> str:
    """A plan with one entry per tool (task ids from 1)."""
    return json.dumps(
        [{"task_id": str(i), "reasoning": "-", "used": "yes", "tool": t, **keys}
         for i, t in enumerate(tools, start=1)]
    )  # fmt: skip


def judged(score: Any, reasoning: str = "-") -> str:
    return json.dumps({"score": score, "reasoning": reasoning})


DROPPED = "dropped"
ANALYSIS = "analysis"


@dataclass(frozen=True)
class Case:
    """One quirk: the sample's task, the replies, and what the official code makes of it."""

    task: str
    plan: str
    judge: dict[str, str]
    #: the sample's score, or DROPPED (the official code drops it), or ANALYSIS (its
    #: analysis cannot count a score)
    value: float | str
    #: requests of each kind the official code sends
    counts: dict[str, int]
    #: sub-question -> a phrase of its note (a quirk changed its value)
    notes: dict[str, str] = field(default_factory=dict)
    #: sub-question -> the tool it was judged with
    tools: dict[str, str | None] = field(default_factory=dict)
    repair: Any = '{"score": "5", "reasoning": "repaired"}'


CASES: dict[str, Case] = {
    "a score read from its digits": Case(
        "text_guided_ie",
        plan("None", "None"),
        {"edit_success": judged("7.5"), "over_editing": judged(6.9)},
        0.6,
        {"plan": 1, "judge": 2},
        notes={
            "edit_success": 'read as 10 (1.0) by the official parser; the reply said "7.5"',
            "over_editing": "read as 6 (0.6) by the official parser; the reply said 6.9",
        },
    ),
    "a fraction and a score above 10": Case(
        "subject_driven_ig",
        plan("None", "None"),
        {"subject_similarity": judged("8/10"), "prompt_following": judged("11")},
        1.0,
        {"plan": 1, "judge": 2},
        notes={"subject_similarity": '"8/10"', "prompt_following": '"11"'},
    ),
    "negative scores": Case(
        "text_guided_ie",
        plan("None", "None"),
        {"edit_success": judged("-2"), "over_editing": judged(-2)},
        0.0,
        {"plan": 1, "judge": 2},
        notes={"edit_success": "read as 2 (0.2)", "over_editing": "read as 0 (0.0)"},
    ),
    "the first of two fenced answers, the last of two score keys": Case(
        "control_guided_ig",
        plan("None", "None"),
        {
            "control_following": '```json\n{"score": 3, "reasoning": "x"}\n```\nor\n'
            '```json\n{"score": 9, "reasoning": "y"}\n```',
            "prompt_following": '{"score": 2, "reasoning": "r", "score": 8}',
        },
        0.3,
        {"plan": 1, "judge": 2},
        notes={
            "control_following": "the first of 2 json-fenced answers",
            "prompt_following": 'the last of 2 "score" keys',
        },
    ),
    "an unclosed fence loses every 'json'": Case(
        "text_guided_ig",
        plan("None"),
        {"prompt_following": '```json\n{"score": 4, "reasoning": "the json is fine"}'},
        0.4,
        {"plan": 1, "judge": 1},
    ),
    "a score without digits drops the sample": Case(
        "text_guided_ig",
        plan("None"),
        {"prompt_following": judged("Score")},
        DROPPED,
        {"plan": 1, "judge": 3},
    ),
    "a one-item list drops the sample after asking everything three times": Case(
        "text_guided_ie",
        plan("None", "None"),
        {"edit_success": judged(7), "over_editing": json.dumps([{"score": 7, "reasoning": "r"}])},
        DROPPED,
        {"plan": 1, "judge": 6},
    ),
    "an unreadable reply goes to a fresh repair request": Case(
        "text_guided_ig",
        plan("None"),
        {"prompt_following": "Score: 7 - it follows the prompt"},
        0.6,
        {"plan": 1, "judge": 1, "repair": 1},
        notes={"prompt_following": "read from the repair request's reply"},
        repair='{"score": "6", "reasoning": "fixed"}',
    ),
    "an unrepairable reply drops the sample": Case(
        "text_guided_ig",
        plan("None"),
        {"prompt_following": "no JSON here"},
        DROPPED,
        {"plan": 1, "judge": 3, "repair": 3},
        repair="still no JSON",
    ),
    "a missing reasoning asks everything three times, the scores kept": Case(
        "text_guided_ie",
        plan("None", "None"),
        {"edit_success": '{"score": 7}', "over_editing": judged(8)},
        0.7,
        {"plan": 1, "judge": 6},
        notes={"edit_success": 'no "reasoning": the official code asked the sample 3 times'},
    ),
    "a null score stops the analysis": Case(
        "text_guided_ig",
        plan("None"),
        {"prompt_following": judged(None)},
        ANALYSIS,
        {"plan": 1, "judge": 1},
    ),
    "plan entries by position, not task_id": Case(
        "text_guided_ie",
        json.dumps([{"task_id": "2", "tool": "SceneGraph"}, {"task_id": "1", "tool": "None"}]),
        {"*": judged("7")},
        0.7,
        {"plan": 1, "judge": 2, "scene_graph": 2},
        tools={"edit_success": "Scene Graph", "over_editing": None},
    ),
    "ids 0 and 1, a misspelt key reads as None": Case(
        "text_guided_ie",
        json.dumps(
            [{"task_id": "0", "Tool": "SceneGraph"}, {"task_id": "1", "tool": "SceneGraph"}]
        ),
        {"*": judged("7")},
        0.7,
        {"plan": 1, "judge": 2, "scene_graph": 2},
        tools={"edit_success": None, "over_editing": "Scene Graph"},
    ),
    "text-to-image with two entries asks no more": Case(
        "text_guided_ig",
        plan("SceneGraph", "None"),
        {"*": judged("7")},
        0.7,
        {"plan": 1, "judge": 1, "scene_graph": 1},
        tools={"prompt_following": "Scene Graph"},
    ),
    "a plan in prose is repaired": Case(
        "text_guided_ig",
        "I would use the scene graph.",
        {"*": judged("8")},
        0.8,
        {"plan": 1, "repair": 1, "judge": 1, "scene_graph": 1},
        tools={"prompt_following": "Scene Graph"},
        repair='[{"task_id": "1", "tool": "SceneGraph"}]',
    ),
    "a plan short of an entry drops the sample": Case(
        "text_guided_ie",
        plan("None"),
        {"*": judged("7")},
        DROPPED,
        {"plan": 1, "judge": 3},
    ),
    "a plan that is one object drops the sample unasked": Case(
        "text_guided_ie",
        json.dumps({"task_id": "1", "tool": "SceneGraph"}),
        {"*": judged("7")},
        DROPPED,
        {"plan": 1},
    ),
    "a plan unreadable three times drops the sample": Case(
        "text_guided_ig",
        "no plan",
        {"*": judged("7")},
        DROPPED,
        {"plan": 3, "repair": 3},
        repair="none either",
    ),
    "both concepts take task 1's entry": Case(
        "multi_concept_ic",
        plan("SceneGraph", "None"),
        {"*": judged("9")},
        0.9,
        {"plan": 1, "judge": 3, "scene_graph": 4},
        tools={
            "concept_1_similarity": "Scene Graph",
            "concept_2_similarity": "Scene Graph",
            "prompt_following": None,
        },
    ),
}


@pytest.fixture(scope="module")
def prompt_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``official-prompts`` from the clone where one is given, else from the stand-in."""
    root = tmp_path_factory.mktemp("prompts")
    clone = CLONE or str(write_stand_in(root / "clone"))
    out = root / "official-prompts"
    assert main(["official-prompts", clone, "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("replies") / "inputs" / "images"
    return folder, fidelity_samples(folder)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def cigeval_run(case: Case, samples, prompt_dir: Path):
    """cigeval's run of ``case``, its judge answering from the case's script: the script, the
    request bodies cigeval sent and the score."""
    folder, by_task = samples
    fields = by_task[case.task]
    script = Script(prompt_dir, case.plan, case.judge, case.repair)
    with FakeOpenAIServer(script) as server:
        sample = sample_from_dict({"id": "s", "task": case.task, **fields}, base_dir=folder)
        evaluator = Evaluator(
            f"openai:{MODEL}",
            base_url=server.base_url,
            run_config=NO_CACHE,
            prompt_dir=str(prompt_dir),
        )
        score = evaluator.evaluate(sample)
        return script, [r.body for r in server.requests], score


@pytest.mark.parametrize("name", list(CASES))
def test_each_quirk_as_documented(name: str, samples, prompt_dir: Path) -> None:
    case = CASES[name]
    script, bodies, score = cigeval_run(case, samples, prompt_dir)
    assert script.counts(bodies) == case.counts
    assert all(set(body) == {"model", "messages"} for body in bodies)
    if case.value == DROPPED:
        assert score.status == "error" and "the official code drops this sample" in score.error
    elif case.value == ANALYSIS:
        assert score.status == "error" and "official analysis" in score.error
    else:
        assert score.status == "ok", score.error
        assert score.value == pytest.approx(case.value)
        notes = {s.question_id: s.note for s in score.sub_scores}
        for question, phrase in case.notes.items():
            assert phrase in (notes[question] or ""), notes
        for sub in score.sub_scores:
            if sub.question_id not in case.notes:
                assert sub.note is None
            assert not sub.degraded
        for question, tool in case.tools.items():
            assert {s.question_id: s.tool for s in score.sub_scores}[question] == tool
    for body in bodies:  # the repair request: fresh, text only, one part in a list
        if script.kind(body)[0] == "repair":
            (message,) = body["messages"]
            assert [p["type"] for p in message["content"]] == ["text"]


@needs_clone
@pytest.mark.parametrize("name", list(CASES))
def test_each_quirk_as_the_official_client_does_it(name: str, samples, prompt_dir: Path) -> None:
    assert CLONE is not None
    case = CASES[name]
    script, ours, score = cigeval_run(case, samples, prompt_dir)
    folder, by_task = samples
    client = OfficialClient(CLONE, script)
    scores = client.judge(case.task, by_task[case.task], folder)
    assert canonical(ours) == canonical(client.bodies)
    if scores is None:
        assert case.value == DROPPED and score.status == "error"
        return
    try:
        value = client.value(scores)
    except (TypeError, ValueError, OverflowError):
        assert case.value == ANALYSIS and score.status == "error"
        return
    assert score.status == "ok" and score.value == pytest.approx(value)


# ------------------------------------------------------------------ the reading functions

#: Replies and what the official reading makes of them: the sub-score, or where it fails.
REPLIES: list[tuple[str, Any]] = [
    (judged("7.5"), 10),
    (judged("6.9"), 10),
    (judged("8/10"), 10),
    (judged("11"), 10),
    (judged(7.5), 7),
    (judged("-2"), 2),
    (judged(-2), 0),
    (judged(True), 1),
    (judged("0.5"), 5),
    (judged("7 out of 10"), 10),
    ('```json\n{"score": 3, "reasoning": "a"}\n```\n```json\n{"score": 9}\n```', 3),
    ('{"score": 2, "score": 8, "reasoning": "r"}', 8),
    ('```json\n{"score": "4", "reasoning": "json"}', 4),
    (judged("Score"), "attempt"),
    (judged(""), "attempt"),
    (json.dumps([{"score": 7, "reasoning": "r"}]), "attempt"),
    ('{"reasoning": "no score"}', "attempt"),
    ('"7"', "attempt"),
    ("Score: 7", "repair"),
    ('```\n{"score": 7, "reasoning": "r"}\n```', "repair"),
    (judged(None), "analysis"),
    ('{"score": NaN, "reasoning": "r"}', "analysis"),
    (judged([7]), "analysis"),
]


def ours(reply: str) -> Any:
    """cigeval's reading of a judge reply: the sub-score, or where it fails."""
    try:
        data = reading.loads(reply)
    except (ValueError, RecursionError):
        return "repair"
    try:
        judgement = reading.read_judgement(data, reply)
        return judgement.score()
    except reading.OfficialReadError as exc:
        return exc.stage


@pytest.mark.parametrize(("reply", "expected"), REPLIES)
def test_the_reading_of_a_reply_as_documented(reply: str, expected: Any) -> None:
    assert ours(reply) == expected


@needs_clone
@pytest.mark.parametrize(("reply", "expected"), REPLIES)
def test_the_reading_of_a_reply_as_the_official_functions(reply: str, expected: Any) -> None:
    assert CLONE is not None
    repairs: list[str] = []

    def repair(body: dict[str, Any]) -> str:
        repairs.append(body["messages"][0]["content"][0]["text"])
        return "not JSON either"

    client = OfficialClient(CLONE, repair)
    try:
        data = client.ns["GPTResponse2JSON"](reply)
        number = client.ns["get_number"](data["score"])
    except Exception:
        official: Any = "repair" if repairs else "attempt"
    else:
        try:
            official = round(client.value([number]) * 10)
        except (TypeError, ValueError, OverflowError):
            official = "analysis"
    assert official == ours(reply) == expected


PLANS: list[tuple[Any, Any]] = [
    (
        [{"task_id": "1", "tool": "Highlight"}],
        [{"task_id": "1", "tool": "Highlight", "reasoning": "None", "used": "None"}],
    ),
    # keys not written exactly are mapped, then set to "None" as missing
    (
        [{"Task ID": "1", "Tool": "SceneGraph"}],
        [{"task_id": "None", "tool": "None", "reasoning": "None", "used": "None"}],
    ),
    (
        [{"taskid": "1", "tools": "MaskFocus", "tool": "None"}],
        [{"task_id": "None", "tool": "None", "reasoning": "None", "used": "None"}],
    ),
    ({"task": "1", "tool": "Highlight"}, {"task_id": "1", "tool": "Highlight"}),
    (["Highlight"], "attempt"),
    ("Highlight", "attempt"),
]


def our_check(result: Any) -> Any:
    try:
        return reading.check_plan(result)
    except reading.OfficialReadError as exc:
        return exc.stage


@pytest.mark.parametrize(("plan_json", "expected"), PLANS)
def test_plans_are_checked_as_documented(plan_json: Any, expected: Any) -> None:
    assert our_check(plan_json) == expected


@needs_clone
@pytest.mark.parametrize(("plan_json", "expected"), PLANS)
def test_plans_are_checked_as_the_official_check(plan_json: Any, expected: Any) -> None:
    assert CLONE is not None
    client = OfficialClient(CLONE, lambda body: "")
    try:
        official = client.ns["check"](plan_json, ["task_id", "reasoning", "used", "tool"])
    except AttributeError:
        official = "attempt"
    assert official == our_check(plan_json) == expected
