"""Dataset rows as samples: one plain dict per row, images as the bytes the dataset stores.

Images are not decoded here: an image column is read as the bytes of its file (or its path,
where the dataset keeps only a path), so a row whose id a resumed run skips costs no
decoding, and each image is decoded once, by the normal pipeline
(:func:`cigeval.sample.load_sample_images`), which sends RGB PNG and JPEG bytes to the judge
unchanged, exactly as the same file named in a samples JSONL would be.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from PIL import Image

from cigeval._caller import in_callers_words
from cigeval.errors import ConfigError
from cigeval.hf_datasets.columns import LIST_ROLES, ColumnMap
from cigeval.hf_datasets.loading import is_dataset
from cigeval.sample import ROW_ERROR_ID_PREFIX, SampleLine

#: Rows read from the arrow table at once (a map-style dataset).
BATCH_ROWS = 64


class DatasetSamples:
    """The samples of a ``datasets.Dataset`` or ``IterableDataset``, as an iterable of dicts
    that :class:`~cigeval.Evaluator` and :meth:`~cigeval.Evaluator.run` take.

    ``columns``: a :class:`ColumnMap` (or its ``key=column,...`` text, a mapping file, a
    dict). ``task``: the task of every row when no column holds it. ``image_root``: the
    folder relative image paths are relative to (default: the working directory). The id of
    a row is its id column, else its index (``"0"``, ``"1"``, ...). A row whose id column is
    empty becomes an error record (``@row:<index>``), never a silent skip. The samples of a
    map-style dataset also have a ``len()`` (:class:`SizedDatasetSamples`).
    """

    def __init__(
        self,
        dataset: Any,
        columns: str | Mapping[str, str] | ColumnMap,
        *,
        task: str | None = None,
        image_root: str | Path | None = None,
    ) -> None:
        if not is_dataset(dataset):
            raise ConfigError(
                f"expected a datasets.Dataset or IterableDataset, got {type(dataset).__name__}"
            )
        self.columns = ColumnMap.parse(columns)
        if self.columns.task is None and not task:
            raise ConfigError(
                "no task for the dataset's rows: map a task column "
                f"({in_callers_words('--columns task=COLUMN', 'columns=' + repr('task=COLUMN'))})"
                f" or give the task of every row ({in_callers_words('--task NAME', 'task=NAME')})"
            )
        if self.columns.task is not None and task:
            raise ConfigError("the task is given twice (a task column and a fixed task)")
        if dataset.column_names is not None:  # None: a stream whose columns are not known
            self.columns.check(list(dataset.column_names))
        self.dataset = dataset
        self.task = task
        self.image_root = Path(image_root) if image_root is not None else None

    def __iter__(self) -> Iterator[dict[str, Any] | SampleLine]:
        for index, row in enumerate(self._rows()):
            yield self.sample_of(row, index)

    def _rows(self) -> Iterator[dict[str, Any]]:
        """The mapped columns of each row, images undecoded."""
        dataset = self.dataset.select_columns(self.columns.columns())
        if hasattr(dataset, "decode"):  # IterableDataset
            yield from dataset.decode(False)
            return
        for table in dataset.with_format("arrow").iter(batch_size=BATCH_ROWS):
            yield from table.to_pylist()

    def sample_of(self, row: Mapping[str, Any], index: int) -> dict[str, Any] | SampleLine:
        """The sample dict of one row (its ``index`` is the id when no column holds one)."""
        mapping = self.columns
        sample_id: Any = str(index)
        if mapping.id is not None:
            sample_id = row.get(mapping.id)
            if sample_id is None or sample_id == "":
                raw = {"task": self._task_of(row)}
                error = f"row {index}: the id column {mapping.id!r} is empty"
                return SampleLine(
                    line_number=index, raw=raw, error=error, error_id_prefix=ROW_ERROR_ID_PREFIX
                )
        sample: dict[str, Any] = {"id": str(sample_id), "task": self._task_of(row)}
        for name, column in mapping.fields.items():
            if row.get(column) is not None:
                sample[name] = row[column]
        images: dict[str, Any] = {}
        for role, column in mapping.images.items():
            value = row.get(column)
            if role in LIST_ROLES and isinstance(value, list):
                images[role] = [self._image(v) for v in value]
            elif value is not None:
                images[role] = self._image(value)
        sample["images"] = {r: v for r, v in images.items() if v is not None}
        metadata: dict[str, Any] = {}
        for name, column in mapping.metadata.items():
            value = row.get(column)
            if name:
                metadata[name] = value
            elif isinstance(value, Mapping):
                metadata.update(value)
        if metadata:
            sample["metadata"] = metadata
        return sample

    def _task_of(self, row: Mapping[str, Any]) -> Any:
        return row.get(self.columns.task) if self.columns.task is not None else self.task

    def _image(self, value: Any) -> Any:
        """An image cell as the pipeline takes it: file bytes, a path, or a PIL image."""
        if isinstance(value, Mapping) and ("bytes" in value or "path" in value):
            if value.get("bytes"):
                return bytes(value["bytes"])
            value = value.get("path")
        if isinstance(value, str) and value and self.image_root is not None:
            path = Path(value)
            return str(path if path.is_absolute() else self.image_root / path)
        if isinstance(value, bytes | bytearray | str | Image.Image) or value is None:
            return bytes(value) if isinstance(value, bytearray) else value
        return value  # anything else: the sample's validation names the problem


class SizedDatasetSamples(DatasetSamples):
    """The samples of a map-style ``datasets.Dataset``, which knows its number of rows."""

    def __len__(self) -> int:
        return len(self.dataset)


def dataset_samples(
    dataset: Any,
    columns: str | Mapping[str, str] | ColumnMap,
    *,
    task: str | None = None,
    image_root: str | Path | None = None,
) -> DatasetSamples:
    """The samples of a Hugging Face dataset (see :class:`DatasetSamples`)::

    import datasets, cigeval

    ds = datasets.load_from_disk("my_benchmark")
    samples = cigeval.dataset_samples(
        ds, {"task": "task", "prompt": "caption", "output": "image"}
    )
    result = cigeval.Evaluator("openai:gpt-4o").run(samples, out="results.jsonl")
    """
    streaming = hasattr(dataset, "decode")  # an IterableDataset has no length
    kind = DatasetSamples if streaming else SizedDatasetSamples
    return kind(dataset, columns, task=task, image_root=image_root)
