"""Visibility over the scheduler's record of placements, which covers both paths (Pulumi and
admission): what runs where, what runs in the EU, and who is affected if a region goes.

``affected(region)`` re-evaluates every active placement against policy (OPA's decision for the
workload as recorded) with that region taken away: a workload placed there must move, and one with
no other eligible region loses eligibility altogether.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from greenops.catalog import Catalog, load_catalog
from greenops.common import output
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail
from greenops.models.duration import format_duration
from greenops.policies.client import OpaClient


def active(
    scheduler: RetryingClient,
    *,
    tenant: str | None = None,
    region: str | None = None,
    eu: bool = False,
    catalog: Catalog | None = None,
) -> list[dict[str, Any]]:
    """The active reservations, filtered; ``eu`` keeps those placed in an EU region."""
    params = {k: v for k, v in (("tenant", tenant), ("region", region)) if v}
    r = scheduler.request("GET", "/reservations", params=params)
    if r is None or r.status_code != 200:
        why = detail(r) if r is not None else scheduler.last_error
        raise GreenOpsError(f"the scheduler at {scheduler.url} did not list its reservations ({why})")
    rows: list[dict[str, Any]] = r.json()["reservations"]
    if eu:
        catalog = catalog or load_catalog()
        rows = [x for x in rows if x["provider"] and _is_eu(catalog, x["provider"], x["region"])]
    return rows


def _is_eu(catalog: Catalog, provider: str, region: str) -> bool:
    try:
        return catalog.region(provider, region).eu
    except GreenOpsError:
        return False


@dataclass(frozen=True)
class Impact:
    key: str
    tenant: str
    placed: str  # provider/region
    verdict: str  # "loses eligibility" | "must move" | "one option fewer"
    remaining: list[str]  # provider/region still eligible without the removed region


def affected(rows: list[dict[str, Any]], region: str, opa: OpaClient) -> list[Impact]:
    """Every active placement that ``region`` (a name, or provider/region) matters to."""
    out = []
    for row in rows:
        workload = row.get("workload")
        placed = f"{row['provider']}/{row['region']}" if row.get("provider") else row["zone"]
        if not workload:
            raise GreenOpsError(
                f"reservation {row['key']}: no workload was recorded with it, so it cannot be "
                "re-evaluated (booked by a client that sent none)"
            )
        eligible = [
            f"{p}/{r}"
            for p, regions in sorted(opa.decision(as_written(workload)).get("eligible", {}).items())
            for r in regions
        ]
        gone = [e for e in eligible if _matches(e, region)]
        remaining = [e for e in eligible if e not in gone]
        if _matches(placed, region):
            verdict = "must move" if remaining else "loses eligibility"
        elif gone:
            verdict = "one option fewer"
        else:
            continue
        out.append(Impact(row["key"], row["tenant"], placed, verdict, remaining))
    return out


def as_written(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded workload as a workload document policy reads. The Pulumi path records the
    workload as written (``duration``); the admission policy records its normal form
    (``durationHours``, and ``region``/``provider`` as null when not requested), which is not a
    document: read back as one, every cluster placement was "duration: missing" and lost its
    eligibility. The hours go back as the contract's string form, to the minute (what the record
    holds; the eligible set does not depend on the seconds)."""
    if "duration" in recorded or "durationHours" not in recorded:
        return recorded
    doc = {k: v for k, v in recorded.items() if k != "durationHours" and v is not None}
    hours = recorded["durationHours"]
    doc["duration"] = format_duration(timedelta(hours=hours)) if isinstance(hours, (int, float)) else hours
    return doc


def _matches(provider_region: str, region: str) -> bool:
    return provider_region == region or provider_region.split("/", 1)[-1] == region


COLUMNS = ("key", "tenant", "path", "phase", "provider", "region", "zone", "start", "cpu")
FIELDS = (*COLUMNS, "position", "reason")  # -o json: a Pending one's place in the queue and why it waits
IMPACT_FIELDS = ("verdict", "key", "tenant", "placed", "remaining")


def document(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as ``-o json`` prints them: the table's columns, times in ISO-8601 UTC."""
    return [{c: output.utc(r.get(c)) if c == "start" else r.get(c) for c in FIELDS} for r in rows]


def table(rows: list[dict[str, Any]]) -> str:
    """The rows within 100 columns: keys whole, the start to the minute (``-o json`` has every field
    whole, the start to the second)."""
    shown = [{**r, "start": _minute(r["start"]), "phase": _phase(r)} for r in document(rows)]
    waiting = sum(r["phase"] == "Pending" for r in rows)
    queued = f", {waiting} of them waiting in the queue" if waiting else ""
    return (
        output.table(COLUMNS, [[r[c] for c in COLUMNS] for r in shown]) + f"\n{len(rows)} active placement(s){queued}"
    )


def _phase(row: dict[str, Any]) -> str:
    # a waiting one's place in the queue, 1 for the next admitted (its start is its earliest start)
    return f"Pending #{row['position']}" if row["phase"] == "Pending" and row.get("position") else row["phase"]


def _minute(start: str | None) -> str | None:
    # 2026-11-27T17:00:00Z -> 2026-11-27T17:00Z: the seconds of a planned start say nothing
    return None if start is None else start[:16] + "Z"


def impact_document(impacts: list[Impact]) -> list[dict[str, Any]]:
    return [{f: getattr(i, f) for f in IMPACT_FIELDS} for i in impacts]


def impact_table(impacts: list[Impact], region: str) -> str:
    if not impacts:
        return f"no active placement depends on {region}"
    rows = [
        [
            i.verdict,
            i.key,
            i.tenant,
            i.placed,
            ", ".join(i.remaining[:4]) + (" …" if len(i.remaining) > 4 else "") or "none",
        ]
        for i in impacts
    ]
    columns = ["verdict", "key", "tenant", "placed", "still eligible"]
    return f"without {region}:\n" + output.table(columns, rows, whole=["key"])
