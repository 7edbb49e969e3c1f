"""Which prompts produced a number (issue 42): records, summary and report name the prompt
set; a ``--prompt-dir`` lacking a template the run needs is refused (exit 2, naming it); a
default run says once, in the caller's words, that its prompts are paraphrases."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cigeval import Evaluator, RunConfig
from cigeval.backends import ScriptedBackend
from cigeval.cli import main
from cigeval.errors import ConfigError
from cigeval.prompts.prompt_set import folder_sha256
from cigeval.report.provenance import run_provenance
from cigeval.results.jsonl import read_records
from cigeval.results.run import load_run
from cigeval.sample import sample_from_dict
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl
from tests.official_stand_in import write_stand_in

NO_CACHE = RunConfig(use_cache=False, preflight=False)
CLONE = os.environ.get("CIGEVAL_OFFICIAL_CLONE")


@pytest.fixture
def official_dir(tmp_path: Path) -> Path:
    """A folder ``cigeval official-prompts`` wrote (from the clone where one is given)."""
    clone = CLONE or str(write_stand_in(tmp_path / "clone"))
    out = tmp_path / "official-prompts"
    assert main(["official-prompts", clone, "-o", str(out)]) == 0
    return out


@pytest.fixture
def samples(tmp_path: Path) -> list[dict[str, Any]]:
    return seven_task_samples(tmp_path / "images")[:2]


def judged(samples: list[dict[str, Any]], tmp_path: Path, **config: Any) -> list[Any]:
    evaluator = Evaluator(ScriptedBackend(rule_judge()), run_config=NO_CACHE, **config)
    base = tmp_path / "images"
    return [evaluator.evaluate(sample_from_dict(s, base_dir=base)) for s in samples]


def paraphrase_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "paraphrases" in r.getMessage()]


def test_a_default_run_names_its_prompts_and_says_once_in_pythons_words(
    samples, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        scores = judged(samples, tmp_path) + judged(samples, tmp_path)
    assert {s.provenance["prompt_set"] for s in scores} == {"paraphrase"}
    assert {s.provenance["judges"][0]["prompt_set"] for s in scores} == {"paraphrase"}
    (warning,) = paraphrase_warnings(caplog)  # two Evaluators, said once
    assert "prompt_dir='DIR'" in warning and "method='paper'" in warning
    assert "--" not in warning and "cigeval official-prompts CLONE -o DIR" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        extended = judged(samples[:1], tmp_path, method="extended")
    assert extended[0].provenance["prompt_set"] == "cigeval"
    assert paraphrase_warnings(caplog) == []


def test_an_official_folder_is_named_with_its_hash_and_an_edited_one_is_custom(
    samples, tmp_path: Path, official_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        (score,) = judged(samples[:1], tmp_path, prompt_dir=str(official_dir))
    assert score.status == "ok", score.error
    digest = folder_sha256(official_dir)[:16]
    assert score.provenance["prompt_set"] == f"official:{digest}"
    assert paraphrase_warnings(caplog) == []
    edited = tmp_path / "edited"
    shutil.copytree(official_dir, edited)
    focus = edited / "paper_tool_focus.txt"
    focus.write_text(focus.read_text() + " ")
    (score,) = judged(samples[:1], tmp_path, prompt_dir=str(edited))
    assert score.provenance["prompt_set"] == f"custom:{folder_sha256(edited)[:16]}"


def test_a_prompt_dir_missing_a_template_is_refused_naming_it(
    tmp_path: Path, official_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (official_dir / "paper_judge_text_guided_ie_over_editing.txt").unlink()
    with pytest.raises(ConfigError, match=r"paper_judge_text_guided_ie_over_editing\.txt"):
        Evaluator(ScriptedBackend(rule_judge()), run_config=NO_CACHE, prompt_dir=str(official_dir))
    samples = write_jsonl(tmp_path / "s.jsonl", seven_task_samples(tmp_path / "images")[:1])
    argv = ["evaluate", str(samples), "--model", "openai:judge@http://127.0.0.1:9/v1"]
    argv += ["--out", str(tmp_path / "r.jsonl"), "--prompt-dir", str(official_dir)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--prompt-dir" in err and "paper_judge_text_guided_ie_over_editing.txt" in err
    assert not (tmp_path / "r.jsonl").exists()
    # a folder of cigeval's own layout's templates only is fine where that layout is used
    jinja_only = tmp_path / "jinja-only"
    jinja_only.mkdir()
    Evaluator(
        ScriptedBackend(rule_judge()),
        run_config=NO_CACHE,
        method="extended",
        prompt_dir=str(jinja_only),
    )


def test_the_command_line_says_it_in_flags_and_the_summary_and_report_name_the_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = write_jsonl(
        tmp_path / "images" / "s.jsonl", seven_task_samples(tmp_path / "images")[:2]
    )
    out = tmp_path / "r.jsonl"
    with FakeOpenAIServer(rule_judge()) as server, caplog.at_level(logging.WARNING):
        argv = ["evaluate", str(samples), "--model", f"openai:judge@{server.base_url}"]
        assert main([*argv, "--out", str(out), "--tools", "Difference,Scene Graph"]) == 0
    (warning,) = paraphrase_warnings(caplog)
    assert "--prompt-dir DIR" in warning and "--method paper" in warning
    assert "prompt_dir=" not in warning
    (graphs,) = [r.getMessage() for r in caplog.records if "scene graphs" in r.getMessage()]
    assert "--scene-graph-model openai:gpt-4o-2024-05-13" in graphs
    err = capsys.readouterr().err
    assert "prompts: paraphrase (cigeval's paraphrases of the official prompts, 2 samples)" in err
    records = list(read_records(out))
    assert {r["provenance"]["prompt_set"] for r in records} == {"paraphrase"}
    header = dict(run_provenance(load_run(out)))
    assert header["prompt set"] == "paraphrase"
    assert header["sampling"].startswith("provider default")


@pytest.mark.parametrize(
    ("tools", "shown"),
    [
        (None, ["Highlight", "SceneGraph", "MaskFocus"]),
        (("Difference", "Scene Graph"), ["SceneGraph", "MaskFocus"]),
        (("Scene Graph", "OCR"), ["SceneGraph", "OCR"]),
    ],
)
def test_the_planner_is_shown_exactly_the_offered_tools(
    samples, tmp_path: Path, tools: tuple[str, ...] | None, shown: list[str]
) -> None:
    from cigeval.testing import request_text
    from cigeval.tools.registry import TOOLS

    backend = ScriptedBackend(rule_judge())
    config: dict[str, Any] = {} if tools is None else {"tools": tools}
    with TOOLS.scoped():  # OCR joins the registry when named
        evaluator = Evaluator(backend, run_config=NO_CACHE, **config)
        score = evaluator.evaluate(sample_from_dict(samples[1], base_dir=tmp_path / "images"))
    (plan,) = [t for t in map(request_text, backend.requests) if "### Task:" in t]
    listed = [line.split("**")[1] for line in plan.splitlines() if "**" in line]
    assert listed == shown
    assert " or ".join(shown) + " or None" in plan
    for name in {"Highlight", "SceneGraph", "MaskFocus", "OCR"} - set(shown):
        assert name not in plan
    departure = score.provenance.get("planner_tools")
    if tools is None:
        assert departure is None
    else:
        assert departure.startswith(", ".join(shown)) and "the official prompt lists" in departure
