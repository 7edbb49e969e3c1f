"""A tiny, randomly initialised Qwen2-VL model on disk, offline, in about a second.

Reusable by any test that needs a real ``hf:`` model: ``save_tiny_qwen2_vl(tmp_path)``. The
model comes from :func:`cigeval.training.random_model.save_random_qwen_vl`; only the chat
template differs (Qwen's, cut down, without the training markers).
"""

from __future__ import annotations

from pathlib import Path

from cigeval.training.random_model import save_random_qwen_vl

# Qwen's template, cut down: images become vision_start, one image_pad, vision_end.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def save_tiny_qwen2_vl(directory: Path) -> Path:
    """Write model, tokenizer (with :data:`CHAT_TEMPLATE`) and image processor to ``directory``."""
    return save_random_qwen_vl(directory, kind="qwen2_vl", chat_template=CHAT_TEMPLATE)
