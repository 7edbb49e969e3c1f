"""The service tests need the serve extra (fastapi, uvicorn); without it they are not collected."""

from __future__ import annotations

import importlib.util

#: Test files pytest leaves out when the serve extra is not installed.
collect_ignore_glob = (
    []
    if importlib.util.find_spec("fastapi") and importlib.util.find_spec("uvicorn")
    else ["test_*.py"]
)
