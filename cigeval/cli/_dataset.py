"""``cigeval evaluate --dataset``: samples from a Hugging Face dataset instead of a JSONL file
(docs/datasets.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cigeval.cli._common import UsageError
from cigeval.errors import CigevalError


def add_dataset_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that read samples from a dataset."""
    group = parser.add_argument_group("a Hugging Face dataset instead (docs/datasets.md)")
    group.add_argument(
        "--dataset",
        metavar="NAME_OR_PATH",
        help="a hub name, a folder written by Dataset.save_to_disk, or parquet files",
    )
    group.add_argument("--dataset-config", metavar="NAME", help="the hub dataset's configuration")
    group.add_argument("--split", help="the split to judge (may be left out when there is one)")
    group.add_argument(
        "--columns",
        metavar="MAPPING",
        help="which column holds which sample field: key=column,... (e.g. "
        "task=category,prompt=caption,source=before,output=after), or a .json/.yaml file of "
        "that mapping",
    )
    group.add_argument("--task", metavar="NAME", help="the task of every row (else a task column)")
    group.add_argument(
        "--streaming",
        action="store_true",
        help="read rows as they are needed instead of opening the whole split",
    )
    group.add_argument(
        "--image-root",
        type=Path,
        metavar="DIR",
        help="folder that image paths in the dataset are relative to (default: the local "
        "dataset's folder)",
    )


def samples_source(args: argparse.Namespace) -> Path | Any:
    """The samples of the ``evaluate`` arguments: the JSONL path, or the rows of ``--dataset``
    (UsageError when both or neither are given, or the dataset cannot be read)."""
    dataset_only = ("dataset_config", "split", "columns", "task", "image_root")
    if args.dataset is None:
        given = [f"--{n.replace('_', '-')}" for n in dataset_only if getattr(args, n)]
        if args.streaming:
            given.append("--streaming")
        if given:
            raise UsageError(f"{', '.join(given)} apply to --dataset only")
        if args.samples is None:
            raise UsageError("give a samples JSONL file or --dataset NAME_OR_PATH")
        from cigeval.runs.guards import samples_file_problem

        problem = samples_file_problem(args.samples)
        if problem is not None:
            raise UsageError(problem)
        return args.samples
    if args.samples is not None:
        raise UsageError("give a samples JSONL file or --dataset, not both")
    if not args.columns:
        raise UsageError(
            "--dataset needs --columns saying which column holds which sample field, e.g. "
            "--columns task=category,prompt=caption,output=image"
        )
    from cigeval.hf_datasets import dataset_samples, load_samples_dataset
    from cigeval.hf_datasets.loading import local_folder

    try:
        dataset = load_samples_dataset(
            args.dataset, config=args.dataset_config, split=args.split, streaming=args.streaming
        )
        root = args.image_root or local_folder(args.dataset)
        return dataset_samples(dataset, args.columns, task=args.task, image_root=root)
    except CigevalError as exc:
        raise UsageError(str(exc)) from None
