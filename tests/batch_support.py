"""Shared by the batch tests: a seven-task study, the CLI run, and record normalisation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cigeval.cli import main
from cigeval.results import read_records
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl

#: Tools that run here without weights; Scene Graph makes judge calls of its own. The
#: extended method runs Difference in every task, so every stage has tool work in it.
TOOLS = ("--tools", "Difference,Scene Graph", "--max-rounds", "2", "--method", "extended")


def study(folder: Path) -> Path:
    """One sample of each of the seven tasks, as a samples file."""
    return write_jsonl(folder / "samples.jsonl", seven_task_samples(folder))


def judge() -> Any:
    """The rule judge of these tests: plans Difference and Scene Graph for some sub-questions,
    asks for Difference in a second round, and sends one unparseable reply (a re-ask)."""
    rules = rule_judge(
        tools={
            "edit_success": "Difference",
            "over_editing": "Difference",
            "subject_similarity": "Scene Graph",
        },
        request_tool="Difference",
    )
    spoilt: set[str] = set()

    def reply(body: dict[str, Any]) -> str:
        text = request_text(body)
        first_ask = "RULES:" in text and "could not be used" not in text
        control = first_ask and "Round 2" not in text and "control image" in text
        if control and text not in spoilt:  # the first ask of this prompt gets no JSON
            spoilt.add(text)
            return "I would rather not say."
        return rules(body)

    return reply


def run_cli(server: FakeOpenAIServer, samples: Path, out: Path, *extra: str) -> int:
    """``cigeval evaluate`` against ``server`` with the test tools, no preflight."""
    argv = ["evaluate", str(samples), "--model", f"openai:judge-model@{server.base_url}"]
    return main([*argv, "--out", str(out), "--quiet", "--no-preflight", *TOOLS, *extra])


def normalised(record: dict[str, Any], out: Path) -> dict[str, Any]:
    """A record without what legitimately differs between two runs of the same study.

    Timings (``time``, ``latency_s``, ``usage.wall_ms``); where the run keeps its image
    copies (next to its own results file); the order in which concurrent sub-questions'
    events interleave (events are grouped by sub-question, keeping their order within one);
    and which of two samples asking the very same request at the same time is recorded as
    making the call and which as sharing it (``cached`` per call, and so ``http_attempts``;
    the run's totals are compared separately).
    """
    text = json.dumps(record).replace(str(out.parent), "<run>")
    copy = json.loads(text)
    copy["usage"].pop("wall_ms", None)
    copy["usage"].pop("cached_calls", None)
    copy["usage"].pop("http_attempts", None)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for event in copy.pop("trace", []):
        for key in ("time", "latency_s", "cached"):
            event.pop(key, None)
        grouped.setdefault(str(event.get("question_id")), []).append(event)
    copy["trace"] = {key: _concurrent_calls_sorted(events) for key, events in grouped.items()}
    return copy


def _concurrent_calls_sorted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent model calls of one purpose and round (a tool's calls for several images,
    made at once) in a fixed order: which returns first is timing, in both modes."""
    result: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def close() -> None:
        result.extend(sorted(run, key=lambda e: json.dumps(e, sort_keys=True)))
        run.clear()

    for event in events:
        same = (
            run
            and event.get("type") == "model_call"
            and (event.get("purpose"), event.get("round"))
            == (run[0].get("purpose"), run[0].get("round"))
        )
        if not same:
            close()
        if event.get("type") == "model_call":
            run.append(event)
        else:
            result.append(event)
    close()
    return result


def records_by_id(out: Path) -> dict[str, dict[str, Any]]:
    """The records of a results file by sample id."""
    return {r["id"]: r for r in read_records(out)}


def shared_calls(records: dict[str, dict[str, Any]]) -> int:
    """Calls answered by another sample's identical call, over the whole run."""
    return sum(r["usage"]["cached_calls"] for r in records.values())
