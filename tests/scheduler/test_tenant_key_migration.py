"""The record's migration to keys scoped by tenant (issue 44, part), on SQLite and on a real
PostgreSQL: a record at the previous head, with rows in it, is upgraded by the store as it opens,
and every row is there unchanged under its (tenant, key); the same key of another tenant is then a
reservation of its own."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, select

import greenops.reservations.store as store_module
from greenops.local.postgres import PostgresServer
from greenops.reservations import Booking, ReservationStore
from greenops.reservations.tables import reservations

PREVIOUS_HEAD = "0005"
NOW = datetime(2027, 1, 10, 3, tzinfo=UTC)
START = NOW + timedelta(hours=2)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'reservations.db'}"
        return
    with PostgresServer() as pg:
        yield pg.url


def _row(key: str, tenant: str, path: str, phase: str, **over: object) -> dict:
    start = START.timestamp()
    row: dict = {
        "key": key,
        "tenant": tenant,
        "path": path,
        "phase": phase,
        "spec_hash": "ab" * 32,
        "revision": 3,
        "milli_cpu": 4000,
        "jobs": 1,
        "zone": "FR",
        "provider": "azure",
        "region": "francecentral",
        "start_at": START,
        "end_at": START + timedelta(hours=2),
        "placements": [{"zone": "FR", "start": start, "end": start + 7200}],
        "request": {"cpu": 4, "tenant": tenant, "path": path},
        "answer": {"scheduling_location": "FR", "key": key},
        "reason": None,
        "held_until": None,
        "lifecycle": None,
        "completion_token_sha256": None,
        "completion": None,
        "created_at": NOW,
        "updated_at": NOW,
    }
    row.update(over)
    return row


ROWS = [
    _row("stack/etl/0f3a9c", "team-a", "pulumi", "Scheduled", completion_token_sha256="cd" * 32),
    _row("ns/vm/3b4a-uid", "team-b", "cluster", "Running", held_until=NOW, lifecycle={"phase": "Running"}),
    _row("api/old", "default", "api", "Completed", completion={"exitStatus": 0, "reportedAt": "2027-01-10T05:00:00Z"}),
]


def _at_previous_head(url: str) -> None:
    engine = create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(store_module.__file__).parent / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, PREVIOUS_HEAD)
        conn.execute(reservations.insert(), ROWS)  # the columns are the previous head's
    engine.dispose()


def _stored(store: ReservationStore) -> list[dict]:
    with store.reading("test") as conn:
        rows = conn.execute(select(reservations).order_by(reservations.c.key)).mappings()
        return [{k: (v.astimezone(UTC) if isinstance(v, datetime) else v) for k, v in r.items()} for r in rows]


def _utc(row: dict) -> dict:
    return {k: (v.replace(tzinfo=UTC) if isinstance(v, datetime) and v.tzinfo is None else v) for k, v in row.items()}


def test_rows_of_the_previous_head_carry_over_under_tenant_and_key(url: str):
    _at_previous_head(url)
    engine = create_engine(url)
    indexes_before = {i["name"] for i in inspect(engine).get_indexes("reservations")}
    engine.dispose()
    store = ReservationStore(url)  # migrates to head as it opens
    try:
        stored = [_utc(r) for r in _stored(store)]
        # the columns of later migrations than the one under test (0008's queue) come empty
        later = ("priority", "queued_at", "admitted_at")
        assert all(r[c] is None for r in stored for c in later)
        stored = [{k: v for k, v in r.items() if k not in later} for r in stored]
        assert stored == sorted((_utc(r) for r in ROWS), key=lambda r: r["key"])
        found = inspect(store.engine)
        assert found.get_pk_constraint("reservations")["constrained_columns"] == ["tenant", "key"]
        assert {i["name"] for i in found.get_indexes("reservations")} >= indexes_before - {"ix_reservations_tenant"}
        # the same key of another tenant is a reservation of its own, beside the carried-over one
        key = "stack/etl/0f3a9c"
        start = START.timestamp()
        squat = Booking(
            key=key,
            spec_hash="ef" * 32,
            tenant="team-b",
            path="pulumi",
            milli_cpu=1000,
            placements=(("DE", start, start + 3600),),
            request={"cpu": 1},
            answer={"scheduling_location": "DE"},
        )
        store.commit(squat, store.seen(None), 10**9, NOW)
        assert store.get("team-a", key)["revision"] == 3
        assert store.get("team-b", key)["revision"] == 1
    finally:
        store.close()
