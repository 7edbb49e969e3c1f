"""Hostile batches (decompression bombs, truncated files, huge headers, wrong types, junk)
through every protocol: never a 5xx, and every good item of a batch still judged."""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import b64, png_bytes, png_claiming, served_client


def _jpeg_claiming(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="JPEG")
    data = bytearray(buffer.getvalue())
    at = data.index(b"\xff\xc0") + 5  # the frame header: precision, then height and width
    data[at : at + 4] = struct.pack(">HH", height, width)
    return bytes(data[: len(data) // 2])  # and truncated


def _gif_claiming(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b";"


#: Image files no server should choke on.
HOSTILE_FILES = [
    png_claiming(50_000, 50_000),  # over Pillow's bomb limit
    png_claiming(2**31 - 1, 2**31 - 1),  # the largest header PNG allows
    png_claiming(1, 2**30),
    png_claiming(0, 0),
    png_bytes()[:40],  # truncated
    _jpeg_claiming(65_500, 65_500),
    _gif_claiming(65_535, 65_535),
    b"",
    b"BM" + struct.pack("<IHHIIiiHH", 54, 0, 0, 54, 40, 2**30, 2**30, 1, 24),
]
GOOD = png_bytes()

hostile_bytes = st.one_of(st.sampled_from(HOSTILE_FILES), st.binary(max_size=48))
junk = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),  # JSON has neither
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@st.composite
def own_items(draw: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(junk)  # not even a dict
    image = draw(st.one_of(hostile_bytes.map(b64), junk, st.just("not base64!")))
    item: dict[str, Any] = {"images": {"output": image}}
    for field, values in {
        "prompt": st.one_of(st.text(max_size=20), junk),
        "task": st.sampled_from([None, "text_guided_ig", "text_guided_ie", "no_such_task", 7]),
        "group": st.one_of(st.none(), st.text(max_size=5), st.integers()),
        "metadata": st.one_of(st.dictionaries(st.text(max_size=4), junk, max_size=2), junk),
        "image_paths": st.just({"source": "../../etc/passwd"}),
    }.items():
        if draw(st.booleans()):
            item[field] = draw(values)
    return item


@st.composite
def unirl_requests(draw: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(junk)
    turns = draw(st.integers(0, 3))
    history = [
        {"text": draw(st.one_of(st.text(max_size=10), junk)),
         "image_b64": draw(st.one_of(hostile_bytes.map(b64), junk))}
        for _ in range(turns)
    ]  # fmt: skip
    return {"history": history, "required_rewards": draw(st.one_of(st.just(["cigeval"]), junk)),
            "metadata": draw(st.one_of(st.none(), junk))}  # fmt: skip


def _good_own() -> dict[str, Any]:
    return {"id": "good", "prompt": "a red square", "images": {"output": b64(GOOD)}}


def _good_unirl() -> dict[str, Any]:
    return {"history": [{"text": "a red square", "image_b64": b64(GOOD)}],
            "required_rewards": ["cigeval"]}  # fmt: skip


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    route=st.sampled_from(["own", "unirl", "flow_grpo", "editscore"]),
    own=st.lists(own_items(), min_size=1, max_size=5),
    unirl=st.lists(unirl_requests(), min_size=1, max_size=5),
    files=st.lists(st.one_of(hostile_bytes, junk), min_size=1, max_size=5),
    where=st.integers(0, 5),
)
def _check(route: str, own: Any, unirl: Any, files: Any, where: int, client: Any) -> None:
    if route == "own":
        items = list(own)
        items.insert(min(where, len(items)), _good_own())
        answer = client.post("/v1/score", json={"items": items})
    elif route == "unirl":
        items = list(unirl)
        items.insert(min(where, len(items)), _good_unirl())
        answer = client.post("/score", json={"requests": items})
    elif route == "flow_grpo":
        items = list(files)
        items.insert(min(where, len(items)), GOOD)
        prompts = ["a red square"] * len(items)
        answer = client.post("/", content=pickle.dumps({"images": items, "prompts": prompts}))
    else:
        items = list(files)
        items.insert(min(where, len(items)), GOOD)
        body = {
            "input_images": [[f] for f in items],
            "output_image": list(reversed(items)),
            "meta_datas": ['{"instruction": "make it red"}'] * len(items),
        }
        answer = client.post("/", content=pickle.dumps(body))
    assert answer.status_code < 500, (route, answer.status_code, answer.text[:300])
    if route == "own" and answer.status_code == 200:
        results = answer.json()["results"]
        assert len(results) == len(items)
        assert results[min(where, len(items) - 1)]["status"] == "ok"  # the good one
    if route == "unirl" and answer.status_code == 200:
        body = answer.json()
        assert len(body["results"]) == len(items)
        assert "cigeval" in body["results"][min(where, len(items) - 1)]
    if route == "flow_grpo":
        assert answer.status_code == 200
        outputs = pickle.loads(answer.content)["outputs"]
        assert len(outputs) == len(items) and outputs[min(where, len(items) - 1)] == 0.6


def test_hostile_batches_never_get_a_5xx() -> None:
    config = ServeConfig(accept_pickle=True, max_pixels=2048 * 2048)
    with (
        FakeOpenAIServer(rule_judge(default_score=6)) as server,
        served_client(server.base_url, config) as client,
    ):
        _check(client=client)
