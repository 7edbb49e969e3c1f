"""Preflight: a judge or tool that cannot work ends the run at once, with exit 2 and the fix.

Every check runs for real: OpenAI-compatible servers on 127.0.0.1 (or a port nobody listens
on), a missing local model, an unknown hub id offline, GroundingDINO weights that are missing
or a tiny random checkpoint built here.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator
from cigeval.cli import main
from cigeval.errors import PreflightError
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from cigeval.tools import grounding as grounding_module
from tests.cli_support import evaluate_cli

NO_GROUNDING = ("--tools", "Difference,Scene Graph")


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:3])


def closed_port_url() -> str:
    """The URL of a port on 127.0.0.1 nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run_cli(*argv: str) -> int:
    return main(["evaluate", *argv, "--quiet"])


def test_unreachable_server_ends_the_run_with_exit_2_within_seconds(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    started = time.monotonic()
    status = run_cli(
        str(samples), "--model", f"openai:judge@{closed_port_url()}", "--out", str(out)
    )
    elapsed = time.monotonic() - started
    assert status == 2
    assert elapsed < 5, f"took {elapsed:.1f} s"
    err = capsys.readouterr().err
    assert "preflight failed" in err and "cannot be reached" in err
    assert "--base-url" in err and "--no-preflight" in err
    assert "Traceback" not in err
    assert not out.exists(), "nothing is written before the checks pass"


def test_a_model_name_the_server_does_not_serve_is_exit_2_naming_what_it_serves(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(rule_judge(), served_models=["qwen2-vl-7b", "llava"]) as server:
        status = evaluate_cli(server, samples, tmp_path / "r.jsonl", *NO_GROUNDING, preflight=True)
        assert server.requests == []  # no chat request was made
    assert status == 2
    err = capsys.readouterr().err
    assert "does not serve the model 'judge-model'" in err
    assert "llava, qwen2-vl-7b" in err


def test_a_served_name_passes_and_the_run_goes_on(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(rule_judge(), served_models=["judge-model"]) as server:
        status = evaluate_cli(server, samples, tmp_path / "r.jsonl", *NO_GROUNDING, preflight=True)
        assert server.model_list_requests == 1
    assert status == 0


def test_without_a_models_route_a_one_token_chat_request_checks_the_server(
    samples: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer(rule_judge(), models_status=404) as server:
        status = evaluate_cli(server, samples, tmp_path / "r.jsonl", *NO_GROUNDING, preflight=True)
        probe = server.requests[0]
    assert status == 0
    assert probe.body["max_tokens"] == 1 and probe.body["model"] == "judge-model"


def test_a_chat_route_that_is_not_there_is_exit_2(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(rule_judge(), models_status=404) as server:
        server.fail(0, "400")  # proves the server answers: the run goes on
        assert (
            evaluate_cli(server, samples, tmp_path / "a.jsonl", *NO_GROUNDING, preflight=True) == 0
        )
    with FakeOpenAIServer(rule_judge(), models_status=404) as server:
        server.fail(0, "404")  # no such model, or no chat route at this URL
        assert (
            evaluate_cli(server, samples, tmp_path / "b.jsonl", *NO_GROUNDING, preflight=True) == 2
        )
        assert len(server.requests) == 1
    err = capsys.readouterr().err
    assert "HTTP 404" in err and "usually ends in /v1" in err


def test_a_refused_key_is_exit_2(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(rule_judge(), models_status=401) as server:
        assert (
            evaluate_cli(server, samples, tmp_path / "r.jsonl", *NO_GROUNDING, preflight=True) == 2
        )
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_every_replica_and_every_judge_is_checked(samples: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(rule_judge()) as up:
        both = f"openai:judge@{up.base_url},{closed_port_url()}"
        argv = [str(samples), "--model", both, "--out", str(tmp_path / "r.jsonl")]
        assert run_cli(*argv, *NO_GROUNDING) == 2
        argv = [str(samples), "--model", f"openai:judge@{up.base_url}"]
        argv += ["--model", f"openai:other@{closed_port_url()}", "--out", str(tmp_path / "s")]
        assert run_cli(*argv, *NO_GROUNDING) == 2


def test_no_preflight_skips_the_checks(samples: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(rule_judge(), served_models=["something-else"]) as server:
        assert evaluate_cli(server, samples, tmp_path / "r.jsonl", *NO_GROUNDING) == 0
        assert server.model_list_requests == 0


def test_missing_local_model_path_is_exit_2_at_once(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    argv = [str(samples), "--model", f"hf:{tmp_path / 'no-such-weights'}"]
    assert run_cli(*argv, "--out", str(tmp_path / "r.jsonl")) == 2
    assert time.monotonic() - started < 5
    assert "does not exist" in capsys.readouterr().err


def test_unknown_hub_model_offline_is_exit_2_within_seconds(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    started = time.monotonic()
    argv = [str(samples), "--model", "hf:no-such-org/no-such-model", *NO_GROUNDING]
    assert run_cli(*argv, "--out", str(tmp_path / "r.jsonl")) == 2
    assert time.monotonic() - started < 30  # most of it is importing transformers
    err = capsys.readouterr().err
    assert "preflight failed" in err and "no-such-org/no-such-model" in err
    assert "cigeval[hf]" in err


def test_missing_grounding_weights_are_exit_2_naming_every_way_out(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    missing = str(tmp_path / "no-grounding-weights")
    try:
        with FakeOpenAIServer(rule_judge()) as server:
            status = evaluate_cli(
                server,
                samples,
                tmp_path / "r.jsonl",
                "--grounding-checkpoint",
                missing,
                preflight=True,
            )
            assert server.requests == []
    finally:
        grounding_module.clear_detector_cache()
    assert status == 2
    err = capsys.readouterr().err
    assert "GroundingDINO checkpoint" in err and "no-grounding-weights" in err
    assert "--grounding-checkpoint" in err
    assert "--tools 'Difference,Scene Graph'" in err


def test_grounding_weights_that_load_pass_and_are_loaded_once(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transformers = pytest.importorskip("transformers")
    from tests.tiny_grounding import build_tiny_grounding_dino

    folder = tmp_path / "tiny-grounding"
    build_tiny_grounding_dino(folder)
    original = transformers.AutoModelForZeroShotObjectDetection.from_pretrained
    loads: list[str] = []

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(
        transformers.AutoModelForZeroShotObjectDetection, "from_pretrained", counting
    )
    grounding_module.clear_detector_cache()
    try:
        judge = rule_judge(tools={"prompt_following": "Grounding"})
        with FakeOpenAIServer(judge) as server:
            status = evaluate_cli(
                server,
                samples,
                tmp_path / "r.jsonl",
                "--grounding-checkpoint",
                str(folder),
                "--grounding-device",
                "cpu",
                preflight=True,
            )
    finally:
        grounding_module.clear_detector_cache()
    assert status == 0
    assert loads == [str(folder)]


def test_a_grounding_failure_without_preflight_costs_one_attempt_per_run(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    attempts: list[tuple[str, str]] = []
    original = grounding_module._load_uncached

    def counting(key: tuple[str, str]) -> Any:
        attempts.append(key)
        return original(key)

    monkeypatch.setattr(grounding_module, "_load_uncached", counting)
    many = write_jsonl(
        tmp_path / "many.jsonl",
        [{**seven_task_samples(tmp_path)[0], "id": f"t2i-{n}"} for n in range(6)],
    )
    grounding_module.clear_detector_cache()
    try:
        judge = rule_judge(tools={"prompt_following": "Grounding"})
        with FakeOpenAIServer(judge) as server:
            status = evaluate_cli(
                server, many, tmp_path / "r.jsonl", "--grounding-checkpoint", "./missing"
            )
    finally:
        grounding_module.clear_detector_cache()
    assert status == 1  # the sub-questions that needed Grounding are named errors
    assert len(attempts) == 1


def test_evaluator_preflight_from_python() -> None:
    with FakeOpenAIServer(rule_judge(), served_models=["judge"]) as server:
        evaluator = Evaluator(f"openai:judge@{server.base_url}", tools=())
        assert evaluator.preflight() == [f"judge openai:judge at {server.base_url}: ready"]
        wrong = Evaluator(f"openai:nope@{server.base_url}", tools=())
        with pytest.raises(PreflightError, match="does not serve the model 'nope'"):
            wrong.preflight()
    # Backends without a check of their own (scripted, langchain, yours) are skipped.
    scripted = Evaluator(__import__("cigeval").ScriptedBackend(rule_judge()), tools=())
    assert scripted.preflight() == []
