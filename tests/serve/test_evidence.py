"""`/v1/score` answers each sub-score's evidence: the regions its tools found, in the pixels
of the image each belongs to (the item's output is larger than its source here)."""

from __future__ import annotations

import io
import json

from PIL import Image, ImageDraw

from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import b64, served_client


def _png(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return b64(buffer.getvalue())


def test_the_regions_come_back_with_each_sub_score() -> None:
    source = Image.new("RGB", (100, 80), (90, 90, 90))
    edited = source.copy()
    ImageDraw.Draw(edited).rectangle((60, 20, 79, 39), fill=(250, 250, 0))
    images = {"source": _png(source), "output": _png(edited.resize((200, 160)))}
    item = {"id": "e", "task": "text_guided_ie", "instruction": "add a square", "images": images}
    judge = rule_judge(tools={"over_editing": "Difference"})
    with (
        FakeOpenAIServer(judge) as server,
        served_client(server.base_url, tools=("Difference",), method="extended") as client,
    ):
        answer = client.post("/v1/score", json={"items": [item]})
    assert answer.status_code == 200
    (result,) = answer.json()["results"]
    subs = {s["question_id"]: s for s in result["sub_scores"]}
    assert subs["edit_success"]["evidence"] == []  # no tool ran there
    evidence = subs["over_editing"]["evidence"]
    by_role = {e["role"]: e for e in evidence}
    assert set(by_role) == {"source", "output"}
    assert by_role["source"]["image_size"] == [100, 80]
    assert by_role["output"]["image_size"] == [200, 160]
    x0, y0, x1, y1 = by_role["source"]["box"]
    assert abs(x0 - 60) <= 2 and abs(y0 - 20) <= 2 and abs(x1 - 80) <= 2 and abs(y1 - 40) <= 2
    assert by_role["output"]["box"] == [2 * v for v in by_role["source"]["box"]]
    assert {e["tool"] for e in evidence} == {"Difference"}
    assert json.dumps(evidence).count("changed") == 2
