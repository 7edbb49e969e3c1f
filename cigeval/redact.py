"""Credentials kept out of what cigeval writes and shows: lock files, records, messages,
replies, cache rows, reports.

A command line or a message may hold a secret: ``--base-url http://user:KEY@host/?api_key=KEY``,
``--api-key KEY``. What is written next to the results or printed gets it replaced by ``***``.
A secret the process knows (a judge's API key or bearer token, the password of a server URL:
:func:`remember_secret`, called by the backends) is replaced wherever it appears, also in text
that does not look like a credential: a judge server that echoes the key inside its reply
gets it stored as ``***`` in the results, the cache and the report.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlsplit

#: Query parameters and flags whose value is a credential: api_key, key, token, secret...
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:api[-_]?key|key|token|secret|password|passwd|pwd|auth|authorization|"
    r"signature|sig|credentials?|access[-_]?token)$",
    re.IGNORECASE,
)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
_QUERY_VALUE = re.compile(r"(?P<name>[?&;][^=&#\s]+)=(?P<value>[^&#\s]*)")
REDACTED = "***"
#: Secrets shorter than this are not remembered: replacing a short word everywhere would
#: garble text (no real key is this short).
MIN_SECRET_CHARS = 8
_known: set[str] = set()
_known_lock = threading.Lock()
_known_sorted: tuple[str, ...] = ()
#: Each known secret as JSON may spell it: any of its characters as a ``\\uXXXX`` escape
#: (a reply's JSON decodes them, so a key echoed that way would be written in clear).
_known_escaped: tuple[re.Pattern[str], ...] = ()


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from now on, in this process, wherever it appears (values shorter
    than :data:`MIN_SECRET_CHARS` are ignored)."""
    global _known_sorted, _known_escaped
    if not value or len(value) < MIN_SECRET_CHARS or value in _known:
        return
    with _known_lock:
        _known.add(value)
        _known_sorted = tuple(sorted(_known, key=len, reverse=True))  # longest first
        _known_escaped = tuple(_json_spellings(secret) for secret in _known_sorted)


def _json_spellings(secret: str) -> re.Pattern[str]:
    """A pattern of ``secret`` with any of its characters written as a JSON escape."""

    def hex_digit(digit: str) -> str:
        return f"[{digit}{digit.upper()}]" if digit.isalpha() else digit

    def spellings(char: str) -> str:
        escape = "\\\\u" + "".join(hex_digit(d) for d in f"{ord(char):04x}")
        solidus = "|\\\\/" if char == "/" else ""
        return f"(?:{re.escape(char)}|{escape}{solidus})"

    return re.compile("".join(spellings(char) for char in secret))


def remember_url_secrets(url: str | None) -> None:
    """Remember the credentials a server URL holds: its password (and a user name that
    stands alone as a token) and its key-like query values."""
    if not url:
        return
    parts = urlsplit(url)
    remember_secret(parts.password)
    if parts.username and not parts.password:
        remember_secret(parts.username)
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_NAME.search(name):
            remember_secret(value)


def redact_known(text: str) -> str:
    """``text`` with every secret the process knows (:func:`remember_secret`) replaced by
    ``***``."""
    for secret in _known_sorted:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "\\" in text:  # JSON escapes: a reply's parser would decode the secret
        for spelled in _known_escaped:
            text = spelled.sub(REDACTED, text)
    return text


def redact_command(argv: Sequence[str]) -> str:
    """``argv`` as one line with its credentials replaced by ``***``: the user information of
    URLs (``http://user:KEY@host``), key-like query values (``?api_key=KEY``, ``&token=...``)
    and the value of key-like flags (``--api-key KEY``, ``--token=KEY``)."""
    shown: list[str] = []
    secret_next = False
    for arg in argv:
        if secret_next:
            shown.append(REDACTED)
            secret_next = False
            continue
        flag, equals, _ = arg.partition("=")
        if arg.startswith("-") and _SECRET_NAME.search(flag.lstrip("-")):
            if equals:
                shown.append(f"{flag}={REDACTED}")
            else:
                shown.append(arg)
                secret_next = True
            continue
        shown.append(redact_credentials(arg))
    return " ".join(shown)


def redact_credentials(text: str) -> str:
    """``text`` (a message, a URL) with the user information of URLs, key-like query values
    and every secret the process knows (:func:`redact_known`) replaced by ``***``."""
    text = redact_known(text)
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)

    def query(match: re.Match[str]) -> str:
        name = match.group("name")
        if _SECRET_NAME.search(name[1:]):
            return f"{name}={REDACTED}"
        return match.group()

    return _QUERY_VALUE.sub(query, text)
