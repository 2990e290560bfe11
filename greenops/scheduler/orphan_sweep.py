"""The service's own orphan sweep: every ``every`` seconds, on a thread of its own, the Scheduled
Pulumi-path bookings of stacks not seen for ``grace`` are released (greenops.reservations.orphans).
Every replica sweeps; a reservation is released once, whichever gets there first."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta

import structlog
from sqlalchemy.exc import SQLAlchemyError

from greenops.common.clock import Clock
from greenops.reservations import ReservationStore, orphans

log = structlog.get_logger("greenops.scheduler")


@dataclass(frozen=True)
class OrphanSweep:
    grace: timedelta = orphans.DEFAULT_GRACE
    every: float = 600.0  # seconds; 0: never on its own

    def start(self, store: ReservationStore, clock: Clock) -> Sweeping:
        return Sweeping(self, store, clock)


class Sweeping:
    def __init__(self, sweep: OrphanSweep, store: ReservationStore, clock: Clock):
        self.sweep, self.store, self.clock = sweep, store, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if sweep.every > 0:
            self._thread = threading.Thread(target=self._run, name="orphan-sweep", daemon=True)
            self._thread.start()

    def once(self) -> list[orphans.Orphan]:
        done = orphans.sweep(self.store, self.clock(), self.sweep.grace)
        for o in done:
            log.info(
                "reservations.orphan_released",
                tenant=o.tenant,
                key=o.key,
                stack=o.stack,
                reason=o.reason(self.sweep.grace),
            )
        return done

    def _run(self) -> None:
        while not self._stop.wait(self.sweep.every):
            try:
                self.once()
            except SQLAlchemyError as exc:  # the record is down: the next round tries again
                log.warning("reservations.orphan_sweep_failed", error=str(exc))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
