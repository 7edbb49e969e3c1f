"""Running a probe set through the normal evaluation path and building the report.

Every probe sample goes through :meth:`cigeval.Evaluator.evaluate_async`, so rubrics,
ensembles, tools, the response cache and everything a record carries work as in
``cigeval evaluate``. Two phases keep a probe run cheap: first each task's reference sample
(it shows which sub-scores the rubric reports, hence which checks apply, and a failed
reference makes the task's other samples pointless), then the samples of the probes that apply.
The second ask of ``repeat`` goes to the same models without the response cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cigeval._version import __version__
from cigeval.backends import CachedBackend
from cigeval.errors import InputError
from cigeval.evaluation import Evaluator
from cigeval.evaluation._sync import run_sync
from cigeval.probes.checks import MeasuredCheck, compare_pair, compare_spread, measure_checks
from cigeval.probes.probe_set import REFERENCE, Probe, ProbeSample, ProbeSet, build_probe_set
from cigeval.probes.report import ProbeReport, ProbeResult, SampleOutcome, SkippedProbe
from cigeval.probes.settings import ProbeConfig
from cigeval.score import Score

#: Called with each probe sample and its Score as it finishes (e.g. to write records).
OnScore = Callable[[ProbeSample, Score], None]


def uncached_evaluator(evaluator: Evaluator) -> Evaluator:
    """An evaluator asking the same models with the same settings, but never answering from
    the response cache (its backends are unwrapped from :class:`CachedBackend`)."""
    backends = [b.inner if isinstance(b, CachedBackend) else b for b in evaluator.backends]
    return Evaluator(
        backends,
        config=evaluator.config,
        run_config=evaluator.run_config,
        ensemble=evaluator.ensemble,
    )


class _Run:
    """One probe run: evaluates samples on demand and keeps their scores by key."""

    def __init__(
        self,
        evaluator: Evaluator,
        fresh: Evaluator,
        probe_set: ProbeSet,
        concurrency: int,
        on_score: OnScore | None,
    ) -> None:
        self.evaluator = evaluator
        self.fresh = fresh
        self.probe_set = probe_set
        self.semaphore = asyncio.Semaphore(concurrency)
        self.on_score = on_score
        self.scores: dict[str, Score] = {}

    async def _one(self, item: ProbeSample) -> None:
        async with self.semaphore:
            evaluator = self.fresh if item.fresh else self.evaluator
            score = await evaluator.evaluate_async(item.sample)
        self.scores[item.key] = score
        if self.on_score is not None:
            self.on_score(item, score)

    async def evaluate(self, keys: list[str]) -> None:
        """Evaluate the samples of ``keys`` not evaluated yet, concurrently."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.scores]
        await asyncio.gather(*(self._one(self.probe_set.samples[k]) for k in todo))

    def outcome(self, key: str) -> SampleOutcome:
        """The outcome of an evaluated sample."""
        return SampleOutcome.from_score(self.scores[key], self.probe_set.samples[key].fresh)


def _reference_key(probe: Probe) -> str:
    return probe.reference or f"{probe.task}/{REFERENCE}"


def _result(
    probe: Probe,
    measured: list[MeasuredCheck],
    run: _Run,
    settings: ProbeConfig,
) -> ProbeResult:
    """The result of a probe whose samples were all evaluated."""
    fields: dict[str, Any] = {
        "id": probe.id,
        "task": probe.task,
        "kind": probe.kind,
        "group": probe.group,
        "description": probe.description,
        "expected": "; ".join(m.check.describe() for m in measured),
        "fingerprint": probe.fingerprint,
    }
    if probe.reference is not None:
        fields["reference"] = run.outcome(probe.reference)
        fields["probe"] = run.outcome(probe.samples[0])
        involved = [fields["reference"], fields["probe"]]
    else:
        fields["samples"] = [run.outcome(k) for k in probe.samples]
        involved = fields["samples"]
    failed = [o for o in involved if o.status == "error"]
    if probe.reference is not None and failed:
        error = "; ".join(f"sample {o.sample_id}: {o.error}" for o in failed)
        return ProbeResult(status="error", passed=False, error=error, **fields)
    try:
        if probe.reference is not None:
            checks = [
                compare_pair(m, fields["reference"], fields["probe"], settings) for m in measured
            ]
        else:
            checks = [compare_spread(m, involved, settings) for m in measured]
    except ValueError as exc:
        return ProbeResult(status="error", passed=False, error=str(exc), **fields)
    passed = all(c.passed for c in checks)
    return ProbeResult(
        status="passed" if passed else "failed", passed=passed, checks=checks, **fields
    )


def _error_result(probe: Probe, error: str) -> ProbeResult:
    return ProbeResult(
        id=probe.id,
        task=probe.task,
        kind=probe.kind,
        group=probe.group,
        description=probe.description,
        expected="; ".join(c.describe() for c in probe.checks),
        status="error",
        passed=False,
        error=error,
        fingerprint=probe.fingerprint,
    )


def _skipped(probe: Probe, reason: str) -> SkippedProbe:
    return SkippedProbe(id=probe.id, task=probe.task, kind=probe.kind, reason=reason)


async def run_probe_set(
    evaluator: Evaluator,
    probe_set: ProbeSet,
    settings: ProbeConfig | None = None,
    *,
    bypass_cache: bool = False,
    concurrency: int | None = None,
    on_score: OnScore | None = None,
) -> ProbeReport:
    """Judge every sample of ``probe_set`` with ``evaluator`` and report the probes.

    ``bypass_cache`` asks every sample afresh (for drift checks: a cached answer would hide a
    changed model). ``concurrency`` defaults to the evaluator's run config. Probes whose
    inputs the rubric does not take, or none of whose checks the rubric's scores can measure,
    are listed in ``skipped``. A sample that ends in error makes its probes ``error`` (not
    passed); it never stops the run.
    """
    settings = settings or ProbeConfig()
    fresh = uncached_evaluator(evaluator)
    run = _Run(
        fresh if bypass_cache else evaluator,
        fresh,
        probe_set,
        concurrency or evaluator.run_config.concurrency,
        on_score,
    )
    rubric = evaluator.rubric
    skipped: list[SkippedProbe] = []
    probes: list[Probe] = []
    for probe in probe_set.probes:
        try:
            rubric.validate(probe_set.samples[_reference_key(probe)].sample)
        except InputError as exc:
            skipped.append(_skipped(probe, f"the {rubric.name} rubric does not take it: {exc}"))
            continue
        probes.append(probe)
    await run.evaluate([_reference_key(p) for p in probes])
    results: dict[str, ProbeResult] = {}
    measured: dict[str, list[MeasuredCheck]] = {}
    for probe in probes:
        reference = run.outcome(_reference_key(probe))
        if reference.status == "error":
            results[probe.id] = _error_result(
                probe, f"reference sample {reference.sample_id}: {reference.error}"
            )
            continue
        found = measure_checks(probe.checks, rubric.name, set(reference.sub_scores))
        if not found:
            wanted = ", ".join(c.target for c in probe.checks)
            skipped.append(_skipped(probe, f"the {rubric.name} rubric reports no {wanted} score"))
            continue
        measured[probe.id] = found
    await run.evaluate([k for p in probes if p.id in measured for k in p.samples])
    for probe in probes:
        if probe.id in measured:
            results[probe.id] = _result(probe, measured[probe.id], run, settings)
    ordered = [results[p.id] for p in probes if p.id in results]
    first = next(iter(run.scores.values()), None)
    return ProbeReport.build(
        ordered,
        skipped,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        cigeval_version=__version__,
        judge=first.judge if first is not None and first.judge else evaluator.judge_identity,
        rubric=evaluator.config.rubric,
        settings=settings.model_dump(),
        config=first.config if first is not None else evaluator.config.record(),
        probe_set=str(probe_set.folder),
    )


def run_probes(
    model: Any,
    folder: str | Path,
    *,
    tasks: Iterable[str] | None = None,
    kinds: Iterable[str] | None = None,
    settings: ProbeConfig | None = None,
    bypass_cache: bool = False,
    **evaluator_options: Any,
) -> ProbeReport:
    """Build the probe set in ``folder`` and run it on ``model`` (any judge
    :class:`~cigeval.Evaluator` takes, a list for an ensemble); ``evaluator_options`` go to
    the Evaluator (``rubric="viescore"``, ``run_config=...``, ``base_url=...``)::

        report = run_probes("openai:gpt-4o-2024-05-13", "probes", tasks=["text_guided_ie"])
        report.pass_rate, report.by_kind
    """
    probe_set = build_probe_set(folder, tasks, kinds)
    evaluator = Evaluator(model, **evaluator_options)

    async def run() -> ProbeReport:
        try:
            return await run_probe_set(evaluator, probe_set, settings, bypass_cache=bypass_cache)
        finally:
            await evaluator.aclose()

    return run_sync(run())
