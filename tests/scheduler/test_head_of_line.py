"""No head-of-line blocking: while a 1000-job batch is placed (searched with no lock held, then
committed in one short transaction), one-job requests to the same real scheduler process, on its
SQLite record, keep being answered, and none waits for the batch.

What is asserted is relative to the batch's own time, so that it holds on a loaded machine: no
writer waits a quarter of the batch's time for the record's write lock, which a probe beside the
scheduler takes and lets go in a loop (on a SQLite record a write is BEGIN IMMEDIATE, so the probe
waits exactly as long as a one-job booking would); and nine in ten one-job requests take less than
that. The slowest one-job request is printed, not asserted: on a CI machine running three times
more work than it has cores, one request of hundreds once took 1.86 s of a 1.95 s batch while the
median took 3.7 ms, a stall of the whole process rather than a wait for the batch (the former
`max < batch / 4` failed on it). The absolute figures (p99 62 ms on a quiet machine) are printed
too. Checked against the fault it guards: with the batch's commit holding the record's write lock
0.6 s longer, the probe waited 631 ms of a 1.70 s batch, and this test fails."""

from __future__ import annotations

import sqlite3
import threading
import time

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer

pytestmark = pytest.mark.integration
ZONES = ["FR", "DE", "PL", "NL", "BE", "ES", "IT-NO", "CH", "FI", "GB"]


def test_one_job_requests_stay_fast_while_a_large_batch_is_placed(tmp_path):
    # the batch's 1000 vCPU are above the packaged default quota (512): policy gives its tenant more
    policy = tmp_path / "policy.yaml"
    policy.write_text("tenant_vcpu_quota:\n  batch: 1000\ndefault_tenant_vcpu_quota: 512\n")
    env = {
        "GREENOPS_NOW": "2027-01-10T03:00:00Z",
        "GREENOPS_SCHEDULER_POLICY_CONFIG": str(policy),
        # latency is measured here, not the rate limit: a fast machine sends more than 600 a minute
        "GREENOPS_SCHEDULER_RATE_LIMIT": "none",
    }
    with SchedulerServer(env=env, log=tmp_path / "scheduler.log") as s:
        batch: dict = {}
        batch_auth = {"Authorization": f"Bearer {s.issue('batch-ci', ['batch'])}"}
        small_auth = {"Authorization": f"Bearer {s.issue('small-ci', ['small'])}"}

        def place_batch() -> None:
            started = time.monotonic()
            r = httpx.post(
                f"{s.url}/scheduling",
                timeout=200,
                headers=batch_auth,
                json={
                    "key": "batch",
                    "number_of_jobs": 1000,
                    "eligible_regions": ZONES,
                    "deadline": "2027-01-17T03:00:00Z",
                    "duration": 2,
                    "cpu": 1,
                    "memory": 2,
                    "req_timeout": 120,
                    "tenant": "batch",
                },
            )
            batch.update(seconds=time.monotonic() - started, status=r.status_code, detail=r.text[:200])

        runner = threading.Thread(target=place_batch)
        waits: list[float] = []
        probe = threading.Thread(target=_probe_the_write_lock, args=(s.database, runner, waits))
        latencies = []
        with httpx.Client(base_url=s.url, timeout=10, headers=small_auth) as client:
            client.get("/healthz")
            runner.start()
            probe.start()
            while runner.is_alive():
                started = time.monotonic()
                r = client.post(
                    "/scheduling",
                    json={
                        "key": f"one/{len(latencies)}",
                        "eligible_regions": ZONES[:3],
                        "deadline": "2027-01-17T03:00:00Z",
                        "duration": 2,
                        "cpu": 1,
                        "memory": 2,
                        "tenant": "small",
                    },
                )
                latencies.append((time.monotonic() - started) * 1000)
                assert r.status_code == 200, r.text
        runner.join()
        probe.join()
        latencies.sort()
        p90, p99 = (latencies[max(0, int(len(latencies) * q) - 1)] for q in (0.9, 0.99))
        quarter = batch["seconds"] * 1000 / 4
        print(
            f"\nbatch of 1000 jobs: {batch}; {len(latencies)} one-job requests meanwhile: "
            f"p50 {latencies[len(latencies) // 2]:.1f} ms, p90 {p90:.1f} ms, p99 {p99:.1f} ms, "
            f"max {latencies[-1]:.1f} ms; the write lock, taken {len(waits)} times: longest wait "
            f"{max(waits):.1f} ms"
        )
        assert batch["status"] == 200
        assert len(latencies) >= 20, "the batch finished too soon to measure anything"
        # none waited for the batch: no writer waited a quarter of its time for the record
        assert max(waits) < quarter, (max(waits), batch["seconds"])
        assert p90 < quarter, (p90, batch["seconds"])


def _probe_the_write_lock(url: str, runner: threading.Thread, waits: list[float]) -> None:
    """Take the record's write lock as a booking does and let it go, while the batch runs, timing
    each wait in ms. A pause between takes leaves the scheduler's own writers their turns."""
    record = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30, isolation_level=None)
    try:
        while runner.is_alive():
            started = time.monotonic()
            record.execute("BEGIN IMMEDIATE")
            waits.append((time.monotonic() - started) * 1000)
            record.execute("ROLLBACK")
            time.sleep(0.002)
    finally:
        record.close()
