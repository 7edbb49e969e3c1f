"""``cigeval.compare``: every generator against a baseline, paired on the conditions both
answered, per settings group (run fingerprint), judge view and task."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cigeval.comparisons.bradley_terry import bradley_terry
from cigeval.comparisons.inputs import COMBINED, Collected, ScoredRecord, collect, generators_in
from cigeval.comparisons.paired import ALL_TASKS, holm, paired_difference
from cigeval.comparisons.result import CompareResult, JudgeComparison, SettingsGroup
from cigeval.errors import ConfigError
from cigeval.results.fingerprint import differing_settings, settings_of_record
from cigeval.results.record import generator_of
from cigeval.results.run import first_in_input

#: One condition's score per generator (averaged over repeated records).
Table = dict[str, dict[str, float]]


def compare(
    records_or_scores: Any,
    baseline: str | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> CompareResult:
    """Compare every generator (the records' ``model`` field) with ``baseline``.

    ``records_or_scores``: a results file path, a list of paths (or report Runs), or a list
    of Scores / result records. For each generator, on the conditions it and the baseline
    both answered (same ``metadata.uid`` / ``condition_id``, else same task, text conditions
    and input images): the mean paired difference with a percentile bootstrap interval
    (``n_boot`` resamples of the conditions, confidence ``level``, fixed by ``seed``),
    wins/ties/losses, Wilcoxon's signed-rank p-value and its Holm correction across the
    generators, over all tasks and per task (when there are several); with three or more
    generators a Bradley–Terry ranking. Records judged with different settings (run
    fingerprints) are never paired: each settings group is compared on its own and records
    of a group without the baseline are set aside, saying which settings differ. An
    ensemble's records are compared under the combined score and under each judge.
    ``baseline`` defaults to the generator of the scored record first in the input (the
    samples' order, ``provenance.input_position``, where records keep it; else the first in
    the files), as the report's Compare section picks it (``result.baseline_picked`` says so).

    Raises :class:`cigeval.ConfigError` when ``baseline`` has no scored record, or when none
    is given and the records hold fewer than two generators.
    """
    if not 0 < level < 1:
        raise ConfigError(f"confidence level must be between 0 and 1, got {level}")
    if n_boot < 0:
        raise ConfigError(f"n_boot must be 0 or more, got {n_boot}")
    collected = collect(records_or_scores)
    generators = generators_in(collected.records)
    picked = baseline is None
    if baseline is None:
        if len(generators) < 2:
            found = f"one: {generators[0]}" if generators else "none"
            raise ConfigError(
                "nothing to compare: the records name fewer than two generators with scored "
                f"records ({found}; the generator is each record's 'model' field)"
            )
        first = first_in_input(r.record for r in collected.records)
        baseline = generators[0] if first is None else generator_of(first)
    if baseline not in generators:
        known = ", ".join(generators) or "none"
        raise ConfigError(
            f"baseline {baseline!r} has no scored record; the generators with scored records "
            f"are: {known} (the generator is each record's 'model' field)"
        )
    result = CompareResult(baseline, level, n_boot, seed, set_aside=collected.set_aside)
    result.baseline_picked = picked
    _note_input_problems(collected, result)
    groups: dict[str, list[ScoredRecord]] = defaultdict(list)
    for record in collected.records:
        groups[record.fingerprint].append(record)
    reference = next(r for r in collected.records if r.generator == baseline)
    for fingerprint, members in groups.items():
        if any(r.generator == baseline for r in members):
            result.groups.append(_compare_group(fingerprint, members, baseline, result))
            continue
        differ = differing_settings(
            settings_of_record(members[0].record), settings_of_record(reference.record)
        )
        reason = (
            "judged with settings other than every baseline record's (differs in: "
            f"{', '.join(differ[:6]) or 'the fingerprint'}), so never paired with them"
        )
        for record in members:
            collected.put_aside(record.source, record.generator, reason)
    if len(result.groups) > 1:
        result.notes.append(
            f"the baseline's records were judged with {len(result.groups)} different settings "
            "(run fingerprints); each group is compared on its own, never pooled"
        )
    return result


def _note_input_problems(collected: Collected, result: CompareResult) -> None:
    for source, lines in collected.skipped_lines.items():
        shown = "; ".join(str(line) for line in lines[:3])
        result.notes.append(f"{source}: {len(lines)} unreadable line(s) skipped ({shown})")
    for source, count in collected.repeated_ids.items():
        result.notes.append(
            f"{source}: {count} sample id(s) appear more than once; the last record of each is used"
        )


def _table(members: list[ScoredRecord], view: str) -> tuple[Table, dict[str, str]]:
    """Per condition: each generator's mean score under ``view``; and each condition's task."""
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    tasks: dict[str, str] = {}
    for record in members:
        value = record.scores.get(view)
        if value is None:
            continue
        sums[record.condition][record.generator].append(value)
        tasks[record.condition] = record.task
    table = {
        condition: {g: sum(v) / len(v) for g, v in by_generator.items()}
        for condition, by_generator in sums.items()
    }
    return table, tasks


def _compare_group(
    fingerprint: str, members: list[ScoredRecord], baseline: str, result: CompareResult
) -> SettingsGroup:
    generators = generators_in(members)
    ordered = [baseline, *[g for g in generators if g != baseline]]
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for record in members:
        counts[(record.generator, record.condition)] += 1
    group = SettingsGroup(
        fingerprint=fingerprint,
        judge=str(members[0].record.get("judge") or "?"),
        sources=list(dict.fromkeys(r.source for r in members)),
        generators=ordered,
        conditions=len({r.condition for r in members}),
        averaged=sum(n for n in counts.values() if n > 1),
    )
    views = list(dict.fromkeys(view for r in members for view in r.scores))
    views.sort(key=lambda v: v != COMBINED)
    for view in views:
        table, tasks = _table(members, view)
        group.judges.append(_compare_view(view, table, tasks, ordered, baseline, result))
    return group


def _compare_view(
    view: str,
    table: Table,
    tasks: dict[str, str],
    generators: list[str],
    baseline: str,
    result: CompareResult,
) -> JudgeComparison:
    comparison = JudgeComparison(view)
    names = sorted(set(tasks.values()))
    scopes = [ALL_TASKS, *names] if len(names) > 1 else [ALL_TASKS]  # one task: one row
    options: dict[str, Any] = {"n_boot": result.n_boot, "level": result.level, "seed": result.seed}
    for scope in scopes:
        rows = []
        for generator in generators[1:]:
            pairs: list[tuple[float, float]] = []
            only_generator = only_baseline = 0
            for condition, scores in table.items():
                if scope != ALL_TASKS and tasks[condition] != scope:
                    continue
                has_g, has_b = generator in scores, baseline in scores
                if has_g and has_b:
                    pairs.append((scores[generator], scores[baseline]))
                elif has_g:
                    only_generator += 1
                elif has_b:
                    only_baseline += 1
            if scope != ALL_TASKS and not pairs and not only_generator:
                continue  # the generator has nothing on this task
            row = paired_difference(
                pairs, judge=view, generator=generator, baseline=baseline, task=scope, **options
            )
            row.only_generator, row.only_baseline = only_generator, only_baseline
            rows.append(row)
        for row, adjusted in zip(rows, holm([r.p_value for r in rows]), strict=True):
            row.p_holm = adjusted
        comparison.differences.extend(rows)
    if len(generators) >= 3:
        comparison.ranking = bradley_terry(
            list(table.values()), generators, baseline, judge=view, **options
        )
    return comparison
