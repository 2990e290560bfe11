#!/usr/bin/env python3
"""Decision and admission latency of the real OPA with the full catalog, over loopback.

    .venv/bin/python benchmarks/policy_latency.py [--decisions 3000] [--reviews 1000]
    .venv/bin/python benchmarks/policy_latency.py --opa-bench-only

Prints p50/p90/p99/max in milliseconds, measured client-side with one keep-alive connection,
after a warm-up. The admission round trip includes OPA's http.send to a local scheduler.
First, `opa bench` of one decision on the built bundle, with the store kept as the servers keep it
(--optimize-store-for-read-speed): an EU workload without a latency bound, eligible in every EU
zone of the three clouds (the policy's widest decision; the goal is at most 1 ms per evaluation).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from latency import percentiles

from greenops.catalog import load_catalog
from greenops.common.toolpaths import tool_path
from greenops.local.opa import OpaServer
from greenops.local.scheduler_standin import SchedulerStandIn  # answers at once: only OPA is measured
from greenops.policies.bundle import build, default_revision


def workloads(n: int, seed: int = 7):
    cat = load_catalog()
    origins = [r.name for r in cat.regions() if r.zone]
    rnd = random.Random(seed)
    for i in range(n):
        yield {
            "name": f"bench-{i}",
            "cpu": rnd.choice([1, 2, 4, 8, 16]),
            "memory": rnd.choice([2, 4, 8, 16, 32, 64]),
            "duration": rnd.choice(["1h", "90m", "6h"]),
            "deadline": "2030-01-01T00:00:00Z",
            "originRegion": rnd.choice(origins),
            "maxLatency": rnd.choice([50, 100, 200, 2000]),
            "dataResidency": rnd.choice(["eu", "none"]),
            "tenant": "bench",
        }


def widest_eu_workload() -> dict:
    return {
        "name": "bench-eu",
        "cpu": 2,
        "memory": 4,
        "duration": "2h",
        "deadline": "2030-01-01T00:00:00Z",
        "originRegion": "westeurope",
        "maxLatency": 2000,
        "dataResidency": "eu",
        "tenant": "bench",
    }


def opa_bench() -> None:
    """`opa bench` of the decision for the widest EU workload, on the bundle as the servers load it."""
    with tempfile.TemporaryDirectory(prefix="greenops-opa-bench-") as tmp:
        bundle = build(Path(tmp) / "bundle.tar.gz", default_revision())
        (Path(tmp) / "input.json").write_text(json.dumps({"workload": widest_eu_workload()}))
        query = "data.greenops.placement.decision"
        common = ["--bundle", str(bundle), "--input", str(Path(tmp) / "input.json")]
        decision = subprocess.run(
            [tool_path("opa"), "eval", *common, "--format", "json", query], capture_output=True, text=True, check=True
        )
        answer = json.loads(decision.stdout)["result"][0]["expressions"][0]["value"]
        if not answer["allowed"]:
            raise SystemExit(f"the benchmark's workload is refused: {answer['errors']}")
        bench = subprocess.run(
            [tool_path("opa"), "bench", *common, "--optimize-store-for-read-speed", "--format", "json", query],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(bench.stdout)  # Go's testing.BenchmarkResult: N runs in T ns
        per_op, extra = result["T"] / result["N"], result["Extra"]
        print(
            f"decision  opa bench, one EU workload eligible in {len(answer['zones'])} zones "
            f"({sum(len(r) for r in answer['eligible'].values())} regions): {per_op / 1e6:.2f} ms per evaluation "
            f"(query eval median {extra['histogram_timer_rego_query_eval_ns_median'] / 1e6:.2f} ms, "
            f"{result['MemAllocs'] / result['N']:.0f} allocations, {result['MemBytes'] / result['N'] / 1024:.0f} KiB "
            f"each; {result['N']} runs)"
        )


def timed(client: httpx.Client, path: str, body: dict) -> float:
    t = time.perf_counter()
    r = client.post(path, json=body)
    elapsed = (time.perf_counter() - t) * 1000
    r.raise_for_status()
    return elapsed


def server_side(client: httpx.Client, path: str, body: dict) -> float:
    """OPA's own handler time for the request (its metrics), without the client's overhead."""
    r = client.post(f"{path}?metrics=true", json=body)
    r.raise_for_status()
    return r.json()["metrics"]["timer_server_handler_ns"] / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--reviews", type=int, default=1000)
    parser.add_argument("--opa-bench-only", action="store_true", help="only the `opa bench` figure")
    args = parser.parse_args()
    opa_bench()
    if args.opa_bench_only:
        return
    scheduler = SchedulerStandIn()
    try:
        # decisions with Placement's query token, as OPA always asks for one
        with (
            OpaServer(scheduler_url=scheduler.url) as opa,
            httpx.Client(base_url=opa.url, timeout=10, headers=opa.query_headers) as client,
        ):
            for w in workloads(200, seed=1):
                timed(client, "/v1/data/greenops/placement/decision", {"input": {"workload": w}})
            decision = [
                timed(client, "/v1/data/greenops/placement/decision", {"input": {"workload": w}})
                for w in workloads(args.decisions)
            ]
            print(
                "decision  round trip (POST /v1/data/greenops/placement/decision, full catalog): "
                f"{percentiles(decision)}"
            )
            handler = [
                server_side(client, "/v1/data/greenops/placement/decision", {"input": {"workload": w}})
                for w in workloads(args.decisions, seed=11)
            ]
            print(f"decision  OPA handler time (same query, from OPA's metrics): {percentiles(handler)}")
            # as kube-mgmt would have replicated it: admission refuses a namespace OPA has no copy of
            bench_ns = {"bench": {"metadata": {"name": "bench", "labels": {"greenops.io/tenant": "bench"}}}}
            client.put("/v1/data/kubernetes/namespaces", json=bench_ns, headers=opa.admin_headers).raise_for_status()
            reviews = []
            for i, w in enumerate(workloads(args.reviews, seed=3)):
                spec = dict(w, vmName=w.pop("name"))
                body = {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {
                        "uid": str(i),
                        "kind": {"group": "composition.krateo.io", "version": "v1", "kind": "VmTemplate"},
                        "operation": "CREATE",
                        "object": {"metadata": {"name": f"vm-{i}", "namespace": "bench"}, "spec": spec},
                    },
                }
                reviews.append(timed(client, "/", body))
            print(
                "admission round trip (POST /, system.main, incl. http.send to a local scheduler): "
                f"{percentiles(reviews)}"
            )
            calls = len(scheduler.requests)
            print(f"scheduler calls made by OPA: {calls} (one per review that policy allows)")
            if not calls:
                raise SystemExit("no review reached the scheduler: the admission figure measured refusals only")
    finally:
        scheduler.close()


if __name__ == "__main__":
    main()
