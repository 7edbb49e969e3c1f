"""The cigeval scorer's judge calls inside inspect_ai's own records: each call is a model event
of the sample's transcript (messages with their images, the reply, the tokens), its tokens are
in the eval's usage totals, and the judged image is shown with the score. Each check reads the
log back from disk and compares it with what a local judge server received and answered."""

from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ContentImage, ContentText, ModelName
from inspect_ai.scorer import Scorer, Target
from inspect_ai.solver import TaskState
from inspect_ai.util import LimitExceededError, token_limit
from PIL import Image

from cigeval import RunConfig
from cigeval.integrations.inspect_ai import inspect_samples, inspect_scorer
from cigeval.report.images import thumbnail_data_uri
from cigeval.testing import rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image, seven_task_samples

JUDGE = "cigeval/openai:judge"


@pytest.fixture
def two_samples(tmp_path: Path) -> list[dict[str, Any]]:
    """An editing and a generation sample, each with an output image of its own."""
    samples = [s for s in seven_task_samples(tmp_path) if s["id"] in ("tie", "t2i")]
    for sample, colour in zip(samples, ("teal", "olive"), strict=True):
        sample["images"]["output"] = make_image(
            tmp_path / f"out_{sample['id']}.png", colour, (5, 5, 40, 30)
        )
    return samples


def _scoring_only(samples: list[dict[str, Any]], folder: Path, scorer: Scorer) -> EvalLog:
    """A scoring-only eval (no solver, no --model), read back from its log file."""
    (log,) = eval(
        Task(dataset=inspect_samples(samples, base_dir=folder), solver=[], scorer=scorer),
        log_dir=str(folder / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.location
    return read_eval_log(log.location, resolve_attachments=True)


def _judge_events(log: EvalLog) -> dict[str, list[ModelEvent]]:
    """The model events of the judge in each sample's transcript, by sample id."""
    return {
        str(sample.id): [e for e in sample.events if isinstance(e, ModelEvent)]
        for sample in log.samples or []
    }


def _call(texts: list[str], images: list[str], reply: str | None) -> tuple[Any, ...]:
    return (tuple(texts), tuple(images), reply)


def _event_call(event: ModelEvent) -> tuple[Any, ...]:
    """What a model event says was sent and answered, in the form of ``_server_call``."""
    texts, images = [], []
    for message in event.input:
        content = message.content
        for part in [ContentText(text=content)] if isinstance(content, str) else content:
            if isinstance(part, ContentText):
                texts.append(part.text)
            elif isinstance(part, ContentImage):
                images.append(part.image)
    return _call(texts, images, event.output.completion)


def test_each_judge_call_is_a_model_event_with_its_images_reply_and_tokens(
    tmp_path: Path, two_samples: list[dict[str, Any]]
) -> None:
    with FakeOpenAIServer(rule_judge(tools={"*": "Difference"}, default_score=6)) as server:
        judge = inspect_scorer(
            f"openai:judge@{server.base_url}",
            tools="Difference",
            image_encoding="original",
            run_config=RunConfig(use_cache=False),
        )
        log = _scoring_only(two_samples, tmp_path, judge)
    assert log.eval.model == "none/none"  # no --model: the task never calls one
    sent = [_call(r.texts(), r.image_urls(), r.reply) for r in server.requests]
    events = _judge_events(log)
    recorded = [_event_call(e) for found in events.values() for e in found]
    assert len(sent) == 5  # tie: a plan and two questions; t2i: a plan and one
    assert Counter(recorded) == Counter(sent)  # every call, as sent and as answered
    for sample in log.samples or []:
        found = events[str(sample.id)]
        assert {e.model for e in found} == {JUDGE}
        assert {e.output.metadata["cigeval"]["purpose"] for e in found} == {"plan", "judge"}  # type: ignore[index]
        # the judged output, as the judge got it (the file's bytes), is in its own events
        output = tmp_path / f"out_{sample.id}.png"
        file_uri = "data:image/png;base64," + base64.b64encode(output.read_bytes()).decode()
        assert any(file_uri in _event_call(e)[1] for e in found)
        # and shown with the score, as a Markdown image inspect view renders
        explanation = sample.scores["cigeval"].explanation or ""  # type: ignore[index]
        preview = thumbnail_data_uri(Image.open(output), 256)
        assert explanation.startswith(f"![{sample.id}: the judged output]({preview})")
        assert "prompt_following" in explanation or "edit_success" in explanation
        # tokens: the server reports 11 prompt and 7 completion tokens per call
        usage = sample.model_usage[JUDGE]
        assert (usage.input_tokens, usage.output_tokens) == (11 * len(found), 7 * len(found))
    totals = log.stats.model_usage[JUDGE]
    assert (totals.input_tokens, totals.output_tokens, totals.total_tokens) == (55, 35, 90)


def test_answers_from_the_cache_are_events_too_and_cost_no_tokens(
    tmp_path: Path, two_samples: list[dict[str, Any]]
) -> None:
    """A second eval with the same answer cache asks the server nothing: every call is still
    in the transcript (marked cached), none counts in the usage."""
    config = RunConfig(cache_dir=tmp_path / "cache")
    with FakeOpenAIServer(rule_judge(default_score=4)) as server:
        judge = f"openai:judge@{server.base_url}"
        first = _scoring_only(
            two_samples, tmp_path, inspect_scorer(judge, tools="", run_config=config)
        )
        asked = len(server.requests)
        again = _scoring_only(
            two_samples, tmp_path, inspect_scorer(judge, tools="", run_config=config)
        )
        assert len(server.requests) == asked == 3  # tie: two questions; t2i: one
        plain = inspect_scorer(judge, tools="", run_config=config, model_events=False)
        replayed = _scoring_only(two_samples, tmp_path, plain)
        assert len(server.requests) == 3
    # without model events, a sample whose every answer is cached is replayed whole
    assert _judge_events(replayed) == {"tie": [], "t2i": []}
    before, after = _judge_events(first), _judge_events(again)
    assert {k: [_event_call(e) for e in v] for k, v in after.items()} == {
        k: [_event_call(e) for e in v] for k, v in before.items()
    }
    cached = [e.output.metadata["cigeval"]["cached"] for v in after.values() for e in v]  # type: ignore[index]
    assert cached == [True, True, True]
    assert JUDGE in first.stats.model_usage and JUDGE not in again.stats.model_usage
    values = {str(s.id): s.scores["cigeval"].value for s in again.samples or []}  # type: ignore[index]
    assert values == {"tie": pytest.approx(0.4), "t2i": pytest.approx(0.4)}


def test_max_connections_caps_the_judges_calls_in_flight(
    tmp_path: Path, two_samples: list[dict[str, Any]]
) -> None:
    """The two samples, and the two questions of one, are judged concurrently (without
    inspect's model layer their calls reach the server two or more at a time); under
    ``max_connections=1`` one at a time."""
    with FakeOpenAIServer(rule_judge(), latency_s=0.1) as server:
        judge = inspect_scorer(
            f"openai:judge@{server.base_url}", tools="", run_config=RunConfig(use_cache=False)
        )
        (log,) = eval(
            Task(dataset=inspect_samples(two_samples, base_dir=tmp_path), solver=[], scorer=judge),
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_connections=1,
        )
    assert log.status == "success", log.error
    assert len(server.requests) == 3 and server.max_concurrent == 1


async def test_an_inspect_token_limit_stops_the_judge(
    tmp_path: Path, two_samples: list[dict[str, Any]]
) -> None:
    """inspect's limits apply to the judge's calls: over a token limit, the scorer raises
    inspect's error (which stops the sample) instead of cigeval taking the call for a failed
    one. The scorer is called as inspect calls it, inside a limit of 20 tokens."""
    (tie,) = inspect_samples([s for s in two_samples if s["id"] == "tie"], base_dir=tmp_path)
    state = TaskState(
        model=ModelName("none/none"),
        sample_id="tie",
        epoch=1,
        input=tie.input,
        messages=[],
        metadata=tie.metadata,
    )
    with FakeOpenAIServer(rule_judge()) as server:
        judge = inspect_scorer(
            f"openai:judge@{server.base_url}",
            tools="",
            preflight=False,
            run_config=RunConfig(use_cache=False),
        )
        with pytest.raises(LimitExceededError) as raised, token_limit(20):
            await judge(state, Target(""))  # two questions, one call each: 18 tokens a call
        assert raised.value.type == "token" and raised.value.limit == 20
        assert len(server.requests) == 2
