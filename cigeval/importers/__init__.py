"""Samples from generator benchmarks' output folders, judged as they are (``cigeval evaluate
--from FORMAT DIR``; docs/importers.md): GenEval's (:mod:`.geneval`) and T2I-CompBench's
(:mod:`.t2i_compbench`). Each sample is a text-to-image sample of the benchmark's prompt,
named by its generator, with the benchmark's tags in its ``metadata`` (for ``--group-by``).
A folder or image that cannot be read becomes that sample's error record, never a stop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError

if TYPE_CHECKING:  # the sample model loads with the readers, not with the flags' help
    from cigeval.sample import SampleLine

#: A reader of one output folder: (folder, generator name) -> its samples, in order.
FolderReader = Callable[[Path, str], "list[SampleLine]"]


def _readers() -> dict[str, FolderReader]:
    from cigeval.importers.geneval import geneval_samples
    from cigeval.importers.t2i_compbench import t2i_compbench_samples

    return {"geneval": geneval_samples, "t2i-compbench": t2i_compbench_samples}


#: The folder formats ``--from`` reads.
FOLDER_FORMATS = ("geneval", "t2i-compbench")


def folder_samples(
    folders: list[tuple[str, str | Path]], generator: str | None = None
) -> list[SampleLine]:
    """The samples of each (format, folder), numbered in order (the position a record keeps
    as ``provenance.input_position``). Each folder's generator (the samples' ``model``) is
    its name, or ``generator`` for a single folder. Raises ConfigError for an unknown format,
    a folder that does not exist, or two folders of one generator name."""
    if generator is not None and len(folders) != 1:
        one = in_callers_words("one --from", "one (format, folder) pair")
        raise ConfigError(f"a generator name is given for one folder only ({one})")
    readers = _readers()
    samples: list[SampleLine] = []
    names: dict[str, Path] = {}
    for kind, where in folders:
        folder = Path(where)
        reader = readers.get(kind)
        if reader is None:
            raise ConfigError(f"unknown folder format {kind!r}; known: {', '.join(FOLDER_FORMATS)}")
        if not folder.is_dir():
            raise ConfigError(f"{kind} folder not found: {folder}")
        name = generator or folder.resolve().name
        if name in names:
            raise ConfigError(
                f"two folders of generator {name!r} ({names[name]}, {folder}): name the "
                "folders after their generators"
            )
        names[name] = folder
        for line in reader(folder, name):
            samples.append(line.model_copy(update={"line_number": len(samples) + 1}))
    return samples


__all__ = ["FOLDER_FORMATS", "folder_samples"]
