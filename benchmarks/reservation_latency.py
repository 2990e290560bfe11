"""Scheduler latency over HTTP with the reservation record: one job x 16 zones x 7 days, each
request booking under its own key, against the same process type with the record in memory, in a
SQLite file, and in a real PostgreSQL server on loopback. Prints p50/p99 per store.

    .venv/bin/python benchmarks/reservation_latency.py [--requests 400] [--scarcity-price]
Goals: p99 <= 5 ms with SQLite, <= 8 ms with PostgreSQL. With ``--scarcity-price`` each store is
measured with the price off, then on (GREENOPS_SCHEDULER_SCARCITY_PRICE) over the same record, so
the priced run also reads the first run's bookings; at a capacity the bookings never reach but that
the price weighs in every zone-hour.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer

NOW = "2027-01-10T03:00:00Z"
ZONES = [
    "FR",
    "DE",
    "PL",
    "NL",
    "BE",
    "ES",
    "IT-NO",
    "CH",
    "FI",
    "GB",
    "SE-SE3",
    "CA-QC",
    "CA-ON",
    "US-CAL-CISO",
    "JP-TK",
    "SG",
]


def measure(url: str, n: int, token: str, prefix: str = "bench") -> list[float]:
    """``n`` bookings as one tenant's principal, each under a new key (``prefix``/i): each request's
    credential is looked up in the record."""
    body = {"eligible_regions": ZONES, "deadline": "2027-01-17T03:00:00Z", "duration": 2, "cpu": 2, "memory": 4}
    out = []
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"}) as client:
        for i in range(n + 20):
            started = time.perf_counter()
            r = client.post("/scheduling", json={**body, "key": f"{prefix}/{i}"})
            elapsed = (time.perf_counter() - started) * 1000
            r.raise_for_status()
            if i >= 20:  # warm-up: connections, caches, the first forecasts
                out.append(elapsed)
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--scarcity-price", action="store_true", help="each store with the price off and on")
    args = parser.parse_args()
    prices = (False, True) if args.scarcity_price else (False,)
    work = Path(tempfile.mkdtemp(prefix="greenops-bench-"))
    # Every request books 2 vCPU (840 in all at the default 400): the bench tenant gets no quota from
    # policy, and the rate limit is off, so what is measured is the booking, not a refusal.
    policy = work / "policy.yaml"
    policy.write_text("tenant_vcpu_quota: {}\ndefault_tenant_vcpu_quota: null\n")
    settings = {
        "GREENOPS_NOW": NOW,
        "GREENOPS_SCHEDULER_POLICY_CONFIG": str(policy),
        "GREENOPS_SCHEDULER_RATE_LIMIT": "none",
    }
    rows = []
    with ExitStack() as stack:
        pg = stack.enter_context(PostgresServer())
        for name, database in (
            ("in memory (SQLite :memory:)", "sqlite://"),
            ("SQLite file (WAL)", f"sqlite:///{work / 'reservations.db'}"),
            ("PostgreSQL 127.0.0.1", pg.url),
        ):
            for priced in prices:
                env = {**settings, "GREENOPS_SCHEDULER_SCARCITY_PRICE": str(priced).lower()}
                with SchedulerServer(
                    capacity_vcpu=100000, database=database, env=env, log=work / f"{len(rows)}.log"
                ) as s:
                    lat = measure(s.url, args.requests, s.issue("bench", ["bench"]), f"bench-{priced}")
                p99 = lat[max(0, int(len(lat) * 0.99) - 1)]
                rows.append((name + (", priced" if priced else ""), statistics.median(lat), p99, lat[-1]))
    print(f"one job x {len(ZONES)} zones x 7 days, {args.requests} booking requests per store, sequential, over HTTP")
    print(f"{'store':38} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, p50, p99, worst in rows:
        print(f"{name:38} {p50:8.2f} {p99:8.2f} {worst:8.2f}")


if __name__ == "__main__":
    main()
