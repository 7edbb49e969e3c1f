"""The Python adapters (Flow-GRPO, TRL, verl) against a server and in-process, and
``cigeval serve-bench`` against a running server."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from PIL import Image

from cigeval.cli.main import main
from cigeval.serve.adapters import FlowGRPOReward, ImageScorer, trl_reward, verl_compute_score
from cigeval.serve.app import create_app
from cigeval.serve.bench import percentile
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import make_evaluator, running_server


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    """The fake judge's base URL (scores every sub-question 6)."""
    with FakeOpenAIServer(rule_judge(default_score=6), latency_s=0.05) as server:
        yield server.base_url


@pytest.fixture(params=["server", "in-process"])
def scorer(request: pytest.FixtureRequest, judge_url: str) -> Iterator[ImageScorer]:
    """An ImageScorer against a running cigeval serve, or in-process."""
    if request.param == "in-process":
        yield ImageScorer(evaluator=make_evaluator(judge_url))
        return
    app = create_app(make_evaluator(judge_url), ServeConfig(api_key="k"))
    with running_server(app) as url:
        yield ImageScorer(url=url, api_key="k")


def test_flow_grpo_adapter_takes_tensors_arrays_and_pil(scorer: ImageScorer) -> None:
    reward = FlowGRPOReward(scorer)
    tensor = torch.rand(3, 3, 32, 32)  # NCHW floats in [0, 1], as Flow-GRPO's pipeline
    uint8 = np.full((2, 32, 32, 3), 120, dtype=np.uint8)  # NHWC
    pil = [Image.new("RGB", (32, 32), "blue")]
    for images, count in ((tensor, 3), (uint8, 2), (pil, 1)):
        scores, info = reward(images, ["a red square"] * count, [{}] * count)
        assert scores.shape == (count,) and scores.dtype == np.float64
        assert scores.tolist() == [0.6] * count
        assert info["errors"] == [None] * count


def test_trl_and_verl_adapters_give_one_float_per_image(scorer: ImageScorer) -> None:
    images = [Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "green")]
    trl = trl_reward(scorer)
    assert trl(["a red square", [{"role": "user", "content": "green"}]], images) == [0.6, 0.6]
    verl = verl_compute_score(scorer)
    assert verl("t2i", "", "a red square", {"image": images[0]}) == 0.6
    with pytest.raises(ValueError, match="extra_info"):
        verl("t2i", "", "a red square", {})


def test_an_unscorable_image_is_nan_with_its_reason(judge_url: str) -> None:
    scorer = ImageScorer(evaluator=make_evaluator(judge_url), task="no_such_task")
    scores = scorer.score(["x"], [Image.new("RGB", (8, 8))])
    assert math.isnan(scores[0]) and scorer.last_errors[0]


def test_serve_bench_prints_percentiles_and_throughput(
    judge_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app = create_app(make_evaluator(judge_url), ServeConfig())
    with running_server(app) as url:
        status = main(
            [
                "serve-bench",
                "--url",
                url,
                "--concurrency",
                "1,4",
                "--batch-size",
                "1,8",
                "--requests",
                "4",
                "--image-size",
                "64",
            ]
        )
    out = capsys.readouterr().out
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "concurrency", "batch", "requests", "failed", "p50_s", "p90_s", "p99_s", "images/s",
        "item_errors",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:5]]
    assert [(r[0], r[1], r[3], r[8]) for r in rows] == [
        ("1", "1", "0", "0"), ("1", "8", "0", "0"), ("4", "1", "0", "0"), ("4", "8", "0", "0"),
    ]  # fmt: skip
    assert all(float(r[4]) <= float(r[5]) <= float(r[6]) and float(r[7]) > 0 for r in rows)
    assert lines[5].startswith("best: ")


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 90) == pytest.approx(1.9)
    assert math.isnan(percentile([], 50))
