"""One vocabulary of finish reasons, whatever the provider calls them."""

import enum

import pytest

from cigeval.messages import FINISH_REASONS, UNFINISHED_REASONS, normalize_finish_reason


class _ProviderEnum(enum.Enum):
    MAX_TOKENS = "MAX_TOKENS"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("stop", "stop"),
        ("end_turn", "stop"),  # Anthropic
        ("STOP", "stop"),  # Gemini
        ("length", "length"),
        ("max_tokens", "length"),  # Anthropic
        (_ProviderEnum.MAX_TOKENS, "length"),
        ("FinishReason.MAX_TOKENS", "length"),
        ("content_filter", "content_filter"),
        ("SAFETY", "content_filter"),  # Gemini
        ("refusal", "content_filter"),  # Anthropic
        ("tool_use", "tool_calls"),
        ("something new", "unknown"),
        (None, None),
    ],
)
def test_provider_spellings_map_to_one_vocabulary(raw, expected):
    assert normalize_finish_reason(raw) == expected
    assert expected is None or expected in FINISH_REASONS


def test_every_alias_lands_in_the_vocabulary_and_unfinished_is_part_of_it():
    from cigeval.messages import _FINISH_REASON_ALIASES

    assert set(_FINISH_REASON_ALIASES.values()) <= set(FINISH_REASONS)
    assert set(FINISH_REASONS) >= UNFINISHED_REASONS
    assert "stop" not in UNFINISHED_REASONS
