#!/usr/bin/env python3
"""Wall time of `pulumi preview` and `up` for N workloads on the file backend (render mode).

    .venv/bin/python benchmarks/pulumi_up.py [--workloads 5 100]

Real engine, real OPA and scheduler on loopback, the Placement dynamic provider in its own process.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pulumi import automation as auto

from greenops.catalog import load_catalog
from greenops.common.clock import stamp
from greenops.engine import automation
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.stack import program

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchmarkKeyOnly greenops-bench"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"  # rendered into owner ARM ids, never used against Azure


def workloads(n: int, now: datetime | None = None) -> list[dict]:
    """Valid, placeable workloads, their deadlines from ``now`` (default: the wall clock): EU-only
    ones start from EU regions (a conflict is refused, and is tested elsewhere)."""
    rnd = random.Random(n)
    cat = load_catalog()
    placeable = [r for r in cat.regions() if not cat.placement_gaps(r.provider, r.name)]
    now = now or datetime.now(UTC)
    out = []
    for i in range(n):
        residency = rnd.choice(["eu", "none"])
        origin = rnd.choice([r for r in placeable if r.eu or residency == "none"])
        out.append(
            {
                "name": f"w{i:03d}",
                "cpu": rnd.choice([2, 4, 8]),
                "memory": rnd.choice([4, 8, 16]),
                "duration": rnd.choice(["1h", "2h", "6h"]),
                "deadline": stamp(now + timedelta(hours=rnd.choice([8, 24, 72, 240]))),
                "originRegion": origin.name,
                "maxLatency": rnd.choice([100, 200, 2000]),
                "dataResidency": residency,
                "tenant": f"t{i % 7}",
            }
        )
    return out


def timed(label: str, fn):
    t = time.perf_counter()
    result = fn()
    print(f"  {label:34} {time.perf_counter() - t:7.1f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", type=int, nargs="+", default=[5, 100])
    parser.add_argument("--parallel", type=int, default=None, help="pulumi up --parallel")
    args = parser.parse_args()
    with SchedulerServer(capacity_vcpu=1e9) as scheduler:
        opa_token = scheduler.issue("opa", None, paths=["cluster"])  # OPA's own principal (the cluster path)
        with OpaServer(scheduler_url=scheduler.url, scheduler_token=opa_token) as opa:
            # each tenant's Placements present that tenant's own token (greenops:schedulerTokens)
            tenants = sorted({w["tenant"] for n in args.workloads for w in workloads(n)})
            tokens = {t: scheduler.issue(f"bench-{t}", [t], paths=["pulumi"]) for t in tenants}
            for n in args.workloads:
                bench(n, args.parallel, scheduler, opa, tokens)


def bench(n: int, parallel: int | None, scheduler: SchedulerServer, opa: OpaServer, tokens: dict[str, str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="greenops-bench-"))
    (tmp / "state").mkdir()
    stack = automation.inline_stack(f"bench{n}", program.run, tmp, {"PULUMI_BACKEND_URL": f"file://{tmp / 'state'}"})
    stack.set_all_config(
        {
            "greenops:workloads": auto.ConfigValue(json.dumps(workloads(n))),
            "greenops:endpoints": auto.ConfigValue(json.dumps({"opaUrl": opa.url, "schedulerUrl": scheduler.url})),
            "greenops:kubernetes": auto.ConfigValue(json.dumps({"mode": "render", "renderDir": str(tmp / "out")})),
            "greenops:render": auto.ConfigValue(
                json.dumps({"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": SUBSCRIPTION})
            ),
            "greenops:schedulerTokens": auto.ConfigValue(json.dumps(tokens), secret=True),
            "greenops:opaToken": auto.ConfigValue(opa.query_token, secret=True),
        }
    )
    print(f"{n} workloads:")
    timed("preview (nothing deployed yet)", stack.preview)
    done_at: dict[str, float] = {}
    t0 = time.perf_counter()

    def on_event(event):
        out = event.res_outputs_event
        if out is not None:
            done_at[out.metadata.type] = time.perf_counter() - t0

    up = timed("up (place every workload)", lambda: stack.up(on_event=on_event, parallel=parallel))
    for typ, t in sorted(done_at.items(), key=lambda kv: kv[1]):
        print(f"    last {typ:48} done at {t:6.1f} s")
    timed("preview (unchanged)", stack.preview)
    second = timed("up (unchanged)", stack.up)
    print(f"  resources: {up.summary.resource_changes}; second up: {second.summary.resource_changes}")
    stack.destroy()
    stack.workspace.remove_stack(f"bench{n}")


if __name__ == "__main__":
    main()
