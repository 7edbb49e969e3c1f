"""Sturdiness under faults: flaky servers, kill -9 and resume, hostile replies, bad inputs, secrets.

Everything runs against a real HTTP server on 127.0.0.1 (:class:`FakeOpenAIServer`). Faults are
chosen with seeded random generators, so a failure here reproduces.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from cigeval.agent.judging import parse_judge_reply
from cigeval.agent.plan import parse_plan
from cigeval.config import RunConfig, calls_in_flight
from cigeval.errors import ParseError
from cigeval.parsing import extract_json, parse_judgement, parse_score
from cigeval.results.jsonl import read_records
from cigeval.tasks import get_task
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image, seven_task_samples, variant, write_jsonl
from cigeval.tools.registry import registered_tools
from tests.cli_support import evaluate_cli

SECRET = "sk-sturdy-SECRET-0123456789abcdef"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def distinct_samples(folder: Path, count: int) -> list[dict[str, Any]]:
    """``count`` samples cycling through the seven tasks, each with its own id and wording
    (so most of their model calls differ and the cache cannot answer one from another)."""
    base = seven_task_samples(folder)
    samples = []
    for n in range(count):
        round_ = n // len(base)
        sample = base[n % len(base)]
        sample = variant(sample, f"{sample['id']}-{round_}", f" (variant {round_})")
        if "subject" in sample:
            sample["subject"] = f"{sample['subject']} {round_}"
        samples.append(sample)
    return samples


def cli(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> int:
    return evaluate_cli(server, samples, out, *extra)


def one_record_per_id(out: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    records = list(read_records(out))
    seen = [r["id"] for r in records]
    assert sorted(seen) == sorted(ids), "missing or repeated records"
    return {r["id"]: r for r in records}


# --------------------------------------------------------------------------- flaky server


def count_sent_requests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every request the openai client hands to its HTTP client (one list item each).

    The server does not see them all: a request sent on a connection it had just closed (a
    dropped one) fails in the client without reaching it, yet was an attempt."""
    # The class of the SDK's HTTP client that sends (cigeval gives the SDK clients of it).
    client_class = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if "send" in vars(c))
    original = client_class.send
    sent: list[int] = []

    async def counting_send(self: Any, request: Any, **kwargs: Any) -> Any:
        if str(request.url).endswith("/chat/completions"):
            sent.append(1)
        return await original(self, request, **kwargs)

    monkeypatch.setattr(client_class, "send", counting_send)
    return sent


def test_a_quarter_of_calls_failing_loses_nothing(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = count_sent_requests(monkeypatch)
    samples = distinct_samples(env, 40)
    path = write_jsonl(env / "samples.jsonl", samples)
    out = env / "results.jsonl"
    rng = random.Random(20240605)
    kinds = ("429", "500", "garbage", "drop")
    injected: dict[str, int] = dict.fromkeys(kinds, 0)
    with FakeOpenAIServer(rule_judge(), latency_s=0.005) as server:
        for index in range(5000):
            if rng.random() < 0.25:
                kind = rng.choice(kinds)
                server.fail(index, kind, retry_after="0.02" if kind == "429" else None)
        status = cli(
            server, path, out, "--concurrency", "16", "--retry-backoff", "0.02", "--no-cache"
        )
        requests = list(server.requests)
    faulted = [r for r in requests if r.fault]
    for r in faulted:
        injected[r.fault or ""] += 1
    # the faults really happened, in every form, on about a quarter of the calls
    assert all(injected[k] > 0 for k in kinds), injected
    assert 0.15 < len(faulted) / len(requests) < 0.35
    records = one_record_per_id(out, [s["id"] for s in samples])
    ok = [r for r in records.values() if r["status"] == "ok"]
    assert len(ok) >= 0.95 * len(samples)
    assert status == (0 if len(ok) == len(samples) else 1)
    for record in records.values():
        assert record["status"] in {"ok", "error"}
        if record["status"] == "error":
            assert record["error"]
    # every sample's answered calls were recorded exactly once: no retry leaks into the result
    answered = len(requests) - len(faulted)
    assert sum(r["usage"]["calls"] for r in records.values()) == answered
    # and every HTTP request sent, failed ones and retries included, is counted: at least
    # every one the server saw
    assert sum(r["usage"]["http_attempts"] for r in records.values()) == len(sent)
    assert len(sent) >= len(requests)


def test_retries_running_out_is_a_named_error_and_others_finish(env: Path) -> None:
    samples = distinct_samples(env, 7)
    path = write_jsonl(env / "samples.jsonl", samples)
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge(), latency_s=0.0) as server:
        for index in range(3):  # the very first call fails 3 times: 1 try + 2 retries
            server.fail(index, "500", message="upstream exploded")
        status = cli(
            server,
            path,
            out,
            "--concurrency",
            "1",
            "--max-retries",
            "2",
            "--retry-backoff",
            "0.01",
            "--no-cache",
        )
    records = one_record_per_id(out, [s["id"] for s in samples])
    failed = [r for r in records.values() if r["status"] == "error"]
    assert status == 1 and len(failed) == 1
    (record,) = failed
    assert record["id"] == samples[0]["id"]
    assert "failed after 3 attempts" in record["error"]
    assert (record["usage"]["calls"], record["usage"]["http_attempts"]) == (0, 3)
    assert "HTTP 500" in record["error"] and "upstream exploded" in record["error"]
    assert sum(r["status"] == "ok" for r in records.values()) == 6


# --------------------------------------------------------------------------- kill -9 + resume


def _complete_lines(out: Path) -> list[dict[str, Any]]:
    """Every complete line of the results file must parse; at most the last may be torn."""
    if not out.exists():
        return []
    data = out.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    records = [json.loads(line) for line in complete]  # raises if any complete line is bad
    assert all(isinstance(r, dict) and "id" in r for r in records)
    if tail:
        with pytest.raises(ValueError):
            json.loads(tail)  # a torn line never passes for a whole record
    return records


def _canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


def test_kill_9_at_random_moments_then_resume(env: Path) -> None:
    samples = distinct_samples(env, 21)
    path = write_jsonl(env / "samples.jsonl", samples)
    out = env / "results.jsonl"
    concurrency = 4
    in_flight_limit = calls_in_flight(RunConfig(concurrency=concurrency))  # the default
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(7)
    kill_times: list[float] = []
    with FakeOpenAIServer(rule_judge(), latency_s=0.04) as server:
        command = [
            sys.executable, "-m", "cigeval", "evaluate", str(path),
            "--model", "openai:judge-model", "--base-url", server.base_url,
            "--out", str(out), "--quiet", "--concurrency", str(concurrency), "--no-preflight",
        ]  # fmt: skip
        for _ in range(3):
            # kill once the run is under way: after a random number of new calls, plus a
            # random fraction of a call's latency
            target = len(server.requests) + rng.randint(2, 20)
            process = subprocess.Popen(
                command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            deadline = time.monotonic() + 60
            while len(server.requests) < target and process.poll() is None:
                assert time.monotonic() < deadline, "the run made no progress"
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.06))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kill_times.append(time.monotonic())
            process.wait()
            ids = [r["id"] for r in _complete_lines(out)]
            assert len(ids) == len(set(ids)), "a sample was recorded twice"
        assert len(kill_times) >= 2, "the runs finished before they could be killed"
        first_seen: dict[str, float] = {}
        for request in server.requests:
            first_seen.setdefault(_canonical(request.body), request.received_at)
        requests_before = len(server.requests)
        assert cli(server, path, out, "--concurrency", str(concurrency)) == 0
        final_run = server.requests[requests_before:]
        everything = list(server.requests)
        # and one more identical run (the same server: its address is part of the settings
        # every record carries) has nothing left to do: no call at all
        assert cli(server, path, out) == 0
        assert len(server.requests) == len(everything)
    records = one_record_per_id(out, [s["id"] for s in samples])
    assert all(r["status"] == "ok" for r in records.values())
    # The resumed run re-asked only calls that were in flight when a process was killed
    # (answered by the server, perhaps, but never received and cached by the client).
    reasked = [r for r in final_run if _canonical(r.body) in first_seen]
    assert len(reasked) <= len(kill_times) * in_flight_limit
    for request in reasked:
        asked_at = first_seen[_canonical(request.body)]
        assert any(0 <= kill - asked_at < 3.0 for kill in kill_times), "an answer was lost"
    distinct = {_canonical(r.body) for r in everything}
    assert 0 < len(final_run) < len(distinct)  # far fewer calls than a run from scratch
    assert len(everything) <= len(distinct) + len(kill_times) * in_flight_limit


# --------------------------------------------------------------------------- fuzzed replies

_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["8", "8/10", "7.5", "4/5", "11", "-1", "1e3", "10 out of 10", "0/0"]),
)
_json_values = st.recursive(
    _json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["score", "Score", "reasoning", "task_id", "tool", "used", "query"])
            | st.text(max_size=8),
            children,
            max_size=5,
        ),
    ),
    max_leaves=12,
)


def _render(value: Any, style: int) -> str:
    """JSON-ish text: plain, fenced, in prose, truncated, with smart quotes."""
    text = json.dumps(value, allow_nan=True)
    return [
        text,
        f"```json\n{text}\n```",
        f"Here is my answer: {text} -- thanks",
        text[: max(1, len(text) // 2)],
        text.replace('"', "\u201c", 1),
        f"score: {text}",
    ][style % 6]


_replies = st.one_of(
    st.text(max_size=300),
    st.builds(_render, _json_values, st.integers(0, 5)),
    st.sampled_from(
        [
            "[" * 5000,
            "{" * 5000,
            '{"score": ' + "9" * 5000 + "}",
            '{"score": ' + "9" * 400 + "}",
            "score: 1e999",
            '{"score": NaN, "reasoning": "x"}',
            "```json\n```",
            "8/0",
        ]
    ),
)

_fuzz = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fuzz
@given(_replies, st.sampled_from([None, dict, list]))
def test_extract_json_raises_only_parse_error(text: str, want: type | None) -> None:
    try:
        value = extract_json(text, want)
    except ParseError:
        return
    assert want is None or isinstance(value, want)


@_fuzz
@given(_replies, st.sampled_from([(0, 10), (0, 1), (1, 5)]))
def test_parse_judgement_scores_stay_in_range(text: str, bounds: tuple[int, int]) -> None:
    low, high = bounds
    try:
        score, reasoning = parse_judgement(text, low, high)
    except ParseError:
        return
    assert low <= score <= high and isinstance(reasoning, str)


@_fuzz
@given(_json_values, st.sampled_from([(0, 10), (0, 1), (1, 5)]), st.booleans())
def test_parse_score_is_in_range_or_parse_error(
    value: Any, bounds: tuple[int, int], integer: bool
) -> None:
    low, high = bounds
    try:
        score = parse_score(value, low, high, integer=integer)
    except ParseError:
        return
    assert isinstance(score, float) and low <= score <= high
    assert not integer or score == int(score)


@st.composite
def _plan_replies(draw: Any) -> str:
    entries = draw(
        st.lists(
            st.fixed_dictionaries(
                {"task_id": st.sampled_from(["1", "2", "3", 1, "task 2", "edit_success", "9"])},
                optional={
                    "tool": st.sampled_from(
                        [
                            "None",
                            "Highlight",
                            "Grounding",
                            "Difference",
                            "Scene_Graph",
                            "hammer",
                            "",
                            None,
                        ]
                    ),
                    "used": st.sampled_from(["yes", "no", "maybe", True, 0, None]),
                    "query": st.one_of(st.none(), st.text(max_size=10), st.integers()),
                    "reasoning": st.text(max_size=10),
                },
            ),
            max_size=4,
        )
    )
    return _render(entries, draw(st.integers(0, 2)))


@_fuzz
@given(st.one_of(_replies, _plan_replies()))
def test_plan_parser_raises_only_parse_error(text: str) -> None:
    questions = get_task("text_guided_ie").sub_questions
    tools = registered_tools()
    try:
        plan = parse_plan(text, questions, tools)
    except ParseError:
        return
    assert set(plan) == {q.id for q in questions}
    names = {t.name for t in tools}
    assert all(item.tool is None or item.tool in names for item in plan.values())


@_fuzz
@given(_replies, st.booleans())
def test_judge_reply_parser_raises_only_parse_error(text: str, can_request: bool) -> None:
    names = [t.name for t in registered_tools()]
    try:
        parse_judge_reply(text, can_request, names)
    except ParseError:
        return


# --------------------------------------------------------------------------- bad inputs


def _png_claiming(path: Path, width: int, height: int) -> str:
    """A tiny PNG file whose header claims ``width`` x ``height`` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path.name


def test_bad_inputs_end_as_named_errors_and_odd_images_are_converted(env: Path) -> None:
    good = seven_task_samples(env)
    (env / "empty.png").write_bytes(b"")
    (env / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    bomb = _png_claiming(env / "bomb.png", 100_000, 100_000)  # beyond PIL's own limit
    big = _png_claiming(env / "big.png", 9_000, 9_000)  # beyond cigeval's 8192 x 8192
    rgba = Image.new("RGBA", (48, 48), (255, 0, 0, 0))
    rgba.paste((0, 0, 255, 255), (10, 10, 30, 30))
    rgba.save(env / "rgba.png")
    deep = Image.new("I;16", (40, 30))
    deep.paste(40000, (5, 5, 20, 20))
    deep.save(env / "deep16.png")
    Image.open(env / "output.png").convert("P", palette=Image.Palette.ADAPTIVE).save(
        env / "palette.png"
    )
    make_image(env / "small_mask.png", "black", (4, 4, 16, 16), "white", size=(20, 20))
    t2i = {"task": "text_guided_ig", "prompt": "a red square"}
    bad = {
        "missing-file": {**t2i, "images": {"output": "nowhere.png"}},
        "zero-byte": {**t2i, "images": {"output": "empty.png"}},
        "corrupt": {**t2i, "images": {"output": "corrupt.png"}},
        "bomb": {**t2i, "images": {"output": bomb}},
        "huge": {**t2i, "images": {"output": big}},
        "unknown-task": {**t2i, "task": "video_generation", "images": {"output": "output.png"}},
        "no-instruction": {
            "task": "text_guided_ie",
            "images": {"source": "source.png", "output": "output.png"},
        },
        "no-source": {
            "task": "text_guided_ie",
            "instruction": "x",
            "images": {"output": "output.png"},
        },
    }
    problems = {
        "missing-file": "not found",
        "zero-byte": "zero-byte",
        "corrupt": "corrupt",
        "bomb": "decompression bomb",
        "huge": "too large",
        "unknown-task": "unknown task",
        "no-instruction": "instruction",
        "no-source": "source",
    }
    converted = {
        "rgba": {**t2i, "images": {"output": "rgba.png"}},
        "deep16": {**t2i, "images": {"output": "deep16.png"}},
        "palette": {**t2i, "images": {"output": "palette.png"}},
        "odd-mask": {
            "task": "mask_guided_ie",
            "instruction": "make the square red",
            "images": {"source": "source.png", "mask": "small_mask.png", "output": "output.png"},
        },
    }
    lines = [good[0]]
    lines += [{"id": key, **value} for key, value in bad.items()]
    lines += [{"id": key, **value} for key, value in converted.items()]
    lines += good[1:]
    path = write_jsonl(env / "samples.jsonl", lines)
    with path.open("a") as handle:  # a line with no id at all
        handle.write(json.dumps({"task": "text_guided_ig", "prompt": "x"}) + "\n")
    out = env / "results.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        status = cli(server, path, out, "--concurrency", "4")
        sent_images = [url for r in server.requests for url in r.image_urls()]
    assert status == 1
    last_line = f"@line:{len(lines) + 1}"
    records = one_record_per_id(out, [line["id"] for line in lines] + [last_line])
    for key, problem in problems.items():
        record = records[key]
        assert record["status"] == "error", key
        assert f"sample {key!r}" in record["error"], record["error"]
        assert problem in record["error"], (key, record["error"])
    assert "id" in records[last_line]["error"] and last_line in records[last_line]["error"]
    for key in [*converted, *(g["id"] for g in good)]:
        assert records[key]["status"] == "ok", (key, records[key].get("error"))
    # what reached the model is 8-bit RGB, whatever the file held
    import base64
    import io

    for url in sent_images:
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
            assert image.mode == "RGB"


# --------------------------------------------------------------------------- secrets


def test_the_api_key_is_written_nowhere(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    samples = distinct_samples(env, 7)
    path = write_jsonl(env / "samples.jsonl", samples)
    out = env / "results.jsonl"
    # everything the libraries log, down to DEBUG, goes to a file we can search
    log_file = env / "debug.log"
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    echo = f"Incorrect API key provided: {SECRET}"
    try:
        with FakeOpenAIServer(rule_judge(), latency_s=0.0) as server:
            # a server that echoes the key: first in retryable errors, then as a 401
            for index in range(0, 6, 2):
                server.fail(index, "500", message=echo)
            server.fail(1, "429", retry_after="0", message=echo)
            for index in range(6, 40):
                if index % 5 == 0:
                    server.fail(index, "401", message=echo)
            status = cli(server, path, out, "--concurrency", "2", "--retry-backoff", "0.01")
            sent = [r.header("Authorization") for r in server.requests]
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    assert all(header == f"Bearer {SECRET}" for header in sent)  # the key was used...
    records = list(read_records(out))
    unauthorised = [r for r in records if r["status"] == "error" and "HTTP 401" in r["error"]]
    assert unauthorised, "no 401 reached a record"
    assert all("***" in r["error"] and "OPENAI_API_KEY" in r["error"] for r in unauthorised)
    captured = capsys.readouterr()
    texts = {"stdout": captured.out, "stderr": captured.err, "log": log_file.read_text()}
    assert "HTTP Request" in texts["log"] or "Request options" in texts["log"]  # logging worked
    for path_ in [out, *(env / "cache").rglob("*")]:
        if path_.is_file():
            texts[str(path_)] = path_.read_text(encoding="utf-8", errors="replace")
    assert status == 1
    leaks = [where for where, text in texts.items() if SECRET in text]
    assert not leaks, f"the API key leaked into {leaks}"
    # the key is also absent from the reprs users may print
    from cigeval.evaluation import Evaluator

    evaluator = Evaluator("openai:judge-model", base_url="http://127.0.0.1:9/v1")
    assert SECRET not in repr(evaluator.backend) and SECRET not in repr(evaluator.__dict__)
