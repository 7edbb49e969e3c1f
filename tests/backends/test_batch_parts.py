"""The pieces of the batch path: request lines, result lines, the batch record, the cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigeval.backends.batch import (
    BatchEntry,
    BatchRecord,
    BatchState,
    BatchStats,
    LineFailure,
    read_result_lines,
    request_line,
)
from cigeval.errors import ConfigError
from cigeval.messages import ModelResponse
from cigeval.results.summary import RunSummary, load_price_table


def _completion(text: str) -> dict[str, object]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "served-name",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def test_a_request_line_carries_the_direct_body() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "caf\u00e9"}]}
    line = request_line("k" * 64, body)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "custom_id": "k" * 64,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body,
    }


def test_result_lines_become_replies_or_failures() -> None:
    lines = [
        {"custom_id": "ok", "response": {"status_code": 200, "body": _completion("fine")}},
        {
            "custom_id": "refused",
            "response": {"status_code": 400, "body": {"error": {"message": "bad image"}}},
        },
        {"custom_id": "busy", "response": {"status_code": 429, "body": {"error": {}}}},
        {
            "custom_id": "expired",
            "response": None,
            "error": {"code": "batch_expired", "message": "not run in time"},
        },
        {"custom_id": "empty", "response": {"status_code": 200, "body": {"choices": []}}},
    ]
    data = b"".join(json.dumps(x).encode() + b"\n" for x in lines) + b"not json\n\n"
    results = read_result_lines(data, "asked-name", "http://h/v1")
    assert results["ok"] == ModelResponse(
        "fine",
        "served-name",
        results["ok"].usage,  # type: ignore[union-attr]
        0.0,
        finish_reason="length",
        endpoint="http://h/v1",
    )
    assert results["ok"].usage.prompt_tokens == 5  # type: ignore[union-attr]
    assert results["refused"] == LineFailure("HTTP 400: bad image", retryable=False)
    assert isinstance(results["busy"], LineFailure) and results["busy"].retryable
    assert results["expired"] == LineFailure("batch_expired: not run in time", retryable=True)
    failure = results["empty"]
    assert isinstance(failure, LineFailure) and "unreadable reply" in failure.message
    assert set(results) == {"ok", "refused", "busy", "expired", "empty"}


def test_the_batch_record_survives_a_restart_and_forgets_on_request(tmp_path: Path) -> None:
    path = tmp_path / "r.batches.json"
    state = BatchState(path)
    state.add(BatchRecord("b1", "openai:m", "http://h/v1", ["x", "y"], stage=1))
    again = BatchState(path)
    record = again.batch_for("y")
    assert record is not None and record.id == "b1" and record.resumed
    again.forget(["y"])
    assert BatchState(path).batch_for("y") is None
    assert BatchState(path).batch_for("x") is not None
    assert not list(tmp_path.glob(".tmp-*"))  # written through a temporary file, moved


def test_an_unreadable_batch_record_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "r.batches.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"cannot read the batch record .*paid for again"):
        BatchState(path)


def test_the_summary_reports_batches_and_the_saving(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"served": {"prompt": 2.0, "completion": 8.0}}))
    table = load_price_table(prices)
    assert table["served"]["batch_discount"] == 0.5
    stats = BatchStats()
    stats.batches += [BatchEntry("b1", 1, "openai:m", 7), BatchEntry("b2", 2, "openai:m", 11)]
    stats.tokens["served"] = [1_000_000, 500_000]  # $2 + $4 at list prices
    summary = RunSummary(prices=table, batch=stats)
    summary.cost_usd = 6.0  # what the records' calls cost at list prices
    assert summary.batch_saving_usd == pytest.approx(3.0)
    text = summary.render(1.0)
    assert "batch API: 18 calls sent in 2 new batch(es) (stage 1: 7; stage 2: 11)" in text
    assert "cost: $3.0000 (batch discount saved $3.0000 of $6.0000 at list prices)" in text
    assert summary.as_dict(1.0)["cost_usd"] == 3.0


def test_a_batch_discount_outside_zero_to_one_is_refused(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"prompt": 1, "completion": 1, "batch_discount": 2}}))
    with pytest.raises(ConfigError, match="batch_discount"):
        load_price_table(prices)
