"""Every published row the shipped data supports, printed by default, as exact numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cigeval.meta import load_viescore_tsv, meta_evaluate, selection_of
from cigeval.meta.split import load_split
from cigeval.tasks.ids import IMAGENHUB_TASK_NAMES, PAPER_TASK_ORDER
from tests.meta.test_cli import run

TABLE1 = "cigeval_table1_SC_spearman"


def _values(row: dict[str, Any]) -> list[float | None]:
    return [row["tasks"].get(t) for t in PAPER_TASK_ORDER] + [row["average"]]


def test_the_human_row_and_0_4700_with_no_extra_flag(
    reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["imagenhub", "--human", "--dimension", "SC", "--average", "paper"]
    status, out, _ = run(argv, capsys)
    assert status == 0
    row = next(line for line in out.splitlines() if line.startswith("human raters"))
    cells = [cell.strip() for cell in row.split("|")[1:]]
    assert cells == ["0.5044", "0.5390", "0.4230", "0.5443", "0.4780", "0.4887", "0.5927", "0.4700"]
    status, out, _ = run([*argv, "--json"], capsys)
    data = json.loads(out)
    assert _values(data) == reference[TABLE1]["human_raters"]
    assert data["rounding"] == {"correlations": 4, "averages": 4}
    # --round stays for other choices: without rounding the 4th decimal moves
    status, out, _ = run([*argv, "--round", "none", "--json"], capsys)
    assert round(json.loads(out)["average"], 4) == 0.4699


def test_the_automatic_metric_rows_as_published(
    shared: Path, reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    table = shared / "data" / "viescore_outputs" / "autometrics.tsv"
    argv = ["imagenhub", "--scores", str(table), "--format", "autometrics", "--json"]
    status, out, err = run(argv, capsys)
    assert status == 0 and err == ""
    rows = {row["evaluator"]: row for row in json.loads(out)["rows"]}
    assert list(rows) == ["CLIPScore", "LPIPS", "DINO", "CLIP-I"]
    for name, row in rows.items():
        published = reference[TABLE1][name]
        assert _values(row) == published, name  # None where the paper prints no value
    assert _values(rows["LPIPS"])[1:4] == [-0.1012, 0.0956, 0.3699]  # the paper's sign
    assert rows["CLIPScore"]["coverage"]["totals"]["used"] == 985
    status, out, _ = run(argv[:-1], capsys)
    clip = next(line for line in out.splitlines() if line.startswith("CLIPScore"))
    assert [c.strip() for c in clip.split("|")[1:]] == ["-0.0817"] + ["—"] * 7


def test_the_automatic_metric_rows_need_the_published_rounding(shared: Path) -> None:
    from cigeval.meta import load_autometrics

    frames = load_autometrics(shared / "data" / "viescore_outputs" / "autometrics.tsv")
    unrounded = meta_evaluate(frames["CLIPScore"], tasks=["text_guided_ig"], round_to=None)
    assert round(unrounded.tasks["text_guided_ig"], 4) == -0.0818  # published: -0.0817
    dino = meta_evaluate(frames["DINO"], tasks=["multi_concept_ic"], round_to=None)
    assert round(dino.tasks["multi_concept_ic"], 4) == 0.0978  # published: 0.0979


def test_the_viescore_gpt4o_row_by_default(
    scores_dir: Path, reference: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["imagenhub", "--scores", str(scores_dir / "gpt4o_0shot.tsv"), "--json"]
    status, out, _ = run(argv, capsys)
    data = json.loads(out)
    assert status == 0 and _values(data) == reference[TABLE1]["VIEScore_GPT-4o"]
    assert data["rounding"] == {"correlations": None, "averages": 4}
    # rounding each generator's rho too would move Mask-Guided IE to 0.5422
    _, out, _ = run([*argv, "--round", "4"], capsys)
    assert json.loads(out)["tasks"]["mask_guided_ie"] == 0.5422


def _official_layout(images: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A split file in the official format: {ImagenHub task: {model: {"sample": [uids]}}}."""
    names = {task: name for task, name in IMAGENHUB_TASK_NAMES.items()}
    layout: dict[str, Any] = {}
    for task, model, uid in images:
        layout.setdefault(names[task], {}).setdefault(model, {"sample": []})["sample"].append(uid)
    return layout


@pytest.fixture(scope="module")
def gpt4o(scores_dir: Path) -> Any:
    return load_viescore_tsv(scores_dir / "gpt4o_0shot.tsv")


def test_an_official_format_split_keeps_single_images(
    gpt4o: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], scores_dir: Path
) -> None:
    # every third image of each generator, so a prompt's images fall on both sides
    keys = list(gpt4o.index)
    chosen = [k for i, k in enumerate(keys) if i % 3 == 0]
    path = tmp_path / "official.json"
    path.write_text(json.dumps(_official_layout(chosen)), encoding="utf-8")
    split = load_split(path)
    assert split.unit == "image" and split.count("test") == len(chosen)
    assert split.count("train") == 4801 + 179 + 150 - len(chosen)  # every other rated image
    picked = set(chosen)
    task, model, uid, other = next(
        (t, m, u, m2)
        for t, m, u in chosen
        for t2, m2, u2 in keys
        if (t2, u2) == (t, u) and (t2, m2, u2) not in picked
    )
    assert split.side_of(task, uid, model) == "test"
    assert split.side_of(task, uid, other) == "train"  # same prompt, other side

    argv = ["imagenhub", "--scores", str(scores_dir / "gpt4o_0shot.tsv"), "--split", str(path)]
    status, out, _ = run([*argv, "--subset", "test", "--json"], capsys)
    data = json.loads(out)
    assert status == 0 and data["coverage"]["totals"]["used"] == len(chosen)
    expected = meta_evaluate(gpt4o, samples=selection_of(split.subset("test")))
    assert data["average"] == expected.average
    by_hand = gpt4o.loc[chosen]
    assert expected.tasks == meta_evaluate(by_hand, human=_human_of(chosen)).tasks
    status, out, _ = run([*argv, "--subset", "train", "--json"], capsys)
    assert json.loads(out)["coverage"]["totals"]["used"] == 4801 - len(chosen)


def _human_of(keys: list[tuple[str, str, str]]) -> Any:
    from cigeval.meta import load_human_ratings

    return load_human_ratings().loc[keys]


def test_a_malformed_official_split_is_refused(tmp_path: Path) -> None:
    from cigeval.errors import InputError

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"ImagenHub_Text-Guided_IG": {"SD": {"sample": "x.jpg"}}}))
    with pytest.raises(InputError, match=r'expected \{"sample": \[uids\]\}'):
        load_split(path)
    path.write_text(json.dumps({"ImagenHub_Text-Guided_IG": {"SD": {"sample": ["nope.jpg"]}}}))
    with pytest.raises(InputError, match="no ImagenHub human rating"):
        load_split(path)


OFFICIAL_SPLIT = Path(__file__).parent / "data" / "test_40p.json"


@pytest.mark.skipif(
    not OFFICIAL_SPLIT.is_file(),
    reason="the official test_40p.json is not shipped (no license); put a copy in tests/meta/data",
)
def test_the_official_test_40p_split(gpt4o: Any, reference: dict[str, Any]) -> None:
    split = load_split(OFFICIAL_SPLIT)
    assert split.count("test") == 1920
    result = meta_evaluate(gpt4o, samples=split.subset("test"))
    expected = reference["recomputed_from_shared_data"]["gpt4o_0shot_SC_on_test40p"]
    assert _values(result.to_dict()) == expected
