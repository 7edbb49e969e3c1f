"""Credentials kept out of what cigeval writes and shows: lock files, records, messages.

A command line or a message may hold a secret: ``--base-url http://user:KEY@host/?api_key=KEY``,
``--api-key KEY``. What is written next to the results or printed gets it replaced by ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Query parameters and flags whose value is a credential: api_key, key, token, secret...
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:api[-_]?key|key|token|secret|password|passwd|pwd|auth|authorization|"
    r"signature|sig|credentials?|access[-_]?token)$",
    re.IGNORECASE,
)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
_QUERY_VALUE = re.compile(r"(?P<name>[?&;][^=&#\s]+)=(?P<value>[^&#\s]*)")
REDACTED = "***"


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
    """``text`` (a message, a URL) with the user information of URLs and key-like query
    values replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)

    def query(match: re.Match[str]) -> str:
        name = match.group("name")
        if _SECRET_NAME.search(name[1:]):
            return f"{name}={REDACTED}"
        return match.group()

    return _QUERY_VALUE.sub(query, text)
