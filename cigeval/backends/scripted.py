"""A scripted backend: a test double for code that calls a model, for cigeval and its users."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

from cigeval.errors import BackendError
from cigeval.messages import ModelRequest, ModelResponse, Usage

#: A reply function: sync or async, gets the request, returns the reply text (or a whole
#: ModelResponse, e.g. one with a finish reason).
ReplyFunction = Callable[[ModelRequest], str | ModelResponse | Awaitable[str | ModelResponse]]

#: One scripted step: a reply text, a whole ModelResponse (to script a finish reason, such as
#: a reply cut at the token limit), or an exception to raise for that request.
Step = str | ModelResponse | BaseException


class ScriptExhausted(BackendError):
    """A :class:`ScriptedBackend` got more requests than it has replies."""


class ScriptedBackend:
    """A backend that answers from a script and records every request it receives.

    ``script`` is either a list of steps used in order (a string is the reply; a
    :class:`ModelResponse` is returned as it is, e.g. ``ModelResponse('{"score": "1', "m",
    finish_reason="length")`` for a cut reply; an exception instance is raised for that
    request, to test failure handling) or a function of the :class:`ModelRequest`, sync or
    async, returning the reply (text or ModelResponse). When a list runs out the backend
    raises :class:`ScriptExhausted` naming how many requests it served.

    ``requests`` lists every request received, in order, including those that raised.
    The identity is ``scripted:<name>``. Usage counts are zero unless ``usage`` is given.
    """

    def __init__(
        self,
        script: Iterable[Step] | ReplyFunction,
        *,
        name: str = "default",
        usage: Usage | None = None,
    ) -> None:
        if callable(script):
            self._function: ReplyFunction | None = script
            self._steps: list[Step] = []
        else:
            self._function = None
            self._steps = list(script)
            allowed = (str, ModelResponse, BaseException)
            bad = [s for s in self._steps if not isinstance(s, allowed)]
            if bad:
                raise TypeError(
                    f"script steps must be strings, ModelResponses or exceptions, got {bad[0]!r}"
                )
        self.name = name
        self.usage = usage or Usage()
        self.requests: list[ModelRequest] = []

    @property
    def identity(self) -> str:
        """``scripted:<name>``."""
        return f"scripted:{self.name}"

    @property
    def remaining(self) -> int | None:
        """Steps not used yet (None for a reply function)."""
        if self._function is not None:
            return None
        return max(0, len(self._steps) - len(self.requests))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and answer with the next step of the script."""
        index = len(self.requests)
        self.requests.append(request)
        if self._function is not None:
            reply = self._function(request)
            if inspect.isawaitable(reply):
                reply = await reply
            return self._response(reply)
        if index >= len(self._steps):
            last = request.messages[-1].text_content()[:200] if request.messages else ""
            raise ScriptExhausted(
                f"ScriptedBackend {self.name!r} has {len(self._steps)} scripted replies but got "
                f"request number {index + 1}; its last message was: {last!r}"
            )
        step = self._steps[index]
        if isinstance(step, BaseException):
            raise step
        return self._response(step)

    def _response(self, reply: object) -> ModelResponse:
        if isinstance(reply, ModelResponse):
            return reply
        if not isinstance(reply, str):
            raise TypeError(f"reply function returned {type(reply).__name__}, not str")
        return ModelResponse(reply, self.identity, self.usage)

    def __repr__(self) -> str:
        kind = "function" if self._function is not None else f"{len(self._steps)} steps"
        return f"ScriptedBackend(name={self.name!r}, {kind}, {len(self.requests)} requests)"
