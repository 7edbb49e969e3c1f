"""The exit statuses of a run, one table for the command line and the Python API.

:attr:`cigeval.runs.RunResult.exit_status` is the status the ``cigeval evaluate`` command
exits with; docs/exit-statuses.md explains each one and what to do about it.
"""

from __future__ import annotations

#: Every sample of the results file ended ``ok``.
EXIT_OK = 0
#: Some samples ended in error (their records are written and say why).
EXIT_SAMPLE_ERRORS = 1
#: Nothing was judged: a usage error, a failed preflight, a results file in use or unwritable.
EXIT_USAGE = 2
#: Stopped by the circuit breaker: many samples in a row could not reach the judge server.
EXIT_CIRCUIT_BREAKER = 3
#: Stopped by Ctrl-C (SIGINT) or by SIGTERM: 128 + the signal number, as shells report.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
