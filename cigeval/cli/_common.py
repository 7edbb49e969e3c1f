"""Exit statuses and the usage error shared by the ``cigeval`` subcommands."""

from __future__ import annotations

EXIT_OK, EXIT_SAMPLE_ERRORS, EXIT_USAGE = 0, 1, 2
#: A run stopped by Ctrl-C (SIGINT) or by SIGTERM: 128 + the signal number, as shells report.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class UsageError(Exception):
    """Bad command-line usage (exit status 2)."""
