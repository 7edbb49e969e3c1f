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
        assert "output" in images and all(img.mode == "RGB" for img in images.values())


def test_case_study_notebook_runs_and_shows_the_highlighted_regions(monkeypatch):
    import json

    notebook = json.loads((EXAMPLES.parent / "case_study.ipynb").read_text())
    monkeypatch.chdir(EXAMPLES.parent)
    namespace: dict[str, object] = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec("".join(cell["source"]), namespace)
    score = namespace["score"]
    html = score._repr_html_()  # type: ignore[attr-defined]
    assert score.value == 0.3  # type: ignore[attr-defined]
    over = score.sub_scores[1]  # type: ignore[attr-defined]
    assert over.tool == "Difference" and over.tool_images  # highlighted source and output
    assert html.count("<img") == 2 + len(over.tool_images)
