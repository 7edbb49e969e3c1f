"""Define a rubric of your own, register it, and run it with a scripted judge.

A factor rubric needs no cigeval internals: name the factors (JSON key -> one-sentence
definition, or a dict with checks and score bands), pick a scale, and register it. cigeval
writes the prompt, validates the judge's JSON strictly (exact keys, integer range,
justification length), re-asks on errors and writes ordinary result records.

Run it with ``python examples/custom_rubric.py``; no model or network is needed, because the
judge here is a :class:`ScriptedBackend` that answers from a list. Swap it for a real model
spec such as ``"openai:gpt-4o-2024-05-13"`` to judge for real.
"""

from __future__ import annotations

import json

from PIL import Image

from cigeval import Evaluator, RunConfig, ScriptedBackend, define_rubric

# 1. The rubric: two factors on a 1-5 scale, weighted 2:1, judged against the source image.
define_rubric(
    "text_rendering",
    factors={
        "legibility": "Whether text that the instruction asks to add can be read at a glance, "
        "with every character complete and correctly spelled.",
        "placement": {
            "definition": "Whether the added text sits where the instruction puts it and "
            "follows the surface it is written on.",
            "checks": ["position relative to the named object", "perspective and curvature"],
        },
    },
    scale=(1, 5),
    aggregate={"legibility": 2.0, "placement": 1.0},
    focus="how well an edit renders requested text",
    mode="online",
    replace=True,
)

# 2. A sample: the source image, the edited image and the instruction.
sample = {
    "id": "sign-1",
    "task": "text_guided_ie",
    "instruction": "Write OPEN on the shop sign.",
    "model": "my-editor",
    "images": {
        "source": Image.new("RGB", (64, 48), "gray"),
        "output": Image.new("RGB", (64, 48), "white"),
    },
}

# 3. A scripted judge: the first answer misses a factor, so cigeval re-asks with the error.
justification = (
    "The word OPEN is crisp and correctly spelled across the sign, though the "
    "final letter is slightly compressed near the right edge."
)
first = {
    "image_id": "sign-1",
    "online_factor_results": {"legibility": {"score": 4, "justification": justification}},
}
second = {
    "image_id": "sign-1",
    "online_factor_results": {
        "legibility": {"score": 4, "justification": justification},
        "placement": {"score": 5, "justification": justification},
    },
}
judge = ScriptedBackend([json.dumps(first), json.dumps(second)])

evaluator = Evaluator(judge, rubric="text_rendering", run_config=RunConfig(use_cache=False))
score = evaluator.evaluate(sample)

print("status:", score.status)
print("value: ", round(score.value or 0.0, 3), "=", score.details["value_mapping"])
for sub in score.sub_scores:
    print(f"  {sub.question_id}: {sub.score:g} (1-5) - {sub.reasoning}")
print("re-ask sent:", judge.requests[1].messages[-1].text_content().splitlines()[0])
