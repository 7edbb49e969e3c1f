"""Errors and notes name the option in the caller's words: the keyword or config field from
Python, the flag inside a ``cigeval`` command (:mod:`cigeval._caller`).

Each case triggers one message from a different place of the library, once from Python and
once within :func:`cigeval._caller.command_line` (what ``cigeval``'s ``main`` runs every
command in), and checks that the Python words hold the keyword and no ``--flag`` at all,
the command's words the flag. A last test scans the library for messages that name a flag
without asking :func:`in_callers_words`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from cigeval._caller import command_line

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _message(trigger: Callable[[], object]) -> str:
    """The text of what ``trigger`` raises (or returns, for a message it builds)."""
    try:
        result = trigger()
    except Exception as exc:  # each case names the error it expects below
        return getattr(exc, "message", None) or str(exc)
    return str(result)


def _max_tokens_cap() -> object:
    from cigeval.config import EvalConfig

    return EvalConfig(max_tokens=200, max_tokens_cap=100)


def _serve_queue() -> object:
    from cigeval.serve.settings import ServeConfig

    return ServeConfig(max_queue=4, max_items=512)


def _serve_fill() -> object:
    from cigeval.serve.settings import ServeConfig

    return ServeConfig(fill_unscored="half")


def _serve_bind() -> object:
    from cigeval.serve.settings import ServeConfig

    ServeConfig(host="0.0.0.0").check_bind()
    raise AssertionError("an open bind without a key was accepted")


def _serve_image_root() -> object:
    from cigeval.serve.inputs import prepare
    from cigeval.serve.models import ScoreItem
    from cigeval.serve.settings import ServeConfig

    item = ScoreItem.model_validate(
        {"task": "text_guided_ig", "prompt": "a cat", "image_paths": {"output": "a.png"}}
    )
    return prepare(item, 0, ServeConfig())


def _serve_body() -> object:
    from cigeval.serve.body import body_too_large

    raise body_too_large(1024)


def _expected_score_backend() -> object:
    from cigeval.backends import ScriptedBackend
    from cigeval.serve.expected import ExpectedScoreBackend

    return ExpectedScoreBackend(ScriptedBackend(['{"score": 5}']))


def _mcp_path() -> object:
    from cigeval.mcp_server.settings import McpConfig

    return McpConfig(path="mcp")


def _columns() -> object:
    from cigeval.hf_datasets.columns import ColumnMap

    return ColumnMap.parse("prompt")


def _one_generator() -> object:
    from cigeval.importers import folder_samples

    return folder_samples([("geneval", "a"), ("geneval", "b")], generator="g")


def _lenient() -> object:
    from cigeval.meta.cells import BadCell

    raise BadCell("ratings.tsv", 3, "SC", "x", "not a number").error()


def _calibrate_one_judge(tmp_path: Path) -> object:
    from cigeval.meta.calibrate.preferences import calibrate_preferences

    return calibrate_preferences([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "p.csv")


def _calibrate_no_scores() -> object:
    from cigeval.meta.calibrate.scores import calibrate_imagenhub

    return calibrate_imagenhub([])


def _mmrb2_benchmark(tmp_path: Path) -> object:
    from cigeval.meta.preferences.layouts import load_mmrb2

    return load_mmrb2(tmp_path / "judgements.json", None)


def _mixed_settings(tmp_path: Path) -> object:
    from cigeval.results.fingerprint import MixedSettings

    raise MixedSettings(tmp_path / "r.jsonl", 3, ["config.temperature"])


def _overwrite_non_results(tmp_path: Path) -> object:
    from cigeval.runs.guards import refuse_overwriting_non_results

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    refuse_overwriting_non_results(notes)
    raise AssertionError("a file of notes was taken for results")


def _finetune_both() -> object:
    from cigeval.training.config import FinetuneConfig

    return FinetuneConfig(effective_batch=8, gradient_accumulation=2)


def _finetune_lora_on_paper() -> object:
    from cigeval.training.config import FinetuneConfig

    return FinetuneConfig(recipe="paper", lora_rank=8)


def _ray_gpus() -> object:
    import sys
    import types

    from cigeval.engines.ray_engine import default_workers
    from cigeval.engines.settings import EngineConfig

    ray = types.ModuleType("ray")
    ray.cluster_resources = lambda: {"CPU": 4.0}  # type: ignore[attr-defined]
    saved = sys.modules.get("ray")
    sys.modules["ray"] = ray  # a cluster without GPUs, without starting Ray
    try:
        return default_workers(EngineConfig(engine="ray", ray_gpus_per_worker=1))
    finally:
        if saved is None:
            del sys.modules["ray"]
        else:
            sys.modules["ray"] = saved


#: (case, trigger, the command's words, the Python words)
CASES: list[tuple[str, Callable[..., object], str, str]] = [
    ("config cap", _max_tokens_cap, "--max-tokens (200)", "max_tokens (200)"),
    ("serve queue", _serve_queue, "--max-queue 4 is below --max-items 512", "max_queue=4"),
    ("serve fill", _serve_fill, "--fill-unscored takes", "fill_unscored takes"),
    ("serve bind", _serve_bind, "give --api-key KEY", "give api_key='KEY'"),
    ("serve image root", _serve_image_root, "no --image-root", "no image_root"),
    ("serve body", _serve_body, "(--max-body-bytes)", "(max_body_bytes)"),
    ("expected score", _expected_score_backend, "--score-mode expected", "score_mode='expected'"),
    ("mcp path", _mcp_path, "--path must start", "path must start"),
    ("dataset columns", _columns, "in --columns is not", "in columns= is not"),
    ("importers", _one_generator, "(one --from)", "(one (format, folder) pair)"),
    ("meta cells", _lenient, "(--lenient skips", "(lenient=True skips"),
    ("calibrate judge", _calibrate_one_judge, "one --scores", "scores=[one results file]"),
    ("calibrate scores", _calibrate_no_scores, "one --scores file", "one scores= file"),
    ("preferences", _mmrb2_benchmark, "with --benchmark", "with benchmark="),
    ("results settings", _mixed_settings, "--allow-mixed-settings", "allow_mixed_settings=True"),
    ("run guards", _overwrite_non_results, "--overwrite refuses", "overwrite=True refuses"),
    ("finetune batch", _finetune_both, "give --effective-batch or", "give effective_batch or"),
    ("finetune lora", _finetune_lora_on_paper, "to --recipe paper", "to recipe='paper'"),
    ("ray gpus", _ray_gpus, "--ray-gpus-per-worker 1", "EngineConfig.ray_gpus_per_worker"),
]


def _call(trigger: Callable[..., object], tmp_path: Path) -> str:
    takes_path = "tmp_path" in trigger.__code__.co_varnames[: trigger.__code__.co_argcount]
    return _message((lambda: trigger(tmp_path)) if takes_path else trigger)


@pytest.mark.parametrize(
    ("trigger", "flag", "keyword"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_python_callers_read_keywords(
    trigger: Callable[..., object], flag: str, keyword: str, tmp_path: Path
) -> None:
    message = _call(trigger, tmp_path)
    assert keyword in message, message
    assert not FLAG.search(message), message


@pytest.mark.parametrize(
    ("trigger", "flag", "keyword"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_commands_read_flags(
    trigger: Callable[..., object], flag: str, keyword: str, tmp_path: Path
) -> None:
    with command_line():
        message = _call(trigger, tmp_path)
    assert flag in message, message


def test_validation_errors_say_it_in_the_callers_words() -> None:
    """A pydantic validator's message is chosen where the settings are made."""
    with pytest.raises(ValidationError, match=r"must be at least max_tokens \(200\)"):
        _max_tokens_cap()
    with command_line(), pytest.raises(ValidationError, match=r"at least --max-tokens \(200\)"):
        _max_tokens_cap()


def test_a_command_says_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the real command line: ``cigeval calibrate`` with one labels file of pairs
    and two results files is told to give one ``--scores`` file."""
    from cigeval.cli.main import main

    pairs = tmp_path / "pairs.csv"
    pairs.write_text("id_a,id_b,preference\na,b,1\n")
    results = []
    for name in ("one", "two"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({"id": "a", "status": "ok", "score": 0.5}) + "\n")
        results += ["--scores", str(path)]
    status = main(["calibrate", "labels", *results, "--labels", str(pairs)])
    err = capsys.readouterr().err
    assert status != 0 and "give one --scores results file" in err, err


# --- the guard: messages outside cigeval/cli/ that name a flag without in_callers_words ---

LIBRARY = Path(__file__).resolve().parents[1] / "cigeval"

#: Strings that name a flag and are rightly not in the caller's words, by file and the start
#: of the string. Each says why: documentation (help, route summaries, metric help), a
#: message only a command can reach, or text the judge model reads.
ALLOWED = {
    # documentation: the shared keywords' help of evaluate() and friends
    ("evaluation/functions.py", "\ntools also takes the comma-separated string of --tools"),
    # an HTML comment marker, not a flag
    ("report/page.py", "<!--cg-data-->"),
    # OpenAPI route summaries of the server (documentation of its routes)
    ("serve/app.py", "Flow-GRPO's and EditScore's pickle bodies (--accept-pickle)"),
    ("serve/app.py", "EditScore's client's liveness check (--accept-pickle)"),
    # a Prometheus metric's help text (documentation of the metric)
    ("serve/metrics.py", "rewards filled in by --fill-unscored"),
    # only `cigeval serve-bench` prints it (cli/serve_bench.py)
    ("serve/bench.py", " judge call(s): these figures measure the cache"),
    # only `cigeval serve --replicas` reaches it (cli/serve.py), raising the CLI's UsageError
    ("serve/ray_app.py", "--replicas needs the ray-serve extra"),
    # sent to the judge model in the re-ask: the same words for every caller keep the
    # request, and so the response cache, the same from Python and from a command
    ("session.py", " characters long, more than --max-reply-chars allows ("),
    # Chrome's own command-line switches (the browser of the report tests)
    ("testing/browser.py", "--"),
}


def _flag_strings() -> list[tuple[str, int, str]]:
    """(file, line, text) of each string in cigeval/ outside cli/ that names a flag and is
    neither a docstring, a field's flag/description/help, nor an argument of
    in_callers_words (however deep)."""
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY).as_posix()
        if relative.startswith("cli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = node.body[0] if node.body else None
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    skipped.add(id(first.value))  # a docstring
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name in ("in_callers_words", "flag", "_flag"):
                    skipped.update(id(sub) for sub in ast.walk(node))
                for keyword in node.keywords:
                    if keyword.arg in ("description", "help"):
                        skipped.update(id(sub) for sub in ast.walk(keyword.value))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skipped
                and FLAG.search(node.value)
            ):
                found.append((relative, node.lineno, node.value))
    return found


def _allowed(relative: str, text: str) -> bool:
    return any(relative == where and text.startswith(start) for where, start in ALLOWED)


def test_messages_name_flags_only_in_the_callers_words() -> None:
    unwrapped = [
        f"cigeval/{where}:{line}: {text[:80]!r}"
        for where, line, text in _flag_strings()
        if not _allowed(where, text)
    ]
    assert not unwrapped, (
        "these strings name a --flag, which a Python caller cannot pass: word them with "
        "cigeval._caller.in_callers_words(flag, keyword), or add them to ALLOWED saying why:\n"
        + "\n".join(unwrapped)
    )


def test_the_guard_sees_an_unwrapped_flag() -> None:
    """The scan finds a flag in a raised message, and not one given to in_callers_words."""
    import tempfile

    source = (
        "def f(x):\n"
        '    """Docstrings may say --anything."""\n'
        '    raise ValueError(f"bad {x}; pass --foo-bar")\n'
        'def g():\n    return in_callers_words("--foo", "foo=")\n'
    )
    global LIBRARY
    saved = LIBRARY
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "m.py").write_text(source)
        LIBRARY = Path(folder)
        try:
            found = _flag_strings()
        finally:
            LIBRARY = saved
    assert [(where, line) for where, line, _ in found] == [("m.py", 3)]
