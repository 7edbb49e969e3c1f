"""Randomly initialised Qwen2-VL / Qwen2.5-VL models, for tests, demos and benchmarks.

Their weights are random, so what they write means nothing: they exist to run the whole
fine-tuning and judging machinery offline (``size="tiny"``, about 0.2 M parameters, built in
well under a second) and to measure speed and memory at the real 7B size (``size="7b"``,
the published Qwen2-VL-7B / Qwen2.5-VL-7B architecture, needs a GPU). The tokenizer is a small
byte-level BPE trained on a few sentences; its chat template is
:data:`cigeval.training.processor.QWEN_VL_TRAINING_TEMPLATE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from cigeval.training.processor import QWEN_VL_TRAINING_TEMPLATE

Kind = Literal["qwen2_vl", "qwen2_5_vl"]
Size = Literal["tiny", "7b"]

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
_CORPUS = (
    "You are a careful judge of generated images.",
    "Rate how well the image follows the prompt, from 0 to 10.",
    '{"score": 7, "reasoning": "the red square is present"}',
    '{"thought": "I need to look closer", "tool": "Difference", "query": ""}',
)

# The published text and vision settings of the 7B models (their config.json files).
_TEXT_7B: dict[str, Any] = {
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "rope": (1000000.0, [16, 24, 24]),
    "vocab_size": 152064,
}
_VISION_7B: dict[str, dict[str, Any]] = {
    "qwen2_vl": {
        "depth": 32,
        "embed_dim": 1280,
        "hidden_size": 3584,
        "num_heads": 16,
        "mlp_ratio": 4,
    },
    "qwen2_5_vl": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "out_hidden_size": 3584,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
    },
}
_TEXT_TINY: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "rope": (10000.0, [2, 3, 3]),
    "vocab_size": None,
}
_VISION_TINY: dict[str, dict[str, Any]] = {
    "qwen2_vl": {"depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2},
    "qwen2_5_vl": {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
        "window_size": 56,
        "fullatt_block_indexes": [1],
    },
}


def random_tokenizer(chat_template: str = QWEN_VL_TRAINING_TEMPLATE) -> Any:
    """A tiny Qwen-style tokenizer (byte-level BPE, 300 tokens) with the special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(_CORPUS), trainer)
    return Qwen2Tokenizer(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=chat_template,
    )


def random_config(tokenizer: Any, kind: Kind = "qwen2_5_vl", size: Size = "tiny") -> Any:
    """The model config of ``kind`` at ``size``, wired to ``tokenizer``'s special tokens."""
    import transformers

    ids = {t: int(tokenizer.convert_tokens_to_ids(t)) for t in SPECIAL_TOKENS}
    text: dict[str, Any] = dict(_TEXT_7B if size == "7b" else _TEXT_TINY)
    theta, section = text.pop("rope")
    text["vocab_size"] = text["vocab_size"] or len(tokenizer)
    text.update(
        rope_parameters={"rope_type": "default", "rope_theta": theta, "mrope_section": section},
        bos_token_id=None,
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    vision = {
        **(_VISION_7B if size == "7b" else _VISION_TINY)[kind],
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    config_class = (
        transformers.Qwen2_5_VLConfig if kind == "qwen2_5_vl" else transformers.Qwen2VLConfig
    )
    return config_class(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )


def save_random_qwen_vl(
    directory: str | Path,
    kind: Kind = "qwen2_5_vl",
    size: Size = "tiny",
    *,
    seed: int = 0,
    dtype: Any = None,
    device: str | None = None,
    chat_template: str = QWEN_VL_TRAINING_TEMPLATE,
    max_pixels: int = 112 * 112,
) -> Path:
    """Build a random model and save it, its tokenizer and image processor to ``directory``.

    ``dtype``/``device``: where the weights are created (a 7B model wants bfloat16 on a GPU).
    ``max_pixels`` bounds the image size the image processor keeps (and so the image tokens).
    """
    import torch
    import transformers

    tokenizer = random_tokenizer(chat_template)
    config = random_config(tokenizer, kind, size)
    model_class = (
        transformers.Qwen2_5_VLForConditionalGeneration
        if kind == "qwen2_5_vl"
        else transformers.Qwen2VLForConditionalGeneration
    )
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    try:
        if dtype is not None:
            torch.set_default_dtype(dtype)
        with torch.device(device or "cpu"):
            model = model_class(config).eval()
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.bos_token_id = None
    image_processor = transformers.Qwen2VLImageProcessorPil(
        min_pixels=56 * 56, max_pixels=max_pixels
    )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    image_processor.save_pretrained(directory)
    return directory
