"""What the judge answered in a probe run, for a message that says what happened.

When every probe ends in error, "the judge could not be asked" is true only when no reply
came at all (a server that is down, a model that does not load). A judge that answered dozens
of times with nothing usable is a different problem, with a different fix: the message says
how often it answered and quotes its first reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from cigeval.score import Score
from cigeval.session import quote_reply


@dataclass
class JudgeAnswers:
    """A tally over the probe samples that ended in error: the replies the judge gave them
    (``answers``), the first of those replies, and the first error."""

    answers: int = 0
    first_reply: str | None = None
    first_error: str | None = None

    def add(self, score: Score) -> None:
        """Count one probe sample's Score (samples that were scored are not counted)."""
        if score.status != "error":
            return
        calls = score.trace.model_calls()
        self.answers += len(calls)
        if self.first_reply is None and calls:
            self.first_reply = calls[0].reply
        if self.first_error is None:
            self.first_error = score.error or "no error message"

    def describe(self) -> str:
        """Why every probe ended in error, in one line."""
        if self.answers == 0:
            error = quote_reply(self.first_error or "no error message")
            return f"every probe ended in error: the judge could not be asked ({error})"
        times = "once" if self.answers == 1 else f"{self.answers} times"
        return (
            f"every probe ended in error: the judge answered {times}, none usable: "
            f"{quote_reply(self.first_reply or '')}"
        )
