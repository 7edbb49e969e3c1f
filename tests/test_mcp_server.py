"""``cigeval mcp`` from an agent's side: the official ``mcp`` SDK's clients (a stdio session
that starts ``cigeval mcp`` itself, and the streamable HTTP client) list the tools and get
judgements from a local OpenAI-compatible judge; the image root refuses what lies outside."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from cigeval.errors import InputError
from cigeval.mcp_server.images import ImageRoot
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image
from tests.calibration.synthetic import linear_calibration


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _shown(server: FakeOpenAIServer) -> set[str]:
    """The sha256 of every image the judge server received."""
    return {
        _sha(base64.b64decode(url.split(",", 1)[1]))
        for request in server.requests
        for url in request.image_urls()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The image root: an edit (a blue square turned red) and a file outside it, linked in."""
    folder = tmp_path / "root"
    folder.mkdir()
    make_image(folder / "source.png", "white", (10, 10, 30, 30))
    make_image(folder / "edited.png", "white", (10, 10, 30, 30), "red")
    make_image(folder / "mask.png", "black", (8, 8, 32, 32), "white")
    make_image(tmp_path / "secret.png", "black")
    (folder / "escape.png").symlink_to(tmp_path / "secret.png")
    (folder / "inside.png").symlink_to(folder / "edited.png")
    return folder


def test_the_image_root_reads_what_lies_under_it_and_refuses_the_rest(
    root: Path, tmp_path: Path
) -> None:
    images = ImageRoot(root, max_bytes=10_000)
    edited = (root / "edited.png").read_bytes()
    assert images.read("edited.png", "images.output") == edited
    assert images.read(str(root / "edited.png"), "images.output") == edited
    assert images.read("inside.png", "images.output") == edited  # a link that stays inside
    data_uri = "data:image/png;base64," + base64.b64encode(edited).decode()
    assert images.read(data_uri, "images.output") == edited
    os.mkfifo(root / "pipe.png")
    (root / "big.png").write_bytes(b"x" * 10_001)
    refused = {
        "../secret.png": "outside the image root",
        str(tmp_path / "secret.png"): "outside the image root",
        "escape.png": "outside the image root",  # a link pointing out
        "pipe.png": "not a regular file",
        ".": "not a regular file",
        "big.png": "over the limit of 10000 bytes",
        "missing.png": "no such file",
        "https://example.com/a.png": "is a URL",
        "data:text/plain;base64,aGk=": "data:image/<type>;base64",
        "data:image/png;base64,@@@": "base64 is not valid",
    }
    for given, problem in refused.items():
        with pytest.raises(InputError, match=problem) as raised:
            images.read(given, "images.source")
        assert str(raised.value).startswith("images.source: ")


async def test_a_judge_server_started_after_the_mcp_server_serves_the_next_call(
    root: Path, tmp_path: Path
) -> None:
    """The first call finds no judge: a tool error naming the preflight's problem, not kept
    for good (a long-lived server outlives a judge being started)."""
    from cigeval import Evaluator, RunConfig
    from cigeval.errors import PreflightError
    from cigeval.mcp_server.tools import JudgeTools

    port = _free_port()
    evaluator = Evaluator(
        f"openai:judge@http://127.0.0.1:{port}/v1",
        tools="",
        run_config=RunConfig(use_cache=False, max_retries=0),
    )
    tools = JudgeTools(evaluator, ImageRoot(root, max_bytes=10**6))
    images = {"output": "edited.png"}
    with pytest.raises(PreflightError, match=f"127.0.0.1:{port}"):
        await tools.judge_image("text_guided_ig", images, text={"prompt": "a red square"})
    with FakeOpenAIServer(rule_judge(default_score=9), port=port):
        result = await tools.judge_image("text_guided_ig", images, text={"prompt": "a red square"})
    assert result.status == "ok" and result.score == pytest.approx(0.9)
    with pytest.raises(InputError, match="missing text field 'prompt'"):
        await tools.judge_image("text_guided_ig", images)
    await evaluator.aclose()


def _judge_args(url: str, root: Path, tmp_path: Path) -> list[str]:
    return [
        "mcp",
        "--model",
        f"openai:judge@{url}",
        "--image-root",
        str(root),
        "--tools",
        "Difference",
        "--image-encoding",
        "original",  # the files' bytes, so the judge's side can be hashed
        "--cache-dir",
        str(tmp_path / "cache"),
    ]


def _environment() -> dict[str, str]:
    """What ``cigeval mcp`` needs of this environment: this checkout, offline."""
    return {
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parents[1])),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _edit_arguments(output: str) -> dict[str, Any]:
    return {
        "task": "mask_guided_ie",  # the paper's method runs Difference in this task
        "instruction": "make the blue square red",
        "images": {"source": "source.png", "mask": "mask.png", "output": output},
        "id": "edit-1",
    }


def _documented_client(judge_url: str, tmp_path: Path, cwd: Path) -> StdioServerParameters:
    """The server entry of docs/mcp.md's client configuration, started in ``cwd`` (its image
    root), its judge the local one, with this test's settings added."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "mcp.md").read_text()
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block is not None, "docs/mcp.md has no client configuration"
    entry = json.loads(block.group(1))["mcpServers"]["cigeval"]
    args = list(entry["args"])
    args[args.index("--model") + 1] = f"openai:judge@{judge_url}"
    command = shutil.which(entry["command"])
    assert command is not None, f"{entry['command']} is not installed in this environment"
    test_settings = [  # the documented tools kept: the entry must judge as written
        *("--image-encoding", "original"),  # the files' bytes, so the judge's side can hash them
        *("--cache-dir", str(tmp_path / "cache")),
    ]
    return StdioServerParameters(
        command=command, args=[*args, *test_settings], env=_environment(), cwd=cwd
    )


async def test_a_stdio_client_starting_cigeval_mcp_lists_the_tools_and_gets_a_judgement(
    root: Path, tmp_path: Path
) -> None:
    """The server as docs/mcp.md's client configuration starts it (image root: its folder)."""
    judge = rule_judge(tools={"*": "Difference"}, scores={"over_editing": 8}, default_score=6)
    with FakeOpenAIServer(judge) as server:
        parameters = _documented_client(server.base_url, tmp_path, cwd=root)
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tasks = await session.call_tool("list_tasks", {})
            judged = await session.call_tool("judge_image", _edit_arguments("edited.png"))
            outside = await session.call_tool("judge_image", _edit_arguments("escape.png"))
            unknown = await session.call_tool(
                "judge_image", {**_edit_arguments("edited.png"), "task": "nope"}
            )
        shown = _shown(server)
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"judge_image", "list_tasks", "probe_judge"}
    assert {"task", "images"} <= set(tools["judge_image"].input_schema["required"])
    assert tools["judge_image"].output_schema is not None
    ids = [task["id"] for task in tasks.structured_content["tasks"]]  # type: ignore[index]
    assert len(ids) == 7 and "text_guided_ie" in ids
    assert not judged.is_error, judged.content
    result = judged.structured_content
    assert result is not None and result["status"] == "ok" and result["id"] == "edit-1"
    assert result["score"] == pytest.approx(0.6)  # the lowest sub-score, 6/10
    subs = {s["question_id"]: s for s in result["sub_scores"]}
    assert {k: s["score"] for k, s in subs.items()} == {"edit_success": 6, "over_editing": 8}
    assert subs["edit_success"]["reasoning"] == "judged edit_success"
    assert subs["edit_success"]["tool"] == "Difference"
    # the Difference tool's region: the 21 x 21 square that changed, in the output's pixels
    (region,) = [e for e in subs["edit_success"]["evidence"] if e["role"] == "output"]
    assert region["tool"] == "Difference" and region["image_size"] == [64, 64]
    x0, y0, x1, y1 = region["box"]
    assert abs(x0 - 10) <= 2 and abs(y0 - 10) <= 2 and abs(x1 - 31) <= 2 and abs(y1 - 31) <= 2
    # the judge was shown the files' bytes, which the result names by hash
    assert result["images"]["output"] == _sha((root / "edited.png").read_bytes())
    assert {result["images"]["source"], result["images"]["output"]} <= shown
    assert outside.is_error and "outside the image root" in outside.content[0].text  # type: ignore[union-attr]
    assert unknown.is_error and "nope" in unknown.content[0].text  # type: ignore[union-attr]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(root: Path, tmp_path: Path) -> Iterator[tuple[str, FakeOpenAIServer]]:
    """``cigeval mcp --transport http`` on a free port, judging with a local fake judge."""
    with FakeOpenAIServer(rule_judge(default_score=5)) as judge:
        port = _free_port()
        command = [
            sys.executable,
            "-m",
            "cigeval",
            *_judge_args(judge.base_url, root, tmp_path),
            "--transport",
            "http",
            "--port",
            str(port),
        ]
        log = tmp_path / "mcp-http.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                command,
                env={**os.environ, **_environment()},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"cigeval mcp did not start: {log.read_text()}"
                        ) from None
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp", judge
        finally:
            process.terminate()
            process.wait(timeout=30)


async def test_the_streamable_http_client_gets_a_judgement_of_image_data_and_a_probe_run(
    http_server: tuple[str, FakeOpenAIServer], root: Path
) -> None:
    url, judge = http_server
    edited = (root / "edited.png").read_bytes()
    data_uri = "data:image/png;base64," + base64.b64encode(edited).decode()
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        judged = await session.call_tool(
            "judge_image",
            {"task": "text_guided_ig", "prompt": "a red square", "images": {"output": data_uri}},
        )
        probed = await session.call_tool(
            "probe_judge", {"tasks": ["text_guided_ig"], "kinds": ["blank_output"]}
        )
    assert {tool.name for tool in listed.tools} == {"judge_image", "list_tasks", "probe_judge"}
    assert not judged.is_error, judged.content
    result = judged.structured_content
    assert result is not None and result["score"] == pytest.approx(0.5)
    assert [s["question_id"] for s in result["sub_scores"]] == ["prompt_following"]
    assert result["images"] == {"output": _sha(edited)}
    assert not probed.is_error, probed.content
    summary = probed.structured_content
    assert summary is not None
    (probe,) = summary["probes"]
    # the fake judge gives every image 5/10, the blank one too: the probe catches it
    assert probe["id"] == "text_guided_ig/blank_output" and probe["status"] == "failed"
    assert summary["failed"] == 1 and summary["pass_rate"] == 0
    assert len(judge.requests) >= 3  # the judgement, then the probe's reference and blank


async def test_judge_image_carries_the_calibrated_value_and_interval_of_the_servers_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a calibration the answer adds the human-scale value and its interval, the raw
    score kept; ``cigeval mcp --calibration`` refuses a file fitted for another judge."""
    from cigeval import Evaluator, RunConfig
    from cigeval.calibration import binding_of_record
    from cigeval.cli import main
    from cigeval.mcp_server.tools import JudgeTools

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(rule_judge(default_score=7)) as server:
        model = f"openai:judge@{server.base_url}"
        evaluator = Evaluator(model, tools="", run_config=RunConfig(use_cache=False))
        binding = binding_of_record(evaluator.identity_record())
        evaluator.use_calibration(linear_calibration(binding), abstain_width=0.5)
        tools = JudgeTools(evaluator, ImageRoot(root, max_bytes=10**6))
        result = await tools.judge_image(
            "text_guided_ig", {"output": "edited.png"}, text={"prompt": "a red square"}
        )
        await evaluator.aclose()
    assert result.score == pytest.approx(0.7)  # the judge's own score stays
    assert result.calibrated is not None
    assert result.calibrated.value == pytest.approx(0.1 + 0.8 * 0.7)
    assert result.calibrated.interval == (0.3, 1.0) and result.calibrated.abstain is True
    other = binding.model_copy(update={"judges": ("openai:other-model",)})
    linear_calibration(other).save(tmp_path / "other.json")
    argv = ["mcp", "--model", model, "--tools", "", "--calibration", str(tmp_path / "other.json")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "openai:other-model" in error and "judges" in error
