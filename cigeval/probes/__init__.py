"""Judge probes: does a live judge look at the images?

A probe set of synthetic images with known content (coloured shapes, rendered text) is drawn
for every task; pairs of samples with an expected direction (a blank output must score lower,
a JPEG re-encode must score the same, ...) run through the normal evaluation path, and the
report says per task and per probe kind whether the judge moved the right way. See
docs/probes.md.

- :func:`build_probe_set` draws and writes the probe set; :func:`run_probe_set` judges it with
  an :class:`~cigeval.Evaluator`; :func:`run_probes` does both in one call.
- :class:`ProbeReport` is the report (``load_report`` reads one back); :func:`render_table`
  prints it; :func:`compare_reports` tells what changed since an older report (drift).
"""

from cigeval.probes.checks import RUBRIC_FOCUS
from cigeval.probes.drift import Drift, compare_reports, render_drift
from cigeval.probes.kinds import PROBE_KINDS, Check, ProbeKind, kind_names
from cigeval.probes.probe_set import Probe, ProbeSample, ProbeSet, build_probe_set, probe_tasks
from cigeval.probes.report import (
    CheckResult,
    ProbeReport,
    ProbeResult,
    SampleOutcome,
    SkippedProbe,
    Tally,
    load_report,
)
from cigeval.probes.runner import run_probe_set, run_probes, uncached_evaluator
from cigeval.probes.settings import ProbeConfig, ProbeSettings
from cigeval.probes.table import render_table

__all__ = [
    "PROBE_KINDS",
    "RUBRIC_FOCUS",
    "Check",
    "CheckResult",
    "Drift",
    "Probe",
    "ProbeConfig",
    "ProbeKind",
    "ProbeReport",
    "ProbeResult",
    "ProbeSample",
    "ProbeSet",
    "ProbeSettings",
    "SampleOutcome",
    "SkippedProbe",
    "Tally",
    "build_probe_set",
    "compare_reports",
    "kind_names",
    "load_report",
    "probe_tasks",
    "render_drift",
    "render_table",
    "run_probe_set",
    "run_probes",
    "uncached_evaluator",
]
