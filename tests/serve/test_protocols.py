"""The trainers' protocols: UniRL's routes and wire format (its zero-dependency client run as
it is when the reference checkout is present), Flow-GRPO's pickle body and the restricted
unpickler."""

from __future__ import annotations

import io
import json
import math
import os
import pickle
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


def test_unirl_groups_from_metadata_else_from_the_prompt_and_source() -> None:
    named = unirl_payload([[png_bytes()]] * 3, ["cigeval"])
    for request, group in zip(named["requests"], ["g1", "g1", "g2"], strict=True):
        request["metadata"] = {"group": group}
    # as UniRL sends them (no group): 2 prompts x 2 samples, and 2 edits of two sources
    plain = unirl_payload([[png_bytes()]] * 4, ["cigeval"])
    plain["requests"][2]["history"][0]["text"] = plain["requests"][3]["history"][0]["text"] = "b"
    edits = unirl_payload([[png_bytes((0, 0, i)), png_bytes()] for i in (1, 2)], ["cigeval"])
    with FakeOpenAIServer(rule_judge()) as server, served_client(server.base_url) as client:
        by_name = client.post("/score", json=named).json()["stats"]
        by_prompt = client.post("/score", json=plain).json()["stats"]
        by_source = client.post("/score", json=edits).json()["stats"]
    assert by_name["groups"] == 1 and by_name["tied_group_share"] == 1.0
    assert by_prompt["groups"] == 2 and by_prompt["tied_group_share"] == 1.0
    assert by_source["groups"] == 0  # one instruction, two sources: two groups of one


def test_unirl_fill_unscored_group_mean_leaves_no_nan() -> None:
    def judge(body: dict[str, Any]) -> str:
        return json.dumps({"score": 9 if "zebra" in json.dumps(body) else 5, "reasoning": "r"})

    payload = unirl_payload([[png_bytes()]] * 3 + [[CORRUPT]], ["cigeval"])
    payload["requests"][0]["history"][0]["text"] = "a zebra"
    settings = ServeConfig(fill_unscored="group-mean")
    with FakeOpenAIServer(judge) as server, served_client(server.base_url, settings) as client:
        body = client.post("/score", json=payload).json()
    # the corrupt image's group ("make it red") scored 0.5 and 0.5: its reward is their mean
    assert [r["cigeval"]["score"] for r in body["results"]] == [0.9, 0.5, 0.5, 0.5]
    assert body["results"][3]["cigeval"] == {"score": 0.5}  # no made-up sub-scores
    assert "filled in" in body["errors"][3]["cigeval"] and body["stats"]["filled"] == 1


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
    assert refused.status_code == 404 and "accept_pickle=True" in refused.json()["detail"]


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


def editscore_body(sources: list[Any], outputs: list[Any], instructions: list[str]) -> bytes:
    """What EditScore's ``RewardClient.evaluate`` posts (examples/OmniGen2-RL): the trainer's
    gathered PIL images, one list of input images per sample, and each sample's metadata as
    JSON text."""
    return pickle.dumps(
        {
            "input_images": sources,
            "output_image": outputs,
            "meta_datas": [
                json.dumps({"instruction": text, "id": str(i)})
                for i, text in enumerate(instructions)
            ],
            "server_type": "vlm",
        }
    )


def test_editscore_pickle_protocol() -> None:
    judge = rule_judge(scores={"edit_success": 8, "over_editing": 4})
    source = Image.new("RGB", (48, 48), "white")
    outputs = [Image.new("RGB", (48, 48), "red"), Image.new("RGB", (48, 48), "blue")]
    body = editscore_body([[source], [source]], outputs, ["make it red"] * 2)
    bomb = editscore_body([[source]], [Image.new("RGB", (80, 80))], ["make it red"])
    settings = ServeConfig(accept_pickle=True, max_pixels=64 * 64)
    with FakeOpenAIServer(judge) as server:
        app = create_app(
            make_evaluator(server.base_url), settings.model_copy(update={"warmup": False})
        )
        with running_server(app) as url:
            ping = requests.get(f"{url}/ping", timeout=30)
            headers = {"Content-Type": "application/octet-stream"}
            answer = requests.post(url, data=body, headers=headers, timeout=60)
            too_big = requests.post(url, data=bomb, headers=headers, timeout=60)
    assert ping.status_code == 200
    assert answer.status_code == 200
    result = pickle.loads(answer.content)
    # what RewardClient reads: scores, rewards, reasoning, meta_data (one entry per image)
    assert result["rewards"] == [0.4, 0.4]  # min(8, 4) / 10
    assert result["scores"] == [0.0, 0.0]  # 1.0 where the reward is at least 0.5
    assert result["component_rewards"] == {"edit_success": [8.0, 8.0], "over_editing": [4.0, 4.0]}
    assert all("edit_success: 8" in text for text in result["reasoning"])
    assert [m["instruction"] for m in result["meta_data"]] == ["make it red"] * 2
    refused = pickle.loads(too_big.content)
    assert too_big.status_code == 200 and math.isnan(refused["rewards"][0])
    assert "80x80 pixels is over the server's limit" in refused["errors"][0]


def test_flow_grpo_fill_in_never_nan_and_503_when_nothing_scored() -> None:
    images = np.zeros((3, 32, 32, 3), dtype=np.uint8)
    good = flow_grpo_body(images, ["a red square"] * 3)
    mixed = pickle.dumps({"images": [*pickle.loads(good)["images"][:2], CORRUPT],
                          "prompts": ["a red square"] * 3})  # fmt: skip
    hopeless = pickle.dumps({"images": [CORRUPT, b"x"], "prompts": ["a", "b"]})
    settings = ServeConfig(accept_pickle=True, fill_unscored="group-mean", retry_after_s=5)
    with (
        FakeOpenAIServer(rule_judge(default_score=7)) as server,
        served_client(server.base_url, settings) as client,
    ):
        filled = client.post("/", content=mixed)
        nothing = client.post("/", content=hopeless)
    assert filled.status_code == 200
    assert pickle.loads(filled.content)["outputs"] == [0.7, 0.7, 0.7]  # its group's mean
    # nothing to fill in from: a retryable 503, never NaN to a client without NaN handling
    assert nothing.status_code == 503 and nothing.headers["Retry-After"] == "5"
    assert "no item of this batch of 2 was scored" in nothing.json()["detail"]


def test_pickled_images_are_checked_before_memory_is_taken() -> None:
    from cigeval.serve.pickle_body import PickledImage, load_pickle

    def pickled_state(mode: str, size: tuple[int, int], data: bytes) -> bytes:
        # a pickled PIL image (class, NEWOBJ, BUILD) with any state: info, mode, size,
        # palette, pixel data
        state = pickle.dumps([{}, mode, size, None, data], protocol=3)[2:-1]
        return b"\x80\x03cPIL.Image\nImage\n)\x81" + state + b"b."

    huge = load_pickle(pickled_state("RGB", (100_000, 100_000), b"x" * 12), 4096 * 4096)
    short = load_pickle(pickled_state("RGB", (4, 4), b"x" * 12), 4096 * 4096)
    odd = load_pickle(pickled_state("BGR;16", (2, 2), b"x" * 8), 4096 * 4096)
    fine = load_pickle(pickle.dumps([Image.new("RGB", (3, 2), "red")]), 4096 * 4096)[0]
    assert isinstance(huge, PickledImage) and huge.image is None
    assert "100000x100000 pixels is over" in str(huge.problem)
    assert short.image is None and "wrong length" in str(short.problem)
    assert odd.image is None and "mode 'BGR;16'" in str(odd.problem)
    assert fine.image.size == (3, 2) and fine.image.getpixel((0, 0)) == (255, 0, 0)


def test_image_root_files_are_read_only_when_regular_and_within_the_limit(tmp_path: Path) -> None:
    """An --image-root path naming a FIFO is that item's error at once (never waited on); a
    file over --max-image-bytes is refused before it is read."""
    import time

    from cigeval.serve.inputs import ItemProblem, _inside_root

    os.mkfifo(tmp_path / "pipe.png")  # no writer: a plain open() would wait forever
    (tmp_path / "big.png").write_bytes(b"x" * 2048)
    settings = ServeConfig(image_root=tmp_path, max_image_bytes=1024)
    started = time.monotonic()
    with pytest.raises(ItemProblem, match="not a regular file"):
        _inside_root("pipe.png", settings, "images.output")
    assert time.monotonic() - started < 2
    with pytest.raises(ItemProblem, match=r"2048 bytes, limit 1024 bytes.*max_image_bytes"):
        _inside_root("big.png", settings, "images.output")
    with pytest.raises(ItemProblem, match="no such file under image_root"):
        _inside_root("missing.png", settings, "images.output")
