"""What a fresh server does before its first request (warm-up: the first batch as fast as a
warm one, and the deadline held on it), the deadline's clock (from the request's arrival),
and ``/metrics`` counting what was served."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from cigeval.serve.app import create_app
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import CORRUPT, make_evaluator, running_server, served_client, t2i_item


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _timed(url: str, items: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = requests.post(f"{url}/v1/score", json={"items": items}, timeout=120)
    assert answer.status_code == 200
    return time.perf_counter() - started, answer.json()


def test_a_fresh_server_answers_its_first_batch_as_fast_as_a_warm_one() -> None:
    # the command a user runs, in a process of its own (nothing imported or connected yet)
    latency, deadline = 0.5, 3.0
    with FakeOpenAIServer(rule_judge(), latency_s=latency) as judge:
        port = _free_port()
        command = [sys.executable, "-m", "cigeval", "serve", "--model",
                   f"openai:fake-model@{judge.base_url}", "--tools", "Difference",
                   "--port", str(port), "--deadline-s", str(deadline)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{port}"
            started = time.monotonic()
            while True:  # the port opens once the start (preflight, warm-up) is done
                try:
                    requests.get(f"{url}/health", timeout=5)
                    break
                except requests.ConnectionError:
                    assert server.poll() is None and time.monotonic() - started < 120
                    time.sleep(0.1)
            first, answer = _timed(url, [t2i_item(i) for i in range(32)])
            warm = statistics.fmean(_timed(url, [t2i_item(i) for i in range(32)])[0] for _ in "ab")
        finally:
            server.terminate()
            log = server.communicate(timeout=30)[1]
    assert [r["status"] for r in answer["results"]] == ["ok"] * 32, log[-2000:]
    assert {r["calls"] for r in answer["results"]} == {2}  # plan, then judge: 2 x latency
    assert "warmed up" in log
    assert first <= deadline  # the deadline held on the first batch
    assert first <= 1.5 * warm, (first, warm)


def _trickle(body: bytes, seconds: float) -> Iterator[bytes]:
    half = len(body) // 2
    yield body[:half]
    time.sleep(seconds)
    yield body[half:]


def test_the_deadline_runs_from_the_requests_arrival() -> None:
    settings = ServeConfig(deadline_s=1.0)
    body = json.dumps({"items": [t2i_item(i) for i in range(3)]}).encode()
    with FakeOpenAIServer(rule_judge(), latency_s=0.4) as judge:
        app = create_app(make_evaluator(judge.base_url), settings)
        with running_server(app) as url:
            started = time.perf_counter()
            # half the body, then the rest 0.8 s later: 0.2 s left for a 0.4 s judge
            answer = requests.post(
                f"{url}/v1/score",
                data=_trickle(body, 0.8),
                headers={"Content-Type": "application/json"},
                timeout=60,
            )
            wall = time.perf_counter() - started
    results = answer.json()["results"]
    assert [r["status"] for r in results] == ["timeout"] * 3
    assert wall < 1.6  # answered at arrival + 1 s, not 1 s after the body was read (1.8 s)


def _metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        key, value = line.rsplit(" ", 1)
        if key.split("{")[0] != name:
            continue
        if all(f'{k}="{v}"' in key for k, v in labels.items()):
            return float(value)
    raise AssertionError(f"{name} {labels} not in the metrics")


def test_metrics_count_what_was_served() -> None:
    pytest.importorskip("prometheus_client")
    items = [t2i_item(i) for i in range(4)] + [t2i_item(4, image=CORRUPT)]
    items[3]["prompt"] = "a blue square"  # a group of one
    settings = ServeConfig(fill_unscored="group-mean", max_items=8, max_queue=8)
    with (
        FakeOpenAIServer(rule_judge()) as judge,
        served_client(judge.base_url, settings) as client,
    ):
        client.post("/v1/score", json={"items": items})
        client.post("/v1/score", json={"items": [t2i_item(i) for i in range(9)]})  # 413
        text = client.get("/metrics").text
        calls = len(judge.requests)
    assert _metric(text, "cigeval_serve_items_total", protocol="v1", status="ok") == 4
    assert _metric(text, "cigeval_serve_items_total", protocol="v1", status="error") == 1
    assert _metric(text, "cigeval_serve_requests_refused_total", status="413") == 1
    assert _metric(text, "cigeval_serve_judge_call_seconds_count") == calls == 4
    assert _metric(text, "cigeval_serve_queue_depth") == 0
    assert _metric(text, "cigeval_serve_fill_ins_total") == 1
    assert _metric(text, "cigeval_serve_groups_total") == 1  # "a red square": 3 scored
    assert _metric(text, "cigeval_serve_tied_groups_total") == 1
    assert _metric(text, "cigeval_serve_tied_group_share") == 1.0
    assert _metric(text, "cigeval_serve_parse_failures_total") == 0
