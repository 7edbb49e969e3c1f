"""The Python entry points as first-class as the command line: typed keywords that help()
lists, ``tools`` as the comma string of ``--tools``, advice in Python's words."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import cigeval
import cigeval.tools.grounding as grounding_module
from cigeval import EvalConfig, RunConfig, ScriptedBackend
from cigeval._caller import command_line
from cigeval.errors import ConfigError, PreflightError
from cigeval.sample import iter_samples_file, sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from cigeval.tools.grounding import GroundingTool

ENTRY_POINTS = [
    cigeval.evaluate,
    cigeval.evaluate_async,
    cigeval.evaluate_many,
    cigeval.evaluate_many_async,
]
NO_CACHE = RunConfig(use_cache=False, preflight=False)


@pytest.mark.parametrize("function", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_every_setting_is_a_typed_keyword_that_help_describes(function: Any) -> None:
    parameters = inspect.signature(function).parameters
    hints = typing.get_type_hints(function)
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())  # no **kwargs
    for name in ("config", "run_config", "base_url", "ensemble", "preflight"):
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
    doc = inspect.getdoc(function) or ""
    for name, field in EvalConfig.model_fields.items():
        parameter = parameters[name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None
        if name in ("tools", "grounding", "difference", "zoom", "rubric_options"):
            assert type(None) in typing.get_args(hints[name]), name  # wider than the field
        else:
            assert hints[name] == typing.Optional[field.annotation], name  # noqa: UP045
        assert f"\n{name}: " in doc, name
    assert 'tools="Difference,Scene Graph"' in doc


def test_tools_takes_the_comma_string_of_the_command_line(tmp_path: Path) -> None:
    record = next(r for r in seven_task_samples(tmp_path) if r["task"] == "mask_guided_ie")
    sample = sample_from_dict(record, base_dir=tmp_path)
    judge = ScriptedBackend(rule_judge(tools={"over_editing": "Difference"}))
    score = cigeval.evaluate(
        sample, model=judge, tools="Difference, Scene Graph", run_config=NO_CACHE
    )
    assert score.status == "ok", score.error
    assert score.config["tools"] == ["Difference", "Scene Graph"]
    assert {s.question_id: s.tool for s in score.sub_scores}["over_editing"] == "Difference"
    assert EvalConfig(tools="").tools == () and EvalConfig(tools=" OCR ,").tools == ("OCR",)


def test_an_unknown_tool_in_the_comma_string_is_named() -> None:
    with pytest.raises(ConfigError, match="Nope"):
        cigeval.evaluate({}, model=ScriptedBackend(rule_judge()), tools="Difference,Nope")


def _grounding_failure(monkeypatch: pytest.MonkeyPatch, cause: str) -> None:
    def fails(checkpoint: str, device: str) -> Any:
        raise ConfigError("cannot load") from OSError(cause)

    monkeypatch.setattr(grounding_module, "_load", fails)


LONG_CAUSE = (
    "We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
    "them in the cached files. Check your internet connection or see how to run the library "
    "in offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'."
)


def test_the_grounding_error_from_python_names_python_keywords_and_the_whole_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _grounding_failure(monkeypatch, LONG_CAUSE)
    with pytest.raises(PreflightError) as raised:
        GroundingTool().preflight(EvalConfig(tools=("Grounding", "Difference", "Scene Graph")))
    message = str(raised.value)
    assert f"({LONG_CAUSE})." in message  # whole, not cut mid-sentence
    assert 'Pass grounding={"checkpoint": DIR}' in message
    assert message.endswith(
        'offer the agent tools without Grounding: tools=["Difference", "Scene Graph"]'
    )
    assert "--" not in message.replace(LONG_CAUSE, "")


def test_the_same_error_inside_a_command_names_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    _grounding_failure(monkeypatch, LONG_CAUSE)
    with command_line(), pytest.raises(PreflightError) as raised:
        GroundingTool().preflight(EvalConfig(tools=("Grounding", "Difference", "Scene Graph")))
    message = str(raised.value)
    assert "Pass --grounding-checkpoint DIR" in message
    assert message.endswith("--tools 'Difference,Scene Graph'")
    assert "tools=[" not in message


def test_an_invalid_sample_line_names_its_sample_once(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [{"id": "x1", "task": "no_such_task", "images": {"output": "o.png"}}],
    )
    (line,) = iter_samples_file(path)
    score = cigeval.evaluate(line, model=ScriptedBackend(rule_judge()), run_config=NO_CACHE)
    assert score.status == "error"
    assert score.error is not None and score.error.startswith("sample 'x1': unknown task")
    assert score.error.count("'x1'") == 1
