"""The placement decision over a corpus of generated requests, against a record of its answers.

The placement policy is tuned for speed (the widest decision's latency budget, see
benchmarks/policy_latency.py), and a rewrite for speed must not change a single answer. This asks
the real OPA, with the real bundle, for the decision and the candidates of some 5000 requests,
valid and not (every origin with and without EU residency under each latency bound, then random
ones with provider and region requests, fewer platform providers, tenants with quotas, chosen
zones and malformed fields), and compares each answer, as OPA serialises it, with the digest
recorded in decision_digests.txt. A deliberate change of policy, data/ or defaults.yaml changes
answers: regenerate the record with ``UPDATE_GOLDEN=1 pytest tests/policies/test_decision_corpus.py``
and review which requests changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from greenops.catalog import load_catalog
from greenops.policies.bundle import stage
from greenops.policies.settings import load_policy_settings
from tests.support.common import require_tool

pytestmark = pytest.mark.tools
RECORD = Path(__file__).resolve().parent / "decision_digests.txt"
PROVIDERS = ["azure", "gcp", "aws"]
LATENCIES = [50, 100, 200, 2000]

# Each request's decision and candidates, serialised by OPA itself (json.marshal: sorted keys, OPA's
# number format), so that equal digests are byte-identical answers. [] for an undefined decision.
# (`with` takes the request's parts bound to variables: a reference into the outer input would be
# read from the replaced one.)
QUERY = """[[d, json.marshal(c)] |
    some r in input.requests
    req := r.input
    cfg := r.config
    d := [json.marshal(x) | x := data.greenops.placement.decision with input as req with data.greenops.config as cfg]
    c := data.greenops.placement.candidates with input as req with data.greenops.config as cfg
]"""


def _pick(rnd: random.Random, p: float, values: list[Any]) -> Any:
    """One of values with probability p, else the field is left out (None)."""
    return rnd.choice(values) if rnd.random() < p else None


def corpus() -> list[dict[str, Any]]:
    """The requests: {"input": the query's input, "config": data.greenops.config for it}."""
    catalog = load_catalog()
    config = load_policy_settings().document()
    regions = sorted(r.name for r in catalog.regions())
    zones = sorted({r.zone for r in catalog.regions() if r.zone})
    zone_of = {r.name: r.zone for r in catalog.regions()}
    requests = []
    # Every origin, with and without EU residency, under each latency bound.
    for origin in regions:
        for residency in ("eu", "none"):
            for ms in LATENCIES:
                w = {
                    "name": f"grid-{len(requests)}",
                    "cpu": 2,
                    "memory": 4,
                    "duration": "2h",
                    "deadline": "2030-01-01T00:00:00Z",
                    "originRegion": origin,
                    "maxLatency": ms,
                    "dataResidency": residency,
                }
                requests.append({"input": {"workload": w}, "config": config})
    rnd = random.Random(20240611)
    for i in range(4000):
        w: dict[str, Any] = {
            "cpu": rnd.choice([1, 2, 2, 4, 4, 8, 16, 32, 64, 128]),
            "memory": rnd.choice([0.5, 1, 2, 4, 4, 8, 8, 16, 32, 64, 128, 256, 512, 1024]),
            "duration": rnd.choice(["1h", "90m", "6h", "1h30m", 3]),
            "deadline": "2030-01-01T00:00:00Z",
            "originRegion": rnd.choice(regions),
        }
        name = rnd.random()
        if name < 0.9:
            w["name"] = f"w-{i}"
        elif name < 0.97:
            w["vmName"] = f"vm-{i}"  # else no name at all: no decision
        optional = {
            "maxLatency": _pick(rnd, 0.8, [*LATENCIES, *LATENCIES, 1, 20, 30, 75, 150, 300, 1999, 5000]),
            "dataResidency": _pick(rnd, 0.8, ["eu", "none"]),
            "eligibleProviders": _pick(
                rnd, 0.4, [["azure"], ["gcp"], ["aws"], ["azure", "gcp"], ["gcp", "aws"], ["aws", "azure"], PROVIDERS]
            ),
            "tenant": _pick(rnd, 0.6, ["research", "media", "bench", "default"]),
            "provider": _pick(rnd, 0.15, PROVIDERS),
            "region": _pick(rnd, 0.15, regions),
        }
        w.update({k: v for k, v in optional.items() if v is not None})
        if "region" in w and rnd.random() < 0.3:
            w["schedulingLocation"] = w.pop("region")
        if rnd.random() < 0.06:  # a malformed field, named in the errors
            field, bad = rnd.choice(
                [
                    ("cpu", 0),
                    ("cpu", 2.5),
                    ("memory", "4"),
                    ("duration", "0h"),
                    ("duration", "800h"),
                    ("duration", "soon"),
                    ("deadline", "tomorrow"),
                    ("maxLatency", 0),
                    ("originRegion", "mars-1"),
                    ("eligibleProviders", ["oracle"]),
                    ("eligibleProviders", ["gcp", "gcp"]),
                    ("eligibleProviders", "gcp"),
                    ("dataResidency", "us"),
                    ("tenant", "no spaces"),
                    ("provider", "oracle"),
                    ("region", "mars-1"),
                ]
            )
            w[field] = bad
        request: dict[str, Any] = {"workload": w}
        zone = rnd.random()
        if zone < 0.3:  # the origin's own zone: most often an eligible one
            request["zone"] = zone_of[w["originRegion"]] if w["originRegion"] in zone_of else "XX"
        elif zone < 0.6:
            request["zone"] = rnd.choice(zones)
        elif zone < 0.65:
            request["zone"] = rnd.choice(["XX", 5, None])
        cfg = config
        if rnd.random() < 0.1:  # the platform allows fewer providers
            cfg = dict(config, default_providers=rnd.choice([["gcp"], ["azure", "aws"], ["aws", "gcp"]]))
        requests.append({"input": request, "config": cfg})
    return requests


def answers(opa: str, bundle: Path, inputs: Path, requests: list[dict[str, Any]]) -> list[str]:
    """Each request's answer as OPA serialises it: [decision or nothing, candidates]. inputs: a
    file outside the bundle (OPA would load one inside it as data)."""
    inputs.write_text(json.dumps({"requests": requests}))
    out = subprocess.run(
        [opa, "eval", "--format", "json", "--bundle", str(bundle), "--input", str(inputs)]
        + ["--optimize-store-for-read-speed", QUERY],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    pairs = json.loads(out.stdout)["result"][0]["expressions"][0]["value"]
    assert len(pairs) == len(requests)
    return [json.dumps(pair) for pair in pairs]


def digest(answer: str) -> str:
    return hashlib.sha256(answer.encode()).hexdigest()[:20]


def test_every_answer_is_the_recorded_one(tmp_path):
    opa = require_tool("opa")
    requests = corpus()
    bundle = stage(tmp_path / "bundle")
    got = answers(opa, bundle, tmp_path / "requests.json", requests)
    digests = [digest(a) for a in got]
    if os.environ.get("UPDATE_GOLDEN"):
        RECORD.write_text("".join(f"{d}\n" for d in digests))
    assert RECORD.exists(), f"{RECORD.name} missing: run UPDATE_GOLDEN=1 pytest {__file__}"
    recorded = RECORD.read_text().split()
    assert len(recorded) == len(requests), "the corpus changed: regenerate the record"
    changed = [i for i, (d, r) in enumerate(zip(digests, recorded, strict=True)) if d != r]
    shown = [f"request {i}: {json.dumps(requests[i]['input'])}\n  answer: {got[i][:2000]}" for i in changed[:3]]
    assert not changed, f"{len(changed)} of {len(requests)} answers changed, e.g.\n" + "\n".join(shown)
    # the corpus exercises what it says it does
    decided = [json.loads(json.loads(a)[0][0]) for a in got if json.loads(a)[0]]
    assert len(requests) - len(decided) > 50  # no name, no decision
    assert sum(d["allowed"] for d in decided) > len(requests) // 2
    assert sum(not d["allowed"] and d["explanation"]["constraintChain"] == [] for d in decided) > 100  # malformed
    assert sum(not d["allowed"] and d["explanation"]["constraintChain"] != [] for d in decided) > 500  # by policy
    assert sum(d["selection"] is not None for d in decided) > 500
    assert any(len(d["zones"]) >= 9 and not d["errors"] for d in decided)
