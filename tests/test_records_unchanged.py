"""The faster paths write the same records as the plain ones, field for field.

The same samples are judged through the OpenAI HTTP path by a server answering with the rule
judge, once the way cigeval 0.2 did it (the body a dict the SDK encodes with the standard
json module, every image decoded when loaded, no cache) and once the way it does now (bodies
sent as shared chunks, pixels decoded on first use, answers and JPEG encodings from the
SQLite cache), then again fully cached. Apart from timings (and, for the cached run, what
says it was cached) every record and every request is the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import cigeval.images
from cigeval import Evaluator
from cigeval.backends.openai_backend import OpenAIBackend
from cigeval.config import RunConfig
from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

#: Fields that measure time, different in every run.
TIMINGS = {("usage", "wall_ms"), ("trace", "time"), ("trace", "latency_s")}
#: Fields that say an answer came from the cache.
CACHE_MARKS = {("usage", "cached_calls"), ("usage", "http_attempts"), ("trace", "cached")}


def sample_set(folder: Path) -> Path:
    """The seven tasks with photo-like images of their own: PNG and JPEG files."""
    samples = seven_task_samples(folder)
    for number, sample in enumerate(samples):
        for role, value in sample["images"].items():
            if role == "mask":
                continue
            names = value if isinstance(value, list) else [value]
            renamed = []
            for index, name in enumerate(names):
                suffix = ".jpg" if (number + index) % 2 else ".png"
                target = f"{sample['id']}-{role}-{index}{suffix}"
                image = Image.open(folder / name).convert("RGB").resize((96, 80))
                noise = Image.effect_noise((96, 80), 30 + number).convert("RGB")
                Image.blend(image, noise, 0.3).save(folder / target)
                renamed.append(target)
            sample["images"][role] = renamed if isinstance(value, list) else renamed[0]
    return write_jsonl(folder / "samples.jsonl", samples)


def judged(
    server: FakeOpenAIServer, samples: Path, out: Path, encoding: str, cache: Path | None
) -> dict[str, dict[str, Any]]:
    run_config = RunConfig(
        concurrency=4, use_cache=cache is not None, cache_dir=cache, preflight=False
    )
    evaluator = Evaluator(
        f"openai:judge@{server.base_url}", run_config=run_config, image_encoding=encoding
    )
    result = evaluator.run(samples, out=out, quiet=True)
    assert result.summary.statuses["ok"] == 7
    return {record["id"]: record for record in read_records(out)}


def without(record: dict[str, Any], fields: set[tuple[str, str]]) -> dict[str, Any]:
    """``record`` without ``fields``, its trace events in a fixed order (calls made at once
    may reach the trace in any order)."""
    copy = json.loads(json.dumps(record))
    for section, name in fields:
        value = copy.get(section)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                item.pop(name, None)
    copy["trace"] = sorted(copy.get("trace", []), key=lambda e: json.dumps(e, sort_keys=True))
    return copy


def bodies(server: FakeOpenAIServer, start: int) -> list[str]:
    return sorted(json.dumps(r.body, sort_keys=True) for r in server.requests[start:])


@pytest.mark.parametrize("encoding", ["jpeg75", "original"])
def test_records_and_requests_are_the_same_before_and_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    samples = sample_set(tmp_path / "set")
    reply = rule_judge(tools={"*": "Difference"})  # every plan asks for a tool
    with FakeOpenAIServer(reply) as server, monkeypatch.context() as before:
        # cigeval 0.2's paths: the SDK encodes a dict, every image decoded when loaded
        before.setattr(OpenAIBackend, "encoded_body", False)
        before.setattr(cigeval.images, "_plain_file", lambda data, opened: False)
        old = judged(server, samples, tmp_path / "old.jsonl", encoding, cache=None)
        old_bodies = bodies(server, 0)
        before.undo()
        sent = len(server.requests)
        new = judged(server, samples, tmp_path / "new.jsonl", encoding, tmp_path / "cache")
        new_bodies = bodies(server, sent)
        sent = len(server.requests)
        cached = judged(server, samples, tmp_path / "again.jsonl", encoding, tmp_path / "cache")
        assert len(server.requests) == sent  # the re-run asked nothing
    assert new_bodies == old_bodies
    assert sorted(new) == sorted(old)
    assert any(s.get("tool") == "Difference" for r in new.values() for s in r["sub_scores"])
    for sample_id, record in old.items():
        assert without(new[sample_id], TIMINGS) == without(record, TIMINGS), sample_id
        again = cached[sample_id]
        assert again["usage"]["cached_calls"] == record["usage"]["calls"] > 0
        assert without(again, TIMINGS | CACHE_MARKS) == without(record, TIMINGS | CACHE_MARKS)
