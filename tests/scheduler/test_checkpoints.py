"""A SQLite file's write-ahead log is checkpointed on a thread of its own, every so many commits,
never inside a booking's commit; the database file then holds what was committed before."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time

from sqlalchemy import event, insert

from greenops.reservations import ReservationStore
from greenops.reservations.checkpoints import CHECKPOINT_EVERY, SQLITE_AUTOCHECKPOINT, Checkpoints
from greenops.reservations.tables import tenants


def test_the_log_is_checkpointed_beside_the_commits_not_in_them(tmp_path):
    store = ReservationStore(f"sqlite:///{tmp_path / 'reservations.db'}", checkpoint_every=5)
    checkpoints: list[str] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def _seen(conn, cursor, statement, parameters, context, executemany):
        if "wal_checkpoint" in statement:
            checkpoints.append(threading.current_thread().name)

    def write(n: int) -> None:
        for _ in range(n):
            with store.writing("test") as conn:
                conn.execute(insert(tenants).values(tenant=f"t{len(written)}"))
            written.append(len(written))

    written: list[int] = []
    try:
        write(3)
        assert checkpoints == []
        write(1)  # the migration's commit, then these four: the fifth commit starts one
        store._checkpoints.close()  # waits for it
        assert checkpoints == ["greenops-wal-checkpoint"]
        # the database file alone, without its log, holds the rows committed before the checkpoint.
        # Only once no commit overlapped it: a PASSIVE checkpoint stops short of a commit that lands
        # meanwhile, after growing the file to that commit's size, so the file alone is then not a
        # database (1 copy in 100 was "malformed" when two more rows were written during it)
        shutil.copy(tmp_path / "reservations.db", tmp_path / "alone.db")
        with sqlite3.connect(tmp_path / "alone.db") as alone:
            assert alone.execute("SELECT count(*) FROM tenants").fetchone()[0] >= 4
        write(5)
    finally:
        store.close()
    assert checkpoints == ["greenops-wal-checkpoint"] * 2
    assert store.errors() == {}


def test_a_record_in_memory_has_no_log_to_checkpoint():
    store = ReservationStore("sqlite://")
    assert store._checkpoints is None
    store.close()


def test_sqlite_checkpoints_in_a_commit_only_far_past_the_threads_checkpoints(tmp_path):
    # the thread's checkpoints keep the database file current; SQLite's own, run inside a commit, is
    # left for a log many times longer than the pages of CHECKPOINT_EVERY bookings
    store = ReservationStore(f"sqlite:///{tmp_path / 'reservations.db'}")
    try:
        with store.reading_one("test") as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == SQLITE_AUTOCHECKPOINT
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL, as before
    finally:
        store.close()
    assert SQLITE_AUTOCHECKPOINT >= 10 * 10 * CHECKPOINT_EVERY  # a booking adds about 10 pages


def test_one_thread_runs_the_checkpoints_and_outlives_a_failed_one():
    # a thread started for each checkpoint was started inside the commit that made it due, which
    # waited for it; one thread waits for its turn instead, and a failure must not end it
    ran: list[threading.Thread] = []

    def checkpoint() -> None:
        ran.append(threading.current_thread())
        if len(ran) == 1:
            raise RuntimeError("a failure the store did not count")

    checkpoints = Checkpoints(checkpoint, every=2)
    try:
        deadline = time.monotonic() + 10
        while len(ran) < 3 and time.monotonic() < deadline:
            checkpoints.committed()
            time.sleep(0.001)
        assert len(ran) >= 3 and all(t is ran[0] for t in ran)
    finally:
        checkpoints.close()
    assert not ran[0].is_alive()
