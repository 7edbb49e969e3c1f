"""A pydantic ValidationError as one line that names each field at fault."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


def validation_problems(exc: ValidationError, whole: str) -> str:
    """Each error of ``exc`` as ``field.path: message``, joined by ``"; "``; ``whole`` names
    the place of an error about the object itself (it has no field path)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or whole}: {err['msg']}" for err in exc.errors()
    )
