"""``--score-mode expected``: each 0-10 score becomes the probability-weighted mean over the
integers the judge weighed at the score's token, instead of the one it wrote (the argmax).

RL needs samples of one group to differ; a judge that writes ``7`` for all eight ties them
all, while its token probabilities (``7``: 0.6, ``8``: 0.3, ...) still tell them apart.
The judge server must return token log-probabilities (OpenAI and vLLM do when asked): the
wrapped :class:`~cigeval.backends.openai_backend.OpenAIBackend` asks for them, and each
reply's ``"score": N`` is rewritten to the expected value before the agent reads it. A reply
with a score but no log-probabilities is an error (never a silent integer); a score written
as several tokens is kept as written. The default mode stays the paper's integer score.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.backends.wrapper import WrappingBackend
from cigeval.errors import BackendError, ConfigError
from cigeval.messages import ModelRequest, ModelResponse, TokenLogprob

#: Alternatives asked per token: enough to hold the plausible scores 0-10.
TOP_LOGPROBS = 20
#: A score value in a judge's JSON reply (quoted or not).
_SCORE = re.compile(r'"score"\s*:\s*"?(\d+(?:\.\d+)?)')


def expected_value(top: Sequence[tuple[str, float]], low: int = 0, high: int = 10) -> float | None:
    """The probability-weighted mean of the integer tokens in ``low..high`` among ``top``
    (renormalised over them), or None when there is none."""
    weights: dict[int, float] = {}
    for token, logprob in top:
        text = token.strip()
        if text.isdigit() and low <= int(text) <= high:
            weights[int(text)] = weights.get(int(text), 0.0) + math.exp(logprob)
    total = sum(weights.values())
    if total <= 0:
        return None
    return sum(value * weight for value, weight in weights.items()) / total


def rewrite_scores(text: str, tokens: Sequence[TokenLogprob]) -> str:
    """``text`` with each single-token ``"score": N`` replaced by its expected value."""
    starts, offset = [], 0
    for token in tokens:
        starts.append(offset)
        offset += len(token.token)
    if "".join(t.token for t in tokens) != text:
        raise BackendError(
            f"{expected_mode()}: the server's token log-probabilities do not spell its "
            "reply, so the score's token cannot be found"
        )
    replacements = []
    for match in _SCORE.finditer(text):
        begin, end = match.span(1)
        for index, token in enumerate(tokens):
            stop = starts[index] + len(token.token)
            if starts[index] <= begin < stop:
                if token.token.strip() == match.group(1) and stop >= end:
                    # the alternatives hold the chosen token too (as OpenAI sends them)
                    candidates = dict(token.top)
                    candidates.setdefault(token.token, token.logprob)
                    value = expected_value(list(candidates.items()))
                    if value is not None:
                        replacements.append((begin, end, f"{value:.4f}"))
                break
    for begin, end, value_text in reversed(replacements):
        text = text[:begin] + value_text + text[end:]
    return text


def expected_mode() -> str:
    """The expected-score mode, in the caller's words."""
    return in_callers_words("--score-mode expected", "score_mode='expected'")


class ExpectedScoreBackend(WrappingBackend[Any]):
    """An OpenAI-compatible judge whose scores are expected values over its log-probabilities.

    Wraps an :class:`~cigeval.backends.openai_backend.OpenAIBackend` (asked for
    ``top_logprobs``); identity, endpoint and preflight are the inner backend's (as for every
    :class:`~cigeval.backends.wrapper.WrappingBackend`), and so is any other attribute.
    """

    def __init__(self, inner: Any, top_logprobs: int = TOP_LOGPROBS) -> None:
        from cigeval.backends.openai_backend import OpenAIBackend

        if not isinstance(inner, OpenAIBackend):
            raise ConfigError(
                f"{expected_mode()} needs an openai: judge (an OpenAI or vLLM server that "
                f"returns token log-probabilities), not {type(inner).__name__}"
            )
        inner.top_logprobs = top_logprobs
        super().__init__(inner)  # Evaluator.aclose closes the inner backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The inner backend's reply, its scores made expected values."""
        response: ModelResponse = await self.inner.complete(request)
        if not _SCORE.search(response.text):
            return response
        if not response.logprobs:
            raise BackendError(
                f"{expected_mode()}: {self.identity} returned no token log-probabilities "
                "(the server must support logprobs/top_logprobs, as OpenAI and vLLM do)"
            )
        return dataclasses.replace(response, text=rewrite_scores(response.text, response.logprobs))
