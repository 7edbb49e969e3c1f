"""Opening a Hugging Face dataset of samples: a hub name, a ``save_to_disk`` folder, or
parquet files, as one split, in memory-mapped or streaming form."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError, MissingDependency


def datasets_sdk() -> ModuleType:
    """The ``datasets`` package, or MissingDependency naming the extra to install."""
    try:
        import datasets
    except ImportError:
        raise MissingDependency(
            "datasets", "datasets", "Reading samples from a Hugging Face dataset"
        ) from None
    return datasets


def is_dataset(value: object) -> bool:
    """True for a ``datasets.Dataset`` or ``IterableDataset`` (without importing datasets)."""
    return any(
        cls.__name__ in ("Dataset", "IterableDataset") and cls.__module__.startswith("datasets.")
        for cls in type(value).__mro__
    )


def local_folder(source: str) -> Path | None:
    """The folder image paths of a local dataset are relative to, None for a hub name."""
    path = Path(source)
    if path.is_dir():
        return path.resolve()
    if path.is_file() or any(path.parent.glob(path.name)):
        return path.parent.resolve()
    return None


def load_samples_dataset(
    source: str,
    *,
    config: str | None = None,
    split: str | None = None,
    streaming: bool = False,
) -> Any:
    """One split of the dataset at ``source``: a ``save_to_disk`` folder, parquet files (a
    file, a glob, or a folder of them), or a hub name (``config`` is its configuration).

    ``split`` may be left out when there is only one. ``streaming`` reads rows as they are
    needed (an ``IterableDataset``) instead of opening the whole split. Raises ConfigError
    naming the fix (the splits there are, the forms a source takes).
    """
    datasets = datasets_sdk()
    path = Path(source)
    try:
        if path.is_dir() and _saved_to_disk(path):
            loaded = _one_split(datasets.load_from_disk(str(path)), split, source)
            return loaded.to_iterable_dataset() if streaming else loaded
        parquet = _parquet_files(path)
        if parquet is not None:
            return datasets.load_dataset(
                "parquet", data_files=parquet, split=split or "train", streaming=streaming
            )
        loaded = datasets.load_dataset(source, config, split=split, streaming=streaming)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"cannot load the dataset {source!r}: {type(exc).__name__}: {str(exc)[:300]} "
            "(a source is a hub name, which needs the network or a copy in the Hugging Face "
            "cache, a folder written by Dataset.save_to_disk, or parquet files)"
        ) from None
    return _one_split(loaded, split, source)


def _saved_to_disk(path: Path) -> bool:
    markers = ("dataset_info.json", "state.json", "dataset_dict.json")
    return any((path / name).is_file() for name in markers)


def _parquet_files(path: Path) -> str | None:
    """The parquet data files ``path`` names, as ``load_dataset`` takes them, or None."""
    if path.is_dir():
        return str(path / "*.parquet") if any(path.glob("*.parquet")) else None
    if path.suffix == ".parquet":
        return str(path)
    return None


def _one_split(loaded: Any, split: str | None, source: str) -> Any:
    """``loaded`` itself, or its split ``split`` when it is a dict of splits."""
    if not hasattr(loaded, "keys"):  # already one split
        return loaded
    names = list(loaded.keys())
    if split is not None:
        if split not in names:
            raise ConfigError(
                f"the dataset {source!r} has no split {split!r}; its splits: {', '.join(names)}"
            )
        return loaded[split]
    if len(names) == 1:
        return loaded[names[0]]
    raise ConfigError(
        f"the dataset {source!r} has the splits {', '.join(names)}: choose one with "
        f"{in_callers_words('--split NAME', 'split=NAME')}"
    )
