"""``cigeval evaluate --dataset`` and ``--from``: samples from a Hugging Face dataset
(docs/datasets.md) or from a benchmark's output folders (docs/importers.md) instead of a JSONL
file."""

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


def add_folder_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that read samples from a generator benchmark's output folders."""
    from cigeval.importers import FOLDER_FORMATS

    group = parser.add_argument_group("output folders (docs/importers.md)")
    group.add_argument(
        "--from",
        nargs=2,
        action="append",
        dest="from_folders",
        metavar=("FORMAT", "DIR"),
        help="judge the images of an output folder as they lie: FORMAT "
        f"{' or '.join(FOLDER_FORMATS)}; the generator is the folder's name; repeat for "
        "several generators",
    )
    group.add_argument(
        "--generator",
        metavar="NAME",
        help="the generator of the one --from folder (default: the folder's name)",
    )


def samples_source(args: argparse.Namespace) -> Path | Any:
    """The samples of the ``evaluate`` arguments: the JSONL path, the rows of ``--dataset`` or
    the samples of ``--from`` folders (UsageError when none or several are given, or they
    cannot be read)."""
    given = [
        name
        for name, value in (
            ("a samples JSONL file", args.samples),
            ("--dataset", args.dataset),
            ("--from", args.from_folders),
        )
        if value
    ]
    if len(given) > 1:
        raise UsageError(
            f"give one of a samples JSONL file, --dataset or --from, not {' and '.join(given)}"
        )
    if args.generator is not None and not args.from_folders:
        raise UsageError("--generator applies to --from only")
    if args.from_folders:
        from cigeval.importers import folder_samples

        try:
            return folder_samples([tuple(pair) for pair in args.from_folders], args.generator)
        except CigevalError as exc:
            raise UsageError(str(exc)) from None
    dataset_only = ("dataset_config", "split", "columns", "task", "image_root")
    if args.dataset is None:
        given = [f"--{n.replace('_', '-')}" for n in dataset_only if getattr(args, n)]
        if args.streaming:
            given.append("--streaming")
        if given:
            raise UsageError(f"{', '.join(given)} apply to --dataset only")
        if args.samples is None:
            raise UsageError(
                "give a samples JSONL file, --dataset NAME_OR_PATH or --from FORMAT DIR"
            )
        from cigeval.runs.guards import samples_file_problem

        problem = samples_file_problem(args.samples)
        if problem is not None:
            raise UsageError(problem)
        return args.samples
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
