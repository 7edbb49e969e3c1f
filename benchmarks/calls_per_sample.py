"""Model calls per sample and task, against the paper's decomposition (no duplicate calls).

    python benchmarks/calls_per_sample.py

CIGEval asks one tool-planning call per sample, then one judge call per sub-question:
1 + (1, 2, 2, 2, 2, 3, 2) calls for the seven tasks in the order below. Every sample is run
with a scripted judge (no network) and each request is keyed like the answer cache keys it,
so a call sent twice would show as a duplicate.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import samples

from cigeval.backends.cache import cache_key
from cigeval.backends.scripted import ScriptedBackend
from cigeval.config import RunConfig
from cigeval.evaluation import Evaluator
from cigeval.tasks import TASK_IDS, get_task
from cigeval.testing import rule_judge

#: Sub-questions per task in the CIGEval paper (judge calls after the one planning call).
PAPER = {
    "text_guided_ig": 1,
    "mask_guided_ie": 2,
    "text_guided_ie": 2,
    "subject_driven_ig": 2,
    "subject_driven_ie": 2,
    "multi_concept_ic": 3,
    "control_guided_ig": 2,
}


def measure(tools: dict[str, str] | None, label: str) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="cigeval-calls-"))
    items = {s.task: s for s in samples(folder, 7)}
    print(f"\n{label}")
    print(
        f"{'task':<20} {'paper':>6} {'calls':>6} {'plan':>5} {'judge':>6} {'tool':>5} {'dupes':>6}"
    )
    all_match = True
    for task in TASK_IDS:
        backend = ScriptedBackend(rule_judge(tools=tools), name="calls")
        evaluator = Evaluator(backend, run_config=RunConfig(use_cache=False))
        score = evaluator.evaluate(items[task])
        assert score.status == "ok", score.error
        purposes = Counter(e.purpose for e in score.trace.model_calls())
        keys = Counter(cache_key(backend.identity, r) for r in backend.requests)
        dupes = sum(n - 1 for n in keys.values())
        expected = 1 + PAPER[task]
        judge = purposes.get("judge", 0)
        tool_calls = len(backend.requests) - purposes.get("plan", 0) - judge
        all_match &= judge == PAPER[task] == len(get_task(task).sub_questions)
        all_match &= dupes == 0 and (tools is not None or len(backend.requests) == expected)
        print(
            f"{task:<20} {expected:>6} {len(backend.requests):>6} {purposes.get('plan', 0):>5} "
            f"{judge:>6} {tool_calls:>5} {dupes:>6}"
        )
    return all_match


def main() -> None:
    ok = measure(None, "planner picks no tool (paper: 1 plan + judge calls):")
    ok &= measure(
        {"prompt_following": "Scene_Graph", "over_editing": "Difference"},
        "planner picks tools (Scene_Graph asks the model once more per use; others need none):",
    )
    print("\nall tasks match the paper's decomposition, no duplicate call:", "yes" if ok else "NO")


if __name__ == "__main__":
    main()
