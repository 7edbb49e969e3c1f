"""Training data is checked line by line before anything trains (no heavy imports needed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from cigeval.errors import InputError
from cigeval.training import load_training_data

from .support import IMAGE, conversation, text, write_data, write_rows


def test_a_clean_file_loads_with_absolute_image_paths(tmp_path: Path) -> None:
    rows = load_training_data(write_data(tmp_path, 3))
    assert [r.line for r in rows] == [1, 2, 3]
    assert all(Path(p).is_absolute() and Path(p).is_file() for r in rows for p in r.images)
    assert rows[0].messages[1]["content"][1] == IMAGE
    assert rows[0].to_dataset_row().keys() == {"messages", "images"}


def test_string_content_with_image_placeholders_is_accepted(tmp_path: Path) -> None:
    row = conversation(0, tmp_path)
    row["messages"] = [
        {"role": "user", "content": "<image>\nRate it. <image>"},
        {"role": "assistant", "content": '{"score": 3}'},
    ]
    (loaded,) = load_training_data(write_rows(tmp_path / "d.jsonl", [row]))
    assert loaded.messages[0]["content"] == [IMAGE, text("\nRate it. "), IMAGE]
    assert loaded.messages[1]["content"] == [text('{"score": 3}')]


def test_every_bad_line_is_named(tmp_path: Path) -> None:
    good = conversation(0, tmp_path)
    no_reply = copy.deepcopy(good)
    no_reply["messages"] = [m for m in good["messages"] if m["role"] != "assistant"]
    empty_reply = copy.deepcopy(good)
    empty_reply["messages"][2]["content"] = [text(" ")]
    empty_reply["messages"][4]["content"] = []
    too_few = {**copy.deepcopy(good), "images": good["images"][:1]}
    missing = {**copy.deepcopy(good), "images": [good["images"][0], "gone.png"]}
    (tmp_path / "broken.png").write_bytes(b"not an image")
    unreadable = {**copy.deepcopy(good), "images": [good["images"][0], "broken.png"]}
    inline = copy.deepcopy(good)
    inline["messages"][1]["content"][1] = {"type": "image", "image": "output0.png"}
    bad_role = copy.deepcopy(good)
    bad_role["messages"][0]["role"] = "tool"
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps(no_reply),
        json.dumps(empty_reply),
        json.dumps(too_few),
        json.dumps(missing),
        json.dumps(unreadable),
        json.dumps(inline),
        json.dumps(bad_role),
        json.dumps([1, 2]),
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_training_data(data)
    message = str(info.value)
    assert "9 bad line(s)" in message and "nothing was trained" in message
    expected = {
        2: "not valid JSON",
        3: "no assistant reply",
        4: "no assistant reply",
        5: "2 image placeholder(s) but 1 image file(s)",
        6: f"image file not found: {tmp_path / 'gone.png'}",
        7: "image file cannot be read",
        8: "placeholder",
        9: "needs a role",
        10: "JSON object",
    }
    for number, problem in expected.items():
        line = next(x for x in message.splitlines() if x.strip().startswith(f"line {number}:"))
        assert problem in line, (number, line)
    assert "line 1:" not in message


def test_an_empty_or_missing_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no conversations"):
        load_training_data(empty)
    with pytest.raises(InputError, match="cannot read"):
        load_training_data(tmp_path / "absent.jsonl")
