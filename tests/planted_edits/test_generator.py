"""The planted-edit set: deterministic from its seed, and its masks hold exactly its edits."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cigeval.planted_edits import EDIT_KINDS, PlantedPair, planted_pair, write_planted_set
from cigeval.planted_edits.edits import EditDraft
from cigeval.planted_edits.layout import random_scene
from cigeval.planted_edits.noise import EditorNoise
from cigeval.planted_edits.scene import render
from cigeval.sample import iter_samples_file

SIZE = 128
#: Enough pairs that every kind of pair and of edit shows up (checked below).
COUNT = 40


@pytest.fixture(scope="module")
def pairs() -> list[PlantedPair]:
    return [planted_pair(5, index, size=SIZE) for index in range(COUNT)]


def _changed(pair: PlantedPair) -> np.ndarray:
    before = np.asarray(pair.source).astype(int)
    after = np.asarray(pair.clean_edited).astype(int)
    return np.abs(before - after).max(axis=2) > 0


def _bbox(mask: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _iou(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    inter_w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    inter_h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = inter_w * inter_h
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area


def test_the_same_seed_gives_the_same_bytes_and_masks(pairs: list[PlantedPair]) -> None:
    for index in (0, 7, 23):
        again = planted_pair(5, index, size=SIZE)
        first = pairs[index]
        assert again.edited_jpeg == first.edited_jpeg
        assert again.source_png == first.source_png
        assert again.instruction == first.instruction and again.kind == first.kind
        for a, b in zip(
            again.edits + again.over_edits, first.edits + first.over_edits, strict=True
        ):
            assert np.array_equal(a.mask, b.mask)
    other = planted_pair(6, 0, size=SIZE)
    assert other.edited_jpeg != pairs[0].edited_jpeg


def test_the_set_spans_every_kind_of_pair_and_edit(pairs: list[PlantedPair]) -> None:
    kinds = Counter(p.kind for p in pairs)
    assert set(kinds) == {"edit", "over_edit", "failed", "regenerated"}
    assert {e.kind for p in pairs for e in p.edits + p.over_edits} == set(EDIT_KINDS)
    assert all(p.edits for p in pairs)  # a failed pair still says what it asked for
    assert all(p.over_edits for p in pairs if p.kind == "over_edit")
    assert not any(p.over_edits for p in pairs if p.kind != "over_edit")


def test_nothing_changes_outside_the_masks(pairs: list[PlantedPair]) -> None:
    for pair in pairs:
        changed = _changed(pair)
        if pair.kind == "failed":
            assert not changed.any(), pair.id
        elif pair.kind == "regenerated":
            assert changed.mean() > 0.5, pair.id
        else:
            assert not (changed & ~pair.changed_mask).any(), pair.id


def test_each_mask_is_the_place_its_edit_changed(pairs: list[PlantedPair]) -> None:
    for pair in pairs:
        if pair.kind in ("failed", "regenerated"):
            continue
        changed = _changed(pair)
        for edit in pair.edits + pair.over_edits:
            inside = changed & edit.mask
            # the changed pixels span the mask (a pattern kept in its second colour may
            # leave pixels of a recoloured object unchanged, never its extent)
            assert _iou(_bbox(inside), edit.box) >= 0.8, (pair.id, edit)
            assert inside.sum() >= 0.3 * edit.area, (pair.id, edit)


def test_edits_keep_apart_from_each_other(pairs: list[PlantedPair]) -> None:
    for pair in pairs:
        masks = [e.mask for e in pair.edits + pair.over_edits]
        for i, a in enumerate(masks):
            for b in masks[i + 1 :]:
                assert not (a & b).any(), pair.id


def test_an_edit_draft_changes_only_its_object() -> None:
    rng = np.random.default_rng(0)
    scene = random_scene(rng, SIZE)
    draft = EditDraft(scene)
    edit = draft.plant("remove", rng)
    assert edit is not None and edit.instruction.startswith("Remove the ")
    assert len(draft.scene().objects) == len(scene.objects) - 1
    diff = np.abs(render(scene).astype(int) - render(draft.scene()).astype(int)).max(axis=2) > 0
    assert diff.any() and not (diff & ~edit.mask).any()


def test_editor_noise_keeps_the_picture_but_changes_its_pixels() -> None:
    noise = EditorNoise.draw(np.random.default_rng(1))
    assert 70 <= noise.jpeg_quality <= 95 and max(map(abs, noise.shift)) <= 3
    clean = render(random_scene(np.random.default_rng(2), SIZE))
    degraded = noise.degrade(clean)
    assert degraded.shape == clean.shape and not np.array_equal(degraded, clean)
    # a slight re-rendering: the mean absolute change stays small
    assert np.abs(degraded.astype(int) - clean.astype(int)).mean() < 25


def test_the_written_set_is_judgeable_and_holds_the_masks(tmp_path: Path) -> None:
    planted = write_planted_set(tmp_path, 4, seed=5, size=SIZE)
    lines = [json.loads(line) for line in planted.read_text().splitlines()]
    assert [line["id"] for line in lines] == [planted_pair(5, i, size=SIZE).id for i in range(4)]
    first = planted_pair(5, 0, size=SIZE)
    assert (tmp_path / lines[0]["files"]["output"]).read_bytes() == first.edited_jpeg
    mask = np.asarray(Image.open(tmp_path / lines[0]["edits"][0]["mask"]).convert("L")) > 127
    assert np.array_equal(mask, first.edits[0].mask)
    assert lines[0]["edits"][0]["box"] == list(first.edits[0].box)
    samples = [line.sample for line in iter_samples_file(tmp_path / "samples.jsonl")]
    assert all(s is not None and s.task == "mask_guided_ie" for s in samples)
    assert len(samples) == 4
