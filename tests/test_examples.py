"""The shipped example samples stay valid for their tasks."""

from __future__ import annotations

from pathlib import Path

from cigeval.sample import iter_samples_file, load_sample_images
from cigeval.tasks import TASK_IDS, get_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "samples.jsonl"


def test_example_samples_cover_every_task_and_load():
    lines = list(iter_samples_file(EXAMPLES))
    assert all(line.error is None for line in lines), [line.error for line in lines]
    tasks = {line.sample.task for line in lines if line.sample}
    assert tasks == set(TASK_IDS)
    for line in lines:
        assert line.sample is not None
        get_task(line.sample.task).validate_sample(line.sample)
        images = load_sample_images(line.sample)
        assert "output" in images and all(img.pixels().mode == "RGB" for img in images.values())
