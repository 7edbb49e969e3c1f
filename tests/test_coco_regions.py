"""`cigeval regions`: a results file's evidence as COCO JSON, read back with the reference COCO
API (pycocotools): every region of every record, its box in the pixels of the image file it
points at (the image the judge was shown), its sample, sub-question and tool as attributes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from cigeval.cli import main
from cigeval.results import read_records
from cigeval.results.coco import coco_regions
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import write_jsonl
from tests.cli_support import evaluate_cli

#: Per sample: where the output differs from the source (in the source's pixels).
PLANTED = {"a": (20, 10, 60, 40), "b": (100, 60, 150, 110)}


def _samples(folder: Path) -> Path:
    samples = []
    for name, box in PLANTED.items():
        source = Image.new("RGB", (160, 120), (120, 120, 120))
        output = source.copy()
        ImageDraw.Draw(output).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill="yellow")
        source.save(folder / f"{name}-source.png")
        output.save(folder / f"{name}-output.png")
        samples.append(
            {"id": name, "task": "text_guided_ie", "instruction": "add a yellow box",
             "images": {"source": f"{name}-source.png", "output": f"{name}-output.png"}}
        )  # fmt: skip
    samples.append({"id": "plain", "task": "text_guided_ig", "prompt": "a gray card",
                    "images": {"output": "a-source.png"}})  # fmt: skip
    return write_jsonl(folder / "samples.jsonl", samples)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("coco")
    samples, out = _samples(folder), folder / "results.jsonl"
    judge = rule_judge(tools={"over_editing": "Difference"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test")
        patch.setenv("CIGEVAL_CACHE_DIR", str(folder / "cache"))
        with FakeOpenAIServer(judge) as server:
            status = evaluate_cli(server, samples, out, "--tools", "Difference", "--method",
                                  "extended")  # fmt: skip
    assert status == 0
    return out


def test_the_export_reads_back_with_the_coco_api(results: Path, tmp_path: Path, capsys):
    coco_api = pytest.importorskip("pycocotools.coco", reason="pycocotools (dev extra)")
    out = tmp_path / "regions.json"
    assert main(["regions", str(results), "-o", str(out)]) == 0
    assert "wrote 4 region(s) on 4 image(s) of 3 record(s)" in capsys.readouterr().err
    coco = coco_api.COCO(str(out))
    records = {r["id"]: r for r in read_records(results)}
    assert sorted(coco.getImgIds()) == [1, 2, 3, 4]  # source and output of the two edits
    for image in coco.loadImgs(coco.getImgIds()):
        record = records[image["sample_id"]]
        # the file the judge was shown, at the size the boxes are in
        assert image["sha256"] == record["input_images"][image["role"]]
        with Image.open(image["file_name"]) as shown:
            assert shown.size == (image["width"], image["height"]) == (160, 120)
        (annotation,) = coco.loadAnns(coco.getAnnIds(imgIds=[image["id"]]))
        x, y, w, h = annotation["bbox"]
        (evidence,) = [
            e for sub in record["sub_scores"] for e in sub["evidence"] if e["role"] == image["role"]
        ]
        assert [x, y, x + w, y + h] == pytest.approx(evidence["box"])
        assert [x, y, x + w, y + h] == pytest.approx(PLANTED[image["sample_id"]], abs=2)
        assert annotation["attributes"]["question_id"] == "over_editing"
        assert annotation["attributes"]["tool"] == "Difference"
        (category,) = coco.loadCats([annotation["category_id"]])
        assert (category["name"], category["supercategory"]) == ("changed", "Difference")
        assert coco.annToMask(annotation).sum() == pytest.approx(w * h, rel=0.1)


def test_to_standard_output_and_what_cannot_be_placed(results: Path, capsys):
    assert main(["regions", str(results)]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["annotations"]) == 4
    # records whose images are not where they were said to be, and entries with no box
    records = {r["id"]: r for r in read_records(results)}
    for record in records.values():
        record["image_files"] = {}
    records["a"]["sub_scores"][1]["evidence"].append({"box": "?", "role": "output"})
    export = coco_regions(records.values())
    assert export.annotations == 4 and len(export.missing_files) == 4
    assert export.skipped == ["a: an evidence entry without a box, size or role"]
    names = {image["file_name"] for image in export.coco["images"]}
    assert names == {f"{records[i]['input_images'][role]}.img" for i in PLANTED for role in
                     ("source", "output")}  # fmt: skip


def test_refuses_to_overwrite_its_input(results: Path, capsys):
    assert main(["regions", str(results), "-o", str(results)]) == 2
    assert "is the results file itself" in capsys.readouterr().err
