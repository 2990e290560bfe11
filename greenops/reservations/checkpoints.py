"""A SQLite file's write-ahead log, checkpointed beside the bookings rather than inside one.

In WAL mode a commit only appends to the log; now and then the log is copied back into the
database file and both are synced (a checkpoint). SQLite runs it in the commit that takes the log
past 1000 pages, so that one booking waited for the copy and two fsyncs: 6 to 8 ms on a 2-core
VM, about one commit in a hundred, which set the p99 of a booking. Here a thread of its own
checkpoints after every ``every`` commits, PASSIVE (it waits for no reader or writer and blocks
none). How durable a commit is does not change: that is the ``synchronous`` setting's, not the
checkpoints' (the log is synced at each of this thread's checkpoints, as before).

SQLite's own checkpoint stays as the backstop, at ``SQLITE_AUTOCHECKPOINT`` pages rather than its
1000. The log starts over from its beginning only when a write finds it wholly copied back, and
under a steady stream of bookings a commit lands during nearly every checkpoint of this thread, so
the log kept growing past 1000 pages anyway (a one-job booking adds 10) and SQLite checkpointed in
a commit about every hundred: measured in-process, 7 to 9 commits in 1000 above 2 ms (up to 4 ms);
with 10 000 pages, 1 in 1000. The log file may then grow to about 40 MB before it starts over.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

CHECKPOINT_EVERY = 50  # commits; a one-job booking adds about 10 pages to the log
SQLITE_AUTOCHECKPOINT = 10_000  # pages (of 4 KiB) of log at which SQLite checkpoints in a commit


class Checkpoints:
    """One thread, waiting for its turn. (A thread started for each checkpoint was started inside
    the commit that made it due: that commit waited for the new thread to be scheduled and to let go
    of the interpreter lock, which under load took milliseconds, once up to 21 ms.)"""

    def __init__(self, checkpoint: Callable[[], None], every: int = CHECKPOINT_EVERY):
        self._checkpoint = checkpoint
        self._every = every
        self._commits = 0
        self._due = False  # a checkpoint's turn has come
        self._running = False
        self._closing = False
        self._thread: threading.Thread | None = None
        self._turn = threading.Condition()

    def committed(self) -> None:
        """Told of every commit; makes a checkpoint due when its turn has come and none is running.
        The first commit (the store's migration) starts the thread, so no booking waits for that."""
        with self._turn:
            self._commits += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="greenops-wal-checkpoint", daemon=True)
                self._thread.start()
            if self._commits < self._every or self._due or self._running:
                return
            self._commits = 0
            self._due = True
            self._turn.notify()

    def _run(self) -> None:
        with self._turn:
            while True:
                while not self._due and not self._closing:
                    self._turn.wait()
                if not self._due:  # closing, nothing left to do
                    return
                self._due, self._running = False, True
                self._turn.release()
                try:
                    # the store's checkpoint counts a database error itself; anything else must not
                    # end the thread, or no checkpoint would ever run again (SQLite's backstop would)
                    with contextlib.suppress(Exception):
                        self._checkpoint()
                finally:
                    self._turn.acquire()
                    self._running = False

    def close(self) -> None:
        """Wait for a checkpoint due or running (before the database is closed under it), and stop
        the thread; a later commit starts it again."""
        with self._turn:
            thread, self._closing = self._thread, True
            self._turn.notify()
        if thread is not None:
            thread.join()
        with self._turn:
            self._closing = False
            self._thread = None
