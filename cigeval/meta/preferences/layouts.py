"""Readers of the files preference benchmarks publish, into :class:`PreferenceItem` lists.

Each layout below was read from the benchmark's public code (docs/comparisons.md names the
commits). Every reader keeps going past a bad entry: the entry is left out and a note says
which and why.

- ``cigeval``: results of a ``pairwise`` / ``pointwise`` run whose samples carried a
  ``human`` label.
- ``generic``: JSONL, ``{"id", "task", "human": "A"|"B"|"tie", "judge": ...}`` per line, or
  ``human_ranking`` / ``judge_ranking`` for groups (see :func:`items.item_from_generic`).
- ``genai-bench``: the outputs of GenAI-Bench's ``inference.py`` (``pairwise.jsonl`` or
  ``pairwise.json``): ``idx``, ``model_vote`` (``[[A>B]]``...), ``human_vote``
  (``leftvote``, ``rightvote``, ``tievote``, ``bothbad_vote``).
- ``genai-bench-votes``: several judges' votes per pair with the human vote (the GenAI-Bench
  votes shipped in shared/data: ``idx``, ``human_vote`` and ``votes``, judge -> ``A>B``,
  ``B>A``, ``A=B=Good``, ``A=B=Bad`` or null); one judge is read (``--judge``).
- ``editreward-bench``: the results JSON of EditReward's ``inference_{2,3,4}pair_hf.py``:
  ``{"results": [{"id", "human_vote", "model_vote", "comparison_type", ...}]}``, one entry
  per comparison; the comparisons of one group share the id's prefix before its first ``_``.
- ``mmrb2``: an MMRB2 judgements file (``{pair_id: {"forward": [{"judgement": "A"}],
  "reverse": [...]}}``, the reverse order showing B first) with the benchmark file that holds
  the human choice (``{"pairs": [{"id", "chosen", ...}]}``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import InputError
from cigeval.meta.preferences.items import (
    Comparison,
    PreferenceItem,
    item_from_generic,
    item_from_rankings,
    item_from_record,
)
from cigeval.ranking import TIE, is_tie

LAYOUTS = (
    "auto",
    "cigeval",
    "generic",
    "genai-bench",
    "genai-bench-votes",
    "editreward-bench",
    "mmrb2",
)
#: Notes listing individual entries stop after this many.
_SHOWN = 5


@dataclass
class LoadedPreferences:
    """The items read from a file, its layout, and what was left out and why."""

    items: list[PreferenceItem]
    layout: str
    notes: list[str] = field(default_factory=list)


def _json_lines(path: Path, notes: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    bad = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                bad += 1
                if bad <= _SHOWN:
                    notes.append(f"line {number}: not a JSON object; left out")
                continue
            yield number, value
    if bad > _SHOWN:
        notes.append(f"... {bad - _SHOWN} more unreadable line(s) left out")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path} as JSON: {exc}") from None


def load_generic(path: Path, task: str | None = None) -> LoadedPreferences:
    """The generic JSONL layout (see the module docstring)."""
    notes: list[str] = []
    items: list[PreferenceItem] = []
    for number, line in _json_lines(path, notes):
        try:
            item = item_from_generic(line, number)
        except InputError as exc:
            notes.append(f"line {number}: {exc}; left out")
            continue
        if task is not None:
            item.task = task
        items.append(item)
    return LoadedPreferences(items, "generic", notes)


def load_cigeval_results(path: Path, task: str | None = None) -> LoadedPreferences:
    """A results file of rubric ``pairwise`` or ``pointwise`` (last record per id)."""
    from cigeval.results import SkippedLine, last_record_per_id, read_records

    skipped: list[SkippedLine] = []
    records = last_record_per_id(read_records(path, skipped))
    notes = [f"{line}; left out" for line in skipped[:_SHOWN]]
    items: list[PreferenceItem] = []
    errors = other = 0
    for record in records:
        try:
            item = item_from_record(record)
        except InputError as exc:
            notes.append(f"{exc}; left out")
            continue
        if item is None:
            if record.get("status") != "ok":
                errors += 1
            else:
                other += 1
            continue
        if task is not None:
            item.task = task
        items.append(item)
    _one_setting(records, path)
    if errors:
        notes.append(f"{errors} record(s) ended in error; left out")
    if other:
        notes.append(f"{other} ok record(s) hold no preference (another rubric); left out")
    return LoadedPreferences(items, "cigeval", notes)


def _one_setting(records: list[dict[str, Any]], path: Path) -> None:
    """InputError when the preference records were judged with different settings (run
    fingerprints): their accuracies are never pooled."""
    from collections import Counter

    from cigeval.results.fingerprint import fingerprint_of

    counts = Counter(
        fingerprint_of(r)
        for r in records
        if isinstance(r.get("details"), dict) and "candidates" in r["details"]
    )
    if len(counts) > 1:
        listed = ", ".join(f"{fp} ({n} records)" for fp, n in counts.most_common())
        raise InputError(
            f"{path} holds preference records judged with {len(counts)} different settings "
            f"(run fingerprints {listed}); their accuracies are never pooled: score each run "
            "from its own file"
        )


#: GenAI-Bench's human votes and the verdicts they mean.
GENAI_HUMAN_VOTES = {
    "leftvote": "A",
    "rightvote": "B",
    "tievote": "both_good",
    "bothbad_vote": "both_bad",
}
#: GenAI-Bench's model votes (the bracketed verdict its parser extracts) and their meaning.
GENAI_MODEL_VOTES = {
    "[[A>B]]": "A",
    "[[A>>B]]": "A",
    "[[B>A]]": "B",
    "[[B>>A]]": "B",
    "[[A=B]]": TIE,
    "[[A=B=Good]]": "both_good",
    "[[A=B=Bad]]": "both_bad",
}


def load_genai_bench(path: Path, task: str | None = None) -> LoadedPreferences:
    """GenAI-Bench's inference outputs (JSONL lines or one JSON list)."""
    notes: list[str] = []
    if path.suffix == ".json":
        data = _read_json(path)
        if not isinstance(data, list):
            raise InputError(f"{path}: a GenAI-Bench results .json file holds a list")
        entries = [(i + 1, e) for i, e in enumerate(data) if isinstance(e, dict)]
    else:
        entries = list(_json_lines(path, notes))
    items: list[PreferenceItem] = []
    disagreements = unknown = 0
    for number, entry in entries:
        human = GENAI_HUMAN_VOTES.get(str(entry.get("human_vote")))
        if human is None:
            notes.append(f"entry {number}: human_vote {entry.get('human_vote')!r}; left out")
            continue
        judge = GENAI_MODEL_VOTES.get(str(entry.get("model_vote")))
        unknown += judge is None
        item_id = str(entry.get("idx", number))
        item = item_from_rankings(item_id, task or "image_edition", ["A", "B"], human, judge)
        stated = entry.get("correct")
        if isinstance(stated, bool):
            from cigeval.meta.preferences.accuracy import agrees

            ours = agrees(item.comparisons[0].human, item.comparisons[0].judge)
            disagreements += ours != stated
        items.append(item)
    if unknown:
        notes.append(f"{unknown} model vote(s) were missing or unreadable; they count as wrong")
    if disagreements:
        notes.append(
            f"{disagreements} entries' own 'correct' field disagrees with the votes' reading"
        )
    return LoadedPreferences(items, "genai-bench", notes)


#: The four labels of the stored GenAI-Bench votes and the verdicts they mean.
VOTE_LABELS = {"A>B": "A", "B>A": "B", "A=B=Good": "both_good", "A=B=Bad": "both_bad"}


def load_genai_bench_votes(
    path: Path, task: str | None = None, judge: str | None = None
) -> LoadedPreferences:
    """Stored votes of several judges per pair (see the module docstring); ``judge`` picks
    one (needed when the file holds several). A judge's null vote counts as wrong."""
    notes: list[str] = []
    entries = list(_json_lines(path, notes))
    judges = sorted(
        {str(j) for _, e in entries if isinstance(e.get("votes"), dict) for j in e["votes"]}
    )
    if judge is None and len(judges) == 1:
        judge = judges[0]
    if judge not in judges:
        raise InputError(
            f"{path} holds the votes of {len(judges)} judges; name one with "
            f"{in_callers_words('--judge', 'judge=')} ({', '.join(judges)})"
        )
    items: list[PreferenceItem] = []
    for number, entry in entries:
        human = VOTE_LABELS.get(str(entry.get("human_vote")))
        if human is None:
            notes.append(f"line {number}: human_vote {entry.get('human_vote')!r}; left out")
            continue
        votes = entry.get("votes")
        said = VOTE_LABELS.get(str(votes.get(judge))) if isinstance(votes, dict) else None
        item_id = str(entry.get("idx", number))
        items.append(item_from_rankings(item_id, task or path.stem, ["A", "B"], human, said))
    missing = sum(1 for item in items if item.comparisons[0].judge is None)
    if missing:
        notes.append(f"{judge}: {missing} pair(s) without a usable vote; they count as wrong")
    return LoadedPreferences(items, "genai-bench-votes", notes)


_VOTE = re.compile(r"^\s*([A-Za-z])\s*([<>=])\s*([A-Za-z])\s*$")


def _editreward_vote(value: Any) -> tuple[str, str, str] | None:
    """("A", "B", winner-or-tie) of a vote such as ``A>B``, ``C<B`` or ``A=B``."""
    match = _VOTE.match(str(value or ""))
    if match is None:
        return None
    first, sign, second = match.group(1).upper(), match.group(2), match.group(3).upper()
    winner = first if sign == ">" else second if sign == "<" else TIE
    return first, second, winner


def load_editreward_bench(path: Path, task: str | None = None) -> LoadedPreferences:
    """EditReward-Bench results (one comparison per entry; groups by the id's prefix)."""
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(f"{path}: EditReward-Bench results are an object with 'results'")
    notes: list[str] = []
    per_group = str(data.get("data_type", "")).endswith("2pair")
    groups: dict[str, list[Comparison]] = defaultdict(list)
    missing = 0
    for number, entry in enumerate(data["results"], start=1):
        if not isinstance(entry, dict):
            missing += 1  # the scripts leave null where an example failed
            continue
        entry_id = str(entry.get("id", number))
        human = _editreward_vote(entry.get("human_vote"))
        pair = str(entry.get("comparison_type") or "")
        if human is None:
            notes.append(f"entry {entry_id}: human_vote {entry.get('human_vote')!r}; left out")
            continue
        first, second = (pair[0], pair[-1]) if re.fullmatch(r"[A-Z]vs[A-Z]", pair) else human[:2]
        judge = _editreward_vote(entry.get("model_vote"))
        same_pair = judge is not None and {judge[0], judge[1]} == {first, second}
        judge_winner = judge[2] if judge is not None and same_pair else None
        group = entry_id if per_group or "_" not in entry_id else entry_id.split("_")[0]
        groups[group].append(Comparison(first, second, human[2], judge_winner))
    if missing:
        notes.append(f"{missing} result(s) are empty (the example failed); left out")
    items = [
        PreferenceItem(
            group,
            task or "image_editing",
            sorted({label for c in comparisons for label in (c.first, c.second)}),
            comparisons,
        )
        for group, comparisons in groups.items()
    ]
    return LoadedPreferences(items, "editreward-bench", notes)


def _mmrb2_answer(value: Any, flip: bool) -> str | None:
    if not value:
        return None
    text = str(value).strip()
    if text in ("A", "B"):
        return {"A": "B", "B": "A"}[text] if flip else text
    return TIE if is_tie(text) else None


def load_mmrb2(path: Path, benchmark: Path | None, task: str | None = None) -> LoadedPreferences:
    """An MMRB2 judgements file, with the benchmark file holding the human choices."""
    if benchmark is None:
        raise InputError(
            "an MMRB2 judgements file needs the benchmark file with the human choices "
            "(e.g. benchmark/edit.json): pass it with "
            f"{in_callers_words('--benchmark', 'benchmark=')}"
        )
    judgements = _read_json(path)
    bench = _read_json(benchmark)
    if not isinstance(judgements, dict):
        raise InputError(f"{path}: an MMRB2 judgements file maps pair ids to judgements")
    if not isinstance(bench, dict) or not isinstance(bench.get("pairs"), list):
        raise InputError(f"{benchmark}: an MMRB2 benchmark file is an object with 'pairs'")
    notes: list[str] = []
    items: list[PreferenceItem] = []
    missing = 0
    for pair in bench["pairs"]:
        if not isinstance(pair, dict):
            continue
        pair_id = str(pair.get("id", pair.get("pair_id")))
        chosen = pair.get("chosen", pair.get("human_preference"))
        if chosen not in ("A", "B"):
            notes.append(f"pair {pair_id}: chosen {chosen!r}; left out")
            continue
        prediction = judgements.get(pair_id)
        if not isinstance(prediction, dict):
            missing += 1
            continue
        orders = []
        for key, flip in (("forward", False), ("reverse", True)):
            entries = prediction.get(key) or []
            first = entries[0] if entries and isinstance(entries[0], dict) else {}
            orders.append(_mmrb2_answer(first.get("judgement"), flip))
        answered = [o for o in orders if o is not None]
        kept = answered[0] if answered and len(set(answered)) == 1 else (TIE if answered else None)
        inconsistent = len(set(answered)) > 1 if len(answered) == 2 else None
        items.append(
            item_from_rankings(
                pair_id, task or benchmark.stem, ["A", "B"], chosen, kept, orders, inconsistent
            )
        )
    if missing:
        notes.append(f"{missing} benchmark pair(s) have no judgement; left out (as MMRB2 does)")
    return LoadedPreferences(items, "mmrb2", notes)


def detect_layout(path: Path) -> str:
    """The layout of ``path``, from its suffix and its first entry."""
    if path.suffix == ".json":
        data = _read_json(path)
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            return "editreward-bench"
        if isinstance(data, dict) and "pairs" in data:
            raise InputError(
                f"{path} is an MMRB2 benchmark file (human choices only); give the judgements "
                f"file and pass this one with {in_callers_words('--benchmark', 'benchmark=')}"
            )
        if isinstance(data, dict) and all(
            isinstance(v, dict) and ("forward" in v or "reverse" in v) for v in data.values()
        ):
            return "mmrb2"
        first = data[0] if isinstance(data, list) and data else None
        if isinstance(first, dict) and "human_vote" in first:
            return "genai-bench"
        layout = in_callers_words("--layout", "layout=")
        raise InputError(f"{path}: not a preference layout cigeval knows; name it with {layout}")
    notes: list[str] = []
    for _, first in _json_lines(path, notes):
        if "status" in first and ("details" in first or "rubric" in first):
            return "cigeval"
        if "human_vote" in first and "model_vote" in first:
            return "genai-bench"
        if "human_vote" in first and isinstance(first.get("votes"), dict):
            return "genai-bench-votes"
        return "generic"
    raise InputError(f"{path} holds no JSON object")


def load_preferences(
    path: str | Path,
    layout: str = "auto",
    *,
    benchmark: str | Path | None = None,
    task: str | None = None,
    judge: str | None = None,
) -> LoadedPreferences:
    """Read ``path`` in ``layout`` (``auto`` detects it). ``benchmark``: MMRB2's benchmark
    file; ``task``: the task name for every item (default: the file's own); ``judge``: the
    judge to read from a file of several judges' votes."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"cannot read {path}: no such file")
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    if layout == "auto":
        layout = detect_layout(path)
    if layout == "mmrb2":
        return load_mmrb2(path, None if benchmark is None else Path(benchmark), task)
    if layout == "genai-bench-votes":
        return load_genai_bench_votes(path, task, judge)
    readers = {
        "cigeval": load_cigeval_results,
        "generic": load_generic,
        "genai-bench": load_genai_bench,
        "editreward-bench": load_editreward_bench,
    }
    return readers[layout](path, task)
