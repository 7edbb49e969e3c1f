"""A tiny randomly initialised GroundingDINO built from configs, for offline tests."""

from __future__ import annotations

from pathlib import Path

import pytest

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "dog", "cat", "red", "car"]


def build_tiny_grounding_dino(folder: Path) -> None:
    """Save a tiny randomly initialised GroundingDINO (model + processor) in ``folder``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    image_processor = transformers.GroundingDinoImageProcessorPil(
        size={"shortest_edge": 64, "longest_edge": 64}
    )
    processor = transformers.GroundingDinoProcessor(
        image_processor=image_processor, tokenizer=tokenizer
    )
    backbone = transformers.SwinConfig(
        image_size=64,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1, 1],
        num_heads=[1, 1, 1],
        window_size=4,
        out_features=["stage1", "stage2", "stage3"],
    )
    text = transformers.BertConfig(
        vocab_size=len(WORDS),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    config = transformers.GroundingDinoConfig(
        backbone_config=backbone,
        text_config=text,
        d_model=64,
        encoder_layers=1,
        decoder_layers=2,
        num_queries=10,
        max_text_len=16,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        num_feature_levels=3,
        encoder_n_points=2,
        decoder_n_points=2,
    )
    torch.manual_seed(0)
    model = transformers.GroundingDinoForObjectDetection(config).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
