#!/usr/bin/env python3
"""Scheduler decision latency and batch throughput.

    .venv/bin/python benchmarks/scheduler_latency.py [--requests 500] [--batch 1000]

One job over the 16 zones that have hourly data, with a 7-day horizon at hourly resolution:
p50/p99 of the HTTP round trip to the real service on loopback (embedded profiles), and of the
decision alone in-process. Then jobs/s for batches of 1000 (number_of_jobs=1000).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

import httpx
from latency import percentiles, timed_ms

from greenops.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.scheduler.algorithm import CapacityLedger, Job, best_placement, place_batch
from greenops.scheduler.series import to_epoch
from greenops.scheduler.sources import ProfileSource

ZONES = [
    "AU-NSW",
    "AU-VIC",
    "BR-CS",
    "CA-ON",
    "CL-SEN",
    "DE",
    "GB",
    "IN-WE",
    "JP-TK",
    "KR",
    "SG",
    "US-CAL-CISO",
    "US-MIDA-PJM",
    "US-NY-NYIS",
    "US-TEX-ERCO",
    "ZA",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    deadline = datetime.now(UTC) + timedelta(days=7)
    body = {
        "number_of_jobs": 1,
        "eligible_regions": ZONES,
        "deadline": stamp(deadline),
        "duration": 6,
        "cpu": 4,
        "memory": 8,
        "req_timeout": 10,
    }

    source = ProfileSource()
    now = time.time()
    end = to_epoch(deadline)

    def decide(_: int) -> None:
        forecasts = {z: source.series(z, now, end, now) for z in ZONES}
        best_placement(forecasts, Job(4, 8, 6 * 3600), now, end)

    print(
        f"decision in-process (16 zones, 7-day hourly horizon, 6 h job): {percentiles(timed_ms(decide, args.requests))}"
    )

    with SchedulerServer(capacity_vcpu=1e12) as service, httpx.Client(base_url=service.url, timeout=30) as c:
        rtt = timed_ms(lambda _: c.post("/scheduling", json=body).raise_for_status(), args.requests, warmup=20)
        print(f"decision over HTTP (POST /scheduling, same request):            {percentiles(rtt)}")
        batch = dict(body, number_of_jobs=args.batch)
        t = time.perf_counter()
        r = c.post("/scheduling", json=batch)
        r.raise_for_status()
        elapsed = time.perf_counter() - t
        zones = {p["scheduling_location"] for p in r.json()["placements"]}
        print(
            f"batch of {args.batch} over HTTP: {elapsed:.2f} s = {args.batch / elapsed:.0f} jobs/s "
            f"(unlimited capacity, {len(zones)} zone(s) used)"
        )

    forecasts = {z: source.series(z, now, end, now) for z in ZONES}
    ledger = CapacityLedger(256)
    t = time.perf_counter()
    placements = place_batch(forecasts, Job(4, 8, 6 * 3600), args.batch, now, end, ledger)
    elapsed = time.perf_counter() - t
    print(
        f"batch of {args.batch} in-process with 256 vCPU per zone-hour: {elapsed:.2f} s = "
        f"{args.batch / elapsed:.0f} jobs/s ({len({p.zone for p in placements})} zones used)"
    )


if __name__ == "__main__":
    main()
