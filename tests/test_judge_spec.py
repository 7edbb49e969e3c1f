"""JudgeSpec: one frozen value describes a judge, and an Evaluator is built from it."""

from __future__ import annotations

import dataclasses

import pytest

import cigeval
from cigeval import ConfigError, EnsembleConfig, RunConfig, ScriptedBackend
from cigeval.config import JudgeSpec
from cigeval.evaluation import Evaluator as Judge
from cigeval.testing import rule_judge


def test_an_evaluator_is_its_spec_and_is_built_again_from_it() -> None:
    models = [
        ScriptedBackend(rule_judge(), name="a"),
        ScriptedBackend(rule_judge(), name="b"),
    ]
    run_config = RunConfig(concurrency=3, use_cache=False)
    first = cigeval.Evaluator(
        models, rubric="viescore", run_config=run_config, ensemble=EnsembleConfig(combine="median")
    )
    spec = first.spec
    assert spec.models == tuple(models)
    assert (spec.config.rubric, spec.run_config, spec.ensemble.combine) == (
        "viescore", run_config, "median",
    )  # fmt: skip
    assert (first.config, first.run_config, first.ensemble) == (
        spec.config, spec.run_config, spec.ensemble,
    )  # fmt: skip
    again = cigeval.Evaluator.from_spec(spec)
    assert type(again) is cigeval.Evaluator and hasattr(again, "run")
    assert again.spec == spec
    assert again.fingerprint == first.fingerprint
    # the judge alone (samples in, Scores out) is built from it the same way, without `run`
    judge = Judge.from_spec(spec)
    assert judge.fingerprint == first.fingerprint and not hasattr(judge, "run")


def test_a_spec_is_frozen_and_needs_a_model() -> None:
    spec = JudgeSpec.of("openai:judge@http://127.0.0.1:9/v1")
    assert spec.models == ("openai:judge@http://127.0.0.1:9/v1",) and spec.base_url is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.base_url = "http://elsewhere/v1"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="at least one model"):
        JudgeSpec.of([])
    with pytest.raises(ConfigError, match="at least one model"):
        cigeval.Evaluator([])
