"""Samples from Hugging Face ``datasets``: a hub name, a ``save_to_disk`` folder or parquet
files, with a mapping of columns to sample fields (docs/datasets.md).

- :func:`load_samples_dataset`: open one split (streaming or not).
- :class:`ColumnMap`: which column holds which part of a sample (``task=...,output=...``).
- :class:`DatasetSamples` / :func:`dataset_samples`: the rows as samples for the
  :class:`~cigeval.Evaluator` and :meth:`~cigeval.Evaluator.run`, images as the bytes the
  dataset stores, decoded once by the normal pipeline.

``datasets`` is an optional extra (``pip install 'cigeval[datasets]'``), imported on use.
"""

from cigeval.hf_datasets.columns import ColumnMap
from cigeval.hf_datasets.loading import is_dataset, load_samples_dataset
from cigeval.hf_datasets.rows import DatasetSamples, dataset_samples

__all__ = ["ColumnMap", "DatasetSamples", "dataset_samples", "is_dataset", "load_samples_dataset"]
