"""The one hook that can carry a model call through someone else's model layer.

A framework that runs cigeval inside itself (inspect_ai: :mod:`cigeval.integrations`) wants
the judge's calls to be its own model calls, recorded in its transcript and counted in its
usage and limits. :func:`routing_calls` installs a :data:`Route` for the calls made in a block;
the :class:`~cigeval.session.JudgeSession` sends every call through :func:`routed_complete`, which
hands it to the route installed there, or straight to the backend when none is. The route gets
the backend, the request and the call's :class:`CallLabel`, and must answer with the backend's
own response (it may only wrap the call, never change it).

The route travels in a context variable, like the call observers
(:mod:`cigeval.backends.observers`): concurrent samples never mix, tasks and threads started
with a copy of the context keep it, and code outside the block is not routed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cigeval.backends.base import Backend
    from cigeval.messages import ModelRequest, ModelResponse


@dataclass(frozen=True)
class CallLabel:
    """What a model call is for, as the sample's trace records it."""

    #: plan, judge, scene_graph, rubric, ...
    purpose: str
    #: The sub-question the call belongs to (None: the whole sample, e.g. the plan).
    question_id: str | None = None
    #: 1 for the first ask, 2+ for re-asks of the same question.
    attempt: int = 1
    #: The sub-question's thought/action/observation round.
    round: int = 1


#: Something that makes a backend's call its own: awaits ``backend.complete(request)`` inside
#: whatever it records, and returns that response.
Route = Callable[["Backend", "ModelRequest", CallLabel], Awaitable["ModelResponse"]]

_ROUTE: ContextVar[Route | None] = ContextVar("cigeval_call_route", default=None)


@contextlib.contextmanager
def routing_calls(route: Route) -> Iterator[None]:
    """Send the model calls made in this block (and the tasks and threads it starts with a
    copy of its context) through ``route``."""
    token = _ROUTE.set(route)
    try:
        yield
    finally:
        _ROUTE.reset(token)


async def routed_complete(
    backend: Backend, request: ModelRequest, label: CallLabel
) -> ModelResponse:
    """``backend``'s answer to ``request``, through the route installed here, if any."""
    route = _ROUTE.get()
    if route is None:
        return await backend.complete(request)
    return await route(backend, request, label)
