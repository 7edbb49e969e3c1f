"""The probe set: samples written as real files, and the probes that compare their scores.

:func:`build_probe_set` draws every task's scene (:mod:`cigeval.probes.task_scenes`), writes
its images into a folder (``<task>/<sample>_<role>.png``, the JPEG probe as ``.jpg``) with a
``samples.jsonl`` that ``cigeval evaluate`` can read too, and pairs the samples into probes.
Each probe carries a fingerprint of exactly what the judge is shown (text fields and the
sha256 of every image file), so two reports can tell identical probes from changed ones.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from cigeval.errors import ConfigError
from cigeval.probes.kinds import PROBE_KINDS, WHOLE_SCORE, Check
from cigeval.probes.scenes import blank, jpeg_bytes, resized
from cigeval.probes.task_scenes import TASK_SCENES, DropVariant, RoleImage, TaskScene
from cigeval.sample import Sample, sample_from_dict

#: The sample every probe of a task compares against.
REFERENCE = "reference"


@dataclass(frozen=True)
class ProbeSample:
    """A sample of the probe set. ``key`` is unique in the set; ``fresh`` asks the judge
    without the response cache (the second ask of the ``repeat`` probe, whose sample is the
    reference itself, same id)."""

    key: str
    sample: Sample
    fingerprint: str
    fresh: bool = False


@dataclass(frozen=True)
class Probe:
    """One probe: the reference sample key (None for ``spread``), the probe's sample keys (one,
    or the whole set for ``spread``), what must happen, and a fingerprint of what is shown."""

    task: str
    kind: str
    reference: str | None
    samples: tuple[str, ...]
    checks: tuple[Check, ...]
    description: str
    fingerprint: str

    @property
    def id(self) -> str:
        """``<task>/<kind>``: unique in a report, stable across runs."""
        return f"{self.task}/{self.kind}"

    @property
    def group(self) -> str:
        """must_drop, must_hold or must_not_tie."""
        return PROBE_KINDS[self.kind].group


@dataclass(frozen=True)
class ProbeSet:
    """The samples (by key) and probes of a probe run, and the folder holding their files."""

    folder: Path
    samples: dict[str, ProbeSample]
    probes: tuple[Probe, ...]

    @property
    def tasks(self) -> list[str]:
        """The tasks probed, in order."""
        return list(dict.fromkeys(p.task for p in self.probes))


def probe_tasks() -> list[str]:
    """The tasks that have a probe scene (the seven built-ins)."""
    return list(TASK_SCENES)


def _select(names: Iterable[str] | None, known: list[str], what: str) -> list[str]:
    """The chosen names in catalogue order; an unknown one is a ConfigError listing choices."""
    if names is None:
        return known
    from cigeval.registry import normalize_name

    lookup = {normalize_name(k): k for k in known}
    chosen = []
    for name in names:
        found = lookup.get(normalize_name(name))
        if found is None:
            raise ConfigError(f"no probe {what} {name!r}; choose from: {', '.join(known)}")
        chosen.append(found)
    if not chosen:
        raise ConfigError(f"no probe {what} chosen; choose from: {', '.join(known)}")
    return [k for k in known if k in chosen]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Writer:
    """Writes a task's images once each and makes its samples."""

    def __init__(self, folder: Path, scene: TaskScene) -> None:
        self.folder = folder
        self.scene = scene
        (folder / scene.task).mkdir(parents=True, exist_ok=True)
        self.hashes: dict[str, str] = {}
        self.reference_files = {
            role: self._save_role(REFERENCE, role, value) for role, value in scene.images.items()
        }

    def _save(self, name: str, image: Image.Image | bytes, suffix: str = ".png") -> str:
        relative = f"{self.scene.task}/{name}{suffix}"
        if isinstance(image, bytes):
            data = image
        else:
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            data = buffer.getvalue()
        (self.folder / relative).write_bytes(data)
        self.hashes[relative] = _sha256(data)
        return relative

    def _save_role(self, sample: str, role: str, value: RoleImage | bytes) -> str | list[str]:
        if isinstance(value, list):
            return [self._save(f"{sample}_{role}_{i + 1}", v) for i, v in enumerate(value)]
        suffix = ".jpg" if isinstance(value, bytes) else ".png"
        return self._save(f"{sample}_{role}", value, suffix)

    def sample(self, name: str, replaced: dict[str, RoleImage | bytes]) -> ProbeSample:
        """The reference sample with ``replaced`` image roles, named ``<task>/<name>``."""
        files = dict(self.reference_files)
        for role, value in replaced.items():
            files[role] = self._save_role(name, role, value)
        sample_id = f"{self.scene.task}/{name}"
        data: dict[str, Any] = {
            "id": sample_id,
            "task": self.scene.task,
            **self.scene.texts,
            "images": files,
            "metadata": {"probe_sample": name},
        }
        shown = {
            "texts": self.scene.texts,
            "images": {
                role: [self.hashes[p] for p in path]
                if isinstance(path, list)
                else self.hashes[path]
                for role, path in files.items()
            },
        }
        fingerprint = _sha256(json.dumps(shown, sort_keys=True).encode("utf-8"))
        sample = sample_from_dict(data, base_dir=self.folder)
        return ProbeSample(sample_id, sample, fingerprint)


def _probe(
    samples: dict[str, ProbeSample],
    task: str,
    kind: str,
    reference: str | None,
    keys: tuple[str, ...],
    checks: tuple[Check, ...],
    description: str,
) -> Probe:
    shown = {
        "kind": kind,
        "checks": [[c.target, c.relation] for c in checks],
        "reference": samples[reference].fingerprint if reference else None,
        "samples": [[samples[k].fingerprint, samples[k].fresh] for k in keys],
    }
    fingerprint = _sha256(json.dumps(shown, sort_keys=True).encode("utf-8"))
    return Probe(task, kind, reference, keys, checks, description, fingerprint)


def _task_probes(
    folder: Path, scene: TaskScene, kinds: list[str]
) -> tuple[dict[str, ProbeSample], list[Probe]]:
    writer = _Writer(folder, scene)
    reference = writer.sample(REFERENCE, {})
    samples = {reference.key: reference}
    output = scene.images["output"]
    assert isinstance(output, Image.Image)
    blank_variant = DropVariant(
        "blank_output",
        {"output": blank()},
        (Check(WHOLE_SCORE, "drop"),),
        "the output replaced by a uniform gray image",
    )
    drops = [blank_variant, *scene.variants]
    probes: list[Probe] = []
    spread_keys = [reference.key]
    for variant in drops:
        selected = variant.kind in kinds
        replaces_output = "output" in variant.images
        if not selected and not ("spread" in kinds and replaces_output):
            continue
        made = writer.sample(variant.kind, dict(variant.images))
        samples[made.key] = made
        if replaces_output:
            spread_keys.append(made.key)
        if selected:
            probes.append(
                _probe(
                    samples,
                    scene.task,
                    variant.kind,
                    reference.key,
                    (made.key,),
                    variant.checks,
                    variant.description,
                )
            )
    holds: dict[str, tuple[dict[str, RoleImage | bytes], str]] = {
        "jpeg_reencode": ({"output": jpeg_bytes(output, 90)}, "the output as a JPEG, quality 90"),
        "small_resize": ({"output": resized(output, 0.9)}, "the output resized to 90% per side"),
    }
    hold = (Check(WHOLE_SCORE, "hold"),)
    for kind, (replaced, description) in holds.items():
        if kind in kinds:
            made = writer.sample(kind, replaced)
            samples[made.key] = made
            probes.append(
                _probe(samples, scene.task, kind, reference.key, (made.key,), hold, description)
            )
    if "repeat" in kinds:
        again = ProbeSample(
            f"{scene.task}/repeat", reference.sample, reference.fingerprint, fresh=True
        )
        samples[again.key] = again
        probes.append(
            _probe(
                samples,
                scene.task,
                "repeat",
                reference.key,
                (again.key,),
                hold,
                "the reference sample asked again, without the response cache",
            )
        )
    if "spread" in kinds:
        probes.append(
            _probe(
                samples,
                scene.task,
                "spread",
                None,
                tuple(spread_keys),
                (Check(WHOLE_SCORE, "not_tie"),),
                f"{len(spread_keys)} clearly different outputs: "
                + ", ".join(k.split("/")[-1] for k in spread_keys),
            )
        )
    return samples, probes


def build_probe_set(
    folder: str | Path,
    tasks: Iterable[str] | None = None,
    kinds: Iterable[str] | None = None,
) -> ProbeSet:
    """Draw and write the probe set for ``tasks`` (default: all seven) and ``kinds``
    (default: all) into ``folder``; also writes ``folder/samples.jsonl``.

    A kind that does not apply to a task (``ignored_control`` on an editing task) is simply
    absent for it. An unknown task or kind is a :class:`~cigeval.errors.ConfigError`.
    """
    folder = Path(folder)
    chosen_tasks = _select(tasks, probe_tasks(), "task")
    chosen_kinds = _select(kinds, list(PROBE_KINDS), "kind")
    folder.mkdir(parents=True, exist_ok=True)
    samples: dict[str, ProbeSample] = {}
    probes: list[Probe] = []
    for task in chosen_tasks:
        task_samples, task_probes = _task_probes(folder, TASK_SCENES[task](), chosen_kinds)
        samples.update(task_samples)
        probes.extend(task_probes)
    if not probes:
        raise ConfigError(
            f"no probe of kind(s) {', '.join(chosen_kinds)} applies to task(s) "
            f"{', '.join(chosen_tasks)}"
        )
    lines = [
        json.dumps(s.sample.model_dump(mode="json", exclude_none=True)) + "\n"
        for s in samples.values()
        if not s.fresh
    ]
    (folder / "samples.jsonl").write_text("".join(lines), encoding="utf-8")
    return ProbeSet(folder, samples, tuple(probes))
