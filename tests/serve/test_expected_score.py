"""``--score-mode expected``: against a judge server that returns token log-probabilities,
scores become probability-weighted means over 0-10, and the groups of 8 stop tying."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

import cigeval
from cigeval.config import JudgeSpec
from cigeval.errors import ConfigError
from cigeval.messages import TokenLogprob
from cigeval.serve.app import create_app
from cigeval.serve.expected import ExpectedScoreBackend, expected_value, rewrite_scores
from cigeval.serve.judge import build_evaluator
from cigeval.serve.settings import ServeConfig
from cigeval.testing.openai_server import FakeOpenAIServer
from tests.serve.support import t2i_item


def _tokens(text: str) -> list[str]:
    return re.findall(r"\d+|\w+|\s+|[^\w\s]", text)


@dataclass
class LogprobServer(FakeOpenAIServer):
    """The fake judge, also answering token log-probabilities when a request asks for them:
    every reply says 7, and the weight of 6 and 8 at that token follows the prompt's
    ``variant N``, as a judge that is unsure in different ways about different images."""

    def _completion(
        self, text: str, index: int, finish_reason: str | None = None
    ) -> dict[str, Any]:
        completion = super()._completion(text, index, finish_reason)
        body = self.requests[index].body
        if body.get("logprobs") and body.get("top_logprobs"):
            found = re.search(r"variant (\d+)", json.dumps(body))
            variant = int(found.group(1)) if found else 0  # 0: the start-up check's call
            content = []
            for token in _tokens(text):
                top = []
                if token == "7":
                    low, high = 0.02 + 0.05 * variant, 0.3 - 0.03 * variant
                    top = [("7", 1 - low - high), ("6", low), ("8", high), ("x", 0.0001)]
                    top = [(t, math.log(p)) for t, p in top]
                entry = {"token": token, "logprob": top[0][1] if top else 0.0, "bytes": None}
                entry["top_logprobs"] = [
                    {"token": t, "logprob": lp, "bytes": None} for t, lp in top
                ]
                content.append(entry)
            completion["choices"][0]["logprobs"] = {"content": content, "refusal": None}
        return completion


REPLY = json.dumps({"score": 7, "reasoning": "fine"})


def _groups() -> list[dict[str, Any]]:
    items = []
    for group in ("a", "b"):
        for n in range(8):
            item = t2i_item(len(items), group=group)
            item["prompt"] = f"a red square, variant {n}"
            items.append(item)
    return items


def _serve(base_url: str, mode: str) -> dict[str, Any]:
    spec = JudgeSpec.of(
        f"openai:fake-model@{base_url}",
        config=cigeval.EvalConfig(tools=()),
        run_config=cigeval.RunConfig(use_cache=False, max_retries=0),
    )
    evaluator = build_evaluator(spec, score_mode=mode)
    app = create_app(evaluator, ServeConfig(score_mode=mode, warmup=False))  # type: ignore[arg-type]
    with TestClient(app) as client:
        answer = client.post("/v1/score", json={"items": _groups()})
    assert answer.status_code == 200
    return dict(answer.json())


def test_expected_scores_stop_the_groups_of_8_tying() -> None:
    with LogprobServer([REPLY]) as server:
        integer = _serve(server.base_url, "integer")
        expected = _serve(server.base_url, "expected")
        asked = [r.body.get("top_logprobs") for r in server.requests]
    assert integer["stats"]["tied_group_share"] == 1.0  # the default: the paper's integers
    assert {r["score"] for r in integer["results"]} == {0.7}
    assert expected["stats"]["tied_group_share"] == 0.0
    assert expected["stats"]["mean_group_spread"] > 0
    assert expected["stats"]["ok"] == 16
    first = expected["results"][0]["sub_scores"][0]["score"]
    assert first == pytest.approx(7 * 0.68 + 6 * 0.02 + 8 * 0.3, abs=1e-3)  # variant 0
    # only expected mode asks: its start-up check, then the 16 items
    assert asked.count(None) == 16 and asked.count(20) == 17


def test_a_judge_without_logprobs_stops_the_start_in_expected_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_check(_: Any) -> None:
        return None

    with FakeOpenAIServer([REPLY]) as server:
        with pytest.raises(ConfigError, match="answered without token log-probabilities"):
            _serve(server.base_url, "expected")
        calls = len(server.requests)
        integer = _serve(server.base_url, "integer")  # the integer mode needs none
        # as if the server had lost its log-probabilities after the start
        monkeypatch.setattr("cigeval.serve.warmup.check_logprobs", no_check)
        late = _serve(server.base_url, "expected")
    assert calls == 1  # the one start-up call; no item was judged
    assert integer["stats"]["ok"] == 16
    # had the server lost them after the start: each item an error, never an integer
    assert late["stats"]["error"] == 16
    assert "returned no token log-probabilities" in late["results"][0]["error"]


def test_expected_value_and_rewrite() -> None:
    assert expected_value([("7", math.log(0.5)), (" 8", math.log(0.5)), ("x", 0.0)]) == 7.5
    assert expected_value([("eleven", 0.0), ("11", 0.0)]) is None
    text = '{"score": 7, "reasoning": "7 apples"}'
    pieces = _tokens(text)
    tokens = [TokenLogprob(t, 0.0) for t in pieces]
    at = pieces.index("7")  # the score's token, not the 7 of the reasoning
    tokens[at] = TokenLogprob("7", math.log(0.75), (("9", math.log(0.25)),))
    assert rewrite_scores(text, tokens) == '{"score": 7.5000, "reasoning": "7 apples"}'


def test_expected_mode_needs_an_openai_judge() -> None:
    with pytest.raises(ConfigError, match="needs an openai: judge"):
        ExpectedScoreBackend(cigeval.ScriptedBackend(["x"]))
