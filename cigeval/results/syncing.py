"""fsync in batches, off the thread that writes: what makes a results file durable on disk.

A record written with ``os.write`` is in the operating system's hands at once: a killed
process (``kill -9``, a crash) loses none of it. Only a power cut or an OS crash can lose
what is not yet on disk, which is what fsync is for. fsyncing every record on the event loop
costs a disk flush per sample (milliseconds each) and stalls every sample in flight while it
waits; :class:`BatchedSync` instead flushes from a thread of its own, once ``max_records``
records are waiting or ``interval_s`` after the first of them, whichever comes first.
"""

from __future__ import annotations

import os
import threading
import time

#: The longest a written record waits for its fsync, in seconds.
SYNC_INTERVAL_S = 1.0
#: The most records written and not yet fsynced.
SYNC_RECORDS = 64


class BatchedSync:
    """fsyncs the file descriptor ``fd`` from a background thread after writes.

    Call :meth:`wrote` after each complete record is written (it never blocks on the disk);
    :meth:`close` flushes what is left and stops the thread. An fsync that fails is raised
    as the OSError from the next :meth:`wrote` or from :meth:`close`.
    """

    def __init__(
        self, fd: int, interval_s: float = SYNC_INTERVAL_S, max_records: int = SYNC_RECORDS
    ) -> None:
        if interval_s < 0 or max_records < 1:
            raise ValueError("interval_s must be >= 0 and max_records >= 1")
        self.fd = fd
        self.interval_s = interval_s
        self.max_records = max_records
        #: Records known to be on disk (fsynced), and fsync calls made.
        self.synced = 0
        self.syncs = 0
        self._waiting = 0  # records written since the last fsync began
        self._first_at = 0.0  # when the first of them was written
        self._error: OSError | None = None
        self._closing = False
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="cigeval-fsync", daemon=True)
        self._thread.start()

    def wrote(self, records: int = 1) -> None:
        """Note ``records`` more complete records written (raises an earlier fsync's error)."""
        with self._condition:
            self._raise_error()
            if self._waiting == 0:
                self._first_at = time.monotonic()
            self._waiting += records
            self._condition.notify()

    def close(self) -> None:
        """fsync what is still waiting, stop the thread; raise an fsync's error, if any."""
        with self._condition:
            self._closing = True
            self._condition.notify()
        self._thread.join()
        with self._condition:
            self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        while True:
            with self._condition:
                while self._waiting == 0 and not self._closing:
                    self._condition.wait()
                if self._waiting == 0:
                    return  # closing, nothing left
                deadline = self._first_at + self.interval_s
                while not self._closing and self._waiting < self.max_records:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._condition.wait(left)
                batch, self._waiting = self._waiting, 0
            try:
                os.fsync(self.fd)
            except OSError as exc:
                with self._condition:
                    self._error = exc
            else:
                with self._condition:
                    self.synced += batch
                    self.syncs += 1
