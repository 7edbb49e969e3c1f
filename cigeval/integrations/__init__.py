"""cigeval inside other evaluation frameworks; each integration imports its framework on use.

- :mod:`cigeval.integrations.inspect_ai`: cigeval as an inspect_ai scorer
  (:func:`~cigeval.integrations.inspect_ai.inspect_scorer`) and cigeval samples as inspect
  samples (:func:`~cigeval.integrations.inspect_ai.inspect_samples`); ``pip install
  'cigeval[inspect]'`` (docs/inspect.md).
"""
