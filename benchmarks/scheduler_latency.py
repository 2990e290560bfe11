#!/usr/bin/env python3
"""Scheduler decision latency and batch throughput.

    .venv/bin/python benchmarks/scheduler_latency.py [--requests 500] [--batch 1000]

One job over the 16 zones that have hourly data, with a 7-day horizon at hourly resolution:
p50/p99 of the HTTP round trip to the real service on loopback (embedded profiles), and of the
decision alone in-process. Then jobs/s for batches of 1000 (number_of_jobs=1000).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from latency import percentiles, timed_ms

from greenops.common.clock import stamp
from greenops.intensity import ProfileSource
from greenops.intensity.series import to_epoch
from greenops.local.scheduler import SchedulerServer
from greenops.scheduler.api import MAX_WORK
from greenops.search.algorithm import CapacityLedger, Job, best_placement, place_batch

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

    # Every request books (4 vCPU each, thousands in all): the bench tenant gets no quota from policy,
    # and the rate limit is off, so what is measured is the decision, not a refusal.
    policy = Path(tempfile.mkdtemp(prefix="greenops-bench-")) / "policy.yaml"
    policy.write_text("tenant_vcpu_quota: {}\ndefault_tenant_vcpu_quota: null\n")
    settings = {"GREENOPS_SCHEDULER_POLICY_CONFIG": str(policy), "GREENOPS_SCHEDULER_RATE_LIMIT": "none"}
    with SchedulerServer(capacity_vcpu=1e12, env=settings) as service:
        auth = {"Authorization": f"Bearer {service.issue('bench', ['bench'])}"}  # a tenant's API token
        with httpx.Client(base_url=service.url, timeout=30, headers=auth) as c:
            measure_http(c, body, args.requests, args.batch)

    forecasts = {z: source.series(z, now, end, now) for z in ZONES}
    ledger = CapacityLedger(256)
    t = time.perf_counter()
    placements = place_batch(forecasts, Job(4, 8, 6 * 3600), args.batch, now, end, ledger)
    elapsed = time.perf_counter() - t
    print(
        f"batch of {args.batch} in-process with 256 vCPU per zone-hour: {elapsed:.2f} s = "
        f"{args.batch / elapsed:.0f} jobs/s ({len({p.zone for p in placements})} zones used)"
    )


def measure_http(c: httpx.Client, body: dict, requests: int, size: int) -> None:
    """The round trip of one-job requests, then one batch of ``size`` jobs, over ``c``."""
    rtt = timed_ms(lambda _: c.post("/scheduling", json=body).raise_for_status(), requests, warmup=20)
    print(f"decision over HTTP (POST /scheduling, same request):            {percentiles(rtt)}")
    # One request may cost at most MAX_WORK slot evaluations (jobs x zones x hours of horizon): a
    # batch of 1000 over 16 zones fits 125 h, so the batch's horizon is cut to what the service takes.
    hours = min(7 * 24, MAX_WORK // (size * len(body["eligible_regions"])) - 1)
    deadline = stamp(datetime.now(UTC) + timedelta(hours=hours))
    t = time.perf_counter()
    r = c.post("/scheduling", json=dict(body, number_of_jobs=size, deadline=deadline))
    if r.status_code != 200:
        raise SystemExit(f"batch of {size} over HTTP: {r.status_code} {r.text}")
    elapsed = time.perf_counter() - t
    zones = {p["scheduling_location"] for p in r.json()["placements"]}
    print(
        f"batch of {size} over HTTP ({hours} h horizon): {elapsed:.2f} s = {size / elapsed:.0f} jobs/s "
        f"(unlimited capacity, {len(zones)} zone(s) used)"
    )


if __name__ == "__main__":
    main()
