"""Large searches run in a worker process, so they never hold the GIL the small ones need.

The search for a 1000-job batch is seconds of Python and numpy. Run in a thread of the service it
would hold the interpreter lock for most of that time, and every one-job request would queue behind
it: a global lock in all but name. Above ``SMALL_WORK`` slot evaluations the search goes to a
process pool (spawned, not forked: the service is multi-threaded); below it, a thread is quicker
than the round trip.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor

from greenops.intensity.series import Series
from greenops.search.algorithm import Assignment, CapacityLedger, Job, search
from greenops.search.scarcity import ScarcityPrice

SMALL_WORK = 20_000  # jobs x zones x horizon hours; a one-job week over 16 zones is 2 688


class SearchPool:
    def __init__(self, workers: int = 1):
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def place(
        self,
        work: int,
        forecasts: dict[str, Series],
        job: Job,
        n: int,
        begin: float,
        deadline: float,
        ledger: CapacityLedger,
        give_up_at: float,
        price: ScarcityPrice | None = None,
    ) -> tuple[list[Assignment], list[Assignment]]:
        """The placements, and what the first job weighed (algorithm.search, by the point rule)."""
        if work <= SMALL_WORK:
            return search(forecasts, job, n, begin, deadline, ledger, give_up_at, price=price)
        # CLOCK_MONOTONIC is system-wide, so the worker honours the same give_up_at
        future = self._executor().submit(search, forecasts, job, n, begin, deadline, ledger, give_up_at, price=price)
        return future.result()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self._workers, mp_context=multiprocessing.get_context("spawn"))
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None
