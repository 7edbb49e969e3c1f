"""The server keeps answering while one request's body is read, unpickled, decoded and
judged: ``/health`` within 0.5 s during a 16 MB Flow-GRPO pickle of 1024^2 JPEGs."""

from __future__ import annotations

import io
import pickle
import threading
import time
from collections.abc import Iterator

import numpy as np
import requests
from PIL import Image

from cigeval.serve.app import create_app
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import make_evaluator, running_server


def _sixteen_megabytes() -> bytes:
    """Flow-GRPO's body for a batch of 1024^2 JPEGs (quality 95, a detailed picture), 16 MB."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 200, 1024, dtype=np.float32)
    pixels = ramp[None, :, None] + ramp[:, None, None] * 0.2 + rng.normal(0, 6, (1024, 1024, 3))
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=95)
    jpeg = buffer.getvalue()
    count = 16 * 2**20 // len(jpeg) + 1
    images = [jpeg + bytes([i]) for i in range(count)]  # each its own object in the pickle
    return pickle.dumps({"images": images, "prompts": ["a gradient"] * count})


def _slowly(body: bytes, seconds: float) -> Iterator[bytes]:
    """The body in 1 MiB pieces spread over ``seconds`` (a trainer on a slower link)."""
    pieces = [body[i : i + 2**20] for i in range(0, len(body), 2**20)]
    for piece in pieces:
        yield piece
        time.sleep(seconds / len(pieces))


def test_health_answers_within_half_a_second_during_a_16_mb_pickle() -> None:
    body = _sixteen_megabytes()
    assert len(body) >= 16 * 2**20
    settings = ServeConfig(accept_pickle=True)  # warmed up, as a server starts
    with FakeOpenAIServer(rule_judge(), latency_s=0.3) as judge:
        app = create_app(make_evaluator(judge.base_url), settings)
        with running_server(app) as url:
            assert requests.get(f"{url}/health", timeout=10).status_code == 200
            answer: dict[str, requests.Response] = {}

            def post() -> None:
                answer["r"] = requests.post(url, data=_slowly(body, 1.0), timeout=300)

            poster = threading.Thread(target=post)
            poster.start()
            waits = []
            while poster.is_alive():
                started = time.perf_counter()
                health = requests.get(f"{url}/health", timeout=30)
                waits.append(time.perf_counter() - started)
                assert health.status_code == 200
                time.sleep(0.05)
            poster.join()
    outputs = pickle.loads(answer["r"].content)["outputs"]
    assert outputs == [0.7] * len(outputs)  # the rule judge's default
    assert len(waits) >= 5, waits  # polled all along: reading, parsing, judging
    assert max(waits) < 0.5, sorted(waits)[-5:]
