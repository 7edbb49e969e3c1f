"""The Python adapters, each called as its trainer calls it (the calls below are written
from the trainers' sources: Flow-GRPO's ``scripts/train_sd3.py`` and ``flow_grpo/rewards.py``,
verl-omni's visual reward manager, verl's batch reward manager), against a server and
in-process; and ``cigeval serve-bench`` against a server started as docs/serve.md says."""

from __future__ import annotations

import asyncio
import inspect
import io
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from cigeval.cli.main import main
from cigeval.serve.adapters import (
    FlowGRPOReward,
    ImageScorer,
    NoScores,
    verl_batch_compute_score,
    verl_compute_score,
    verl_compute_score_async,
)
from cigeval.serve.app import create_app
from cigeval.serve.bench import BenchRow, cache_warning, percentile
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import CORRUPT, make_evaluator, png_bytes, running_server


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    """The fake judge's base URL (scores every sub-question 6)."""
    with FakeOpenAIServer(rule_judge(default_score=6), latency_s=0.05) as server:
        yield server.base_url


@pytest.fixture(scope="module")
def service_url(judge_url: str) -> Iterator[str]:
    """A running cigeval serve (with a key) judging with the fake judge."""
    app = create_app(make_evaluator(judge_url), ServeConfig(api_key="k", warmup=False))
    with running_server(app) as url:
        yield url


@pytest.fixture(params=["server", "in-process"])
def scorer(request: pytest.FixtureRequest, judge_url: str, service_url: str) -> ImageScorer:
    """An ImageScorer against the running service, or in-process."""
    if request.param == "in-process":
        return ImageScorer(evaluator=make_evaluator(judge_url))
    return ImageScorer(url=service_url, api_key="k")


def test_flow_grpo_reward_fn_as_its_trainer_calls_it(scorer: ImageScorer) -> None:
    reward_fn = FlowGRPOReward(scorer, components=True)
    images = torch.rand(3, 3, 32, 32)  # the pipeline's output_type="pt": NCHW in [0, 1]
    prompts = ["a red square", "a red square", "a blue circle"]
    prompt_metadata = [{}, {}, {"tag": "color"}]
    with ThreadPoolExecutor(max_workers=8) as executor:  # train_sd3.py's reward executor
        train = executor.submit(reward_fn, images, prompts, prompt_metadata, only_strict=True)
        evaluate = executor.submit(reward_fn, images, prompts, prompt_metadata, only_strict=False)
        rewards, reward_metadata = train.result()
        eval_rewards, _ = evaluate.result()
    as_tensors = {key: torch.as_tensor(value).float() for key, value in rewards.items()}
    assert as_tensors["avg"].tolist() == pytest.approx([0.6] * 3)  # the advantages' input
    assert set(as_tensors) == {"cigeval", "avg", "cigeval_prompt_following"}
    assert as_tensors["cigeval_prompt_following"].tolist() == [6.0] * 3
    assert reward_metadata["errors"] == [None] * 3 and eval_rewards["avg"] == rewards["avg"]


def test_flow_grpo_multi_score_entry(scorer: ImageScorer) -> None:
    # multi_score(device, score_dict) builds each entry as below, then sums weighted scores
    score_functions = {"cigeval": FlowGRPOReward(scorer).multi_score_entry()}
    score_dict = {"cigeval": 2.0}
    device = "cpu"
    score_fns = {
        name: score_functions[name](device)
        if "device" in score_functions[name].__code__.co_varnames
        else score_functions[name]()
        for name in score_dict
    }
    images = np.full((2, 32, 32, 3), 120, dtype=np.uint8)  # NHWC uint8 works too
    scores, rewards = score_fns["cigeval"](images, ["a", "b"], {})
    total = [score_dict["cigeval"] * score for score in scores]
    assert total == pytest.approx([1.2, 1.2]) and rewards["errors"] == [None, None]


def _visual_data(count: int) -> list[dict[str, Any]]:
    """verl-omni's rows (data_process/*.py): the caption as ground_truth and raw_prompt."""
    return [
        {
            "data_source": "flow_grpo/pickscore_sfw",
            "ground_truth": f"a red square {i % 2}",
            "extra_info": {"split": "train", "index": i, "raw_prompt": f"a red square {i % 2}"},
            "responses": torch.full((3, 32, 32), 100 + i, dtype=torch.uint8),  # CHW uint8
        }
        for i in range(count)
    ]


async def _visual_reward_manager(compute_score: Any, rows: list[dict[str, Any]]) -> list[Any]:
    """verl-omni's VisualRewardManager.run_single for each row, all at once."""
    is_async = inspect.iscoroutinefunction(compute_score)
    loop = asyncio.get_running_loop()

    async def run_single(row: dict[str, Any]) -> Any:
        kwargs = {
            "data_source": row["data_source"],
            "solution_image": row["responses"],
            "ground_truth": row["ground_truth"],
            "extra_info": dict(row["extra_info"], num_turns=None, rollout_reward_scores={}),
        }
        if is_async:
            return await compute_score(**kwargs)
        return await loop.run_in_executor(None, lambda: compute_score(**kwargs))

    return list(await asyncio.gather(*(run_single(row) for row in rows)))


@pytest.mark.parametrize("form", ["async", "sync"])
def test_verl_omni_compute_score_per_sample_is_batched(service_url: str, form: str) -> None:
    scorer = ImageScorer(url=service_url, api_key="k")
    make = verl_compute_score_async if form == "async" else verl_compute_score
    compute_score = make(scorer, components=True)
    results = asyncio.run(_visual_reward_manager(compute_score, _visual_data(16)))
    assert [r["score"] for r in results] == pytest.approx([0.6] * 16)
    assert {tuple(r) for r in results} == {("score", "prompt_following")}
    # 16 samples at once: gathered into a batch or two, not 16 round trips
    assert scorer.batcher().batches_sent <= 3


def test_verl_batch_compute_score_with_images_as_datasets_store_them(
    scorer: ImageScorer, tmp_path: Path
) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(png_bytes())
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), "green").save(buffer, format="JPEG")
    images = [{"bytes": png_bytes(), "path": None}, buffer.getvalue(), str(path),
              Image.new("RGB", (16, 16), "blue")]  # fmt: skip
    compute_score = verl_batch_compute_score(scorer)
    # BatchRewardManager.verify: compute_score(data_sources=, solution_strs=, ...)
    scores = compute_score(
        data_sources=np.array(["t2i"] * 4, dtype=object),
        solution_strs=[""] * 4,
        ground_truths=["a red square"] * 4,
        extra_infos=[{"image": image, "rollout_reward_scores": {}} for image in images],
    )
    assert scores == pytest.approx([0.6] * 4) and all(isinstance(s, float) for s in scores)
    one = verl_compute_score(scorer)("t2i", "", "a red square", {"image": {"bytes": png_bytes()}})
    assert one == pytest.approx(0.6)


def test_fill_unscored_in_the_adapters(judge_url: str) -> None:
    scorer = ImageScorer(evaluator=make_evaluator(judge_url), fill_unscored="group-mean")
    images = [png_bytes(), CORRUPT, png_bytes((0, 0, 200))]
    assert scorer.score(["a red square"] * 3, images) == pytest.approx([0.6] * 3)
    assert scorer.last_errors[1] is not None and scorer.last_errors[0] is None
    with pytest.raises(NoScores, match="no image of this batch of 1 was scored"):
        verl_compute_score(scorer)("t2i", "", "a red square", {"image": CORRUPT})
    plain = ImageScorer(evaluator=make_evaluator(judge_url))  # nan: the default
    assert math.isnan(plain.score(["x"], [CORRUPT])[0])


def test_serve_bench_as_docs_say_makes_one_judge_call_per_new_image(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    started: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: started.update(app=app))
    latency = 0.2
    with FakeOpenAIServer(rule_judge(), latency_s=latency) as judge:
        model = f"openai:Qwen2.5-VL-7B@{judge.base_url}"
        # the docs' command (no --cache: none is kept), with the judge at hand
        assert main(["serve", "--model", model, "--tools", "", "--concurrency", "64"]) == 0
        with running_server(started["app"]) as url:
            before = len(judge.requests)
            bench = ["serve-bench", "--url", url, "--concurrency", "1,4", "--batch-size", "1,8"]
            status = main([*bench, "--requests", "4", "--image-size", "64"])
            calls = len(judge.requests) - before
            most_at_once = judge.max_concurrent
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert status == 0 and "warning" not in captured.err
    assert lines[0].split() == [
        "concurrency", "batch", "requests", "failed", "p50_s", "p90_s", "p99_s", "images/s",
        "item_errors", "judge_calls", "cached",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:5]]
    images = 4 * (1 + 8) * 2
    assert calls == images  # every image new: one judge call each, none cached
    assert sum(int(r[9]) for r in rows) == images and {r[10] for r in rows} == {"0"}
    # no faster than the judge allows: at most most_at_once calls per latency
    assert max(float(r[7]) for r in rows) <= most_at_once / latency
    assert lines[5].startswith("best: ")


def test_the_bench_warns_when_a_cache_answered() -> None:
    row = BenchRow(1, 8, 4, 0, 0.1, 0.1, 0.1, 900.0, 0, judge_calls=0, cached_calls=32)
    assert "measure the cache" in str(cache_warning([row]))
    assert cache_warning([row.__class__(1, 8, 4, 0, 0.1, 0.1, 0.1, 9.0, 0, 32, 0)]) is None


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 90) == pytest.approx(1.9)
    assert math.isnan(percentile([], 50))
