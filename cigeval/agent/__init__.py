"""The CIGEval method (paper §3): plan a tool per sub-question, act, observe, judge, aggregate.

The only package that uses LangGraph (loaded when a sample is first judged).
:class:`CigevalRubric` is the ``cigeval`` rubric; :mod:`cigeval.agent.graph` runs one sample.
"""

from cigeval.agent.rubric import CigevalRubric

__all__ = ["CigevalRubric"]
