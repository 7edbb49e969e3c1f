"""The run fingerprint: one hash of every setting that can change a score.

Two records are comparable (pooled into one mean, paired in a comparison, appended to one
results file) only when their fingerprints are equal. The fingerprint covers the rubric, every
field of the evaluation settings (the method profile, the tools and their settings, the
aggregate, generation settings, rubric options, the ensemble), each judge's identity, endpoint
and prompt-template hash, and cigeval's version. It leaves out what cannot change an answer:
where the templates live (their hash is in), timeouts, concurrency, caching, the served model
names and finish reasons observed (those describe what happened, not what was asked).

Records written before fingerprints existed get one computed from their ``config`` and
``provenance``, so old files are compared by the same rule.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import CigevalError

#: Config keys that name where something lives rather than what it is (covered by a hash).
_LOCATION_KEYS = frozenset({"prompt_dir", "prompt_dirs"})

#: Hex digits of the sha256 kept in a record (64 bits: collisions are not a practical worry).
FINGERPRINT_LENGTH = 16


def _without_locations(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _without_locations(v) for k, v in value.items() if k not in _LOCATION_KEYS}
    if isinstance(value, list | tuple):
        return [_without_locations(v) for v in value]
    return value


def fingerprint_settings(
    rubric: str | None, config: Mapping[str, Any] | None, provenance: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The settings a fingerprint is the hash of, as plain JSON values.

    ``config`` is a record's ``config`` (``EvalConfig.record()``, plus ``ensemble``) and
    ``provenance`` its provenance (``cigeval_version`` and one entry per judge).
    """
    provenance = provenance or {}
    judges = []
    for judge in provenance.get("judges") or []:
        if isinstance(judge, Mapping):
            judges.append(
                {
                    "judge": judge.get("judge"),
                    "endpoint": judge.get("endpoint"),
                    "prompts_sha256": judge.get("prompts_sha256"),
                }
            )
    return {
        "rubric": rubric,
        "config": _without_locations(dict(config or {})),
        "judges": judges,
        "cigeval_version": provenance.get("cigeval_version"),
    }


def settings_of_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`fingerprint_settings` of a results record."""
    config = record.get("config")
    provenance = record.get("provenance")
    return fingerprint_settings(
        str(record.get("rubric") or (config or {}).get("rubric") or "cigeval"),
        config if isinstance(config, Mapping) else None,
        provenance if isinstance(provenance, Mapping) else None,
    )


def compute_fingerprint(settings: Mapping[str, Any]) -> str:
    """The hash of :func:`fingerprint_settings` (canonical JSON, sha256, 16 hex digits)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]


def fingerprint_of(record: Mapping[str, Any]) -> str:
    """A record's fingerprint: the one it carries, else computed from its config and
    provenance (records written before fingerprints existed)."""
    stored = record.get("fingerprint")
    if isinstance(stored, str) and stored:
        return stored
    return compute_fingerprint(settings_of_record(record))


def differing_settings(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of the settings that differ between two :func:`fingerprint_settings`
    (``config.aggregate``, ``config.grounding.box_threshold``, ``judges``, ...)."""
    names: list[str] = []
    for key in sorted(set(a) | set(b), key=str):
        name = f"{prefix}{key}"
        left, right = a.get(key), b.get(key)
        if isinstance(left, Mapping) and isinstance(right, Mapping):
            names.extend(differing_settings(left, right, prefix=name + "."))
        elif left != right:
            names.append(name)
    return names


def _mixed_advice() -> str:
    """What a run appending to a file of other settings can do, in the caller's words."""
    return in_callers_words(
        "Use another --out, start afresh with --overwrite, or append anyway with "
        "--allow-mixed-settings",
        "Write to another out path, start afresh with overwrite=True, or append anyway with "
        "allow_mixed_settings=True",
    )


class MixedSettings(CigevalError):
    """A results file holds records made with other settings than the run appending to it.

    ``records`` counts them; ``differing`` names the settings that differ (dotted names, as
    :func:`differing_settings` gives them). The command line exits with status 2.
    """

    def __init__(self, path: Path, records: int, differing: list[str]) -> None:
        self.path = path
        self.records = records
        self.differing = differing
        names = ", ".join(differing) or "settings this version cannot name"
        super().__init__(
            f"{path} holds {records} record(s) made with other settings than this run's "
            f"(they differ in: {names}); appending would mix two sets of settings in one "
            f"file. {_mixed_advice()} (reports then show them as separate runs)"
        )
