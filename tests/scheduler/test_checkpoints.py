"""A SQLite file's write-ahead log is checkpointed on a thread of its own, every so many commits,
never inside a booking's commit; the database file then holds what was committed before."""

from __future__ import annotations

import shutil
import sqlite3
import threading

from sqlalchemy import event, insert

from greenops.reservations import ReservationStore
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
        write(3)  # the migration's commit, then these six: the fifth commit starts one
        store._checkpoints.close()  # waits for it
        assert checkpoints == ["greenops-wal-checkpoint"]
        # the database file alone, without its log, holds the rows committed before the checkpoint
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
