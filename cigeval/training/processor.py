"""The base model's processor and the chat template to train with.

transformers' ``AutoProcessor`` for Qwen2-VL / Qwen2.5-VL needs torchvision (for its video
processor), which does not install beside the CPU build of torch. Without it, the processor is
built from the tokenizer and the image processor, with no video processor; that processor also
saves itself as those two parts (the stock ``save_pretrained`` fails on the missing video
processor, and the trainer saves the processor with every checkpoint).

Training on the assistant turns only needs a chat template with ``{% generation %}`` markers.
A template that has them is used as it is; TRL patches the templates of well-known models
(the real Qwen2-VL / Qwen2.5-VL one among them); for any other Qwen-VL-style template cigeval
supplies its own (:data:`QWEN_VL_TRAINING_TEMPLATE`), which is then saved with the outputs so
that judging with the tuned model renders conversations the way training did.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError

#: Tokens a Qwen-VL style vocabulary has; cigeval's template is only offered to such models.
QWEN_VL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>")

#: A Qwen-VL chat template with generation markers around each assistant reply (and its end
#: token, so the model learns to stop). It renders like Qwen's own template, minus the
#: default system prompt Qwen adds to conversations without one.
QWEN_VL_TRAINING_TEMPLATE = (
    "{%- macro content(message) -%}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' -%}"
    "{% generation %}{{ content(message) + '<|im_end|>\\n' }}{% endgeneration %}"
    "{%- else -%}{{ content(message) + '<|im_end|>\\n' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

_QWEN_VL_TYPES = ("qwen2_vl", "qwen2_5_vl")


def _load(loader: Any, path: str, what: str) -> Any:
    try:
        return loader.from_pretrained(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"could not load the {what} of the base model {path!r}: {exc}. A base model needs a "
            "tokenizer with a chat template and an image processor (preprocessor_config.json); "
            "a hub id must be in the local cache when offline"
        ) from exc


def _without_video(base: type) -> type:
    """``base`` (a Qwen-VL processor class) working without a video processor."""

    class Processor(base):
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

        def save_pretrained(
            self, save_directory: str | os.PathLike[str], **kwargs: Any
        ) -> list[str]:
            os.makedirs(save_directory, exist_ok=True)
            self.tokenizer.save_pretrained(save_directory)
            self.image_processor.save_pretrained(save_directory)
            return [str(save_directory)]

    Processor.__name__ = Processor.__qualname__ = base.__name__
    return Processor


def load_vl_processor(path: str) -> Any:
    """The processor (tokenizer + image processor) of a vision-language model folder or id."""
    import transformers

    tokenizer = _load(transformers.AutoTokenizer, path, "tokenizer")
    image_processor = _load(transformers.AutoImageProcessor, path, "image processor")
    try:
        return transformers.AutoProcessor.from_pretrained(path)
    except ImportError as exc:
        model_type = getattr(transformers.AutoConfig.from_pretrained(path), "model_type", None)
        if model_type not in _QWEN_VL_TYPES:
            raise ConfigError(
                f"the processor of {path!r} needs a package that is missing ({exc}); without "
                "it cigeval can build only Qwen2-VL / Qwen2.5-VL processors"
            ) from exc
        base = (
            transformers.Qwen2_5_VLProcessor
            if model_type == "qwen2_5_vl"
            else transformers.Qwen2VLProcessor
        )
        return _without_video(base)(
            image_processor=image_processor,
            tokenizer=tokenizer,
            video_processor=None,
            chat_template=tokenizer.chat_template,
        )


def _tokenizer(processor: Any) -> Any:
    return getattr(processor, "tokenizer", processor)


def _is_qwen_vl(processor: Any) -> bool:
    vocabulary = _tokenizer(processor).get_vocab()
    return all(token in vocabulary for token in QWEN_VL_TOKENS)


def training_chat_template(processor: Any, override: Path | None = None) -> tuple[str, str]:
    """The chat template to train with, and where it comes from (for the log).

    ``override``: a template file of the user's, which must have generation markers.
    Raises :class:`ConfigError` when the base model has no template, or one that neither TRL
    nor cigeval can mark up.
    """
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if override is not None:
        try:
            text = Path(override).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the chat template {override}: {exc}") from exc
        if not has_generation_markers(text):
            raise ConfigError(
                f"the chat template {override} has no {{% generation %}} markers around the "
                "assistant replies, so the loss could not be limited to them"
            )
        return text, f"the file {override}"
    template = getattr(processor, "chat_template", None) or _tokenizer(processor).chat_template
    if not template:
        raise ConfigError(
            "the base model has no chat template, so conversations cannot be rendered; pass "
            f"one with {_template_option()} (with {{% generation %}} markers)"
        )
    if has_generation_markers(template):
        return template, "the base model (it has generation markers)"
    try:
        patched = get_training_chat_template(processor)
    except (ValueError, TypeError):
        patched = None
    if patched is not None:
        return patched, "TRL's training version of the base model's template"
    if _is_qwen_vl(processor):
        return QWEN_VL_TRAINING_TEMPLATE, "cigeval's Qwen-VL training template"
    raise ConfigError(
        "the base model's chat template has no {% generation %} markers and is not one TRL "
        f"can patch; pass a marked-up copy with {_template_option()}"
    )


def use_chat_template(processor: Any, template: str) -> None:
    """Make ``template`` the processor's (and its tokenizer's) chat template."""
    processor.chat_template = template
    _tokenizer(processor).chat_template = template


def _template_option() -> str:
    """How the caller gives a chat template file, in the caller's words."""
    return in_callers_words("--chat-template FILE", "FinetuneConfig(chat_template='FILE')")
