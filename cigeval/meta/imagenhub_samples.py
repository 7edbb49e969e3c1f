"""cigeval samples for the ImagenHub benchmark, so the agent's agreement with people can be
measured on the very images the human ratings are about.

The text conditions and condition-image paths of the 1,111 benchmark samples ship with
cigeval (``cigeval/data/imagenhub_conditions.jsonl``, with the subject names of Subject-Driven
IG and the concept names of Multi-Concept IC in ``imagenhub_extra/``); the images do not. Point
:func:`imagenhub_samples` at a local copy of the ImagenHub image folder ("Museum": one folder
per task holding ``input/``, ``token/`` and one folder per generator) to get one sample per
human-rated image (4,801 by default).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from cigeval.errors import InputError
from cigeval.meta.frames import task_id
from cigeval.meta.human import load_human_ratings
from cigeval.meta.selection import Samples, selection_of

_CONTROL_TYPE = re.compile(r"control_([a-z]+)", re.IGNORECASE)


#: Shipped files of text conditions, each keyed by (task, uid); later files add fields.
_CONDITION_FILES = ("imagenhub_conditions.jsonl", "imagenhub_extra/conditions_extra.jsonl")


def _read_conditions(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    text = resources.files("cigeval.data").joinpath(name).read_text("utf-8")
    conditions: dict[tuple[str, str], dict[str, Any]] = {}
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            conditions[(task_id(record["task"]), str(record["uid"]))] = record
    return conditions


@lru_cache(maxsize=1)
def imagenhub_conditions() -> dict[tuple[str, str], dict[str, Any]]:
    """The shipped conditions, keyed by (task id, uid): the text condition and image paths of
    every benchmark sample, with the Subject-Driven IG subject names and the Multi-Concept IC
    concept names ([left, right]) from ``imagenhub_extra/`` merged in."""
    conditions = _read_conditions(_CONDITION_FILES[0])
    for key, extra in _read_conditions(_CONDITION_FILES[1]).items():
        if key not in conditions:
            raise InputError(f"package data: extra condition for unknown sample {key}")
        conditions[key] = {**conditions[key], **extra}
    return conditions


def _images(task: str, condition: Mapping[str, Any], output: Path, museum: Path) -> dict[str, Any]:
    paths = [museum / p for p in condition.get("condition_images", [])]
    images: dict[str, Any] = {"output": output}
    if task in ("mask_guided_ie", "text_guided_ie"):
        images["source"] = paths[0]
    elif task == "subject_driven_ig":
        images["subject"] = paths[0]
    elif task == "subject_driven_ie":
        images["source"], images["subject"] = paths[0], paths[1]
    elif task == "multi_concept_ic":
        images["subject"] = paths[0]  # both concepts side by side in one image
    elif task == "control_guided_ig":
        images["control"] = paths[0]
    return images


def sample_for(
    task: str, model: str, uid: str, museum: Path, human: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """The cigeval sample (a JSON-ready dict) of one human-rated ImagenHub image.

    ``id`` is ``<task>/<model>/<uid>`` (unique per generator, as resuming needs);
    ``metadata.uid`` keeps the benchmark sample, which the meta-evaluation matches on.
    """
    try:
        condition = imagenhub_conditions()[(task, uid)]
    except KeyError:
        raise InputError(f"no ImagenHub condition for task {task!r}, sample {uid!r}") from None
    output = museum / str(condition["output_image_template"]).replace("<MODEL>", model)
    sample: dict[str, Any] = {
        "id": f"{task}/{model}/{uid}",
        "task": task,
        "images": {k: str(v) for k, v in _images(task, condition, output, museum).items()},
        "model": model,
        "metadata": {"uid": uid, "benchmark": "imagenhub"},
    }
    for name in ("prompt", "instruction", "subject", "concepts"):
        if condition.get(name):
            sample[name] = condition[name]
    if condition.get("subject_id"):
        sample["metadata"]["subject_id"] = condition["subject_id"]
    if task == "control_guided_ig":
        match = _CONTROL_TYPE.search(uid)
        if match:
            sample["control_type"] = match.group(1).lower()
    if human is not None:
        sample["human"] = {k: round(float(v), 6) for k, v in human.items()}
    return sample


@dataclass
class SamplesReport:
    """What :func:`write_imagenhub_samples` wrote and left out."""

    written: int = 0
    missing_images: Counter[str] = field(default_factory=Counter)
    first_missing: list[str] = field(default_factory=list)


def imagenhub_samples(
    museum: str | Path,
    *,
    tasks: Iterable[str] | None = None,
    all_models: bool = False,
    samples: Samples | None = None,
) -> Iterator[dict[str, Any]]:
    """One sample per human-rated image, with the mean human SC/PQ/O passed through.

    ``samples`` (task -> uids, e.g. ``split.subset('test')``, or task -> model -> uids for
    the official split) keeps only those benchmark samples or images; ``all_models`` also
    includes the two generators the published tables leave out.
    """
    root = Path(museum).expanduser().resolve()
    wanted = None if samples is None else selection_of(samples)
    human = load_human_ratings(all_models=all_models, tasks=tasks)
    for key, row in zip(human.index, human.to_dict("records"), strict=True):
        task, model, uid = (str(part) for part in key)
        if wanted is not None and not wanted.keeps(task, model, uid):
            continue
        yield sample_for(task, model, uid, root, {str(k): float(v) for k, v in row.items()})


def write_imagenhub_samples(
    museum: str | Path,
    out: str | Path,
    *,
    keep_missing: bool = False,
    **options: Any,
) -> SamplesReport:
    """Write the samples of :func:`imagenhub_samples` as JSONL.

    A sample with an image missing under ``museum`` is left out and counted (its absence
    then shows in the meta-evaluation's coverage report), unless ``keep_missing``: then it is
    written and will end as an ``error`` record naming the missing file.
    """
    report = SamplesReport()
    with Path(out).open("w", encoding="utf-8") as handle:
        for sample in imagenhub_samples(museum, **options):
            absent = [p for p in sample["images"].values() if not Path(p).is_file()]
            if absent and not keep_missing:
                report.missing_images[sample["task"]] += 1
                if len(report.first_missing) < 5:
                    report.first_missing.append(absent[0])
                continue
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
            report.written += 1
    return report
