"""Every major judge by name: ``anthropic:``, ``gemini:``, ``azure:`` and ``litellm:`` judge the
shipped examples from the command line against servers on 127.0.0.1, record where their answers
came from, answer a rerun from the cache, and stop with exit 2 naming the missing credentials
before any sample.

The servers are stand-ins: the standard-library Anthropic messages server, the OpenAI-compatible
one under Google's path, and the same one behind Azure's deployment routes. ``litellm:`` runs
only where LiteLLM is installed (it is an optional extra).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cigeval.cli import main
from cigeval.results.jsonl import read_records
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.anthropic_server import FakeAnthropicServer
from tests.azure_server import FakeAzureServer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "samples.jsonl"
TOOLS = ("--tools", "Difference,Scene Graph")  # no GroundingDINO weights here
SECRET = "sk-judge-by-name-NEVER-RECORDED-42"
#: Providers whose SDK is an optional extra, by the package it needs.
_EXTRAS = {"anthropic": "anthropic", "litellm": "litellm"}
_CREDENTIALS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@dataclass
class Provider:
    """How one provider is served locally and named on the command line."""

    name: str
    server: Callable[[], AbstractContextManager[Any]]
    spec: Callable[[Any], str]
    endpoint: Callable[[Any], str]
    key_variable: str
    served_model: str
    #: A spec that needs credentials which are not set, and the variable the error names.
    unconfigured: tuple[str, str]


def _gemini_url(server: FakeOpenAIServer) -> str:
    return server.base_url.removesuffix("/v1") + "/v1beta/openai"


PROVIDERS = [
    Provider(
        "anthropic",
        lambda: FakeAnthropicServer(rule_judge(), model="claude-judge-20250101"),
        lambda s: f"anthropic:claude-judge@{s.url}",
        lambda s: s.url,
        "ANTHROPIC_API_KEY",
        "claude-judge-20250101",
        ("anthropic:claude-judge", "ANTHROPIC_API_KEY"),
    ),
    Provider(
        "gemini",
        lambda: FakeOpenAIServer(rule_judge(), model="gemini-judge-001"),
        lambda s: f"gemini:gemini-judge@{_gemini_url(s)}",
        _gemini_url,
        "GEMINI_API_KEY",
        "gemini-judge-001",
        ("gemini:gemini-judge", "GEMINI_API_KEY"),
    ),
    Provider(
        "azure",
        lambda: FakeAzureServer(rule_judge(), model="gpt-4o-2024-11-20", deployments=["judge"]),
        lambda s: f"azure:judge@{s.endpoint}",
        lambda s: s.endpoint,
        "AZURE_OPENAI_API_KEY",
        "gpt-4o-2024-11-20",
        ("azure:judge@https://example.openai.azure.com", "AZURE_OPENAI_API_KEY"),
    ),
    Provider(
        "litellm",
        lambda: FakeOpenAIServer(rule_judge(), model="served-through-litellm"),
        lambda s: f"litellm:openai/judge@{s.base_url}",
        lambda s: s.base_url,
        "OPENAI_API_KEY",
        "served-through-litellm",
        ("litellm:anthropic/claude-judge", "ANTHROPIC_API_KEY"),
    ),
]


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _param(provider: Provider) -> Any:
    package = _EXTRAS.get(provider.name)
    marks = []
    if package is not None and not _installed(package):
        marks.append(pytest.mark.skip(reason=f"the {package} extra is not installed"))
    return pytest.param(provider, id=provider.name, marks=marks)


needs_anthropic = pytest.mark.skipif(
    not _installed("anthropic"), reason="the anthropic extra is not installed"
)


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in _CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    yield


def evaluate(spec: str, out: Path, *extra: str) -> int:
    argv = ["evaluate", str(EXAMPLES), "--model", spec, "--out", str(out), "--quiet"]
    return main([*argv, *TOOLS, *extra])


def requests_of(server: Any) -> int:
    """Judge calls a server received (a preflight's one-token request left out)."""
    lengths = [
        r.body.get("max_tokens") or r.body.get("max_completion_tokens") for r in server.requests
    ]
    return sum(1 for length in lengths if length != 1)


@pytest.mark.parametrize("provider", [_param(p) for p in PROVIDERS])
def test_judges_the_examples_records_provenance_and_reruns_from_cache(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(provider.key_variable, SECRET)
    out = tmp_path / "results.jsonl"
    with provider.server() as server:
        spec, endpoint = provider.spec(server), provider.endpoint(server)
        assert evaluate(spec, out) == 0
        asked = requests_of(server)
        # every HTTP request of a judge call is counted in the records' usage
        assert sum(r["usage"]["http_attempts"] for r in read_records(out)) == asked
        assert evaluate(spec, out, "--overwrite") == 0  # the same requests again
        assert requests_of(server) == asked  # every answer came from the cache
    records = list(read_records(out))
    lines = [line for line in EXAMPLES.read_text().splitlines() if line.strip()]
    assert len(records) == len(lines) and all(r["status"] == "ok" for r in records)
    identity = spec.split("@")[0]
    for record in records:
        assert record["judge"] == identity
        (judge,) = record["provenance"]["judges"]
        assert judge["endpoint"] == endpoint
        assert judge["served_models"] == [provider.served_model]
        calls = [e for e in record["trace"] if e["type"] == "model_call"]
        assert calls and all(call["cached"] for call in calls)
        assert judge["finish_reasons"] == {"stop": len(calls)}
    assert SECRET not in out.read_text()
    assert sum(r["usage"]["http_attempts"] for r in records) == 0  # all from the cache
    if isinstance(server, FakeAzureServer):
        assert {deployment for deployment, _ in server.calls} == {"judge"}


@pytest.mark.parametrize("provider", [_param(p) for p in PROVIDERS])
def test_missing_credentials_stop_the_run_with_exit_2_naming_the_variable(
    provider: Provider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, variable = provider.unconfigured
    out = tmp_path / "results.jsonl"
    assert evaluate(spec, out) == 2
    error = capsys.readouterr().err
    assert variable in error
    assert not out.exists() or not out.read_text().strip()  # no sample was judged


def test_azure_without_a_resource_names_the_endpoint_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET)
    assert evaluate("azure:judge", tmp_path / "r.jsonl") == 2
    assert "AZURE_OPENAI_ENDPOINT" in capsys.readouterr().err


def test_a_missing_sdk_is_exit_2_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm fails
    monkeypatch.setitem(sys.modules, "anthropic", None)
    assert evaluate("litellm:openai/judge@http://127.0.0.1:9/v1", tmp_path / "a.jsonl") == 2
    assert "pip install 'cigeval[litellm]'" in capsys.readouterr().err
    assert evaluate("anthropic:claude@http://127.0.0.1:9", tmp_path / "b.jsonl") == 2
    assert "pip install 'cigeval[anthropic]'" in capsys.readouterr().err


@needs_anthropic
def test_cost_of_a_claude_run_from_the_price_of_the_served_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"claude-judge-20250101": {"prompt": 3.0, "completion": 15.0}}))
    out = tmp_path / "results.jsonl"
    with FakeAnthropicServer(rule_judge(), model="claude-judge-20250101") as server:
        spec = f"anthropic:claude-judge@{server.url}"
        assert evaluate(spec, out, "--price-table", str(prices), "--no-cache") == 0
        calls = requests_of(server)
    prompt, completion = server.usage
    expected = calls * (prompt * 3.0 + completion * 15.0) / 1e6
    assert f"cost: ${expected:.4f}" in capsys.readouterr().err
