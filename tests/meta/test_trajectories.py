"""Trajectory export to chat-format fine-tuning JSONL, with hand-built results records."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.meta import export_trajectories, load_human_ratings, make_split
from cigeval.results import read_records
from cigeval.trace import ActionEvent, MessageRecord, ModelCallEvent

TASK, MODEL = "text_guided_ie", "MagicBrush"


def _image(tag: str, label: str) -> dict[str, Any]:
    return {"sha256": tag * 8, "label": label, "size": [64, 64]}


def _call(purpose: str, messages: list[MessageRecord], reply: str, **kw: Any) -> dict[str, Any]:
    event = ModelCallEvent(purpose=purpose, model="judge", messages=messages, reply=reply, **kw)
    return event.model_dump(mode="json")


def _record(uid: str, score: float | None, status: str = "ok") -> dict[str, Any]:
    system = MessageRecord(role="system", text="You are a judge.")
    ask = MessageRecord(
        role="user", text="Rate the edit.", images=[_image("a", "source"), _image("b", "output")]
    )
    plan = MessageRecord(role="user", text="Which tool?", images=[_image("b", "output")])
    trace = [
        _call("plan", [system, plan], "grounding"),
        ActionEvent(tool="grounding", query="cat").model_dump(mode="json"),
        _call("judge", [system, ask], "bad reply", question_id="q1"),
        _call(
            "judge",
            [
                system,
                ask,
                MessageRecord(role="assistant", text="bad reply"),
                MessageRecord(role="user", text="Answer in JSON."),
            ],
            '{"score": 7}',
            attempt=2,
            question_id="q1",
        ),
    ]
    return {
        "id": uid,
        "task": TASK,
        "model": MODEL,
        "status": status,
        "score": score,
        "sub_scores": [],
        "trace": trace,
    }


@pytest.fixture(scope="module")
def human_sc() -> dict[str, float]:
    return load_human_ratings().loc[(TASK, MODEL), "SC"].to_dict()


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_one_conversation_per_call(human_sc: dict[str, float]) -> None:
    uid = sorted(human_sc)[0]
    out = io.StringIO()
    report = export_trajectories([_record(uid, 0.5)], out)
    lines = _lines(out)
    assert report.conversations == len(lines) == 2  # the re-asked first judge call is dropped
    plan, judge = lines
    assert plan["purpose"] == "plan" and plan["id"] == uid and plan["model"] == MODEL
    assert [m["role"] for m in plan["messages"]] == ["system", "user", "assistant"]
    assert plan["messages"][1]["content"] == "<image>\nWhich tool?"
    assert plan["messages"][-1] == {"role": "assistant", "content": "grounding"}
    assert plan["images"] == ["sha256:" + "b" * 8] and plan["image_labels"] == ["output"]
    assert judge["messages"][-1]["content"] == '{"score": 7}'
    # the reply that worked answers the request as first asked, without the failed attempt
    assert [m["role"] for m in judge["messages"]] == ["system", "user", "assistant"]
    assert "bad reply" not in json.dumps(judge)
    placeholders = sum(m["content"].count("<image>") for m in judge["messages"])
    assert placeholders == len(judge["images"]) == 2
    kept_all = io.StringIO()
    assert export_trajectories([_record(uid, 0.5)], kept_all, keep_retried=True).conversations == 3


def test_one_conversation_per_sample(human_sc: dict[str, float]) -> None:
    uid = sorted(human_sc)[0]
    out = io.StringIO()
    export_trajectories([_record(uid, 0.5)], out, per="sample", image_template="img/{sha256}.png")
    (line,) = _lines(out)
    roles = [m["role"] for m in line["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert "bad reply" not in json.dumps(line)
    placeholders = sum(m["content"].count("<image>") for m in line["messages"])
    assert placeholders == len(line["images"]) == 3
    assert line["images"][0] == "img/bbbbbbbb.png"


def test_filters_by_human_agreement_status_and_split(
    tmp_path: Path, human_sc: dict[str, float]
) -> None:
    uids = sorted(human_sc)
    close, far, failed, unrated = uids[0], uids[1], uids[2], "not_rated.jpg"
    records = [
        _record(close, min(1.0, human_sc[close] + 0.25)),
        _record(far, 1.0 if human_sc[far] < 0.5 else 0.0),
        _record(failed, None, status="error"),
        _record(unrated, 0.5),
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "train.jsonl"
    report = export_trajectories(read_records(results), out, max_diff=0.3)
    assert report.samples == 1 and report.records == 4
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} == {close}
    assert report.skipped == {
        "too far from the human score": 1,
        "status not ok": 1,
        "no human rating": 1,
    }
    split = make_split(0.5, seed=0)
    side = split.side_of(TASK, close)
    other = "train" if side == "test" else "test"
    assert export_trajectories(records[:1], io.StringIO(), samples=split.subset(side)).samples == 1
    skipped = export_trajectories(records[:1], io.StringIO(), samples=split.subset(other))
    assert skipped.samples == 0 and skipped.skipped == {"not in the chosen split": 1}


def test_rounds_of_one_sub_question_are_joined_across_interleaved_calls(
    human_sc: dict[str, float],
) -> None:
    system = MessageRecord(role="system", text="You are a judge.")
    ask_1 = MessageRecord(role="user", text="Rate question 1.", images=[_image("a", "output")])
    ask_2 = MessageRecord(role="user", text="Rate question 2.", images=[_image("b", "output")])
    want = MessageRecord(role="assistant", text='{"thought": "zoom", "tool": "Grounding"}')
    seen = MessageRecord(role="user", text="Round 2 of 2: found it.", images=[_image("c", "x")])
    trace = [
        _call("judge", [system, ask_1], want.text, question_id="q1"),
        _call("judge", [system, ask_2], '{"score": 3}', question_id="q2"),
        _call("judge", [system, ask_1, want, seen], '{"score": 8}', question_id="q1", round=2),
    ]
    record = {"id": sorted(human_sc)[0], "task": TASK, "model": MODEL, "status": "ok",
              "score": 0.3, "sub_scores": [], "trace": trace}  # fmt: skip
    out = io.StringIO()
    export_trajectories([record], out, per="sample")
    (line,) = _lines(out)
    texts = [m["content"] for m in line["messages"]]
    assert [m["role"] for m in line["messages"]] == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert texts[1].endswith("Rate question 1.") and texts[3].endswith("found it.")
    assert texts[4] == '{"score": 8}' and texts[5].endswith("Rate question 2.")
    assert line["images"] == ["sha256:" + t * 8 for t in "acb"]
    # per call, the second round alone is the whole multi-turn trajectory
    calls = io.StringIO()
    export_trajectories([record], calls)
    last = _lines(calls)[-1]
    assert [m["role"] for m in last["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
