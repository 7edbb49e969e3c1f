"""Samples from a Hugging Face dataset give the same records as the same samples in a JSONL.

Each test builds its dataset from image files it writes, saves it (``save_to_disk`` or
parquet) and reads it back offline. The judge is the rule judge behind a local
OpenAI-compatible server, so what the judge was shown can be compared request by request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasets", reason="the datasets extra is not installed")

import datasets

import cigeval
from cigeval.cli import main
from cigeval.results.jsonl import read_records
from cigeval.sample import sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

TOOLS = ("--tools", "Difference,Scene Graph")
COLUMNS = (
    "id=id,task=task,prompt=prompt,instruction=instruction,subject=subject_name,"
    "concepts=concepts,control_type=control_type,model=generator,human=human,"
    "output=output,source=source,mask=mask,subject_image=subject,subjects=subjects,"
    "control=control"
)
#: Fields of a record that differ between two runs of the same samples (clocks).
VOLATILE = {"time", "latency_s", "wall_ms"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def image_column_rows(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The seven example samples as JSONL lines and as dataset rows (image columns hold the
    absolute paths that datasets.Image() reads and embeds)."""
    lines = seven_task_samples(folder)
    rows = []
    for line in lines:
        images = line["images"]

        def at(name: str | None) -> str | None:
            return str(folder / name) if name else None

        rows.append(
            {
                "id": line["id"],
                "task": line["task"],
                "prompt": line.get("prompt"),
                "instruction": line.get("instruction"),
                "subject_name": line.get("subject"),
                "concepts": line.get("concepts"),
                "control_type": line.get("control_type"),
                "generator": line.get("model"),
                "human": line.get("human"),
                "output": at(images.get("output")),
                "source": at(images.get("source")),
                "mask": at(images.get("mask")),
                "subject": at(images.get("subject")),
                "subjects": [at(s) for s in images["subjects"]] if "subjects" in images else None,
                "control": at(images.get("control")),
            }
        )
    return lines, rows


def build_dataset(rows: list[dict[str, Any]]) -> Any:
    image = datasets.Image()
    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "prompt": datasets.Value("string"),
            "instruction": datasets.Value("string"),
            "subject_name": datasets.Value("string"),
            "concepts": datasets.List(datasets.Value("string")),
            "control_type": datasets.Value("string"),
            "generator": datasets.Value("string"),
            "human": datasets.Value("float64"),
            "output": image,
            "source": image,
            "mask": image,
            "subject": image,
            "subjects": datasets.List(image),
            "control": image,
        }
    )
    return datasets.Dataset.from_list(rows, features=features)


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Path]:
    """(the samples JSONL, the same samples saved with save_to_disk in another folder)."""
    lines, rows = image_column_rows(tmp_path / "images")
    jsonl = write_jsonl(tmp_path / "images" / "samples.jsonl", lines)
    folder = tmp_path / "saved_dataset"
    build_dataset(rows).save_to_disk(str(folder))
    return jsonl, folder


def evaluate(server: FakeOpenAIServer, out: Path, *source: str) -> int:
    argv = ["evaluate", *source, "--model", f"openai:judge@{server.base_url}"]
    return main([*argv, "--out", str(out), "--no-cache", "--quiet", *TOOLS])


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without clock readings and without the samples file's snapshot, its image
    files by hash only, its trace in a stable order (sub-questions run concurrently)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    record = strip(record)
    record["provenance"].pop("samples_file", None)  # a dataset is no samples file
    record["image_files"] = sorted(record["image_files"])
    record["trace"] = sorted(json.dumps(e, sort_keys=True) for e in record["trace"])
    return record


def by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_records(out)}


def requests_made(server: FakeOpenAIServer) -> list[str]:
    return sorted(json.dumps(r.body, sort_keys=True) for r in server.requests)


def test_a_saved_dataset_gives_the_records_of_the_same_jsonl(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    jsonl, folder = saved
    from_jsonl, from_dataset = tmp_path / "from_jsonl.jsonl", tmp_path / "from_dataset.jsonl"
    with FakeOpenAIServer(rule_judge(scores={"edit_success": 4})) as server:
        assert evaluate(server, from_jsonl, str(jsonl)) == 0
        jsonl_requests = requests_made(server)
        server.requests.clear()
        assert evaluate(server, from_dataset, "--dataset", str(folder), "--columns", COLUMNS) == 0
        dataset_requests = requests_made(server)
    assert dataset_requests == jsonl_requests  # the judge was shown exactly the same
    a, b = by_id(from_jsonl), by_id(from_dataset)
    assert len(a) == 7 and a.keys() == b.keys()
    for sample_id in a:
        assert comparable(b[sample_id]) == comparable(a[sample_id])
        assert b[sample_id]["input_images"] == a[sample_id]["input_images"]
        for sha, where in b[sample_id]["image_files"].items():
            # the JSONL record points at the input file, the dataset's at the image store:
            # the same bytes either way
            assert Path(where).read_bytes() == Path(a[sample_id]["image_files"][sha]).read_bytes()
    assert b["t2i"]["model"] == "SD" and b["t2i"]["human"] == 0.5


def test_evaluate_many_takes_a_dataset_with_its_column_mapping(saved: tuple[Path, Path]) -> None:
    jsonl, folder = saved
    judge = cigeval.ScriptedBackend(rule_judge(scores={"over_editing": 2}))
    dataset = datasets.load_from_disk(str(folder))
    columns = dict(pair.split("=") for pair in COLUMNS.split(","))
    from_dataset = cigeval.evaluate_many(dataset, model=judge, columns=columns, tools=())
    from_jsonl = cigeval.evaluate_many(jsonl, model=judge, tools=())
    assert [(s.id, s.status, s.value) for s in from_dataset] == [
        (s.id, s.status, s.value) for s in from_jsonl
    ]
    assert [s.input_images for s in from_dataset] == [s.input_images for s in from_jsonl]


def test_parquet_streaming_fixed_task_and_index_ids(tmp_path: Path) -> None:
    _, rows = image_column_rows(tmp_path / "images")
    edits = [r for r in rows if r["task"] == "text_guided_ie"] * 3  # the same row three times
    parquet = tmp_path / "edits.parquet"
    build_dataset(edits).remove_columns(["id", "task"]).to_parquet(str(parquet))
    out = tmp_path / "out.jsonl"
    columns = "instruction=instruction,source=source,output=output"
    with FakeOpenAIServer(rule_judge()) as server:
        argv = ["--dataset", str(parquet), "--columns", columns, "--task", "text_guided_ie"]
        assert evaluate(server, out, *argv, "--streaming") == 0
    records = list(read_records(out))
    assert sorted(r["id"] for r in records) == ["0", "1", "2"]  # the row index
    assert {r["task"] for r in records} == {"text_guided_ie"} and len(records) == 3


def test_a_resumed_run_skips_finished_ids_without_decoding_their_images(
    saved: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, folder = saved
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        source = ["--dataset", str(folder), "--columns", COLUMNS, "--streaming"]
        assert evaluate(server, out, *source, "--limit", "3") == 0
        first = {r["id"] for r in read_records(out)}

        import cigeval.sample as sample_module

        decoded: list[str] = []
        real_load = sample_module.load_image

        def counting_load(image: Any, **kwargs: Any) -> Any:
            decoded.append(str(kwargs.get("sample_id")))
            return real_load(image, **kwargs)

        monkeypatch.setattr(sample_module, "load_image", counting_load)
        assert evaluate(server, out, *source) == 0
    records = list(read_records(out))
    assert len(first) == 3 and len(records) == 7 and len({r["id"] for r in records}) == 7
    assert decoded and not set(decoded) & first  # no image of a finished sample was decoded


def test_image_paths_relative_to_the_dataset_folder_are_sent_as_the_files(
    tmp_path: Path,
) -> None:
    lines, _ = image_column_rows(tmp_path / "data")
    line = next(entry for entry in lines if entry["task"] == "text_guided_ie")
    table = {
        "id": [line["id"]],
        "instruction": [line["instruction"]],
        "before": [line["images"]["source"]],  # file names relative to the folder
        "after": [line["images"]["output"]],
    }
    datasets.Dataset.from_dict(table).to_parquet(str(tmp_path / "data" / "rows.parquet"))
    out = tmp_path / "out.jsonl"
    columns = "id=id,instruction=instruction,source=before,output=after"
    with FakeOpenAIServer(rule_judge()) as server:
        argv = ["--dataset", str(tmp_path / "data"), "--columns", columns]
        # original bytes: the files themselves are sent (the paper's encoding re-encodes)
        argv += ["--image-encoding", "original"]
        assert evaluate(server, out, *argv, "--task", "text_guided_ie") == 0
    (record,) = read_records(out)
    assert record["status"] == "ok"
    named = {Path(p).name for p in record["image_files"].values()}
    assert {"source.png", "output.png"} <= named  # the files themselves, sent unchanged


def test_bad_mappings_and_sources_are_exit_2_naming_the_fix(
    saved: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl, folder = saved
    out = tmp_path / "out.jsonl"
    cases = [
        (["--dataset", str(folder), "--columns", "task=task,output=x"], "no column 'x'"),
        (["--dataset", str(folder), "--columns", "output=output"], "no task for the dataset"),
        (["--dataset", str(folder)], "--dataset needs --columns"),
        (
            [str(jsonl), "--dataset", str(folder), "--columns", COLUMNS],
            "not a samples JSONL file and --dataset",
        ),
        ([str(jsonl), "--split", "test"], "--split apply to --dataset only"),
        (["--dataset", str(tmp_path / "nowhere"), "--columns", COLUMNS], "cannot load"),
    ]
    with FakeOpenAIServer(rule_judge()) as server:
        for argv, message in cases:
            assert evaluate(server, out, *argv) == 2, argv
            assert message in capsys.readouterr().err, argv
        assert not server.requests


def test_splits_are_named_and_empty_ids_become_error_records(tmp_path: Path) -> None:
    _, rows = image_column_rows(tmp_path / "images")
    t2i = next(r for r in rows if r["task"] == "text_guided_ig")
    both = datasets.DatasetDict(
        {
            "train": build_dataset([t2i]),
            # a real sample named like the old error ids, beside a row with no id
            "test": build_dataset([t2i, {**t2i, "id": None}, {**t2i, "id": "row:1"}]),
        }
    )
    both.save_to_disk(str(tmp_path / "splits"))
    out = tmp_path / "out.jsonl"
    source = ["--dataset", str(tmp_path / "splits"), "--columns", COLUMNS]
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate(server, out, *source) == 2
        assert evaluate(server, out, *source, "--split", "test") == 1
    records = by_id(out)
    assert records["t2i"]["status"] == "ok"
    assert records["row:1"]["status"] == "ok"
    assert records["@row:1"]["status"] == "error"
    assert "the id column 'id' is empty" in records["@row:1"]["error"]


def test_no_sample_id_may_take_an_error_records_namespace() -> None:
    for reserved in ("@row:3", "@line:3"):
        with pytest.raises(cigeval.InputError, match=f"starts with '{reserved[:-1]}'"):
            sample_from_dict({"id": reserved, "task": "text_guided_ig", "prompt": "x"})


def test_mapping_from_a_file(saved: tuple[Path, Path], tmp_path: Path) -> None:
    _, folder = saved
    mapping = tmp_path / "columns.yaml"
    pairs = (pair.split("=") for pair in COLUMNS.split(","))
    mapping.write_text("\n".join(f"{key}: {column}" for key, column in pairs))
    out = tmp_path / "out.jsonl"
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate(server, out, "--dataset", str(folder), "--columns", str(mapping)) == 0
    assert len(list(read_records(out))) == 7
