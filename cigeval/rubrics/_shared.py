"""Small helpers shared by the non-agentic rubrics: options, labelled images, error records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cigeval.errors import ConfigError, ParseError
from cigeval.messages import ImagePart, TextPart
from cigeval.prompts import render
from cigeval.sample_run import SampleRun
from cigeval.score import Verdict


def rubric_options(run: SampleRun, rubric: str, known: Iterable[str]) -> dict[str, Any]:
    """``config.rubric_options``, refusing keys this rubric does not know (typos fail loudly)."""
    options = dict(run.config.rubric_options)
    allowed = set(known)
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ConfigError(
            f"rubric {rubric!r} does not take the option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(sorted(allowed)) or 'none'}"
        )
    return options


def render_for(run: SampleRun, template: str, **variables: Any) -> str:
    """Render a template, preferring the run's prompt variant folder (``config.prompt_dir``)."""
    return render(template, prompt_dir=run.config.prompt_dir, **variables)


def choice_option(options: dict[str, Any], key: str, default: str, allowed: Sequence[str]) -> str:
    """A string option restricted to ``allowed``."""
    value = options.get(key, default)
    if value not in allowed:
        raise ConfigError(f"rubric option {key}={value!r}; use one of {', '.join(allowed)}")
    return str(value)


def int_option(options: dict[str, Any], key: str, default: int, minimum: int = 1) -> int:
    """A whole-number option no smaller than ``minimum``."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"rubric option {key}={value!r}; expected an integer >= {minimum}")
    return value


def labelled_images(
    run: SampleRun, roles: Sequence[str], labels: dict[str, str] | None = None
) -> list[TextPart | ImagePart]:
    """Message parts ``Image k: <label>`` + image for each role, numbered from 1 in order."""
    parts: list[TextPart | ImagePart] = []
    for index, role in enumerate(roles, start=1):
        label = (labels or {}).get(role) or run.task.role_label(role)
        parts.append(TextPart(f"Image {index}: {label}"))
        parts.append(ImagePart(run.encode(run.loaded[role]), role))
    return parts


def word_count(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(text.split())


def failed_verdict(exc: Exception, details: dict[str, Any] | None = None) -> Verdict:
    """A failed Verdict for ``exc``, with no value, dimensions or sub-scores.

    The message has the same ``ParseError: ...`` form the evaluator gives errors it catches.
    """
    kind = "ParseError" if isinstance(exc, ParseError) else type(exc).__name__
    return Verdict.failure(f"{kind}: {exc}", details=details or {})
