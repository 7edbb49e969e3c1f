"""``python -m cigeval.meta COMMAND ...``: the ``cigeval meta`` commands, standalone."""

from __future__ import annotations

import argparse
import sys

from cigeval.meta.cli import configure_meta_parser, run_meta


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run the meta command."""
    parser = argparse.ArgumentParser(
        prog="python -m cigeval.meta",
        description="Meta-evaluation against the ImagenHub human ratings.",
    )
    configure_meta_parser(parser)
    return run_meta(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
