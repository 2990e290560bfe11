"""One pooled connection for a short stretch of one thread's work with the record
(ReservationStore.held).

A booking reads the calendar, searches, then commits, and after a conflict reads and commits again.
Each of these took a connection of its own from the pool, and on PostgreSQL every checkout is a
round trip of its own: the pool's pre-ping, which finds a connection the server dropped while it sat
in the pool. Held, they share one checkout and one ping. Each operation still runs as it would on a
connection of its own: a one-statement read outside any transaction, a read of several statements
in one transaction, a write in a transaction of its own (BEGIN IMMEDIATE on SQLite).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from sqlalchemy import Connection, Engine

Mode = Literal["read", "read_one", "write"]


def options(engine: Engine) -> dict[Mode, dict[str, Any]]:
    """What each mode sets on the connection: what ReservationStore's engines for it set."""
    if engine.dialect.name == "postgresql":
        default = engine.dialect.default_isolation_level  # known once a connection was made (migrate)
        return {
            "read_one": {"isolation_level": "AUTOCOMMIT"},
            "read": {"isolation_level": default},
            "write": {"isolation_level": default},
        }
    # SQLite: the store's begin listener reads these (BEGIN, BEGIN IMMEDIATE, or none)
    return {
        "read_one": {"greenops_no_transaction": True, "greenops_write": False},
        "read": {"greenops_no_transaction": False, "greenops_write": False},
        "write": {"greenops_no_transaction": False, "greenops_write": True},
    }


class Held:
    def __init__(self, engine: Engine, modes: Mapping[Mode, Mapping[str, Any]]):
        self._engine = engine
        self._modes = modes
        self._conn: Connection | None = None
        self._mode: Mode | None = None

    @contextlib.contextmanager
    def use(self, mode: Mode) -> Iterator[Connection]:
        if self._conn is None:
            self._conn = self._engine.connect()
            self._mode = None
        conn = self._conn
        try:
            if mode != self._mode:
                conn.execution_options(**self._modes[mode])
                self._mode = mode
            if mode == "write":
                with conn.begin():
                    yield conn
            else:
                try:
                    yield conn
                finally:
                    # ends the read's transaction; where none is open (a one-statement read) nothing
                    # is sent to the database
                    conn.rollback()
        except BaseException:
            # whatever went wrong (a conflict, a dropped connection), the next operation starts on a
            # connection fresh from the pool, pinged again
            self.close()
            raise

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
