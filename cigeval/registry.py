"""One registry behind tasks, tools, rubrics and backends.

Every kind of extension point behaves the same way:

- names are matched case-, space-, hyphen- and underscore-insensitively
  (``"Scene Graph"`` == ``"scene_graph"`` == ``"SceneGraph"``);
- an unknown name is a :class:`~cigeval.errors.ConfigError` that lists the valid choices;
- registering a name that is taken fails unless ``replace=True`` is passed;
- an entry may be a lazy factory (``"package.module:attribute"`` or a zero-argument callable),
  loaded on first use, so heavy providers cost nothing until asked for;
- third-party packages add entries through a Python entry-point group
  (``cigeval.tasks``, ``cigeval.tools``, ``cigeval.rubrics``, ``cigeval.backends``), read the
  first time a name is missing or the names are listed.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

from cigeval.errors import ConfigError

T = TypeVar("T")

#: A lazy entry: an import path ``"package.module:attribute"`` or a callable returning the item.
Lazy = str | Callable[[], object]


def normalize_name(name: str) -> str:
    """The lookup key of a name: lower case without spaces, hyphens or underscores."""
    return _normalized(str(name))


@lru_cache(maxsize=1024)  # reports look a rubric up for every record
def _normalized(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower()


def load_object(path: str) -> object:
    """The object an import path ``"package.module:attribute"`` names."""
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


@dataclass
class _Entry(Generic[T]):
    name: str
    item: T | None = None
    lazy: Lazy | None = None
    #: A built-in default: a plugin of the same name takes its place.
    default: bool = False


class Registry(Generic[T]):
    """Named items of one ``kind`` (``"task"``, ``"tool"``, ``"rubric"``, ``"backend"``).

    ``coerce`` turns what a lazy entry or a plugin yields into an item (for example a class
    into an instance) and rejects what is not one by raising :class:`ConfigError`.
    """

    def __init__(
        self,
        kind: str,
        *,
        entry_point_group: str | None = None,
        coerce: Callable[[object], T] | None = None,
    ) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._coerce = coerce
        self._entries: dict[str, _Entry[T]] = {}
        self._plugins_loaded = entry_point_group is None

    def register(self, name: str, item: T, *, replace: bool = False) -> T:
        """Add ``item`` under ``name``; a taken name needs ``replace=True``."""
        self._claim(name, replace)
        self._entries[normalize_name(name)] = _Entry(name, self._check(item))
        return item

    def register_lazy(self, name: str, lazy: Lazy, *, replace: bool = False) -> None:
        """Add an entry loaded on first :meth:`get` (an import path or a factory)."""
        self._claim(name, replace)
        self._entries[normalize_name(name)] = _Entry(name, lazy=lazy)

    def register_default(self, name: str, lazy: Lazy) -> None:
        """Add a built-in entry, loaded on first :meth:`get`, unless ``name`` is registered
        already; a plugin of the same name takes its place when the plugins are read. Reads
        no plugin itself, so registering built-ins at import costs nothing."""
        key = normalize_name(name)
        if key not in self._entries:
            self._entries[key] = _Entry(name, lazy=lazy, default=True)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (no error when it is absent)."""
        self._entries.pop(normalize_name(name), None)

    def get(self, name: str) -> T:
        """The item registered as ``name``; ConfigError listing the choices when unknown."""
        key = normalize_name(name)
        if key not in self._entries:
            self._load_plugins()
        entry = self._entries.get(key)
        if entry is None:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names()) or 'none'}"
            )
        if entry.item is None:
            entry.item = self._resolve(entry)
            entry.lazy = None
        return entry.item

    def unloaded(self, name: str) -> Lazy | None:
        """The import path or factory ``name`` is registered with, while not loaded yet."""
        entry = self._entries.get(normalize_name(name))
        return entry.lazy if entry is not None and entry.item is None else None

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name`` (ConfigError when unknown)."""
        key = normalize_name(name)
        if key not in self._entries:
            self._load_plugins()
        if key not in self._entries:
            self.get(name)  # raises the standard error
        return self._entries[key].name

    def names(self) -> list[str]:
        """Every registered name, in registration order (plugins last)."""
        self._load_plugins()
        return [entry.name for entry in self._entries.values()]

    @contextmanager
    def scoped(self) -> Iterator[None]:
        """Undo every registration made inside the ``with`` block (handy in tests)."""
        saved = dict(self._entries)
        try:
            yield
        finally:
            self._entries.clear()
            self._entries.update(saved)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = normalize_name(name)
        if key not in self._entries:
            self._load_plugins()
        return key in self._entries

    def _claim(self, name: str, replace: bool) -> None:
        if not isinstance(name, str) or not normalize_name(name):
            raise ConfigError(f"a {self.kind} needs a non-empty name, got {name!r}")
        existing = self._entries.get(normalize_name(name))
        if existing is not None and not replace:
            raise ConfigError(
                f"a {self.kind} named {existing.name!r} is already registered "
                "(pass replace=True to replace it)"
            )

    def _check(self, item: object) -> T:
        return self._coerce(item) if self._coerce is not None else item  # type: ignore[return-value]

    def _resolve(self, entry: _Entry[T]) -> T:
        lazy = entry.lazy
        try:
            loaded = load_object(lazy) if isinstance(lazy, str) else lazy() if lazy else None
        except ConfigError:
            raise
        except ImportError as exc:
            raise ConfigError(f"the {self.kind} {entry.name!r} could not be loaded: {exc}") from exc
        return self._check(loaded)

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        assert self.entry_point_group is not None
        from importlib import metadata  # loaded when plugins are first read (~10 ms)

        for point in metadata.entry_points(group=self.entry_point_group):
            existing = self._entries.get(normalize_name(point.name))
            if existing is None or existing.default:
                self._entries[normalize_name(point.name)] = _Entry(point.name, lazy=point.value)
