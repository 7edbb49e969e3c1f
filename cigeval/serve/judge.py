"""The service's judge: an :class:`~cigeval.Evaluator` built from a
:class:`~cigeval.config.JudgeSpec`, its model-call limit matched to the service's admission
limit, and the score mode applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cigeval.config import EvalConfig, JudgeSpec
    from cigeval.evaluation import Evaluator


def build_evaluator(spec: JudgeSpec, *, score_mode: str = "integer") -> Evaluator:
    """The judge of ``spec`` (its own preflight off: the app checks at startup).

    ``spec.run_config.concurrency`` is the items judged at once; its default limit of calls
    in flight (3 per item) then matches it. Under ``score_mode="expected"`` each ``openai:``
    judge asks for token log-probabilities and the response cache is not used (cached
    replies keep no log-probabilities).
    """
    from cigeval.backends.resolve import resolve_backend
    from cigeval.evaluation import Evaluator

    run_config = spec.run_config.model_copy(update={"preflight": False})
    judges: list[Any] = list(spec.models)
    base_url = spec.base_url
    config = spec.config
    if score_mode == "expected":
        config = _strict_reading(config)
        from cigeval.serve.expected import ExpectedScoreBackend

        run_config = run_config.model_copy(update={"use_cache": False})
        judges = [
            ExpectedScoreBackend(resolve_backend(m, base_url=base_url, run_config=run_config))
            for m in judges
        ]
        base_url = None
    return Evaluator(
        judges, config=config, run_config=run_config, ensemble=spec.ensemble, base_url=base_url
    )


def _strict_reading(config: EvalConfig) -> EvalConfig:
    """``config`` reading replies the strict way: expected scores are fractions, which the
    official reading would cut to integers (``reply_parsing="official"`` given explicitly
    is a ConfigError)."""
    from cigeval._caller import in_callers_words
    from cigeval.config import EvalConfig
    from cigeval.errors import ConfigError
    from cigeval.serve.expected import expected_mode

    if config.reply_parsing == "strict":
        return config
    if "reply_parsing" in config.model_fields_set:
        official = in_callers_words("--reply-parsing official", "reply_parsing='official'")
        strict = in_callers_words("--reply-parsing strict", "reply_parsing='strict'")
        raise ConfigError(
            f"{expected_mode()} writes fractional scores, which {official} cuts to integers "
            f"as the official code does; use {strict}"
        )
    settings = {**config.model_dump(exclude_unset=True), "reply_parsing": "strict"}
    return EvalConfig.model_validate(settings)
