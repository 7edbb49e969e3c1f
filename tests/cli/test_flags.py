"""Command-line flags come from the config fields: one default, one description, one check."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from cigeval.cli import build_parser, main
from cigeval.cli._flags import _fields
from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
from cigeval.engines import EngineConfig
from cigeval.probes.settings import ProbeConfig
from cigeval.results import read_records
from cigeval.serve.settings import ServeConfig
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from cigeval.training.config import FinetuneConfig
from tests.cli_support import evaluate_cli


def _evaluate_help() -> str:
    """``cigeval evaluate --help-all``: every flag, grouped."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "--help-all"])
    return printed.getvalue()


@pytest.mark.parametrize("model", [EvalConfig, RunConfig, EnsembleConfig])
def test_every_flagged_field_is_a_flag_with_the_fields_default(model: type) -> None:
    text = "".join(_evaluate_help().split())  # help lines wrap anywhere, even at hyphens
    defaults = model()
    for path, field in _fields(model):
        flag = field.json_schema_extra["flag"]
        assert flag in text
        value = defaults
        for part in path.split("."):
            value = getattr(value, part)
        if field.json_schema_extra.get("by_method"):
            assert "(default:setby--method)" in text, flag
        elif isinstance(value, int | float | str) and not isinstance(value, bool):
            assert f"(default:{value})" in text, flag


SETTINGS = [
    EvalConfig,
    RunConfig,
    EnsembleConfig,
    EngineConfig,
    FinetuneConfig,
    ProbeConfig,
    ServeConfig,
]


@pytest.mark.parametrize("model", SETTINGS)
def test_descriptions_describe_the_field_not_its_flag(model: type) -> None:
    for path, field in _fields(model):
        assert "--" not in (field.description or ""), path
        assert not (field.description or "").startswith(("do not", "skip", "leave")), path


def test_the_help_shows_named_fields_as_flags_and_says_what_a_negating_flag_turns_off() -> None:
    text = " ".join(_evaluate_help().split()).replace("- ", "-")
    assert "--no-cache do not use the response cache" in text
    assert "--no-trace do not keep the trace in the records" in text
    assert "(the extra ones at --ensemble-temperature)" in text
    assert "when --samples-per-model > 1" in text
    assert "what --diff-min-area measures" in text
    assert "`" not in text


def test_values_given_on_the_command_line_reach_the_recorded_config(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    out = tmp_path / "r.jsonl"
    extra = ["--diff-blur", "3", "--box-threshold", "0.2", "--max-rounds", "2"]
    extra += ["--tools", "Difference", "--no-cache", "--timeout", "5", "--seed", "7"]
    with FakeOpenAIServer(rule_judge()) as server:
        assert evaluate_cli(server, samples, out, *extra) == 0
        sent = server.requests[0].body
    (record,) = read_records(out)
    config = record["config"]
    assert config["difference"]["blur_kernel"] == 3
    assert config["difference"]["threshold"] == 45  # not given: the paper method's
    assert config["method"] == "paper"
    assert config["grounding"]["box_threshold"] == 0.2
    assert config["max_rounds"] == 2 and config["tools"] == ["Difference"]
    assert sent["seed"] == 7


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-rounds", "0"], "--max-rounds: Input should be greater than or equal to 1"),
        (["--diff-threshold", "300"], "--diff-threshold: Input should be less than or equal"),
        (["--combine", "vote"], "invalid choice: 'vote'"),
        (["--tools", "Grounding,Nope"], "unknown tool 'Nope'; choose one of: "),
        (["--rubric", "nope"], "unknown rubric 'nope'; choose one of: cigeval"),
    ],
)
def test_a_bad_value_names_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    argv = ["evaluate", str(samples), "--model", "openai:m@http://127.0.0.1:9/v1"]
    with pytest.raises(SystemExit) if "invalid choice" in message else _no_raise():
        status = main([*argv, "--out", str(tmp_path / "r.jsonl"), *flags])
        assert status == 2
    assert message in capsys.readouterr().err


def test_a_check_across_flags_is_told_without_a_flag_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error of the whole config (no field) has no flag to name: its message alone, not
    after an empty flag and pydantic's 'Value error, '."""
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path)[:1])
    argv = ["evaluate", str(samples), "--model", "openai:m@http://127.0.0.1:9/v1"]
    flags = ["--reply-parsing", "official", "--max-rounds", "2"]
    assert main([*argv, "--out", str(tmp_path / "r.jsonl"), *flags]) == 2
    err = capsys.readouterr().err
    assert "error: reply_parsing official reads replies as the official code" in err, err
    assert "Value error" not in err, err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_meta_average_and_its_deprecated_alias_agree(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["meta", "imagenhub", "--human", "--round", "4", "--json"]
    assert main([*base, "--average", "fisher_z"]) == 0
    new = json.loads(capsys.readouterr().out)
    assert main([*base, "--aggregate", "fisher_z"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == new and new["averaging"] == "fisher_z"
    assert "--aggregate is deprecated; use --average" in captured.err


def test_the_retry_backoff_has_one_name_from_the_flag_to_the_call_policy() -> None:
    from cigeval.backends.policy import CallPolicy

    config = RunConfig(retry_backoff_s=0.2)
    assert CallPolicy.from_run_config(config).retry_backoff_s == 0.2
    assert "retry_backoff_s" in CallPolicy.__dataclass_fields__


def test_a_misspelt_flag_setting_is_refused_when_the_field_is_declared() -> None:
    from cigeval._flag import flag

    assert flag("--limit", metavar="N") == {"flag": "--limit", "metavar": "N"}
    with pytest.raises(TypeError, match="metvar"):
        flag("--limit", metvar="N")
