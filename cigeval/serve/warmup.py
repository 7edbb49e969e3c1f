"""What the service does before it answers its first request, so that the first batch is as
fast as any other and ``--deadline-s`` holds on it.

- The judge's server is checked (the preflight, unless ``--no-preflight``).
- Under ``--score-mode expected``, one short call asks each judge for token
  log-probabilities: a server that returns none stops the start (instead of every item
  failing later).
- Warm-up (unless ``--no-warmup``): the modules the request path imports on first use
  (Pillow's plugins, the parsers, the agent, the image encoder, the HTTP client) are loaded,
  and a batch of synthetic T2I samples (:data:`WARMUP_ITEMS`, judged at once) goes through
  the whole path (its body parsed, its images read, judged by the judge with its client pool,
  its answer serialised). A judge that fails it is reported, not fatal: the preflight
  already said whether it can be reached.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
from typing import TYPE_CHECKING, Any

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError

if TYPE_CHECKING:
    from cigeval.evaluation import Evaluator
    from cigeval.serve.service import ScoringService

log = logging.getLogger("cigeval.serve")

#: The warm-up samples' prompt (the judge sees it at start only).
WARMUP_PROMPT = "a grey square on a white background"
#: Samples judged at once by the warm-up (at most ``--concurrency``): a first batch that
#: arrives on a server warmed by one sample still took 1.4-2.4x a warm batch's time (pools,
#: connections and threads made on first use at that width); warmed by 16, none.
WARMUP_ITEMS = 16


def _warmup_image() -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(image).rectangle((16, 16, 47, 47), fill=(128, 128, 128))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


async def check_logprobs(evaluator: Evaluator) -> None:
    """Under ``--score-mode expected``: one short call per judge; a ConfigError when a judge
    answers without token log-probabilities."""
    from cigeval.messages import GenerationSettings, Message, ModelRequest
    from cigeval.serve.expected import ExpectedScoreBackend, expected_mode

    request = ModelRequest(
        (Message.text("user", 'Reply with exactly this JSON: {"score": 5}'),),
        GenerationSettings(temperature=0.0, max_tokens=16),
    )
    for backend in evaluator.backends:
        if not isinstance(backend, ExpectedScoreBackend):
            continue
        try:
            response = await backend.inner.complete(request)
        except Exception as exc:
            raise ConfigError(
                f"{expected_mode()}: the start-up call to {backend.identity} failed "
                f"({type(exc).__name__}: {exc})"
            ) from None
        if not response.logprobs:
            integer = in_callers_words("--score-mode integer", "score_mode='integer'")
            raise ConfigError(
                f"{expected_mode()}: {backend.identity} answered without token "
                "log-probabilities; serve it from a server that returns logprobs/top_logprobs "
                f"(OpenAI, vLLM), or use {integer}"
            )


async def warm_up(service: ScoringService) -> None:
    """Load what the request path loads on first use and judge a batch of synthetic samples
    through it (its body parsed off the event loop, as a request's is)."""
    import orjson

    from cigeval._off_loop import off_loop
    from cigeval.serve.inputs import prepare_raw

    image = base64.b64encode(_warmup_image()).decode("ascii")
    count = min(service.settings.concurrency, WARMUP_ITEMS)
    item = {"prompt": WARMUP_PROMPT, "images": {"output": image}}
    body = orjson.dumps({"items": [{"id": f"warm-up-{i}", **item} for i in range(count)]})
    settings = service.settings

    def parse() -> Any:
        data = orjson.loads(body)
        return [prepare_raw(raw, i, settings) for i, raw in enumerate(data["items"])]

    items = await off_loop(parse)
    _import_request_path()
    try:
        answer = await asyncio.wait_for(service.judge(items, counted=False), timeout=120)
    except Exception as exc:  # the preflight decides whether the judge is usable
        log.warning("warm-up: %s: %s", type(exc).__name__, exc)
        return
    answer.model_dump_json()
    failed = [r for r in answer.results if r.status != "ok"]
    if failed:
        log.warning("warm-up: %d sample(s) not judged: %s", len(failed), failed[0].error)


def _import_request_path() -> None:
    """Import what judging a sample imports on first use."""
    import cv2  # noqa: F401  the image encoder
    from PIL import Image

    import cigeval.agent
    import cigeval.serve.pickle_routes
    import cigeval.serve.unirl  # noqa: F401

    Image.init()
