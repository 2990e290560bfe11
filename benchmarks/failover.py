"""How long failover takes on the Pulumi path, on the real OPA and scheduler over loopback:
``--workloads`` placements are made, the region most of them landed in is declared unavailable,
and one pass (each Placement's diff and update, as `pulumi up` runs them) moves them. Prints the
pass's wall time, each move's p50/p99, how many moved and how many were Failed for want of room,
and the mean carbon a move cost.

    .venv/bin/python benchmarks/failover.py [--workloads 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from greenops.common.clock import stamp
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.placing.failover import Outages
from greenops.provider.placement import PlacementProvider

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchmarkKeyOnlyForRenderingXXXXXXXXXXXXXXXX bench"


def props(s: SchedulerServer, opa: OpaServer, token: str, name: str, deadline: datetime) -> dict:
    return {
        "workload": {
            "name": name,
            "cpu": 4,
            "memory": 8,
            "duration": "2h",
            "deadline": stamp(deadline),
            "originRegion": "westeurope",
            "dataResidency": "eu",
            "tenant": "bench",
        },
        "opaUrl": opa.url,
        "opaToken": opa.query_token,
        "schedulerUrl": s.url,
        "schedulerToken": token,
        "timeoutSeconds": 10,
        "attempts": 2,
        "render": {
            "sshPublicKey": KEY,
            "skipAwait": True,
            "azureSubscriptionId": "00000000-0000-0000-0000-000000000000",
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=40)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="greenops-failover-bench-"))
    with SchedulerServer(log=folder / "s.log") as s:
        opa_token = s.issue("opa", None, paths=["cluster"])
        with OpaServer(scheduler_url=s.url, scheduler_token=opa_token) as opa:
            token = s.issue("bench-stack", ["bench"], paths=["pulumi"])
            provider = PlacementProvider(outages=Outages(max_age=0))
            deadline = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
            made = []
            for i in range(args.workloads):
                p = props(s, opa, token, f"w{i:03d}", deadline)
                made.append((p, provider.create(p).outs))
            regions = Counter(f"{o['decision']['provider']}/{o['decision']['region']}" for _, o in made)
            lost, placed_there = regions.most_common(1)[0]
            r = httpx.put(f"{s.url}/outages/{lost}", json={"reason": "benchmark"}, headers=s.admin_headers)
            r.raise_for_status()
            declared = time.perf_counter()
            moves, outcome, extra = [], Counter(), []
            for p, before in made:
                t0 = time.perf_counter()
                name = p["workload"]["name"]
                if not provider.diff(f"greenvm-{name}", before, p).changes:
                    continue
                after = provider.update(f"greenvm-{name}", before, p).outs
                moves.append((time.perf_counter() - t0) * 1000)
                outcome[after["phase"] if after["phase"] == "Failed" else "moved"] += 1
                extra += [f["extraG"] for f in after["lifecycle"].get("failovers", []) if f.get("extraG") is not None]
            whole = time.perf_counter() - declared
    moves.sort()
    print(f"{args.workloads} placements, {placed_there} of them in {lost}, declared unavailable")
    print(f"pass after the declaration: {whole:.2f} s for all {args.workloads} (diff + update each)")
    if moves:
        p99 = moves[min(len(moves) - 1, int(round(0.99 * (len(moves) - 1))))]
        print(f"per move: p50 {statistics.median(moves):.1f} ms, p99 {p99:.1f} ms ({len(moves)} moves)")
    print(f"outcome: {dict(outcome)}; mean extra carbon per move: {statistics.fmean(extra) if extra else 0:.1f} gCO2e")


if __name__ == "__main__":
    main()
