"""Which chat template training uses, and that the loss covers the assistant replies only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cigeval.errors import ConfigError
from cigeval.training import QWEN_VL_TRAINING_TEMPLATE, load_vl_processor, training_chat_template
from cigeval.training.processor import use_chat_template

from .support import TOOL_REQUEST, conversation

pytest.importorskip("trl")


def test_a_template_with_generation_markers_is_used_as_it_is(tiny_model: Path) -> None:
    processor = load_vl_processor(str(tiny_model))
    template, source = training_chat_template(processor)
    assert template == QWEN_VL_TRAINING_TEMPLATE and "base model" in source


def test_qwen_s_own_template_is_patched_by_trl(tiny_model: Path) -> None:
    from trl.chat_template_utils import qwen2_5_vl_chat_template

    processor = load_vl_processor(str(tiny_model))
    use_chat_template(processor, qwen2_5_vl_chat_template)
    template, source = training_chat_template(processor)
    assert "TRL" in source and "generation" in template


def test_an_unmarked_qwen_template_gets_cigeval_s(tiny_model: Path) -> None:
    from tests.backends.tiny_qwen import CHAT_TEMPLATE  # Qwen-like, without markers

    processor = load_vl_processor(str(tiny_model))
    use_chat_template(processor, CHAT_TEMPLATE)
    assert training_chat_template(processor) == (
        QWEN_VL_TRAINING_TEMPLATE,
        "cigeval's Qwen-VL training template",
    )


def test_missing_or_unusable_templates_are_clear_errors(tiny_model: Path, tmp_path: Path) -> None:
    processor = load_vl_processor(str(tiny_model))
    use_chat_template(processor, "")
    with pytest.raises(ConfigError, match="no chat template"):
        training_chat_template(processor)
    plain = tmp_path / "plain.jinja"
    plain.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    with pytest.raises(ConfigError, match="no \\{% generation %\\} markers"):
        training_chat_template(processor, override=plain)
    marked = tmp_path / "marked.jinja"
    marked.write_text(QWEN_VL_TRAINING_TEMPLATE, encoding="utf-8")
    assert training_chat_template(processor, override=marked)[1] == f"the file {marked}"


def test_a_model_without_an_image_processor_is_a_clear_error(
    tiny_model: Path, tmp_path: Path
) -> None:
    copy = shutil.copytree(tiny_model, tmp_path / "no-image-processor")
    (copy / "preprocessor_config.json").unlink()
    with pytest.raises(ConfigError, match="image processor"):
        load_vl_processor(str(copy))


def test_only_the_assistant_replies_are_supervised(tiny_model: Path, tmp_path: Path) -> None:
    """TRL's vision collator with the training template masks everything but the replies."""
    from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

    processor = load_vl_processor(str(tiny_model))
    template, _ = training_chat_template(processor)
    collator = DataCollatorForVisionLanguageModeling(
        processor, assistant_only_loss=True, chat_template=template
    )
    row = conversation(1, tmp_path)
    row["images"] = [str(tmp_path / name) for name in row["images"]]
    batch = collator([{"messages": row["messages"], "images": row["images"]}])
    labels = batch["labels"][0]
    supervised = processor.tokenizer.decode(labels[labels != -100])
    reply = row["messages"][4]["content"][0]["text"]
    assert supervised == f"{TOOL_REQUEST}<|im_end|>\n{reply}<|im_end|>\n"
    assert int(batch["image_grid_thw"].shape[0]) == 2
