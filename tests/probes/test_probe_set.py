"""The probe set: what is drawn, what is written, which probes exist, and their fingerprints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cigeval.errors import ConfigError
from cigeval.probes import PROBE_KINDS, build_probe_set, probe_tasks
from cigeval.probes.scenes import BLANK_COLOUR, SIZE
from cigeval.sample import iter_samples_file, load_sample_images
from cigeval.tasks.ids import TASK_IDS

SEVEN = list(TASK_IDS)


@pytest.fixture(scope="module")
def probe_set(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return build_probe_set(tmp_path_factory.mktemp("probes"))


def _pixels(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), int)


def _image(probe_set, key: str, role: str) -> Path:  # type: ignore[no-untyped-def]
    return Path(probe_set.folder) / getattr(probe_set.samples[key].sample.images, role)


def test_every_task_gets_the_generic_kinds_and_its_own(probe_set) -> None:  # type: ignore[no-untyped-def]
    assert probe_tasks() == SEVEN
    kinds = {task: {p.kind for p in probe_set.probes if p.task == task} for task in SEVEN}
    generic = {"blank_output", "jpeg_reencode", "small_resize", "repeat", "spread"}
    for task in SEVEN:
        assert generic <= kinds[task], task
    assert kinds["text_guided_ie"] - generic == {"unchanged_source", "wrong_output"}
    assert kinds["subject_driven_ie"] - generic == {"unchanged_source", "wrong_subject"}
    assert kinds["multi_concept_ic"] - generic == {"wrong_subject", "wrong_output"}
    assert kinds["control_guided_ig"] - generic == {"ignored_control", "wrong_output"}
    assert len(probe_set.probes) == 48
    assert len({p.id for p in probe_set.probes}) == 48
    assert {p.kind for p in probe_set.probes} == set(PROBE_KINDS)


def test_samples_are_valid_files_and_samples_jsonl_reads_back(probe_set) -> None:  # type: ignore[no-untyped-def]
    for item in probe_set.samples.values():
        images = load_sample_images(item.sample)  # every file exists and decodes
        assert images["output"].size[0] > 0
    lines = list(iter_samples_file(Path(probe_set.folder) / "samples.jsonl"))
    assert all(line.sample is not None for line in lines), [line.error for line in lines]
    # every sample once; the repeat asks the reference again, so it adds no line
    assert len(lines) == len(probe_set.samples) - 7
    ids = [line.sample.id for line in lines if line.sample is not None]
    assert len(set(ids)) == len(ids)


def test_what_the_images_show(probe_set) -> None:  # type: ignore[no-untyped-def]
    blank = _pixels(_image(probe_set, "text_guided_ie/blank_output", "output"))
    assert (blank == BLANK_COLOUR).all()
    source = _image(probe_set, "text_guided_ie/reference", "source")
    unchanged = _image(probe_set, "text_guided_ie/unchanged_source", "output")
    assert (_pixels(source) == _pixels(unchanged)).all()
    reference = _image(probe_set, "text_guided_ie/reference", "output")
    edited = np.abs(_pixels(source) - _pixels(reference)).max(axis=-1) > 0
    assert 0.03 < edited.mean() < 0.2  # the roof changed, nothing else
    jpeg = _image(probe_set, "text_guided_ie/jpeg_reencode", "output")
    assert Image.open(jpeg).format == "JPEG"
    assert np.abs(_pixels(jpeg) - _pixels(reference)).mean() < 3  # a harmless re-encode
    resized = Image.open(_image(probe_set, "text_guided_ie/small_resize", "output"))
    assert resized.size == (round(SIZE * 0.9), round(SIZE * 0.9))
    control = _pixels(_image(probe_set, "control_guided_ig/reference", "control"))
    assert set(np.unique(control)) <= {0, 255}  # an edge map: white lines on black
    ignored = _pixels(_image(probe_set, "control_guided_ig/ignored_control", "output"))
    good = _pixels(_image(probe_set, "control_guided_ig/reference", "output"))
    assert (np.abs(ignored - good).max(axis=-1) > 0).mean() > 0.1
    folder = Path(probe_set.folder)
    wrong = probe_set.samples["multi_concept_ic/wrong_subject"].sample.images.subjects
    right = probe_set.samples["multi_concept_ic/reference"].sample.images.subjects
    assert (_pixels(folder / wrong[0]) != _pixels(folder / right[0])).any()
    assert (_pixels(folder / wrong[1]) == _pixels(folder / right[1])).all()


def test_probes_pair_the_reference_with_the_expected_checks(probe_set) -> None:  # type: ignore[no-untyped-def]
    by_id = {p.id: p for p in probe_set.probes}
    unchanged = by_id["mask_guided_ie/unchanged_source"]
    assert unchanged.reference == "mask_guided_ie/reference"
    assert [(c.target, c.relation) for c in unchanged.checks] == [
        ("edit_success", "drop"),
        ("over_editing", "not_drop"),
    ]
    repeat = by_id["text_guided_ig/repeat"]
    again = probe_set.samples[repeat.samples[0]]
    assert again.fresh and again.sample is probe_set.samples["text_guided_ig/reference"].sample
    spread = by_id["control_guided_ig/spread"]
    assert spread.reference is None
    assert [k.split("/")[1] for k in spread.samples] == [
        "reference",
        "blank_output",
        "ignored_control",
        "wrong_output",
    ]


def test_the_same_cigeval_draws_the_same_fingerprints(probe_set, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    again = build_probe_set(tmp_path)
    assert [p.fingerprint for p in again.probes] == [p.fingerprint for p in probe_set.probes]
    assert len({p.fingerprint for p in probe_set.probes}) == 48


def test_choosing_tasks_and_kinds(tmp_path: Path) -> None:
    chosen = build_probe_set(tmp_path, tasks=["Text-Guided IE"], kinds=["spread", "repeat"])
    assert [p.id for p in chosen.probes] == ["text_guided_ie/repeat", "text_guided_ie/spread"]
    # the spread still needs the task's different outputs, though their probes were not chosen
    assert set(chosen.samples) == {
        "text_guided_ie/reference",
        "text_guided_ie/blank_output",
        "text_guided_ie/unchanged_source",
        "text_guided_ie/wrong_output",
        "text_guided_ie/repeat",
    }


def test_unknown_or_inapplicable_choices_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no probe task 'texture'.*text_guided_ig"):
        build_probe_set(tmp_path, tasks=["texture"])
    with pytest.raises(ConfigError, match=r"no probe kind 'blurry'.*blank_output"):
        build_probe_set(tmp_path, kinds=["blurry"])
    with pytest.raises(ConfigError, match=r"ignored_control applies to task\(s\) text_guided_ig"):
        build_probe_set(tmp_path, tasks=["text_guided_ig"], kinds=["ignored_control"])
