"""The CIGEval agent (LangGraph): plan tools, act, observe, judge, per sub-question."""

from cigeval.agent.graph import AgentContext, agent_graph, run_agent
from cigeval.agent.judging import Judgement, ToolRequest, build_judge_messages, parse_judge_reply
from cigeval.agent.plan import PlanItem, build_plan_messages, parse_plan

__all__ = [
    "AgentContext",
    "Judgement",
    "PlanItem",
    "ToolRequest",
    "agent_graph",
    "build_judge_messages",
    "build_plan_messages",
    "parse_judge_reply",
    "parse_plan",
    "run_agent",
]
