"""The trainers' protocols: UniRL's routes and wire format (its zero-dependency client run as
it is when the reference checkout is present), Flow-GRPO's pickle body and the restricted
unpickler."""

from __future__ import annotations

import io
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from PIL import Image

from cigeval.serve.app import create_app
from cigeval.serve.pickle_body import UnsafePickle, load_flow_grpo_body
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import (
    CORRUPT,
    b64,
    make_evaluator,
    png_bytes,
    running_server,
    served_client,
)

#: UniRL's client that needs only requests and Pillow, when the reference checkout is here.
ZERO_DEPS_CLIENT = Path(
    "/work/ref/Tencent-Hunyuan+UniRL/unirl-reward-service/scripts/remote_client_zero_deps.py"
)


def unirl_payload(histories: list[list[bytes]], rewards: list[str]) -> dict[str, Any]:
    """The body ``RemoteRewardBackend._build_score_payload`` sends: one request per sample,
    its history one turn (T2I) or two (source, then edited), metadata None."""
    return {
        "requests": [
            {
                "history": [{"text": "make it red", "image_b64": b64(image)} for image in turns],
                "required_rewards": rewards,
                "metadata": None,
            }
            for turns in histories
        ]
    }


def test_unirl_t2i_and_editing_requests() -> None:
    judge = rule_judge(scores={"edit_success": 8, "over_editing": 6, "prompt_following": 5})
    histories = [[png_bytes()], [png_bytes((0, 0, 200)), png_bytes()], [CORRUPT]]
    with FakeOpenAIServer(judge) as server, served_client(server.base_url) as client:
        health = client.get("/health").json()
        answer = client.post("/score", json=unirl_payload(histories, ["cigeval"]))
        unknown = client.post("/score", json=unirl_payload(histories[:1], ["hpsv2"]))
        rewards = client.get("/rewards").json()
    # the roster check UniRL's client runs on /health
    assert isinstance(health["rewards"], dict) and "cigeval" in health["rewards"]
    assert rewards == {"rewards": ["cigeval"]}
    assert answer.status_code == 200
    body = answer.json()
    assert len(body["results"]) == len(body["errors"]) == 3
    t2i, edit, corrupt = body["results"]
    # "score" first: UniRL's client reduces a reward's sub-metrics to the first by default
    assert list(t2i["cigeval"]) == ["score", "prompt_following"]
    assert t2i["cigeval"]["prompt_following"] == 5.0
    assert next(iter(edit["cigeval"])) == "score"
    assert edit["cigeval"]["edit_success"] == 8.0 and edit["cigeval"]["over_editing"] == 6.0
    assert corrupt == {} and "not a readable image" in body["errors"][2]["cigeval"]
    assert body["errors"][:2] == [{}, {}]
    assert unknown.json()["results"] == [{}]
    assert unknown.json()["errors"] == [
        {"hpsv2": "unknown reward 'hpsv2'; this server serves 'cigeval'"}
    ]


def test_unirl_groups_from_metadata_give_tie_statistics() -> None:
    payload = unirl_payload([[png_bytes()]] * 3, ["cigeval"])
    for request, group in zip(payload["requests"], ["g1", "g1", "g2"], strict=True):
        request["metadata"] = {"group": group}
    with FakeOpenAIServer(rule_judge()) as server, served_client(server.base_url) as client:
        stats = client.post("/score", json=payload).json()["stats"]
    assert stats["groups"] == 1 and stats["tied_group_share"] == 1.0


@pytest.mark.skipif(not ZERO_DEPS_CLIENT.exists(), reason="UniRL reference checkout not here")
def test_unirl_zero_dependency_client_runs_unchanged(tmp_path: Path) -> None:
    image = tmp_path / "candidate.png"
    image.write_bytes(png_bytes())
    with FakeOpenAIServer(rule_judge(default_score=7)) as server:
        app = create_app(make_evaluator(server.base_url), ServeConfig())
        with running_server(app) as url:
            run = subprocess.run(
                [
                    sys.executable,
                    str(ZERO_DEPS_CLIENT),
                    "--url",
                    url,
                    "--image",
                    str(image),
                    "--rewards",
                    "cigeval",
                    "--prompt",
                    "a red square",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "NO_PROXY": "127.0.0.1"},
            )
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[1] for row in rows] == ["0.7000"] * 4  # batch of 4, the first sub-metric


def flow_grpo_body(images: np.ndarray, prompts: list[str]) -> bytes:
    """What Flow-GRPO's ``unifiedreward_score_remote`` posts for one batch of 64 or fewer."""
    prompt_batch = np.array_split(prompts, 1)[0]  # a numpy string array, as there
    jpegs = []
    for image in images:
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="JPEG")
        jpegs.append(buffer.getvalue())
    return pickle.dumps({"images": jpegs, "prompts": prompt_batch})


def test_flow_grpo_pickle_body_with_accept_pickle() -> None:
    images = np.zeros((3, 32, 32, 3), dtype=np.uint8)
    images[..., 0] = 200
    body = flow_grpo_body(images, ["a red square"] * 3)
    with FakeOpenAIServer(rule_judge(default_score=8)) as server:
        app = create_app(make_evaluator(server.base_url), ServeConfig(accept_pickle=True))
        off = create_app(make_evaluator(server.base_url), ServeConfig())
        with running_server(app) as url, running_server(off) as off_url:
            # as Flow-GRPO sends it: requests.post(url, data=bytes), no content type
            answer = requests.post(url, data=body, timeout=60)
            corrupt = pickle.dumps({"images": [CORRUPT, body[:10]], "prompts": ["a", "b"]})
            partial = requests.post(url, data=corrupt, timeout=60)
            refused = requests.post(off_url, data=body, timeout=60)
    assert answer.status_code == 200
    outputs = pickle.loads(answer.content)["outputs"]
    assert outputs == [0.8, 0.8, 0.8]
    assert partial.status_code == 200  # Flow-GRPO retries a 500 up to 1000 times
    loaded = pickle.loads(partial.content)
    assert all(math.isnan(x) for x in loaded["outputs"]) and loaded["status"] == ["error"] * 2
    assert refused.status_code == 404 and "--accept-pickle" in refused.json()["detail"]


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


class _Evaluates:
    def __reduce__(self) -> tuple[Any, ...]:
        return (eval, ("__import__('os').getcwd()",))


def test_a_malicious_pickle_is_400_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = pickle.dumps({"images": [_RunsACommand(marker)], "prompts": ["x"]})
    with FakeOpenAIServer(rule_judge()) as server:
        settings = ServeConfig(accept_pickle=True)
        with served_client(server.base_url, settings) as client:
            answer = client.post("/", content=evil)
            calls = len(server.requests)
    assert answer.status_code == 400
    assert "refused global" in answer.json()["detail"] and "system" in answer.json()["detail"]
    assert not marker.exists()
    assert calls == 0


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps(_Evaluates()),
        pickle.dumps({"images": [b"x"], "prompts": np.array([object()], dtype=object)}),
        pickle.dumps({"images": [b"x"], "prompts": np.array([1.5])}),
        pickle.dumps({"images": [b"x", b"y"], "prompts": ["only one"]}),
        pickle.dumps(["not", "a", "dict"]),
        b"not a pickle",
    ],
    ids=["eval", "object-array", "float-array", "counts", "not-a-dict", "garbage"],
)
def test_the_unpickler_refuses_everything_but_data(payload: bytes) -> None:
    with pytest.raises(UnsafePickle):
        load_flow_grpo_body(payload)


def test_the_unpickler_reads_numpy_string_arrays_and_lists() -> None:
    images, prompts = load_flow_grpo_body(
        pickle.dumps({"images": [b"a", b"b"], "prompts": np.array(["x", "yy"])})
    )
    assert images == [b"a", b"b"] and prompts == ["x", "yy"]
    _, listed = load_flow_grpo_body(pickle.dumps({"images": [b"a"], "prompts": ["z"]}))
    assert listed == ["z"]
