"""The results file survives crashes and resumes with one record per sample."""

from __future__ import annotations

import json

from cigeval.results.jsonl import ResultsWriter, read_records, repair_tail
from cigeval.score import Score


def score(sample_id: str, status: str = "ok") -> Score:
    return Score(
        id=sample_id,
        task="text_guided_ig",
        status=status,
        value=0.5 if status == "ok" else None,
        error=None if status == "ok" else "boom",
    )


def test_torn_last_line_is_repaired_and_finished_ids_are_known(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(score("a"))
        writer.write(score("b"))
    with path.open("a") as handle:
        handle.write('{"id": "c", "status": "o')  # killed mid-write
    assert [r["id"] for r in read_records(path)] == ["a", "b"]
    with ResultsWriter(path) as writer:
        assert writer.finished == {"a", "b"}
        writer.write(score("c"))
    assert [r["id"] for r in read_records(path)] == ["a", "b", "c"]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_retry_errors_drops_error_records_only(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(score("a"))
        writer.write(score("b", "error"))
    with ResultsWriter(path, retry_errors=True) as writer:
        assert writer.finished == {"a"}
    assert [r["id"] for r in read_records(path)] == ["a"]


def test_overwrite_starts_afresh(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(score("a"))
    with ResultsWriter(path, resume=False) as writer:
        assert writer.finished == set()
    assert list(read_records(path)) == []


def test_repair_tail_without_any_newline(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "x"')
    assert repair_tail(path) == len('{"id": "x"')
    assert path.read_text() == ""


def test_record_round_trip_keeps_passthrough(tmp_path):
    original = score("a")
    original.passthrough = {"model": "SD", "human": 0.5}
    original.provenance = {"cigeval_version": "9.9", "judges": [{"endpoint": "http://x/v1"}]}
    record = original.to_record()
    again = Score.from_record(json.loads(json.dumps(record)))
    assert again.passthrough == {"model": "SD", "human": 0.5}
    assert again.value == 0.5 and again.id == "a"
    assert again.provenance == original.provenance
    # Records written before provenance existed still load.
    del record["provenance"]
    assert Score.from_record(record).provenance == {}


def test_retry_errors_lists_the_ids_to_rerun_and_rejects_unreadable_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(score("a"))
        writer.write(score("b", "error"))
    with path.open("ab") as handle:
        handle.write(b"not json at all\n")
    with ResultsWriter(path, retry_errors=True) as writer:
        assert writer.retrying == {"b"} and writer.finished == {"a"}
        assert [str(line) for line in writer.skipped] == [
            "line 3: not JSON (Expecting value: line 1 column 1 (char 0))"
        ]
    assert [r["id"] for r in read_records(path)] == ["a"]
    assert (tmp_path / "r.jsonl.rejected").read_bytes() == b"not json at all\n"


def test_last_record_per_id_keeps_the_last_record_in_first_seen_order():
    from cigeval.results import last_record_per_id

    records = [{"id": "a", "v": 1}, {"id": "b", "v": 2}, {"id": "a", "v": 3}, {"id": 7, "v": 4}]
    duplicates: list[str] = []
    kept = last_record_per_id(records, duplicates)
    assert kept == [{"id": "a", "v": 3}, {"id": "b", "v": 2}, {"id": 7, "v": 4}]
    assert duplicates == ["a"]


def test_every_line_json_reads_is_read_and_the_others_say_why(tmp_path):
    """Lines are read by orjson, and by the standard json module where orjson refuses: a
    record with NaN or an integer past 64 bits is still read, bad lines keep their reasons."""
    path = tmp_path / "r.jsonl"
    lines = [
        json.dumps({"id": "plain", "score": 0.5, "text": "caf\u00e9 \u2028"}),
        '{"id": "nan", "score": NaN}',
        json.dumps({"id": "huge", "seed": 2**70 + 1, "low": -(2**63) - 1}),
        '{"id": "lone", "text": "\\udc80"}',
        "[1, 2]",
        '"a string"',
        "{broken",
    ]
    path.write_bytes("\n".join(lines).encode() + b"\n" + b'{"id": "\xff"}\n')
    skipped: list = []
    records = list(read_records(path, skipped))
    assert [r["id"] for r in records] == ["plain", "nan", "huge", "lone"]
    assert records[0]["text"] == "caf\u00e9 \u2028"
    assert records[1]["score"] != records[1]["score"]  # NaN, as json reads it
    assert records[2]["seed"] == 2**70 + 1 and records[2]["low"] == -(2**63) - 1
    assert isinstance(records[2]["seed"], int) and records[3]["text"] == "\udc80"
    assert [str(s) for s in skipped] == [
        "line 5: not a results record (a JSON object with an id)",
        "line 6: not a results record (a JSON object with an id)",
        "line 7: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1))",
        "line 8: not UTF-8 (invalid start byte at byte 8)",
    ]
