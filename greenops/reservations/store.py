"""The record of placements: one reservation per tenant and key, in SQLite (embedded) or PostgreSQL.

A key is its tenant's own: another tenant's row of the same key is another reservation, which a
booking never reads, replaces or counts as its own (``get`` takes both; ``find`` is for a caller
of several tenants that names a key alone: greenops.reservations.keyed).

Booking is optimistic. The caller searches a snapshot of the calendar with no lock held, then
``commit`` applies the booking in one short transaction:
- the (tenant, key) row is created, or updated only if its revision is still the one the search saw;
- the tenant's row is locked and its active reservations summed against the quota;
- every zone-hour is incremented only where it stays within capacity (greenops.reservations.zone_hours).
Any of these failing because somebody else got there first raises ``Conflict`` and the caller
searches again. Locks are always taken in that order (key, tenant, zone-hours sorted), so
concurrent bookings on PostgreSQL never deadlock; SQLite serialises writers with BEGIN IMMEDIATE.
"""

from __future__ import annotations

import builtins
import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    Connection,
    Engine,
    and_,
    bindparam,
    case,
    create_engine,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from greenops.reservations.slots import SLOT

from . import zone_hours
from .checkpoints import CHECKPOINT_EVERY, SQLITE_AUTOCHECKPOINT, Checkpoints
from .errors import Conflict, NotPlaced, QueueFull, QuotaExceeded, UnknownReservation
from .held import Held, Mode
from .held import options as held_modes
from .listing import ListingFilter
from .tables import outages, reservations, slot_usage, stacks, stored_utc, tenants

if TYPE_CHECKING:
    import sqlite3

    from sqlalchemy.pool import ConnectionPoolEntry

ACTIVE = ("Scheduled", "Provisioning", "Running")
TERMINAL = ("Completed", "Failed", "Released")
# In the queue: no window had room, but one could before the deadline (greenops.reservations.queue).
# Not active (it holds no zone-hours and counts against no quota), not ended: listed with the active.
PENDING = "Pending"
LISTED = (*ACTIVE, PENDING)
# A run that has begun is listed until its final phase is recorded, even past its booked end: a VM
# whose gate opened late runs (and must be retired) after the end the booking counted.
UNDER_WAY = ("Provisioning", "Running")
PRUNE_EVERY = 600.0  # seconds between sweeps of zone-hours that have passed
# How long an admission's booking waits for its VmTemplate to be stored: well above the API server's
# webhook timeout (30 s at most) plus a controller's resync, so only a CREATE that never stored its
# object (forged, denied by a later webhook, abandoned) outlives it.
DEFAULT_HOLD = timedelta(minutes=2)
HELD_PATH = "cluster"  # the path whose bookings are made before their object exists (at admission)
_MIGRATIONS = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 0x67726E6F  # one advisory lock id: replicas starting together migrate in turn


def milli(vcpu: float) -> int:
    return round(vcpu * 1000)


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@dataclass(frozen=True)
class Seen:
    """What a search was based on: the key's revision and phase (None when the key is new)."""

    revision: int | None
    active: bool
    placements: tuple[tuple[str, float, float], ...]
    milli_cpu: int


@dataclass(frozen=True)
class Booking:
    key: str
    spec_hash: str
    tenant: str
    path: str
    milli_cpu: int  # per job
    placements: tuple[tuple[str, float, float], ...]  # (zone, start, end) for every job
    request: dict[str, Any]
    answer: dict[str, Any]
    provider: str | None = None
    region: str | None = None
    quota_milli: int | None = None
    priority: int | None = None  # its priority class's value
    admitted: bool = False  # it replaces a Pending revision: it leaves the queue placed


@dataclass(frozen=True)
class Queued:
    """A request recorded as Pending: what was asked, why it waits, and its search window."""

    key: str
    spec_hash: str
    tenant: str
    path: str
    milli_cpu: int  # per job
    jobs: int
    request: dict[str, Any]
    answer: dict[str, Any]  # what the caller was told (greenops.scheduler.queueing)
    reason: str
    begin: float  # epoch seconds: no start before
    deadline: float  # epoch seconds: every job ends by
    priority: int
    max_per_tenant: int  # the tenant's waiting requests at most (QueueFull beyond)


class ReservationStore:
    """``ReservationStore("sqlite:///path.db")``, ``"postgresql+psycopg://…"``, or ``"sqlite://"`` in memory."""

    def __init__(self, url: str, hold: timedelta = DEFAULT_HOLD, checkpoint_every: int = CHECKPOINT_EVERY):
        self.url = url
        self.hold = hold
        self.engine = _engine(url)
        self._writer = self.engine.execution_options(greenops_write=True)
        self._one_statement = self.engine.execution_options(**_NO_TRANSACTION[self.engine.dialect.name])
        # One in-memory SQLite connection is shared by every thread, so its users take turns.
        self._serial = threading.RLock() if _in_memory(url) else contextlib.nullcontext()
        self._pruned_at = 0.0
        self._prune_lock = threading.Lock()
        self._errors: dict[str, int] = defaultdict(int)
        self._errors_lock = threading.Lock()
        wal = self.dialect == "sqlite" and not _in_memory(url)
        self._checkpoints = Checkpoints(self._checkpoint, checkpoint_every) if wal else None
        self._local = threading.local()  # the connection a thread holds (held), if any
        self.migrate()
        self._held_modes = None if _in_memory(url) else held_modes(self.engine)
        # the checkpoints' own connection (_checkpoint), made now rather than when the first one
        # falls due, in the middle of a booking
        self._checkpointer = self._one_statement.connect() if wal else None
        # told after each transaction that ended a reservation or gave zone-hours back: the queue's
        # admitter is woken by it (greenops.scheduler.queueing)
        self.freed: Callable[[], None] = lambda: None
        self._outages: builtins.list[dict[str, Any]] = []
        self._outages_read_at = 0.0

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def migrate(self) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(_MIGRATIONS))
        with self._write("migrate") as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _PG_MIGRATION_LOCK})
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        self.engine.dispose()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The calling thread's operations on the record inside share one pooled connection
        (greenops.reservations.held): a booking's reads, commit and retries take one checkout, on
        PostgreSQL one pre-ping, instead of one each. For short stretches: the connection stays out of
        the pool meanwhile. The in-memory database, one connection taken in turns, is left as it is."""
        if self._held_modes is None or getattr(self._local, "held", None) is not None:
            yield
            return
        held = self._local.held = Held(self.engine, self._held_modes)
        try:
            yield
        finally:
            self._local.held = None
            held.close()

    @contextlib.contextmanager
    def _connection(
        self, operation: str, mode: Mode, opened: Callable[[], contextlib.AbstractContextManager[Connection]]
    ) -> Iterator[Connection]:
        """``opened()``, in the in-memory database's turn, or the thread's held connection in
        ``mode``; an error is counted under ``operation``."""
        held: Held | None = getattr(self._local, "held", None)
        try:
            with held.use(mode) if held is not None else self._opened(opened) as conn:
                yield conn
        except SQLAlchemyError as exc:
            self._count_error(operation, exc)
            raise

    @contextlib.contextmanager
    def _opened(self, opened: Callable[[], contextlib.AbstractContextManager[Connection]]) -> Iterator[Connection]:
        with self._serial, opened() as conn:
            yield conn

    def _read(self, operation: str) -> contextlib.AbstractContextManager[Connection]:
        return self._connection(operation, "read", self.engine.connect)

    def _read_one(self, operation: str) -> contextlib.AbstractContextManager[Connection]:
        """A read of one statement, outside any transaction: a statement sees one snapshot on its
        own, so a BEGIN and a ROLLBACK around it are two statements more (two round trips on
        PostgreSQL) for nothing, and psycopg forgets its prepared statements at every ROLLBACK."""
        return self._connection(operation, "read_one", self._one_statement.connect)

    @contextlib.contextmanager
    def _write(self, operation: str) -> Iterator[Connection]:
        with self._connection(operation, "write", self._writer.begin) as conn:
            yield conn
        if self._checkpoints is not None:
            self._checkpoints.committed()

    def _checkpoint(self) -> None:
        """Copy a SQLite file's write-ahead log back into the database (greenops.reservations.checkpoints),
        on the checkpoints' thread and on a connection it keeps: a checkpoint falls due while a
        booking runs, and taking a connection from the pool (making one, the first time) is Python
        that holds the interpreter lock the booking waits for. A failure is counted among the
        record's errors, and the next checkpoint takes a fresh connection; SQLite's own checkpoint
        remains."""
        try:
            if self._checkpointer is None:
                self._checkpointer = self._one_statement.connect()
            self._checkpointer.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
            self._checkpointer.rollback()  # ends SQLAlchemy's own transaction: no BEGIN was sent
        except SQLAlchemyError as exc:
            self._count_error("checkpoint", exc)
            broken, self._checkpointer = self._checkpointer, None
            if broken is not None:
                with contextlib.suppress(SQLAlchemyError):
                    broken.close()

    def _count_error(self, operation: str, exc: SQLAlchemyError) -> None:
        # A conflict is the optimistic booking working as designed (the caller searches again); only
        # what the database failed at counts as an error.
        if isinstance(exc, IntegrityError) or (isinstance(exc, DBAPIError) and _retryable(exc)):
            return
        with self._errors_lock:
            self._errors[operation] += 1

    def errors(self) -> dict[str, int]:
        """Database errors since this store was opened, by operation (the method, or the caller's
        name for its own transaction): the scheduler exposes them as a counter."""
        with self._errors_lock:
            return dict(self._errors)

    # The record's other tables (the API tokens) share its database and its transaction discipline;
    # their callers name the operation an error is counted under.
    reading = _read
    reading_one = _read_one
    writing = _write

    # --- reads -----------------------------------------------------------------------------

    def get(self, tenant: str, key: str) -> dict[str, Any] | None:
        """Tenant ``tenant``'s reservation ``key``, None when it has none."""
        with self._read_one("get") as conn:
            row = conn.execute(_ROW, {"tenant": tenant, "key": key}).mappings().first()
        return dict(row) if row else None

    def find(self, key: str, tenants: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The reservations of ``key`` among ``tenants`` (None: every tenant), by tenant."""
        q = select(reservations).where(reservations.c.key == key).order_by(reservations.c.tenant)
        if tenants is not None:
            q = q.where(reservations.c.tenant.in_(list(tenants)))
        with self._read_one("find") as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def seen(self, row: dict[str, Any] | None) -> Seen:
        if row is None:
            return Seen(None, False, (), 0)
        return Seen(
            row["revision"],
            row["phase"] in ACTIVE,
            tuple((p["zone"], p["start"], p["end"]) for p in row["placements"]),
            row["milli_cpu"],
        )

    def calendar(self, zones: list[str], first_slot: int, last_slot: int, seen: Seen) -> dict[str, dict[int, int]]:
        """Booked milli-vCPUs per zone and slot in ``[first_slot, last_slot)``, without the (tenant,
        key)'s own active booking that ``seen`` describes (a changed spec may reuse its own slots)."""
        used: dict[str, dict[int, int]] = defaultdict(dict)
        with self._read_one("calendar") as conn:
            rows = conn.execute(_CALENDAR, {"zones": zones, "first": first_slot, "last": last_slot})
            for zone, slot, m in cast("Iterable[tuple[str, int, int]]", rows):
                used[zone][slot] = m
        if seen.active:
            for (zone, s), delta in zone_hours.deltas(seen.placements, -seen.milli_cpu).items():
                if s in used[zone]:
                    used[zone][s] += delta
        return used

    def list(
        self,
        where: ListingFilter | None = None,
        *,
        now: datetime | None = None,
        tenants: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows by start, filtered in the database: the active and the Pending ones (still running,
        or still able to, at ``now``, when given; a run under way stays until its final phase), or
        with ``where.all`` every phase, where ``ended_after`` keeps the active ones and those whose
        run ends after it (a dashboard's recent history, not years of it). ``tenants`` keeps only
        those tenants' rows (a caller's scope; None: every tenant)."""
        where = ListingFilter() if where is None else where
        q = select(reservations).order_by(reservations.c.start_at, reservations.c.key, reservations.c.tenant)
        if tenants is not None:
            q = q.where(reservations.c.tenant.in_(list(tenants)))
        for column, value in (
            (reservations.c.tenant, where.tenant),
            (reservations.c.zone, where.zone),
            (reservations.c.region, where.region),
            (reservations.c.provider, where.provider),
            (reservations.c.path, where.path),
            (reservations.c.phase, where.phase),
        ):
            if value is not None:
                q = q.where(column == value)
        if key_prefix := where.key_prefix:
            # substr, not LIKE: exact and case-sensitive on SQLite and PostgreSQL alike
            q = q.where(func.substr(reservations.c.key, 1, len(key_prefix)) == key_prefix)
        if not where.all:
            q = q.where(reservations.c.phase.in_(LISTED))
            if now is not None:
                q = q.where(or_(reservations.c.end_at > now, reservations.c.phase.in_(UNDER_WAY)))
        elif where.ended_after is not None:
            q = q.where(or_(reservations.c.phase.in_(LISTED), reservations.c.end_at > where.ended_after))
        with self._read("list") as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def made_since(self, since: datetime) -> tuple[datetime | None, builtins.list[dict[str, Any]]]:
        """When the record's first booking was made, and the bookings made since ``since`` (every
        phase): what was asked and when, for the scarcity price's outlook (greenops.scheduler.outlook)."""
        columns = (
            reservations.c.created_at,
            reservations.c.start_at,
            reservations.c.end_at,
            reservations.c.milli_cpu,
            reservations.c.jobs,
            reservations.c.request,
        )
        with self._read("made_since") as conn:
            first = conn.execute(select(func.min(reservations.c.created_at))).scalar()
            rows = conn.execute(select(*columns).where(reservations.c.created_at >= since)).mappings()
            made = [
                {
                    **r,
                    "created_at": stored_utc(r["created_at"]),
                    "start_at": stored_utc(r["start_at"]),
                    "end_at": stored_utc(r["end_at"]),
                }
                for r in rows
            ]
            return (None if first is None else stored_utc(first)), made

    def shares(self, now: datetime) -> dict[str, tuple[int, datetime | None]]:
        """Each tenant's active milli-vCPUs at ``now``, and when a request of its last left the queue
        placed: what the queue's fairness weighs (greenops.reservations.queue)."""
        active = and_(reservations.c.phase.in_(ACTIVE), reservations.c.end_at > now)
        held = func.sum(case((active, reservations.c.milli_cpu * reservations.c.jobs), else_=0))
        q = select(reservations.c.tenant, held, func.max(reservations.c.admitted_at)).group_by(reservations.c.tenant)
        with self._read_one("shares") as conn:
            rows = cast("Iterable[tuple[str, int | None, datetime | None]]", conn.execute(q))
            return {t: (int(m or 0), None if at is None else stored_utc(at)) for t, m, at in rows}

    def stacks_seen(self) -> dict[tuple[str, str], datetime]:
        """When each (tenant, stack) was last seen by a Pulumi pass."""
        with self._read("stacks_seen") as conn:
            rows = conn.execute(select(stacks.c.tenant, stacks.c.stack, stacks.c.last_seen_at)).mappings()
            return {(str(r["tenant"]), str(r["stack"])): stored_utc(r["last_seen_at"]) for r in rows}

    # --- writes ----------------------------------------------------------------------------

    def commit(
        self,
        booking: Booking,
        seen: Seen,
        capacity_milli: int,
        now: datetime,
        preempted: Sequence[tuple[Queued, Seen]] = (),
    ) -> dict[str, Any]:
        """Store ``booking`` as its tenant's reservation of its key, replacing its previous booking;
        in the same transaction each ``preempted`` Scheduled booking (at the revision seen) goes back
        to the queue as its Queued, giving its hours to this one. Raises Conflict (search again) or
        QuotaExceeded; on any error nothing is changed."""
        deltas = zone_hours.deltas(booking.placements, booking.milli_cpu)
        given_back = [(seen.placements, seen.milli_cpu)] if seen.active else []
        given_back += [(s.placements, s.milli_cpu) for _, s in preempted]
        for placements, milli_cpu in given_back:
            for slot, delta in zone_hours.deltas(placements, -milli_cpu).items():
                deltas[slot] += delta
        with _conflicts(booking.key, booking.tenant), self._write("commit") as conn:
            for q, s in sorted(preempted, key=lambda v: (v[0].tenant, v[0].key)):  # locks in one order
                self._requeue(conn, q, s, now)
            self._claim_key(conn, booking, seen, now)
            self._check_quota(conn, booking, now)
            zone_hours.apply(conn, deltas, capacity_milli)
        self._maybe_prune(now)
        if preempted:
            self.freed()  # the queue tries the preempted at once: another window may have room
        return booking.answer

    def preemptible(
        self, zones: Collection[str], below: int, after: datetime, until: datetime, limit: int
    ) -> builtins.list[dict[str, Any]]:
        """Scheduled bookings of the Pulumi and API paths, of a priority below ``below``, that start after ``after``
        (nothing of them has begun) and before ``until``, with a job in one of ``zones``: lowest
        class first, then the most recently booked (greenops.scheduler.preemption)."""
        q = (
            select(reservations)
            .where(
                and_(
                    reservations.c.phase == "Scheduled",
                    # a cluster-path decision lives in its VmTemplate, which only admission writes
                    reservations.c.path != HELD_PATH,
                    reservations.c.held_until.is_(None),
                    reservations.c.priority < below,
                    reservations.c.start_at > after,
                    reservations.c.start_at < until,
                )
            )
            .order_by(reservations.c.priority, reservations.c.updated_at.desc(), reservations.c.key)
        )
        wanted = set(zones)
        with self._read("preemptible") as conn:
            rows = [dict(r) for r in conn.execute(q).mappings()]
        # only a booking told it could be (its answer says so): one made while preemption was off never is
        told = [r for r in rows if (r["answer"] or {}).get("preemptible")]
        return [r for r in told if any(p["zone"] in wanted for p in r["placements"])][:limit]

    def report(
        self,
        tenant: str,
        key: str,
        phase: str | None,
        reason: str,
        now: datetime,
        authorize: Callable[[dict[str, Any]], None] | None = None,
        *,
        confirm: bool = False,
        lifecycle: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record what happened to tenant ``tenant``'s active reservation ``key``: an active phase
        (Provisioning, Running), or a terminal one (Completed, Failed, Released) that gives its
        zone-hours back; ``confirm`` turns a hold into a reservation (its object was seen stored),
        ``lifecycle`` records the phases' real times. ``phase`` None keeps the phase. A reservation
        already terminal is returned as it is: a retried release or a late report changes nothing.
        ``authorize`` sees the row under its lock, before anything changes, and raises to refuse."""
        assert phase is None or phase in ACTIVE or phase in TERMINAL
        with self._write("report") as conn:
            row = conn.execute(_ROW.with_for_update(), {"tenant": tenant, "key": key}).mappings().first()
            if row is None:
                raise UnknownReservation(f"reservation {key}: no such key")
            if authorize is not None:
                authorize(dict(row))
            if row["phase"] == PENDING and phase in ACTIVE:
                raise NotPlaced(f"reservation {key} is Pending in the queue: it has no placement to be {phase}")
            if row["phase"] not in LISTED:
                return dict(row)
            values: dict[str, Any] = {"updated_at": now}
            if phase is not None:
                values.update(phase=phase, reason=reason[:1024])
            if confirm:
                values["held_until"] = None
            if lifecycle is not None:
                values["lifecycle"] = lifecycle
            if phase in TERMINAL:
                seen = self.seen(dict(row))
                zone_hours.apply(conn, zone_hours.deltas(seen.placements, -seen.milli_cpu), capacity_milli=0)
                values["revision"] = row["revision"] + 1
            mine = and_(reservations.c.tenant == tenant, reservations.c.key == key)
            conn.execute(update(reservations).where(mine).values(**values))
            done = {**dict(row), **values}
        if phase in TERMINAL:
            self.freed()
        return done

    def stack_seen(self, tenant: str, stack: str, now: datetime) -> None:
        """Record that a Pulumi pass over tenant ``tenant``'s stack ``stack`` ran at ``now`` (never
        moved back: a pass with a slower clock does not make the stack look older)."""
        insert = _UPSERT_STACK[self.dialect]
        with self._write("stack_seen") as conn:
            conn.execute(insert, {"tenant": tenant, "stack": stack, "at": now})

    def declare_outage(self, provider: str, region: str, reason: str, by: str, now: datetime) -> dict[str, Any]:
        """Record ``provider/region`` as unavailable; declaring it again keeps when it was first
        declared and takes the new reason. Returns the declaration as stored."""
        with self._write("declare_outage") as conn:
            where = and_(outages.c.provider == provider, outages.c.region == region)
            if conn.execute(select(outages.c.region).where(where)).first() is None:
                values = {"provider": provider, "region": region, "declared_at": now}
                conn.execute(insert(outages).values(**values, reason=reason[:1024], declared_by=by))
            else:
                conn.execute(update(outages).where(where).values(reason=reason[:1024], declared_by=by))
        self._outages_read_at = 0.0
        return next(o for o in self.outages() if (o["provider"], o["region"]) == (provider, region))

    def lift_outage(self, provider: str, region: str) -> bool:
        """Forget the declaration of ``provider/region``; False when there was none."""
        with self._write("lift_outage") as conn:
            where = and_(outages.c.provider == provider, outages.c.region == region)
            gone = conn.execute(delete(outages).where(where)).rowcount > 0
        self._outages_read_at = 0.0
        return gone

    def outages(self, max_age: float = 0.0) -> builtins.list[dict[str, Any]]:
        """The declared outages, oldest first. ``max_age`` > 0 lets a booking use a copy read at most
        that many seconds ago (every replica sees a declaration within it)."""
        if max_age and time.monotonic() - self._outages_read_at < max_age:
            return self._outages
        with self._read_one("outages") as conn:
            rows = conn.execute(select(outages).order_by(outages.c.declared_at, outages.c.provider)).mappings()
            found = [{**dict(r), "declared_at": stored_utc(r["declared_at"])} for r in rows]
        self._outages, self._outages_read_at = found, time.monotonic()
        return found

    def enqueue(self, q: Queued, seen: Seen, now: datetime) -> dict[str, Any]:
        """Record ``q`` as its tenant's Pending reservation of its key, replacing the version ``seen``
        (an active one gives its zone-hours back). Raises Conflict (the key changed meanwhile: decide
        again) or QueueFull; on any error nothing is changed."""
        # an admission's request waits as a hold too: released if its VmTemplate is never stored
        values = self._pending(q, now, held=q.path == HELD_PATH)
        with _conflicts(q.key, q.tenant), self._write("enqueue") as conn:
            self._write_key(conn, q.key, q.tenant, seen, now, values)
            if seen.active:  # a changed request gives its booking's hours back while it waits
                zone_hours.apply(conn, zone_hours.deltas(seen.placements, -seen.milli_cpu), capacity_milli=0)
            self._lock_tenant(conn, q.tenant)  # the tenant's enqueues count in turn
            waiting = conn.execute(_TENANT_WAITING, {"tenant": q.tenant}).scalar_one()
            if waiting > q.max_per_tenant:
                raise QueueFull(
                    f"tenant {q.tenant} has {q.max_per_tenant} requests waiting in the queue, its most: "
                    "this one is refused until some are placed"
                )
        if seen.active:
            self.freed()
        return values

    # --- inside a write transaction --------------------------------------------------------

    def _requeue(self, conn: Connection, q: Queued, seen: Seen, now: datetime) -> None:
        """A preempted booking back in the queue, only if still Scheduled at the revision ``seen`` (its
        hours are given back by the commit's deltas). Its object was seen stored: no hold."""
        changed = {"b_key": q.key, "b_seen": seen.revision, "b_tenant": q.tenant, "revision": (seen.revision or 0) + 1}
        if conn.execute(_STILL_SCHEDULED, {**changed, **self._pending(q, now, held=False)}).rowcount != 1:
            raise Conflict(f"key {q.key} of tenant {q.tenant} changed before it could be preempted")

    def _pending(self, q: Queued, now: datetime, held: bool) -> dict[str, Any]:
        return {
            "tenant": q.tenant,
            "path": q.path,
            "phase": PENDING,
            "spec_hash": q.spec_hash,
            "milli_cpu": q.milli_cpu,
            "jobs": q.jobs,
            "zone": "",
            "provider": None,
            "region": None,
            "start_at": _utc(q.begin),
            "end_at": _utc(q.deadline),
            "placements": [],
            "request": q.request,
            "answer": q.answer,
            "reason": q.reason[:1024],
            "updated_at": now,
            "lifecycle": None,
            "completion_token_sha256": None,
            "completion": None,
            "priority": q.priority,
            "queued_at": now,
            "held_until": now + self.hold if held else None,
        }

    def _claim_key(self, conn: Connection, b: Booking, seen: Seen, now: datetime) -> None:
        first = min(b.placements, key=lambda p: (p[1], p[0]))
        values = {
            "tenant": b.tenant,
            "path": b.path,
            "phase": "Scheduled",
            "spec_hash": b.spec_hash,
            "milli_cpu": b.milli_cpu,
            "jobs": len(b.placements),
            "zone": first[0],
            "provider": b.provider,
            "region": b.region,
            "start_at": _utc(first[1]),
            "end_at": _utc(max(p[2] for p in b.placements)),
            "placements": [{"zone": z, "start": s, "end": e} for z, s, e in b.placements],
            "request": b.request,
            "answer": b.answer,
            "reason": None,
            "updated_at": now,
            "lifecycle": None,  # a new decision starts a new life
            "completion_token_sha256": None,  # and the old run's credential reports nothing for it
            "completion": None,
            "priority": b.priority,
        }
        if b.admitted:
            values["admitted_at"] = now
        else:
            values["queued_at"] = None  # a new decision, not one of the queue's
        if seen.revision is None:  # a new key's booking is a hold until its object is seen (HELD_PATH)
            values["held_until"] = now + self.hold if b.path == HELD_PATH else None
        self._write_key(conn, b.key, b.tenant, seen, now, values)

    @staticmethod
    def _write_key(conn: Connection, key: str, tenant: str, seen: Seen, now: datetime, values: dict[str, Any]) -> None:
        """The (tenant, key) row set to ``values``: inserted when ``seen`` is a new key, else updated
        only at the revision ``seen`` read (Conflict otherwise)."""
        if seen.revision is None:
            conn.execute(_NEW_ROW, {"key": key, "revision": 1, "created_at": now, **values})
            return
        changed = {"b_key": key, "b_seen": seen.revision, "b_tenant": tenant, "revision": seen.revision + 1, **values}
        if conn.execute(_NEXT_REVISION, changed).rowcount != 1:
            raise Conflict(f"key {key} of tenant {tenant} changed meanwhile")

    def _lock_tenant(self, conn: Connection, tenant: str) -> None:
        """Lock the tenant's row (PostgreSQL): what counts a tenant's reservations runs in turn. SQLite
        runs one writer at a time (BEGIN IMMEDIATE): there is nothing to lock."""
        if self.dialect == "postgresql":
            conn.execute(_LOCK_TENANT, {"tenant": tenant})

    def _check_quota(self, conn: Connection, b: Booking, now: datetime) -> None:
        if b.quota_milli is None:
            return
        self._lock_tenant(conn, b.tenant)  # concurrent bookings of one tenant sum its reservations in turn
        used: int = conn.execute(_TENANT_USE, {"tenant": b.tenant, "now": now, "key": b.key}).scalar_one()
        wanted = b.milli_cpu * len(b.placements)
        if used + wanted > b.quota_milli:
            raise QuotaExceeded(
                f"tenant {b.tenant} would use {(used + wanted) / 1000:g} vCPU, above its quota of "
                f"{b.quota_milli / 1000:g} ({used / 1000:g} in active reservations of either path "
                f"+ {wanted / 1000:g} requested)"
            )

    def _maybe_prune(self, now: datetime) -> None:
        """Zone-hours that have passed constrain nothing; drop them now and then."""
        with self._prune_lock:
            if time.monotonic() - self._pruned_at < PRUNE_EVERY:
                return
            self._pruned_at = time.monotonic()
        with self._write("prune") as conn:
            conn.execute(slot_usage.delete().where(slot_usage.c.slot < int(now.timestamp() // SLOT) - 1))


# The booking path's reads, built once: a statement object keeps its cache key, so each execution
# skips building the statement and deriving the key of its compiled form again.
# One reservation is one tenant's key (its primary key).
_IS_ROW = and_(reservations.c.tenant == bindparam("tenant"), reservations.c.key == bindparam("key"))
_ROW = select(reservations).where(_IS_ROW)
_CALENDAR = select(slot_usage).where(
    and_(
        slot_usage.c.zone.in_(bindparam("zones", expanding=True)),
        slot_usage.c.slot >= bindparam("first"),
        slot_usage.c.slot < bindparam("last"),
    )
)
# The booking's own statements, inside its write transaction. The update sets the columns its
# parameters name; the tenant, the key and the revision seen are bound under other names.
_NEW_ROW = insert(reservations)
_NEXT_REVISION = update(reservations).where(
    and_(
        reservations.c.tenant == bindparam("b_tenant"),
        reservations.c.key == bindparam("b_key"),
        reservations.c.revision == bindparam("b_seen"),
    )
)
_STILL_SCHEDULED = _NEXT_REVISION.where(reservations.c.phase == "Scheduled")
_TENANT_USE = select(func.coalesce(func.sum(reservations.c.milli_cpu * reservations.c.jobs), 0)).where(
    and_(
        reservations.c.tenant == bindparam("tenant"),
        reservations.c.phase.in_(ACTIVE),
        reservations.c.end_at > bindparam("now"),
        reservations.c.key != bindparam("key"),
    )
)
_TENANT_WAITING = select(func.count()).where(
    and_(reservations.c.tenant == bindparam("tenant"), reservations.c.phase == PENDING)
)
# The tenant's row, created or not, locked in one statement (PostgreSQL only: see _check_quota).
_NEW_TENANT = postgresql.insert(tenants).values(tenant=bindparam("tenant"))
_LOCK_TENANT = _NEW_TENANT.on_conflict_do_update(
    index_elements=[tenants.c.tenant], set_={"tenant": _NEW_TENANT.excluded.tenant}
)


def _upsert_stack(insert: Any) -> Any:
    new = insert(stacks).values(tenant=bindparam("tenant"), stack=bindparam("stack"), last_seen_at=bindparam("at"))
    return new.on_conflict_do_update(
        index_elements=[stacks.c.tenant, stacks.c.stack],
        set_={"last_seen_at": new.excluded.last_seen_at},
        where=stacks.c.last_seen_at < new.excluded.last_seen_at,
    )


_UPSERT_STACK = {"postgresql": _upsert_stack(postgresql.insert), "sqlite": _upsert_stack(sqlite.insert)}
# How each database runs a statement outside a transaction (ReservationStore._read_one): psycopg in
# autocommit mode; SQLite where the begin listener (_engine) leaves out the BEGIN.
_NO_TRANSACTION: dict[str, dict[str, Any]] = {
    "postgresql": {"isolation_level": "AUTOCOMMIT"},
    "sqlite": {"greenops_no_transaction": True},
}


@contextlib.contextmanager
def _conflicts(key: str, tenant: str) -> Iterator[None]:
    """A write of tenant ``tenant``'s key that lost a race to another (a duplicate key, or the
    database's own serialization failure or busy lock) raises Conflict: decide again."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict(f"key {key} of tenant {tenant} was booked meanwhile") from exc
    except DBAPIError as exc:
        if _retryable(exc):
            raise Conflict(f"the database asked to retry: {exc.orig}") from exc
        raise


def _retryable(exc: DBAPIError) -> bool:
    # PostgreSQL: serialization failure / deadlock; SQLite: busy beyond busy_timeout
    code = getattr(exc.orig, "sqlstate", None)
    return code in ("40001", "40P01") or "database is locked" in str(exc.orig)


def _in_memory(url: str) -> bool:
    return url in ("sqlite://", "sqlite:///:memory:")


def _engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        memory = _in_memory(url)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            **({"poolclass": StaticPool} if memory else {}),
        )

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
            # Transactions are begun explicitly below; WAL lets readers run beside the writer, and a
            # commit in WAL with synchronous=NORMAL survives the process being killed.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
                # SQLite's own checkpoint, in a commit, only as the backstop of the checkpoints' thread
                cur.execute(f"PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT}")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            # A writer takes the write lock up front, so two writers queue instead of deadlocking
            # on a lock upgrade. A read of one statement runs without one (its ROLLBACK is then a
            # no-op: sqlite3 rolls back only an open transaction).
            options = conn.get_execution_options()
            if not options.get("greenops_no_transaction"):
                conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get("greenops_write") else "BEGIN")

        return engine
    return create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
