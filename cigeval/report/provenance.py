"""What produced a run, summed over its records: judges, endpoints, cigeval versions, settings.

Records carry a ``provenance`` object (see :mod:`cigeval.evaluation.assemble`) and their
``config``; a run whose records disagree (resumed with another version or other settings)
shows every distinct value with its count, so a mixed run is visible at a glance.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from cigeval.messages import PROVIDER_DEFAULT
from cigeval.results.run import Run

#: The settings shown in a report's header (the rest stay in the records).
SHOWN_SETTINGS = (
    "rubric",
    "aggregate",
    "max_rounds",
    "tools",
    "tool_errors",
)
#: The sampling settings, shown on a line of their own: unset, they are the provider's
#: default (the paper method sends none, as the official code), which is not deterministic.
SAMPLING_SETTINGS = ("temperature", "seed", "max_tokens")


def _counted(counter: Counter[str]) -> str:
    if not counter:
        return "–"
    if len(counter) == 1:
        return next(iter(counter))
    return "; ".join(f"{value} ({count} records)" for value, count in counter.most_common())


def run_provenance(run: Run) -> list[tuple[str, str]]:
    """(name, value) lines describing what produced ``run``."""
    versions: Counter[str] = Counter()
    judges: Counter[str] = Counter()
    endpoints: Counter[str] = Counter()
    served: Counter[str] = Counter()
    prompts: Counter[str] = Counter()
    prompt_sets: Counter[str] = Counter()
    planner_tools: Counter[str] = Counter()
    finish: Counter[str] = Counter()
    settings: dict[str, Counter[str]] = {
        name: Counter() for name in (*SHOWN_SETTINGS, *SAMPLING_SETTINGS)
    }
    statuses: Counter[str] = Counter()
    for record in run.records:
        statuses[str(record.get("status"))] += 1
        if record.get("judge"):
            judges[str(record["judge"])] += 1
        provenance = record.get("provenance")
        if isinstance(provenance, dict):
            if provenance.get("cigeval_version"):
                versions[str(provenance["cigeval_version"])] += 1
            # records written before prompt sets were named say nothing of theirs
            prompt_sets[str(provenance.get("prompt_set") or "not recorded")] += 1
            if provenance.get("planner_tools"):
                planner_tools[str(provenance["planner_tools"])] += 1
            for judge in provenance.get("judges") or []:
                if not isinstance(judge, dict):
                    continue
                endpoints[str(judge.get("endpoint") or "in-process")] += 1
                for name in judge.get("served_models") or []:
                    served[str(name)] += 1
                if judge.get("prompts_sha256"):
                    prompts[str(judge["prompts_sha256"])[:16]] += 1
                for reason, count in (judge.get("finish_reasons") or {}).items():
                    if isinstance(count, int):
                        finish[str(reason)] += count
        config = record.get("config")
        if isinstance(config, dict):
            for name in settings:
                if name not in config:
                    continue
                value = config[name]
                if name in SAMPLING_SETTINGS and value in (None, PROVIDER_DEFAULT):
                    settings[name][PROVIDER_DEFAULT] += 1
                else:
                    settings[name][json.dumps(value, sort_keys=True)] += 1
    lines = [
        ("results", run.source),
        ("records", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none"),
        ("judge", _counted(judges)),
        ("endpoint", _counted(endpoints)),
        ("served models", ", ".join(sorted(served)) or "–"),
        ("cigeval version", _counted(versions)),
        ("prompt set", _counted(prompt_sets)),
        ("prompt templates sha256", _counted(prompts)),
        ("finish reasons", ", ".join(f"{r} {n}" for r, n in finish.most_common()) or "–"),
    ]
    if planner_tools:
        lines.append(("planner tools", _counted(planner_tools)))
    sampling = [(name, _counted(settings.pop(name))) for name in SAMPLING_SETTINGS]
    if all(value == PROVIDER_DEFAULT for _, value in sampling):
        lines.append(("sampling", f"{PROVIDER_DEFAULT} (no temperature, seed or max_tokens sent)"))
    elif any(value != "–" for _, value in sampling):
        lines.append(("sampling", ", ".join(f"{name} {value}" for name, value in sampling)))
    shown = [(name, _counted(counter)) for name, counter in settings.items() if counter]
    if shown:
        lines.append(("settings", ", ".join(f"{name}={value}" for name, value in shown)))
    return lines


def provenance_summary(runs: list[Run]) -> dict[str, Any]:
    """Each run's provenance lines, by run label (JSON-ready)."""
    return {run.label: run_provenance(run) for run in runs}
