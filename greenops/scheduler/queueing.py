"""The scheduler's queue: a request that asked to wait (``queue``), that no window has room for now
but that could be placed before its deadline, is recorded as Pending (greenops.reservations.queue)
and answered 202 with its place; the admitter places the waiting ones as room frees.

Admission is driven by releases: every release or end this replica records wakes it at once, and it
also looks every ``every`` seconds (what another replica freed, and quota freed by a run's end
passing). One round tries each waiting request in admission order, with the same search and the same
optimistic booking as a fresh request, from the later of now and its earliest start; a request whose
run no longer fits before its deadline is Failed, with the reason. A request admitted by two replicas
at once is booked once: the booking replaces only the Pending revision it read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import structlog
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from greenops.common.clock import Clock
from greenops.reservations import Queued, ReservationStore, queue
from greenops.reservations.tables import stored_utc
from greenops.scheduler.answer import rfc3339
from greenops.scheduler.contract import PendingResponse

if TYPE_CHECKING:
    from greenops.scheduler.booking import Ask

log = structlog.get_logger("greenops.scheduler")

MAX_PER_ROUND = 500  # admissions tried in one round: the rest wait for the next
# What an admission attempt came to (Decider.admit)
LEFT, NO_ROOM, NO_QUOTA, STAYED = "left", "no-room", "no-quota", "stayed"


class Hopeless:
    """What one round has learnt cannot be admitted, so that the requests after it that ask for as
    much or more are not searched for in vain: the calendar only fills during a round. No room for
    a request means none for one of the same zones that needs at least its vCPUs, jobs and hours in
    a window no wider; no quota for a tenant's request means none for its requests that need at
    least as many vCPUs."""

    def __init__(self) -> None:
        self._room: list[tuple[frozenset[str], float, int, float, str, str]] = []
        self._quota: dict[str, float] = {}

    @staticmethod
    def _ask(row: dict[str, Any]) -> tuple[frozenset[str], float, int, float, str, str]:
        r = row["request"]
        return (
            frozenset(r["eligible_regions"]),
            float(r["cpu"]),
            int(r.get("number_of_jobs", 1)),
            float(r["duration"]),
            r.get("earliest_start") or "",
            r["deadline"],
        )

    def covers(self, row: dict[str, Any]) -> bool:
        zones, cpu, jobs, hours, earliest, deadline = self._ask(row)
        if cpu * jobs >= self._quota.get(row["tenant"], float("inf")):
            return True
        return any(
            z == zones and cpu >= c and jobs >= j and hours >= h and earliest >= e and deadline <= d
            for z, c, j, h, e, d in self._room
        )

    def learn(self, row: dict[str, Any], outcome: str) -> None:
        if outcome == NO_ROOM:
            self._room.append(self._ask(row))
        elif outcome == NO_QUOTA:
            _, cpu, jobs, *_ = self._ask(row)
            self._quota[row["tenant"]] = min(self._quota.get(row["tenant"], float("inf")), cpu * jobs)


@dataclass(frozen=True)
class QueueSettings:
    max_per_tenant: int = 1000  # a tenant's waiting requests at most
    every: float = 30.0  # seconds between the admitter's own rounds; 0: only when woken


@dataclass(frozen=True)
class Waiting:
    """A request about to be queued: the record's row and the caller's answer."""

    ask: Ask
    reason: str
    klass: tuple[str, int]
    begin: float
    digest: str

    def response(self, position: int | None, queued_at: datetime | None) -> JSONResponse:
        return pending_response(
            None if position is None else self.ask.key,
            position,
            self.reason,
            self.klass,
            queued_at,
            self.ask.deadline,
            self.begin,
        )

    def queued(self, max_per_tenant: int) -> Queued:
        a = self.ask
        answer = {"phase": "Pending", "priority_class": self.klass[0], "reason": self.reason}
        return Queued(
            key=a.key,
            spec_hash=self.digest,
            tenant=a.tenant,
            path=a.path,
            milli_cpu=round(a.cpu * 1000),
            jobs=a.request.get("number_of_jobs", 1),
            request=a.request,
            answer=answer,
            reason=self.reason,
            begin=a.begin,
            deadline=a.deadline,
            priority=self.klass[1],
            max_per_tenant=max_per_tenant,
        )


def pending_response(
    key: str | None,
    position: int | None,
    reason: str,
    klass: tuple[str, int],
    queued_at: datetime | None,
    deadline: float,
    begin: float,
) -> JSONResponse:
    body = PendingResponse(
        key=key,
        position=position,
        reason=reason,
        priority_class=klass[0],
        priority=klass[1],
        queued_at=None if queued_at is None else queued_at.isoformat(),
        deadline=rfc3339(deadline),
        searched_from=rfc3339(begin),
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=202)


def still_waiting(store: ReservationStore, row: dict[str, Any], now: datetime) -> JSONResponse:
    """The answer of a Pending reservation: its place in the queue as the record has it at ``now``."""
    place = queue.positions(store, now).get((row["tenant"], row["key"]))
    return pending_response(
        row["key"],
        place,
        row["reason"] or "",
        (row["answer"].get("priority_class", ""), row["priority"] or 0),
        stored_utc(row["queued_at"]),
        stored_utc(row["end_at"]).timestamp(),
        stored_utc(row["start_at"]).timestamp(),
    )


def can_still_run(row: dict[str, Any], now: datetime) -> bool:
    """Whether a waiting request's run still fits between ``now`` and its deadline."""
    return now + timedelta(hours=float(row["request"]["duration"])) <= stored_utc(row["end_at"])


def _skipped(hopeless: Hopeless, row: dict[str, Any], now: datetime) -> bool:
    """Whether this round skips ``row``: what it asks for found no room already. One whose run no
    longer fits is tried all the same (the attempt fails it, with the reason), and so is one whose
    recorded request cannot be read (the attempt fails it too, saying why)."""
    try:
        return can_still_run(row, now) and hopeless.covers(row)
    except (KeyError, TypeError, ValueError):
        return False


class Admitter:
    """The thread that admits waiting requests, from ``start`` to ``stop``: ``admit(row)`` tries one
    (LEFT when it left the queue: placed, or Failed; else why it stayed)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(
        self, store: ReservationStore, clock: Clock, admit: Callable[[dict[str, Any]], str], every: float
    ) -> None:
        self.store, self.clock, self.admit, self.every = store, clock, admit, every
        store.freed = self.wake
        self._thread = threading.Thread(target=self._run, name="queue-admitter", daemon=True)
        self._thread.start()
        self.wake()  # what waited while no replica ran

    def wake(self) -> None:
        """Room may have freed: try the queue now."""
        self._wake.set()

    def once(self) -> int:
        """One round; how many requests left the queue."""
        done, hopeless, now = 0, Hopeless(), self.clock()
        for row in queue.waiting(self.store, now)[:MAX_PER_ROUND]:
            if self._stop.is_set():
                break
            if _skipped(hopeless, row, now):
                continue
            try:
                outcome = self.admit(row)
            except SQLAlchemyError:
                raise  # the record itself is down: the round ends, the next one tries again
            except Exception:  # noqa: BLE001 - one request's bug must not keep the others waiting
                log.exception("queue.admission_failed", key=row["key"], tenant=row["tenant"])
                continue
            hopeless.learn(row, outcome)
            done += outcome == LEFT
        return done

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.every if self.every > 0 else None)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.once()
            except SQLAlchemyError as exc:  # the record is down: the next round tries again
                log.warning("queue.round_failed", error=str(exc).splitlines()[0])
            except Exception:  # noqa: BLE001 - a round's bug must not end admission for the process
                log.exception("queue.round_failed")

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
