"""Every image shown to the judge can be found again from the record, byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image

from cigeval.results import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.cli_support import evaluate_cli


@pytest.mark.parametrize("method", ["paper", "extended"])
def test_records_locate_every_image_the_judge_saw(tmp_path: Path, method: str) -> None:
    samples = seven_task_samples(tmp_path)
    rgba = tmp_path / "rgba_output.png"
    Image.new("RGBA", (64, 64), (255, 0, 0, 128)).save(rgba)
    samples[0]["images"]["output"] = rgba.name  # converted to RGB: not sent as the file is
    path = write_jsonl(tmp_path / "samples.jsonl", samples)
    out = tmp_path / "results.jsonl"
    judge = rule_judge(tools={"edit_success": "Difference", "over_editing": "Difference"})
    with FakeOpenAIServer(judge) as server:
        assert evaluate_cli(server, path, out, "--method", method) == 0
    store = tmp_path / "results.images"
    records = list(read_records(out))
    assert len(records) == 7
    for record in records:
        sent = {
            image["sha256"]
            for event in record["trace"]
            if event["type"] == "model_call"
            for message in event["messages"]
            for image in message["images"]
        }
        not_shown = set(record.get("images_not_shown", {}).values())
        assert not_shown.isdisjoint(sent), record["id"]
        assert sent and sent == set(record["image_files"]) - not_shown, record["id"]
        for sha, location in record["image_files"].items():
            assert hashlib.sha256(Path(location).read_bytes()).hexdigest() == sha
        for role, sha in record["input_images"].items():
            assert sha in record["image_files"], (record["id"], role)
    by_id = {r["id"]: r for r in records}
    t2i = by_id["t2i"]
    assert (
        Path(t2i["image_files"][t2i["input_images"]["output"]]).parent
        == store / (t2i["input_images"]["output"][:2])
    )
    source = Path(by_id["tie"]["image_files"][by_id["tie"]["input_images"]["source"]])
    if method == "paper":  # sent as a JPEG at quality 75: kept in the store
        assert source.is_relative_to(store) and source.suffix == ".jpg"
    else:  # sent as the file is: found at the file
        assert source == tmp_path / "source.png"
    # Difference runs in mask-guided editing under both methods; its images are in the store
    mie = by_id["mie"]
    # the edit mask is located for the report's card, and named as never shown to the judge
    assert set(mie["images_not_shown"]) == {"mask"}
    assert mie["images_not_shown"]["mask"] in mie["image_files"]
    highlighted = [s["tool_image_ids"] for s in mie["sub_scores"] if s["tool"] == "Difference"]
    assert highlighted and all(set(ids) == {"source", "output"} for ids in highlighted)
    for ids in highlighted:
        for sha in ids.values():
            assert Path(mie["image_files"][sha]).is_relative_to(store)
