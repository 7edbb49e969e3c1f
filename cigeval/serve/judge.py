"""The service's judge: an :class:`~cigeval.Evaluator` built from specs and settings, its
model-call limit matched to the service's admission limit, and the score mode applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cigeval.config import EnsembleConfig, EvalConfig, RunConfig
    from cigeval.evaluation import Evaluator


def build_evaluator(
    models: list[Any],
    config: EvalConfig,
    run_config: RunConfig,
    ensemble: EnsembleConfig,
    base_url: str | None = None,
    *,
    score_mode: str = "integer",
) -> Evaluator:
    """The judge of ``models`` (its own preflight off: the app checks at startup).

    ``run_config.concurrency`` is the items judged at once; its default limit of calls in
    flight (3 per item) then matches it. Under ``score_mode="expected"`` each ``openai:``
    judge asks for token log-probabilities and the response cache is not used (cached
    replies keep no log-probabilities).
    """
    from cigeval.backends.resolve import resolve_backend
    from cigeval.evaluation import Evaluator

    run_config = run_config.model_copy(update={"preflight": False})
    judges: list[Any] = list(models)
    if score_mode == "expected":
        from cigeval.serve.expected import ExpectedScoreBackend

        run_config = run_config.model_copy(update={"use_cache": False})
        judges = [
            ExpectedScoreBackend(resolve_backend(m, base_url=base_url, run_config=run_config))
            for m in models
        ]
        base_url = None
    return Evaluator(
        judges, config=config, run_config=run_config, ensemble=ensemble, base_url=base_url
    )
