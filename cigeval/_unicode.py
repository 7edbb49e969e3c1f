"""Making text safe to write: lone UTF-16 surrogates replaced, so every output is valid UTF-8.

JSON allows ``"\\ud800"`` (half of a surrogate pair) and Python decodes it into a string that
cannot be encoded as UTF-8. Such text reaches cigeval from samples files and from model
replies; it is made safe before it is written anywhere, never left to crash a writer.
"""

from __future__ import annotations

from typing import Any

#: What a lone surrogate becomes (U+FFFD REPLACEMENT CHARACTER).
REPLACEMENT = "\ufffd"


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (valid pairs are joined).

    Text that is already valid (the usual case) is returned as it is, at the cost of one
    encode.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16: a high+low pair becomes the character it stands for, a lone
        # half becomes U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def safe_strings(value: Any) -> Any:
    """A copy of a JSON-like value with :func:`safe_text` applied to every string and key."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_strings(k): safe_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe_strings(v) for v in value]
    return value
