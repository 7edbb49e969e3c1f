"""Text from data made safe to show on a terminal: the one escaping function for what cigeval
prints.

Sample ids, image paths, model replies and server messages are data: a control character in
them (an ANSI or OSC escape sequence, a carriage return, a NUL) would otherwise reach the
terminal and act there, setting the window title, clearing the screen or overwriting a line
with a fake one. Everything cigeval prints from data goes through :func:`safe_text`, which
shows such characters escaped (``\\x1b``, ``\\x00``, ``\\u202e``) instead.
"""

from __future__ import annotations

import re
import sys
from typing import IO

from cigeval._unicode import safe_text as _valid_utf8

#: Characters that act on a terminal or reorder what it shows: C0 controls and DEL, C1
#: controls (0x9b is a one-byte CSI), line and paragraph separators, and the bidirectional
#: overrides and isolates. Tab and newline are handled apart (see :func:`safe_text`).
_ACTING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_ACTING_OR_NEWLINE = re.compile(f"[\n\t{_ACTING.pattern[1:-1]}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if match.group() == "\n":
        return "\\n"
    if match.group() == "\t":
        return "\\t"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_text(value: object, *, lines: bool = False) -> str:
    """``value`` as text with every control character shown escaped (``"\\x1b[2J"`` becomes
    the eight characters ``\\x1b[2J``), so printing it cannot act on the terminal.

    By default newlines and tabs are escaped too: one id, path or message stays on one line
    and cannot fake another. ``lines=True`` keeps them, for text cigeval laid out itself
    whose data parts were escaped already (a summary, an error message). Lone surrogates
    become U+FFFD, so the text can always be written.
    """
    text = _valid_utf8(value if isinstance(value, str) else str(value))
    pattern = _ACTING if lines else _ACTING_OR_NEWLINE
    return pattern.sub(_escape, text)


def echo(text: object, file: IO[str] | None = None) -> None:
    """Print ``text`` (laid out by cigeval, lines kept) through :func:`safe_text` to ``file``
    (stderr by default)."""
    print(safe_text(text, lines=True), file=file if file is not None else sys.stderr)
