"""The CIGEval method (paper §3): plan a tool per sub-question, act, observe, judge, aggregate.

The only package that uses LangGraph. :class:`CigevalRubric` is the ``cigeval`` rubric;
:func:`run_agent` runs the graph of one sample.
"""

from cigeval.agent.graph import AgentContext, run_agent
from cigeval.agent.rubric import CigevalRubric

__all__ = ["AgentContext", "CigevalRubric", "run_agent"]
