"""Exit statuses and the usage error shared by the ``cigeval`` subcommands."""

from __future__ import annotations

EXIT_OK, EXIT_SAMPLE_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line usage (exit status 2)."""
