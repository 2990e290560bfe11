"""Why a workload runs where and when it does, from what was recorded when it was decided: policy's
constraint chain and zone mapping (kept with the booking), and the windows the scheduler weighed
(kept in its answer). Nothing is recomputed against today's data. A reservation whose owner reports
its lifecycle (the cluster path's controller) also shows what has happened since: its phase, the
times the gate opened, the run started and ended, and the last events.

Both paths book in the same record: a Pulumi workload under ``<stack>/<workload>/<spec digest>``,
a VmTemplate under ``<namespace>/<name>/<uid>``.
"""

from __future__ import annotations

from typing import Any

from greenops.common import output
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail

LAST_EVENTS = 5  # of a recorded lifecycle's, the newest shown


def find(scheduler: RetryingClient, workload: str, stack: str) -> dict[str, Any]:
    """The newest reservation of ``workload``: a VmTemplate's ``namespace/name``, else a name
    declared in ``stack``."""
    prefix = f"{workload}/" if "/" in workload else f"{stack}/{workload}/"
    r = scheduler.request("GET", "/reservations", params={"all": "true", "detail": "true", "key_prefix": prefix})
    if r is None or r.status_code != 200:
        why = detail(r) if r is not None else scheduler.last_error
        raise GreenOpsError(f"the scheduler at {scheduler.url} did not list its reservations ({why})")
    rows = [x for x in r.json()["reservations"] if x.get("answer")]
    if not rows:
        raise GreenOpsError(f"workload {workload!r}: no reservation under {prefix}… in the record of {scheduler.url}")
    return max(rows, key=lambda x: x["created_at"])


def recorded_zones(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Policy's zones as recorded with the booking (its explanation), ``{zone: mapping}``. Whatever
    else a client stored there (a list, a string, a zone mapped to a number) reads as none: a
    stored value never takes a view that every tenant shares down."""
    explanation = row.get("explanation")
    zones = explanation.get("zones") if isinstance(explanation, dict) else None
    if not isinstance(zones, dict):
        return {}
    return {str(zone): mapping for zone, mapping in zones.items() if isinstance(mapping, dict)}


def _chain(value: Any) -> list[dict[str, Any]] | None:
    """Policy's constraint chain as recorded: its steps that are objects, or None (not recorded, or
    stored as something else by the client that booked)."""
    return [step for step in value if isinstance(step, dict)] if isinstance(value, list) else None


def eligible_zones(row: dict[str, Any]) -> list[str]:
    """Policy's zones as recorded with the booking (its explanation); empty when none was sent."""
    return sorted(recorded_zones(row))


def account(row: dict[str, Any]) -> dict[str, Any]:
    """The explanation as data (the dashboard shows it, ``text`` prints it)."""
    answer, explanation = row["answer"], row.get("explanation")
    policy = explanation if isinstance(explanation, dict) else {}
    chosen = answer["scheduling_location"]
    considered = answer.get("considered")
    others = [c for c in considered or [] if c["scheduling_location"] != chosen]
    best_other = min(others, key=lambda c: c["expected_intensity"], default=None)
    rule = answer.get("rule") or "point"
    beaten = best_other is not None and best_other["expected_intensity"] < answer["expected_intensity"]
    if considered is None:
        why = "the alternatives were not recorded (booked by a scheduler that did not keep them)"
    elif rule != "point" and beaten and best_other is not None:
        why = (
            f"rule {rule!r} kept the run at the earliest start in {chosen} ({answer['expected_intensity']:g} g/kWh): "
            f"the forecast favoured {best_other['scheduling_location']} ({best_other['expected_intensity']:g}), "
            "but its uncertainty (interval) or its record on the days before (sure) did not justify moving"
        )
    elif best_other is None:
        why = f"{chosen} was the only eligible zone; its cleanest window before the deadline won"
    else:
        why = (
            f"{chosen} had the lowest mean intensity over the run ({answer['expected_intensity']:g} g/kWh), "
            f"ahead of {best_other['scheduling_location']} ({best_other['expected_intensity']:g}); "
            "ties go to the earliest start, then the zone name"
        )
    mapping = recorded_zones(row).get(chosen)
    return {
        "key": row["key"],
        "path": row["path"],
        "phase": row["phase"],
        "tenant": row["tenant"],
        "bookedAt": row.get("created_at"),
        "searchedFrom": row.get("searched_from"),
        "workload": row.get("workload"),
        "constraintChain": _chain(policy.get("constraintChain")),
        "eligibleZones": eligible_zones(row),
        "considered": considered,
        "chosen": {"zone": chosen, "start": answer["scheduling_time"], "expected": answer["expected_intensity"]},
        "baseline": {
            "what": answer.get("baseline"),
            "intensity": answer.get("baseline_intensity"),
            "savingPercent": answer.get("saving_percent"),
        },
        "source": answer.get("source"),
        "why": why,
        "mapping": mapping,
        # what happened since, as its owner reported it (the cluster path's controller)
        "lifecycle": row.get("lifecycle"),
    }


def text(a: dict[str, Any]) -> str:
    w = a.get("workload") or {}
    hours = f"{w['durationHours']:g} h" if "durationHours" in w else w.get("duration")
    lines = [
        f"{a['key']} ({a['path']} path, tenant {a['tenant']}), {a['phase']}; booked {a['bookedAt'][:19]}Z"
        + (f", searched from {a['searchedFrom'][:19]}Z" if a.get("searchedFrom") not in (None, a["bookedAt"]) else ""),
        f"  asked: {w.get('cpu')} vCPU, {w.get('memory')} GB for {hours}, deadline {w.get('deadline')}, "
        f"origin {w.get('originRegion')}",
    ]
    lines.append("eligible set (policy at decision time), each constraint in turn:")
    if a["constraintChain"]:
        chain = [[str(c.get("constraint", "?")), str(c.get("remaining", "?"))] for c in a["constraintChain"]]
        lines.append(_indented(output.table(["constraint", "provider regions left"], chain), 2))
        lines.append(f"  -> {len(a['eligibleZones'])} zones: {', '.join(a['eligibleZones'])}")
    else:
        lines.append("  not recorded (booked by a client that sent no explanation)")
    lines.append(f"windows weighed (each zone's best window with room; source {a['source']}):")
    if a["considered"]:
        windows = [
            [
                c["scheduling_location"],
                c["scheduling_time"],
                f"{c['expected_intensity']:g}",
                f"{c['run_now_intensity']:g}",
                "<- chosen" if c["scheduling_location"] == a["chosen"]["zone"] else "",
            ]
            for c in a["considered"]
        ]
        lines.append(_indented(output.table(["zone", "best start", "expected", "run now", ""], windows), 2))
    lines.append(f"why: {a['why']}")
    b = a["baseline"]
    if b["intensity"] is not None:
        lines.append(f"  against the baseline ({b['what']}: {b['intensity']:g} g/kWh): saving {b['savingPercent']} %")
    m = a["mapping"]
    if m:
        price = f", ${m['hourlyUsd']}/h" if m.get("hourlyUsd") is not None else ""
        latency = f"{m['latencyMs']} ms from the origin" if m.get("latencyMs") is not None else "latency unknown"
        lines.append(
            f"mapping: zone {a['chosen']['zone']} -> {m['provider']}/{m['region']} (the zone's region "
            f"with the lowest latency, then the cheapest fitting size: {latency}), size {m['vmSize']}{price}"
        )
        if m.get("image"):
            lines.append(f"  image {m['image']}")
        elif a["path"] == "cluster":
            lines.append("  image: the VmTemplate composition's image for the provider, set when Krateo renders it")
    if a.get("lifecycle"):
        lines += lifecycle_lines(a["lifecycle"])
    return "\n".join(lines)


def _indented(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def document(a: dict[str, Any]) -> dict[str, Any]:
    """The explanation as ``-o json`` prints it: ``account``'s fields, its own times in ISO-8601 UTC."""
    return {
        **a,
        "bookedAt": output.utc(a["bookedAt"]),
        "searchedFrom": output.utc(a["searchedFrom"]),
        "chosen": {**a["chosen"], "start": output.utc(a["chosen"]["start"])},
    }


def lifecycle_lines(lc: dict[str, Any]) -> list[str]:
    """The recorded life: the phase and its reason, the times that really happened, the last events."""
    lines = [f"lifecycle: {lc.get('phase')}" + (f" ({lc['reason']})" if lc.get("reason") else "")]
    times = [
        f"{label} {lc[key]}"
        for key, label in (
            ("gateOpenedAt", "gate opened"),
            ("runningSince", "running since"),
            ("completedAt", "completed"),
            ("failedAt", "failed"),
        )
        if lc.get(key)
    ]
    if lc.get("replacements"):
        times.append(f"placed again {lc['replacements']} time(s)")
    lines.append("  " + (", ".join(times) if times else "not started"))
    events = (lc.get("events") or [])[-LAST_EVENTS:]
    if events:
        lines.append(f"  last events ({len(events)} of {len(lc.get('events') or [])}):")
        rows = [[e.get("at"), e.get("phase"), e.get("reason")] for e in events]
        lines.append(_indented(output.table(["at", "phase", "reason"], rows), 4))
    return lines
