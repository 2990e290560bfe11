"""A SQLite file's write-ahead log, checkpointed beside the bookings rather than inside one.

In WAL mode a commit only appends to the log; now and then the log is copied back into the
database file and both are synced (a checkpoint). SQLite runs it in the commit that takes the log
past 1000 pages, so that one booking waited for the copy and two fsyncs: 6 to 8 ms on a 2-core
VM, about one commit in a hundred, which set the p99 of a booking. Here a thread of its own
checkpoints after every ``every`` commits, PASSIVE (it waits for no reader or writer and blocks
none), so the log seldom reaches SQLite's threshold, which stays as the backstop. How durable a
commit is does not change: that is the ``synchronous`` setting's, not the checkpoints'.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

CHECKPOINT_EVERY = 50  # commits; a one-job booking adds a few pages to the log


class Checkpoints:
    def __init__(self, checkpoint: Callable[[], None], every: int = CHECKPOINT_EVERY):
        self._checkpoint = checkpoint
        self._every = every
        self._commits = 0
        self._running: threading.Thread | None = None
        self._lock = threading.Lock()

    def committed(self) -> None:
        """Told of every commit; starts a checkpoint when its turn has come and none is running."""
        with self._lock:
            self._commits += 1
            if self._commits < self._every or self._running is not None:
                return
            self._commits = 0
            self._running = threading.Thread(target=self._run, name="greenops-wal-checkpoint", daemon=True)
            self._running.start()

    def _run(self) -> None:
        try:
            self._checkpoint()
        finally:
            with self._lock:
                self._running = None

    def close(self) -> None:
        """Wait for a checkpoint still running (before the database is closed under it)."""
        with self._lock:
            running = self._running
        if running is not None:
            running.join()
