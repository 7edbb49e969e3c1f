"""Lazy exports: a package's public names loaded from their modules on first access.

A package lists ``name -> module`` and gets back the module-level ``__getattr__`` and
``__dir__`` of PEP 562::

    __getattr__, __dir__ = lazy_exports(__name__, {"Thing": "cigeval.pkg.thing"}, __all__)

Its ``if TYPE_CHECKING:`` imports of the same names stay, for mypy and editors.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    A name of ``modules`` is imported from its module (absolute, or relative to ``package``
    as ``".stats"``) on first access and kept in the package, so later lookups skip the
    import; any other name raises AttributeError. ``dir()`` lists ``public`` (``__all__``).
    """
    namespace = sys.modules[package].__dict__
    listed = sorted(public)

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(listed)

    return __getattr__, __dir__
