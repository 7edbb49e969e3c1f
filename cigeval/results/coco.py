"""A results file's evidence regions as COCO JSON, for a reviewer's annotation tool.

Each image a region was found in becomes one COCO ``image`` (one per sample and image role:
the file the record's ``image_files`` names for it, its pixel size from the evidence's
``image_size``); each evidence entry of each sub-score one ``annotation`` with its ``bbox``
in COCO's ``[x, y, width, height]`` (the same pixels as the record's ``[x0, y0, x1, y1]``);
each distinct label one ``category``, under its tool as ``supercategory``. What COCO has no
field for (sample, sub-question, tool, round, the judge's score, the detector's confidence)
goes in ``attributes``, which CVAT and FiftyOne read. See docs/evidence.md.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval._version import __version__
from cigeval.results.record import evidence_box, evidence_frame, input_images_of, sub_scores_of


@dataclass
class CocoExport:
    """The COCO document (``coco``) and what could not go into it as it should."""

    coco: dict[str, Any]
    #: Images with regions whose file the record does not name or that is not there: their
    #: ``file_name`` is then the sha256 (``<sha256>.img``) or the recorded path.
    missing_files: list[str] = field(default_factory=list)
    #: Evidence entries left out (no usable box or image size), as "sample: why".
    skipped: list[str] = field(default_factory=list)

    @property
    def annotations(self) -> int:
        """How many regions were exported."""
        return len(self.coco["annotations"])


def coco_regions(
    records: Iterable[Mapping[str, Any]], base_dir: Path | None = None, source: str = ""
) -> CocoExport:
    """The evidence of ``records`` (results records) as one COCO document.

    ``base_dir`` is where relative ``image_files`` paths start (the results file's folder);
    a file found there is written as an absolute path.
    """
    images: dict[tuple[str, str, str], dict[str, Any]] = {}
    categories: dict[tuple[str, str], int] = {}
    annotations: list[dict[str, Any]] = []
    export = CocoExport({})
    for record in records:
        sample = str(record.get("id"))
        inputs = input_images_of(record)
        files = record.get("image_files") or {}
        for sub in sub_scores_of(record):
            for entry in sub.get("evidence") or []:
                region = _region(entry)
                if region is None:
                    export.skipped.append(
                        f"{sample}: an evidence entry without a box, size or role"
                    )
                    continue
                (x0, y0, x1, y1), (width, height), role = region
                sha = inputs.get(role, "")
                key = (sample, role, sha)
                if key not in images:
                    location = _located(files.get(sha) if sha else None, base_dir)
                    if location is None or not Path(location).is_file():
                        export.missing_files.append(f"{sample}: {role}")
                    images[key] = {
                        "id": len(images) + 1,
                        "file_name": location or (f"{sha}.img" if sha else f"{sample}/{role}"),
                        "width": width,
                        "height": height,
                        "sample_id": sample,
                        "role": role,
                        "sha256": sha or None,
                    }
                tool, label = str(entry.get("tool") or "?"), str(entry.get("label") or "region")
                category = categories.setdefault((tool, label), len(categories) + 1)
                attributes = {
                    "sample_id": sample,
                    "question_id": sub.get("question_id"),
                    "tool": tool,
                    "label": label,
                    "round": entry.get("round", 1),
                    "sub_score": sub.get("score"),
                    "judge": record.get("judge"),
                }
                annotation = {
                    "id": len(annotations) + 1,
                    "image_id": images[key]["id"],
                    "category_id": category,
                    "bbox": [x0, y0, round(x1 - x0, 2), round(y1 - y0, 2)],
                    # the box as a polygon too: COCO readers expect one for every annotation
                    "segmentation": [[x0, y0, x1, y0, x1, y1, x0, y1]],
                    "area": round((x1 - x0) * (y1 - y0), 2),
                    "iscrowd": 0,
                    "attributes": attributes,
                }
                if isinstance(entry.get("confidence"), int | float):
                    annotation["score"] = entry["confidence"]
                annotations.append(annotation)
    export.coco = {
        "info": {
            "description": f"cigeval evidence regions{' of ' + source if source else ''}",
            "version": __version__,
            "date_created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        },
        "licenses": [],
        "images": list(images.values()),
        "annotations": annotations,
        "categories": [
            {"id": number, "name": label, "supercategory": tool}
            for (tool, label), number in categories.items()
        ],
    }
    return export


def _region(
    entry: Any,
) -> tuple[tuple[float, float, float, float], tuple[int, int], str] | None:
    """(box, image size, role) of an evidence entry, or None when it lacks a usable one."""
    box, size = evidence_box(entry), evidence_frame(entry)
    role = entry.get("role") if isinstance(entry, Mapping) else None
    if box is None or size is None or not isinstance(role, str):
        return None
    return box, size, role


def _located(location: Any, base_dir: Path | None) -> str | None:
    """The recorded image path, made absolute where it is found under ``base_dir``."""
    if not isinstance(location, str) or not location:
        return None
    path = Path(location).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).is_file():
        return str((base_dir / path).resolve())
    return str(path.resolve()) if path.is_file() else location
