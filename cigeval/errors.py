"""Exception hierarchy. Every error cigeval raises on purpose is a :class:`CigevalError`."""

from __future__ import annotations


class CigevalError(Exception):
    """Base class of all errors raised by cigeval."""


class ConfigError(CigevalError):
    """The user asked for something inconsistent (unknown model spec, rubric, tool, option)."""


class InputError(CigevalError):
    """A sample is malformed: missing field, unknown task, unreadable or unusable image.

    The message always names the sample and the problem, so one bad line in a large
    JSONL file can be found and fixed.
    """

    def __init__(self, message: str, sample_id: str | None = None) -> None:
        self.sample_id = sample_id
        prefix = f"sample {sample_id!r}: " if sample_id is not None else ""
        # a message passed on from an error that already named the sample keeps one prefix
        super().__init__(message if message.startswith(prefix) else prefix + message)


class BackendError(CigevalError):
    """A model call failed for good (retries exhausted, authentication, bad request)."""


#: Why a server could not be reached, as :attr:`TransportError.reason` holds it: the
#: connection was refused or reset, the call timed out, the server answered HTTP 5xx, or it
#: refused every attempt with HTTP 429 (rate limited).
TRANSPORT_REASONS = ("connection", "timeout", "server_error", "rate_limited")


class TransportError(BackendError):
    """A model call failed for good because the server could not be reached or answered
    with a server error: ``reason`` is one of :data:`TRANSPORT_REASONS`.

    What the run's circuit breaker counts (``--circuit-breaker``): many samples in a row
    failing this way mean the server is down, not that the samples are bad.
    """

    def __init__(self, message: str, reason: str) -> None:
        self.reason = reason
        super().__init__(message)


class ParseError(CigevalError):
    """A model reply could not be turned into the expected structure, even after re-asking.

    ``reply`` holds the last raw reply so it can be inspected.
    """

    def __init__(self, message: str, reply: str | None = None) -> None:
        self.reply = reply
        super().__init__(message)


class ToolError(CigevalError):
    """A tool failed to run on its inputs."""


class MissingDependency(CigevalError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the optional package {package!r}. "
            f"Install it with: pip install 'cigeval[{extra}]'"
        )


class PreflightError(CigevalError):
    """A check before the first sample failed (server down, model not served, weights missing).

    The message names the fix. The command line ends the run with exit status 2.
    """


class ResultsWriteError(CigevalError):
    """The results file cannot be written (permissions, a full disk, a missing folder).

    The run stops at once; the file keeps every complete record written before, so a rerun
    resumes. The command line exits with status 2.
    """


class ReportWriteError(CigevalError):
    """A report page could not be written (a folder that cannot be created or written, a full
    disk); the file at its path, if any, is left as it was. The command line exits with
    status 2."""
