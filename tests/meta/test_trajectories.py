"""Trajectory export to TRL chat-format fine-tuning JSONL, with hand-built results records.

The records are built the way the agent builds them: real messages with real images
(``MessageRecord.from_message``), image files on disk and ``image_files`` pointing at them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cigeval.image_store import ImageStore
from cigeval.images import EncodedImage
from cigeval.messages import ImagePart, Message, TextPart
from cigeval.meta import export_trajectories, load_human_ratings, make_split
from cigeval.results import read_records
from cigeval.trace import ActionEvent, MessageRecord, ModelCallEvent

TASK, MODEL = "text_guided_ie", "MagicBrush"
SYSTEM = Message.text("system", "You are a judge.")
TOOL_REQUEST = '{"thought": "I need to look closer", "tool": "Difference", "query": ""}'


class Images:
    """Named test images: an encoded image and its file (input file or store)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = ImageStore(folder / "results.images")
        self.encoded: dict[str, EncodedImage] = {}
        self.files: dict[str, str] = {}
        for index, name in enumerate(("source", "output", "highlighted")):
            image = Image.new("RGB", (32 + index, 32), (40 * index, 90, 200))
            encoded = EncodedImage.from_pil(image)
            if name == "highlighted":  # a tool output: kept in the run's image store
                path = self.store.put(encoded)
            else:  # an input image, sent as its file
                path = folder / f"{name}.png"
                path.write_bytes(encoded.data)
            self.encoded[name] = encoded
            self.files[encoded.sha256] = str(path)

    def part(self, name: str) -> ImagePart:
        return ImagePart(self.encoded[name], name)


def _call(purpose: str, messages: list[Message], reply: str, **kw: Any) -> dict[str, Any]:
    records = [MessageRecord.from_message(m) for m in messages]
    event = ModelCallEvent(purpose=purpose, model="judge", messages=records, reply=reply, **kw)
    return event.model_dump(mode="json")


def _ask(images: Images, question: str) -> Message:
    return Message(
        "user",
        (
            TextPart(f"RULES: {question}"),
            TextPart("Image 1: source"),
            images.part("source"),
            TextPart("Image 2: output"),
            images.part("output"),
            TextPart("Reply with JSON."),
        ),
    )


def _observation(images: Images) -> Message:
    return Message(
        "user",
        (TextPart("TOOL OUTPUT (Difference): the changed parts"), images.part("highlighted")),
    )


def _two_round_record(images: Images, uid: str, score: float = 0.5, **extra: Any) -> dict:
    """A sample as the multi-round agent records it: each sub-question one growing conversation.

    q1: round 1 asks for a tool, round 2 (the conversation so far plus the observation) scores.
    q2: the first reply is unusable and re-asked; the re-asked reply asks for a tool; round 2
    continues that conversation and scores.
    """
    plan = Message.text("user", "Which tool for each question?")
    ask1, ask2 = _ask(images, "edit success"), _ask(images, "over-editing")
    q1_round2 = [
        SYSTEM,
        ask1,
        Message.text("assistant", TOOL_REQUEST),
        _observation(images),
    ]
    q2_reask = [
        SYSTEM,
        ask2,
        Message.text("assistant", "no idea"),
        Message.text("user", "Your previous reply could not be used."),
    ]
    q2_round2 = [*q2_reask, Message.text("assistant", TOOL_REQUEST), _observation(images)]
    trace = [
        _call("plan", [SYSTEM, plan], '[{"task_id": "1", "tool": "None"}]'),
        ActionEvent(tool=None, question_id="q1").model_dump(mode="json"),
        _call("judge", [SYSTEM, ask1], TOOL_REQUEST, question_id="q1"),
        _call("judge", [SYSTEM, ask2], "no idea", question_id="q2"),
        _call("judge", q2_reask, TOOL_REQUEST, question_id="q2", attempt=2),
        _call("judge", q1_round2, '{"score": 7, "reasoning": "fine"}', question_id="q1"),
        _call("judge", q2_round2, '{"score": 5, "reasoning": "some"}', question_id="q2"),
    ]
    return {
        "id": uid,
        "task": TASK,
        "model": MODEL,
        "status": "ok",
        "score": score,
        "judge": "openai:judge",
        "sub_scores": [],
        "image_files": dict(images.files),
        "trace": trace,
        **extra,
    }


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def _texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["content"] if p["type"] == "text"]


def _image_count(row: dict[str, Any]) -> int:
    return sum(p["type"] == "image" for m in row["messages"] for p in m["content"])


@pytest.fixture
def images(tmp_path: Path) -> Images:
    return Images(tmp_path)


def test_a_multi_round_sub_question_is_one_conversation_with_its_images(images: Images) -> None:
    out = io.StringIO()
    report = export_trajectories([_two_round_record(images, "s1")], out)
    plan, q1, q2 = _lines(out)
    assert report.conversations == 3 and report.samples == 1
    assert (plan["purpose"], plan["calls"]) == ("plan", 1)
    assert (q1["question_id"], q1["calls"]) == ("q1", 2)
    roles = ["system", "user", "assistant", "user", "assistant"]
    assert [m["role"] for m in q1["messages"]] == roles
    ask = q1["messages"][1]["content"]
    # TRL's layout, with each image where the judge saw it
    assert [p["type"] for p in ask] == ["text", "image", "text", "image", "text"]
    assert ask[0]["text"] == "RULES: edit success\nImage 1: source"
    assert ask[2]["text"] == "Image 2: output" and ask[4]["text"] == "Reply with JSON."
    assert _texts(q1["messages"][2]) == [TOOL_REQUEST]
    assert [p["type"] for p in q1["messages"][3]["content"]] == ["text", "image"]
    assert _texts(q1["messages"][4]) == ['{"score": 7, "reasoning": "fine"}']
    assert q1["image_labels"] == ["source", "output", "highlighted"]
    sha = [images.encoded[n].sha256 for n in ("source", "output", "highlighted")]
    assert q1["images"] == [str(Path(images.files[s]).resolve()) for s in sha]
    assert _image_count(q1) == len(q1["images"]) == 3
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in q1["images"])
    assert q1["judge"] == "openai:judge" and q1["model"] == MODEL
    # the unusable reply and its re-ask are not training material
    assert q2["calls"] == 2
    assert [m["role"] for m in q2["messages"]] == roles
    assert "no idea" not in json.dumps(q2)


def test_keep_retried_keeps_the_unusable_reply_and_the_re_ask(images: Images) -> None:
    out = io.StringIO()
    export_trajectories([_two_round_record(images, "s1")], out, keep_retried=True)
    rows = _lines(out)
    q2 = [r for r in rows if r.get("question_id") == "q2"]
    # the unusable first call continues into the re-ask and both rounds: one conversation
    assert len(q2) == 1 and q2[0]["calls"] == 3
    replies = [_texts(m) for m in q2[0]["messages"] if m["role"] == "assistant"]
    assert replies == [["no idea"], [TOOL_REQUEST], ['{"score": 5, "reasoning": "some"}']]


def test_one_conversation_per_sample(images: Images) -> None:
    out = io.StringIO()
    export_trajectories([_two_round_record(images, "s1")], out, per="sample")
    (row,) = _lines(out)
    roles = [m["role"] for m in row["messages"]]
    assert roles.count("system") == 1 and roles[0] == "system"
    assert roles.count("assistant") == 5  # plan, q1 twice, q2 twice
    assert _image_count(row) == len(row["images"]) == 6
    assert "purpose" not in row and row["id"] == "s1"


def test_calls_of_the_one_round_agent_still_export(images: Images) -> None:
    """Records where every round is a separate call (no growing conversation)."""
    record = _two_round_record(images, "s1")
    ask = _ask(images, "edit success")
    observed = Message("user", (*ask.parts, images.part("highlighted")))
    record["trace"] = [
        _call("judge", [SYSTEM, ask], TOOL_REQUEST, question_id="q1"),
        _call("judge", [SYSTEM, observed], '{"score": 7}', question_id="q1"),
    ]
    out = io.StringIO()
    report = export_trajectories([record], out)
    assert report.conversations == 2
    sample = io.StringIO()
    export_trajectories([record], sample, per="sample")
    (row,) = _lines(sample)
    assert [m["role"] for m in row["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_text_format_places_image_tokens_and_relative_paths(images: Images, tmp_path: Path) -> None:
    out = tmp_path / "export" / "train.jsonl"
    out.parent.mkdir()
    export_trajectories([_two_round_record(images, "s1")], out, fmt="text", relative_images=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    q1 = rows[1]
    assert q1["messages"][1]["content"] == (
        "RULES: edit success\nImage 1: source<image>\nImage 2: output<image>\nReply with JSON."
    )
    for path in q1["images"]:
        assert not Path(path).is_absolute()
        assert (out.parent / path).is_file()


def test_image_template_writes_references(images: Images) -> None:
    out = io.StringIO()
    export_trajectories([_two_round_record(images, "s1")], out, image_template="img/{sha256}")
    q1 = _lines(out)[1]
    assert q1["images"][0] == "img/" + images.encoded["source"].sha256


def test_missing_or_changed_images_are_reported_not_written(images: Images) -> None:
    good = _two_round_record(images, "good")
    gone = _two_round_record(images, "gone")
    deleted = images.folder / "deleted.png"
    gone["image_files"][images.encoded["source"].sha256] = str(deleted)
    changed = _two_round_record(images, "changed")
    edited = images.folder / "edited.png"
    Image.new("RGB", (8, 8)).save(edited)
    changed["image_files"][images.encoded["output"].sha256] = str(edited)
    unlisted = _two_round_record(images, "unlisted")
    del unlisted["image_files"]  # a results file from before image_files existed
    out = io.StringIO()
    report = export_trajectories([good, gone, changed, unlisted], out)
    assert {r["id"] for r in _lines(out)} == {"good"}
    assert report.skipped == {"missing image file": 3}
    by_id = {m.record_id: m for m in report.missing_images}
    assert set(by_id) == {"gone", "changed", "unlisted"}
    assert str(deleted) in by_id["gone"].reason and by_id["gone"].label == "source"
    assert "changed since the run" in by_id["changed"].reason
    assert "not listed" in by_id["unlisted"].reason
    # the run's image store still holds the tool output, but not the input files
    found = io.StringIO()
    again = export_trajectories([unlisted], found, image_dir=images.store.directory)
    assert again.samples == 0 and {m.label for m in again.missing_images} == {"source", "output"}


@pytest.fixture(scope="module")
def human_sc() -> dict[str, float]:
    return load_human_ratings().loc[(TASK, MODEL), "SC"].to_dict()


def test_filters_by_imagenhub_ratings_status_and_split(
    images: Images, tmp_path: Path, human_sc: dict[str, float]
) -> None:
    uids = sorted(human_sc)
    close, far, failed, unrated = uids[0], uids[1], uids[2], "not_rated.jpg"
    records = [
        _two_round_record(images, close, min(1.0, human_sc[close] + 0.25)),
        _two_round_record(images, far, 1.0 if human_sc[far] < 0.5 else 0.0),
        {**_two_round_record(images, failed), "status": "error", "score": None},
        _two_round_record(images, unrated),
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


def test_the_records_own_human_rating_wins(images: Images) -> None:
    """Any dataset: the `human` field (a number, or one per dimension) is the reference."""
    records = [
        _two_round_record(images, "near", 0.6, human=0.5),
        _two_round_record(images, "far", 0.9, human=0.2),
        _two_round_record(images, "dims", 0.6, human={"SC": 0.4, "PQ": 1.0}),
        _two_round_record(images, "bad", 0.6, human=7),
        _two_round_record(images, "none", 0.6, human={"PQ": 0.6}),
    ]
    out = io.StringIO()
    report = export_trajectories(records, out, max_diff=0.3)
    assert {r["id"] for r in _lines(out)} == {"near", "dims"}
    assert report.skipped == {
        "too far from the human score": 1,
        "human rating not a number on [0, 1]": 1,
        "no human rating": 1,  # no SC in its own rating, and not an ImagenHub sample
    }
    assert export_trajectories(records[:1], io.StringIO(), max_diff=0.05).samples == 0


def test_rounds_of_one_sub_question_join_across_interleaved_calls(images: Images) -> None:
    """The agent's rounds as they arrive: other sub-questions' calls come in between."""
    ask1, ask2 = _ask(images, "question 1"), _ask(images, "question 2")
    want = Message.text("assistant", TOOL_REQUEST)
    record = _two_round_record(images, "s1")
    record["trace"] = [
        _call("judge", [SYSTEM, ask1], TOOL_REQUEST, question_id="q1"),
        _call("judge", [SYSTEM, ask2], '{"score": 3}', question_id="q2"),
        _call("judge", [SYSTEM, ask1, want, _observation(images)], '{"score": 8}',
              question_id="q1", round=2),
    ]  # fmt: skip
    per_sample = io.StringIO()
    export_trajectories([record], per_sample, per="sample")
    (row,) = _lines(per_sample)
    roles = ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert [m["role"] for m in row["messages"]] == roles
    assert _texts(row["messages"][4]) == ['{"score": 8}']
    assert _texts(row["messages"][5])[0] == "RULES: question 2\nImage 1: source"
    assert _image_count(row) == len(row["images"]) == 5
    per_call = io.StringIO()
    export_trajectories([record], per_call)
    q1, q2 = _lines(per_call)
    assert (q1["question_id"], q1["calls"], len(q1["messages"])) == ("q1", 2, 5)
    assert (q2["question_id"], q2["calls"], len(q2["messages"])) == ("q2", 1, 3)


def test_a_reply_cut_at_the_token_limit_is_never_training_material(images: Images) -> None:
    """The session asks a cut reply again with the same messages and a larger budget: only
    the complete reply is exported, even with keep_retried."""
    ask = _ask(images, "edit success")
    record = _two_round_record(images, "s1")
    record["trace"] = [
        _call("judge", [SYSTEM, ask], '{"score": "1', question_id="q1", finish_reason="length"),
        _call("judge", [SYSTEM, ask], '{"score": 10, "reasoning": "done"}', question_id="q1"),
    ]
    for keep_retried in (False, True):
        out = io.StringIO()
        export_trajectories([record], out, keep_retried=keep_retried)
        (row,) = _lines(out)
        assert row["calls"] == 1
        assert [_texts(m) for m in row["messages"] if m["role"] == "assistant"] == [
            ['{"score": 10, "reasoning": "done"}']
        ]
