"""The same app on Ray Serve, 2 replicas on a local Ray (ray.init(num_cpus=2))."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

pytest.importorskip("ray.serve", reason="the ray-serve extra (ray[serve]) is not installed")

import cigeval
from cigeval.config import JudgeSpec
from cigeval.serve.ray_app import start
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import t2i_item


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def local_ray() -> Iterator[None]:
    """A local Ray of 2 CPUs, shut down after the test."""
    import ray
    from ray import serve

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        serve.shutdown()
        ray.shutdown()


@pytest.mark.slow
def test_two_replicas_on_ray_serve(local_ray: None) -> None:
    from ray import serve

    with FakeOpenAIServer(rule_judge(default_score=6), latency_s=0.3) as server:
        spec = JudgeSpec.of(
            f"openai:fake-model@{server.base_url}",
            config=cigeval.EvalConfig(tools=()),
            run_config=cigeval.RunConfig(use_cache=False, concurrency=8, max_retries=0),
        )
        settings = ServeConfig(port=_free_port(), api_key="k", concurrency=8)
        url = start(spec, settings, replicas=2)
        headers = {"Authorization": "Bearer k"}
        replicas = serve.status().applications["cigeval"].deployments["cigeval"]
        running = replicas.replica_states.get("RUNNING", 0)

        def post(_: int) -> dict[str, object]:
            body = {"items": [t2i_item(i) for i in range(4)]}
            answer = requests.post(f"{url}/v1/score", json=body, headers=headers, timeout=120)
            assert answer.status_code == 200
            return dict(answer.json())

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(post, range(8)))
            pids = set(
                pool.map(
                    lambda _: requests.get(f"{url}/v1/info", headers=headers, timeout=60).json()[
                        "process"
                    ],
                    range(16),
                )
            )
        unauthorised = requests.get(f"{url}/v1/info", timeout=60).status_code
    assert running == 2
    assert all(a["stats"]["ok"] == 4 for a in answers)  # type: ignore[index]
    assert {r["score"] for a in answers for r in a["results"]} == {0.6}  # type: ignore[union-attr]
    assert len(pids) == 2  # both replicas answered
    assert unauthorised == 401
