"""An unfinished reply is never a score (issue 23), end to end through an HTTP server.

A reply cut at the token limit (``finish_reason: "length"``, content ``{"score": "1``) used to
be read as the score 1. Here a local OpenAI-compatible server cuts 25% or 50% of its replies
short, at random and often just inside the score (a "10" becoming ``"1``); every record that
comes out ``ok`` must equal the fault-free run's record, score for score, and every cut reply
must be counted and none used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cigeval.backends import ScriptedBackend
from cigeval.cli import main
from cigeval.config import EvalConfig
from cigeval.messages import ModelRequest, ModelResponse
from cigeval.results.jsonl import read_records
from cigeval.rubrics import define_rubric
from cigeval.sample import sample_from_dict
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import seven_task_samples, variant, write_jsonl
from tests.cli_support import evaluate_cli
from tests.rubrics.support import COLOURS, evaluator, image, make_sample, output_image, reply

#: Scores the judge gives; "10" is there so that a cut "1" would be a wrong number.
SCORES = ("10", "3", "10", "7", "1", "10", "5", "0")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CIGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def scoring_judge(body: dict[str, Any]) -> str:
    """cigeval's rule judge, with a score (as a quoted string) that depends on the question:
    the same question always gets the same score, whatever the token budget."""
    reply = rule_judge()(body)
    if not reply.startswith('{"score"'):
        return reply  # a plan
    question = request_text({"messages": body["messages"][:2]})
    digest = hashlib.sha256(question.encode()).digest()[0]
    return json.dumps({"score": SCORES[digest % len(SCORES)], "reasoning": "judged"})


def study(folder: Path, count: int) -> Path:
    """``count`` samples over the seven tasks, each worded differently."""
    base = seven_task_samples(folder)
    samples = []
    for n in range(count):
        sample = base[n % len(base)]
        samples.append(variant(sample, f"{sample['id']}-{n}", f" (variant {n})"))
    return write_jsonl(folder / "samples.jsonl", samples)


def by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in read_records(out)}


def scores(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["score"], *(s["score"] for s in record["sub_scores"]))


@pytest.mark.parametrize(("rate", "least_ok"), [(0.25, 0.8), (0.5, 0.4)])
def test_cut_off_replies_never_become_scores(env: Path, rate: float, least_ok: float) -> None:
    samples = study(env, 28)
    # a budget to double: the paper's method sends none unless given
    flags = ("--no-cache", "--concurrency", "8", "--max-tokens", "1024")
    with FakeOpenAIServer(scoring_judge) as server:
        assert evaluate_cli(server, samples, env / "clean.jsonl", *flags) == 0
    with FakeOpenAIServer(scoring_judge) as server:
        server.cut_off(rate, seed=23)
        status = evaluate_cli(server, samples, env / "cut.jsonl", *flags)
        requests = list(server.requests)
    clean, faulty = by_id(env / "clean.jsonl"), by_id(env / "cut.jsonl")
    assert clean.keys() == faulty.keys() and len(clean) == 28
    assert len({scores(r) for r in clean.values()}) > 5  # the scores really vary

    cut = [r for r in requests if r.fault == "cut"]
    assert 0.6 * rate < len(cut) / len(requests) < 1.4 * rate
    # The issue's case happened: a "10" cut to '{"score": "1'.
    assert any((r.reply or "").endswith('{"score": "1') for r in cut)

    ok = [i for i, r in faulty.items() if r["status"] == "ok"]
    assert len(ok) >= least_ok * len(faulty)
    for sample_id in ok:
        assert scores(faulty[sample_id]) == scores(clean[sample_id]), sample_id
    for record in faulty.values():
        if record["status"] == "error":
            assert "cut off at 4096 tokens (finish_reason=length)" in record["error"]
    assert status == (0 if len(ok) == len(faulty) else 1)

    # Honest counts: every cut reply counted, every HTTP request counted, none lost.
    usage = [r["usage"] for r in faulty.values()]
    assert sum(u["cut_off_replies"] for u in usage) == len(cut)
    assert sum(u["http_attempts"] for u in usage) == len(requests)
    assert sum(u["calls"] for u in usage) == len(requests)


# ------------------------------------------------------------------ every rubric, every call


class CutFirstAsk:
    """Replies in order from ``replies`` (or from a reply function), but every request with
    less than twice the default budget gets the reply cut just after its first digit, with
    ``finish_reason: "length"``: only a re-ask with a larger budget gets the whole reply."""

    def __init__(self, replies: list[str] | Callable[[ModelRequest], str]) -> None:
        self.replies = replies
        self.budgets: list[int] = []

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.budgets.append(request.settings.max_tokens)
        whole = self.replies(request) if callable(self.replies) else self.replies[0]
        if request.settings.max_tokens < 2048:
            digit = next((i for i, c in enumerate(whole) if c.isdigit()), len(whole) // 2)
            return ModelResponse(whole[: digit + 1], "m", finish_reason="length")
        if not callable(self.replies):
            self.replies.pop(0)
        return ModelResponse(whole, "m", finish_reason="stop")


def _judged(rubric: str, script: Any, sample: Any, **config: Any) -> Any:
    backend = ScriptedBackend(script)
    config.setdefault("max_tokens", 1024)  # a budget to double (the paper's method sends none)
    score = evaluator(backend, rubric, **config).evaluate(sample)
    return score, backend


def _cut_and_whole(rubric: str, replies: Any, sample: Any, **config: Any) -> tuple[Any, Any]:
    whole, _ = _judged(rubric, replies if callable(replies) else list(replies), sample, **config)
    cutter = CutFirstAsk(replies if callable(replies) else list(replies))
    cut, backend = _judged(rubric, cutter, sample, **config)
    assert whole.status == cut.status == "ok", (whole.error, cut.error)
    # every first ask was cut and asked again: the same request with twice the budget
    first = [r.messages for r in backend.requests if r.settings.max_tokens == 1024]
    again = [r.messages for r in backend.requests if r.settings.max_tokens == 2048]
    assert sorted(cutter.budgets) == [1024] * len(first) + [2048] * len(again)
    assert len(first) == len(again) > 0 and all(messages in first for messages in again)
    assert cut.usage["cut_off_replies"] == len(first)
    return whole, cut


def test_viescore_reads_only_whole_replies() -> None:
    replies = [
        reply({"score": [8, 6], "reasoning": "sc"}),
        reply({"score": [9, 4], "reasoning": "pq"}),
    ]
    whole, cut = _cut_and_whole("viescore", replies, make_sample())
    assert cut.dimensions == whole.dimensions and cut.value == whole.value


def test_lmm_score_turns_and_scores_read_only_whole_replies() -> None:
    scores = {
        f"image_{i}": {"S_acc": 10, "S_pre": 9, "S_qua": 8, "S_real": 10, "reason": "ok"}
        for i in (1, 2)
    }

    def judge(request: ModelRequest) -> str:
        last = request.messages[-1].text_content()
        if "Reply with one JSON object" in last:
            return reply(scores)
        return f"analysis {len(request.messages)} of the images"

    images = {"source": image(COLOURS["source"]), "outputs": [output_image(1), output_image(2)]}
    sample = make_sample(images=images, task_indicator="Background Change")
    whole, cut = _cut_and_whole("lmm_score", judge, sample)
    assert cut.value == whole.value and cut.details["images"] == whole.details["images"]
    assert cut.details["source_description"] == whole.details["source_description"]


def test_factor_and_custom_rubrics_read_only_whole_replies() -> None:
    words = (
        "The added sand matches the instruction in grain and tone, and the fox sits at a "
        "believable size near the centre."
    )
    define_rubric("t_cut_legible", factors={"legibility": "Whether text reads."}, replace=True)
    answers = {
        "t_cut_legible": ({"legibility": 6}, 5 / 6),
        "instruction_fidelity": (
            dict.fromkeys(("alignment", "completeness", "plausibility"), 7),
            1.0,
        ),
    }
    for rubric, (factor_scores, value) in answers.items():
        answer = {
            "image_id": "s1",
            "online_factor_results": {
                key: {"score": score, "justification": words}
                for key, score in factor_scores.items()
            },
        }
        whole, cut = _cut_and_whole(rubric, [reply(answer)], make_sample())
        assert cut.value == whole.value == pytest.approx(value)


def test_the_agents_plan_scene_graph_and_judge_read_only_whole_replies(tmp_path: Path) -> None:
    records = {r["task"]: r for r in seven_task_samples(tmp_path)}
    sample = sample_from_dict(records["multi_concept_ic"], base_dir=tmp_path)
    # the paper planner asks about both concepts as one question; both take its choice
    judge = rule_judge(tools={"concept_1_similarity": "Scene Graph"}, default_score=10)
    whole, cut = _cut_and_whole("cigeval", judge, sample, tools=("Scene Graph",))
    assert cut.value == whole.value == 1.0
    assert not any(s.degraded for s in cut.sub_scores)
    purposes = {e.purpose for e in cut.trace.model_calls() if e.finish_reason == "length"}
    assert purposes == {"plan", "scene_graph", "judge"}
    assert [s.tool for s in cut.sub_scores] == [s.tool for s in whole.sub_scores]


def test_the_cap_defaults_to_four_budgets_and_may_not_be_below_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert EvalConfig().token_cap is None  # no budget sent, none to grow
    assert EvalConfig(method="extended").token_cap == 4096
    assert EvalConfig(max_tokens=300).token_cap == 1200
    assert EvalConfig(max_tokens=300, max_tokens_cap=300).token_cap == 300
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path)[:1])
    argv = ["evaluate", str(samples), "--model", "openai:m@http://127.0.0.1:9/v1"]
    flags = ["--out", str(tmp_path / "r.jsonl"), "--max-tokens", "200", "--max-tokens-cap", "100"]
    assert main([*argv, *flags]) == 2
    assert "--max-tokens-cap: Value error, must be at least --max-tokens (200), got 100" in (
        capsys.readouterr().err
    )


def test_a_megabyte_reply_never_reaches_the_records(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = write_jsonl(env / "samples.jsonl", seven_task_samples(env)[:1])  # one question

    def huge(body: dict[str, Any]) -> str:
        reply = scoring_judge(body)
        return reply if reply.startswith("```") else "x" * 1_000_000 + reply

    out = env / "r.jsonl"
    with FakeOpenAIServer(huge) as server:
        assert evaluate_cli(server, samples, out, "--no-cache", "--tools", "") == 1
    (record,) = read_records(out)
    replies = [e["reply"] for e in record["trace"] if e["type"] == "model_call"]
    assert [len(r) for r in replies] == [65_536] * 3  # asked, re-asked twice, each cut
    # counted as over-long, not as cut off by the token limit (issue 41)
    assert (record["usage"]["cut_off_replies"], record["usage"]["overlong_replies"]) == (0, 3)
    err = capsys.readouterr().err
    assert "over-long replies: 3 (longer than --max-reply-chars" in err
    assert "cut-off replies" not in err
    assert "more than --max-reply-chars allows (65,536)" in record["error"]
    # three replies of 64 Ki characters (the re-asks show 1,000 of them), not megabytes
    assert out.stat().st_size < 250_000
