"""docs/serve.md's UniRL recipe, instantiated as Hydra instantiates it (``_target_`` by
``_target_``, children first): against the signatures of UniRL's classes always, and with
UniRL itself when its source is importable (``CIGEVAL_UNIRL_SRC``: a checkout holding
``unirl/``, with its dependencies), whose ``RemoteRewardBackend`` then scores images against
a running service."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cigeval.serve.app import create_app
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import make_evaluator, png_bytes, running_server

DOCS = Path(__file__).resolve().parents[2] / "docs" / "serve.md"
#: A UniRL checkout (a folder holding ``unirl/`` and ``unirl-reward-service/``), when given.
UNIRL_SRC = os.environ.get("CIGEVAL_UNIRL_SRC")


def recipe() -> dict[str, Any]:
    """The ``reward:`` block of the UniRL recipe in docs/serve.md."""
    text = DOCS.read_text()
    block = re.search(r"\*\*UniRL\*\*.*?```yaml\n(.*?)```", text, re.S)
    assert block is not None, "docs/serve.md has no UniRL yaml recipe"
    loaded: dict[str, Any] = yaml.safe_load(block.group(1))["reward"]
    return loaded


def instantiate(node: Any, resolve: Any) -> Any:
    """Hydra's ``instantiate``: every mapping with ``_target_`` becomes ``target(**children)``."""
    if isinstance(node, list):
        return [instantiate(value, resolve) for value in node]
    if not isinstance(node, dict):
        return node
    children = {k: instantiate(v, resolve) for k, v in node.items() if k != "_target_"}
    if "_target_" not in node:
        return children
    return resolve(node["_target_"])(**children)


# UniRL's signatures (unirl/reward/service.py, unirl/reward/remote.py), as of its main branch.
class _RewardService:
    def __init__(
        self,
        backend: Any,
        truncated_reward: str = "zero",
        overlong_buffer_len: int = 4096,
        overlong_penalty_factor: float = 1.0,
    ) -> None:
        self.backend = backend


class _RemoteRewardBackend:
    def __init__(self, *, config: Any, base_device: str) -> None:
        self.config = config


@dataclasses.dataclass
class _RemoteRewardSpec:
    base_url: str = ""
    required_rewards: tuple[str, ...] = ()
    reward_weights: dict[str, float] | None = None
    batch_size: int = 8
    timeout: float = 300.0
    max_retries: int = 3
    retry_delay: float = 1.0
    sub_metric_reduce: str = "first"
    aggregation_method: str = "weighted_sum"
    image_format: str = "JPEG"
    image_quality: int = 95
    video_fps: int = 8
    input_kind: str = "image"
    raise_on_failure: bool = True

    def __post_init__(self) -> None:
        assert str(self.base_url).strip() and len(self.required_rewards) > 0


SIGNATURES = {
    "unirl.reward.service.RewardService": _RewardService,
    "unirl.reward.remote.RemoteRewardBackend": _RemoteRewardBackend,
    "unirl.reward.remote.RemoteRewardSpec": _RemoteRewardSpec,
}


def test_the_unirl_recipe_instantiates_against_unirls_signatures() -> None:
    service = instantiate(recipe(), SIGNATURES.__getitem__)
    spec = service.backend.config
    assert isinstance(spec, _RemoteRewardSpec) and spec.required_rewards == ["cigeval"]
    assert spec.base_url.startswith("http")


def _import(target: str) -> Any:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.skipif(not UNIRL_SRC, reason="no UniRL checkout (CIGEVAL_UNIRL_SRC)")
def test_the_unirl_recipe_runs_with_unirl_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(UNIRL_SRC))
    torch = pytest.importorskip("torch")
    pytest.importorskip("unirl.reward.remote", reason="UniRL's dependencies are not installed")
    from unirl.types.primitives import Images, Texts
    from unirl.types.reward import RewardRequest

    node = recipe()
    with FakeOpenAIServer(rule_judge(default_score=7)) as judge:
        app = create_app(make_evaluator(judge.base_url), ServeConfig(warmup=False))
        with running_server(app) as url:
            node["backend"]["config"]["base_url"] = url  # the recipe's host, here
            service = instantiate(node, _import)
            backend = service.backend
            assert backend.is_available()  # UniRL's roster check on /health
            request = RewardRequest(
                primitives={"text": Texts(texts=["a red square", "a red square"])},
                generated={"image": Images(pixels=torch.rand(2, 3, 32, 32))},
            )
            response = backend.compute_rewards(request)
    assert list(response.rewards) == pytest.approx([0.7, 0.7])
    assert list(response.successes) == [True, True]
    assert list(response.component_rewards["cigeval"]) == pytest.approx([0.7, 0.7])


@pytest.mark.skipif(not UNIRL_SRC, reason="no UniRL checkout (CIGEVAL_UNIRL_SRC)")
def test_unirl_zero_dependency_client_runs_unchanged(tmp_path: Path) -> None:
    client = Path(str(UNIRL_SRC)) / "unirl-reward-service/scripts/remote_client_zero_deps.py"
    if not client.exists():
        pytest.skip("the checkout has no unirl-reward-service/scripts")
    image = tmp_path / "candidate.png"
    image.write_bytes(png_bytes())
    with FakeOpenAIServer(rule_judge(default_score=7)) as server:
        app = create_app(make_evaluator(server.base_url), ServeConfig(warmup=False))
        with running_server(app) as url:
            run = subprocess.run(
                [sys.executable, str(client), "--url", url, "--image", str(image),
                 "--rewards", "cigeval", "--prompt", "a red square"],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "NO_PROXY": "127.0.0.1"},
            )  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[1] for row in rows] == ["0.7000"] * 4  # batch of 4, the first sub-metric
