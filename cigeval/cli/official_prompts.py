"""The ``cigeval official-prompts`` command: the official code's exact prompts as templates."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cigeval.cli._common import EXIT_OK, UsageError
from cigeval.errors import ConfigError


def configure_official_prompts_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``official-prompts``."""
    p.description = (
        "Read the prompts of your copy of the official CIGEval code (HITsz-TMG/Agentic-CIGEval) "
        "by parsing its Python files (nothing there is imported or run) and write them as "
        "prompt templates into OUT. `evaluate --method paper --prompt-dir OUT` then sends the "
        "official client's requests byte for byte (cigeval ships only its own wording)."
    )
    p.add_argument("official", type=Path, help="folder of the official code (a git clone)")
    p.add_argument("-o", "--out", type=Path, required=True, help="folder to write into")


def run_official_prompts(args: argparse.Namespace) -> int:
    """Write the templates; each file written is listed on stderr."""
    from cigeval.prompts.official_source import write_official_prompts

    try:
        written = write_official_prompts(args.official, args.out)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {len(written)} prompt templates to {args.out}", file=sys.stderr)
    return EXIT_OK
