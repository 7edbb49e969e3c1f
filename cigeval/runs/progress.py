"""Progress inside samples: every model call counted as it starts and ends, on the run's bar.

A sample can take minutes (a slow local model, a batch waiting for its provider), so a bar
that moves only when a sample ends looks stuck. While :func:`counting_calls` is active, every
model call that :class:`~cigeval.session.JudgeSession` makes, whatever the backend, reports to
a :class:`CallCounter`, one of the call observers (:mod:`cigeval.backends.observers`), and
the bar's label reads e.g. ``14 calls (2 running), 31.5k tokens``, redrawn every second
while calls run so the elapsed time moves too.

The observers travel in a context variable: the calls of the samples a run judges in this
process find it, whatever thread the run's event loop is in; calls made elsewhere (another
run, another process such as a Ray worker) do not.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cigeval.backends.observers import CallObserver, observing

if TYPE_CHECKING:
    from cigeval.messages import ModelResponse

#: Least seconds between two redraws of the bar caused by calls starting or ending.
REDRAW_S = 0.5
#: Seconds between redraws while calls are running, so the elapsed time moves.
TICK_S = 1.0


class CallCounter(CallObserver):
    """Model calls started, finished and cached, and their tokens, as they happen.

    ``bar`` (a tqdm bar, or anything with ``set_description_str`` and ``refresh``) shows the
    counts in its label; None keeps count only.
    """

    def __init__(self, bar: Any = None) -> None:
        self.started = 0
        self.finished = 0
        self.cached = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._bar = bar
        self._lock = threading.Lock()
        self._shown_at = 0.0

    @property
    def running(self) -> int:
        """Calls started and not finished yet."""
        return self.started - self.finished

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of the finished calls."""
        return self.prompt_tokens + self.completion_tokens

    def call_started(self) -> None:
        """A call was sent."""
        with self._lock:
            self.started += 1
        self.show(force=self.finished == 0)

    def call_ended(self, response: ModelResponse | None) -> None:
        """A call returned ``response`` (None: it failed)."""
        with self._lock:
            self.finished += 1
            if response is not None:
                self.cached += bool(response.cached)
                self.prompt_tokens += response.usage.prompt_tokens
                self.completion_tokens += response.usage.completion_tokens
        self.show()

    def label(self) -> str:
        """The counts in words: ``14 calls (2 running, 3 cached), 31.5k tokens``."""
        with self._lock:
            counts = ((self.running, "running"), (self.cached, "cached"))
            notes = ", ".join(f"{n} {what}" for n, what in counts if n)
            calls = f"{self.finished} call" + ("" if self.finished == 1 else "s")
            tokens = self.tokens
        if notes:
            calls += f" ({notes})"
        return f"{calls}, {_amount(tokens)} tokens"

    def show(self, force: bool = False) -> None:
        """Put the counts on the bar (at most every :data:`REDRAW_S` unless ``force``)."""
        if self._bar is None:
            return
        now = time.monotonic()
        if not force and now - self._shown_at < REDRAW_S:
            return
        self._shown_at = now
        self._bar.set_description_str(self.label(), refresh=False)
        self._bar.refresh()


def _amount(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


@contextlib.contextmanager
def counting_calls(bar: Any = None) -> Iterator[CallCounter]:
    """Count every model call made in this context (and the tasks and threads it starts with
    a copy of it) on ``bar``, redrawn every :data:`TICK_S` while calls run."""
    counter = CallCounter(bar)
    stop = threading.Event()
    ticker = None
    if bar is not None and not getattr(bar, "disable", False):
        ticker = threading.Thread(
            target=_redraw_until, args=(counter, stop), name="cigeval-progress", daemon=True
        )
        ticker.start()
    try:
        with observing(counter):
            yield counter
    finally:
        stop.set()
        if ticker is not None:
            ticker.join()
        if counter.started:
            counter.show(force=True)


def _redraw_until(counter: CallCounter, stop: threading.Event) -> None:
    """Redraw the bar while calls run, so its elapsed time moves during a long call."""
    while not stop.wait(TICK_S):
        if counter.running:
            counter.show(force=True)
