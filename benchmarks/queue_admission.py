"""How soon the queue admits after a release, over HTTP on the real service: one zone that holds one
booking at a time, ``--waiting`` requests queued behind it, then ``--releases`` times the booking
just admitted is released and the time until the next one is Scheduled is measured (what a release
costs the next in line: the admitter's wake, its read of the queue in admission order, one search
and one booking). Prints p50/p99 and the queue's length, per store.

    .venv/bin/python benchmarks/queue_admission.py [--waiting 200] [--releases 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from greenops.common.clock import set_clock_file, stamp
from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer

T0 = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)


def body(key: str) -> dict:
    # 8 vCPU for 2 h within 3 h in one zone of 8: one at a time
    return {
        "key": key,
        "eligible_regions": ["FR"],
        "deadline": stamp(T0 + timedelta(hours=3)),
        "duration": 2,
        "cpu": 8,
        "memory": 16,
        "queue": True,
    }


def measure(database: str | None, waiting: int, releases: int, folder: Path) -> list[float]:
    clock = folder / "now"
    set_clock_file(clock, T0)
    env = {"GREENOPS_CLOCK_FILE": str(clock), "GREENOPS_SCHEDULER_QUEUE_SECONDS": "0"}
    with SchedulerServer(capacity_vcpu=8, database=database, env=env, log=folder / "s.log") as s:
        token = s.issue("bench", ["bench"], paths=["api"])
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=s.url, headers=headers, timeout=30) as client:
            assert client.post("/scheduling", json=body("held")).status_code == 200
            for i in range(waiting):
                assert client.post("/scheduling", json=body(f"w{i}")).status_code == 202
            held, seconds = "held", []
            for _ in range(releases):
                started = time.perf_counter()
                assert client.delete(f"/reservations/{held}").status_code == 200
                while True:
                    listed = client.get("/reservations", params={"phase": "Scheduled"}).json()["reservations"]
                    if listed:
                        break
                seconds.append(time.perf_counter() - started)
                held = listed[0]["key"]
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--waiting", type=int, default=200)
    parser.add_argument("--releases", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, PostgresServer() as pg:
        for name, database in (("sqlite", None), ("postgresql", pg.url)):
            folder = Path(tmp) / name
            folder.mkdir()
            seconds = sorted(measure(database, args.waiting, args.releases, folder))
            p99 = seconds[min(len(seconds) - 1, round(0.99 * (len(seconds) - 1)))]
            print(
                f"{name:10} release -> next admitted, {args.waiting} waiting, {args.releases} releases: "
                f"p50 {statistics.median(seconds) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
            )


if __name__ == "__main__":
    main()
