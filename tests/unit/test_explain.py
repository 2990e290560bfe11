"""`greenops explain` from a recorded row: the reason it gives follows the windows the scheduler
recorded as weighed."""

from __future__ import annotations

from greenops.insight import explain

CHAIN = [{"constraint": "providers azure", "remaining": 57}, {"constraint": "dataResidency eu", "remaining": 10}]


def row(chosen: str, considered: list[tuple[str, str, float, float]] | None) -> dict:
    return {
        "key": "dev/etl/abc",
        "path": "pulumi",
        "phase": "Scheduled",
        "tenant": "t",
        "created_at": "2026-11-22T17:00:00.123Z",
        "workload": {
            "cpu": 2,
            "memory": 4,
            "duration": "2h",
            "deadline": "2026-11-23T09:00:00Z",
            "originRegion": "westeurope",
        },
        "answer": {
            "scheduling_location": chosen,
            "scheduling_time": "2026-11-23T02:00:00Z",
            "expected_intensity": 40.0,
            "baseline": "run now in NL",
            "baseline_intensity": 300.0,
            "saving_percent": 86.67,
            "source": "profiles",
            "considered": None
            if considered is None
            else [
                {"scheduling_location": z, "scheduling_time": t, "expected_intensity": e, "run_now_intensity": n}
                for z, t, e, n in considered
            ],
        },
        "explanation": {
            "constraintChain": CHAIN,
            "zones": {
                "FR": {
                    "provider": "azure",
                    "region": "francecentral",
                    "zone": "FR",
                    "vmSize": "Standard_F2s_v2",
                    "latencyMs": 12,
                    "hourlyUsd": 0.1,
                    "image": "Canonical:ubuntu",
                },
                "DE": {
                    "provider": "azure",
                    "region": "germanywestcentral",
                    "zone": "DE",
                    "vmSize": "Standard_F2s_v2",
                    "latencyMs": 9,
                    "hourlyUsd": None,
                    "image": "Canonical:ubuntu",
                },
            },
        },
    }


def test_the_cleanest_window_wins_and_the_runner_up_is_named():
    out = explain.text(
        explain.account(
            row("FR", [("FR", "2026-11-23T02:00:00Z", 40.0, 45.0), ("DE", "2026-11-23T03:00:00Z", 350.0, 400.0)])
        )
    )
    assert "providers azure" in out and "dataResidency eu" in out and "-> 2 zones: DE, FR" in out
    assert "why: FR had the lowest mean intensity over the run (40 g/kWh), ahead of DE (350)" in out
    assert (
        "FR -> azure/francecentral" in out and "size Standard_F2s_v2, $0.1/h" in out and "image Canonical:ubuntu" in out
    )
    chosen = [line for line in out.splitlines() if line.endswith("<- chosen")]
    assert len(chosen) == 1 and chosen[0].split()[:2] == ["FR", "2026-11-23T02:00:00Z"]


def test_alternatives_not_recorded_are_said_so():
    assert "not recorded" in explain.account(row("FR", None))["why"]


def test_a_reported_lifecycle_is_shown_with_its_last_events():
    events = [{"at": f"2026-11-23T0{h}:00:00Z", "phase": "Provisioning", "reason": f"waiting {h}"} for h in range(7)]
    lifecycle = {
        "phase": "Failed",
        "reason": "not ready by 2026-11-23T07:00:00Z",
        "gateOpenedAt": "2026-11-23T00:00:00Z",
        "runningSince": None,
        "completedAt": None,
        "failedAt": "2026-11-23T07:01:00Z",
        "replacements": 1,
        "events": events,
    }
    out = explain.text(explain.account({**row("FR", None), "lifecycle": lifecycle}))
    section = out[out.index("lifecycle: ") :].splitlines()
    assert section[0] == "lifecycle: Failed (not ready by 2026-11-23T07:00:00Z)"
    assert section[1] == "  gate opened 2026-11-23T00:00:00Z, failed 2026-11-23T07:01:00Z, placed again 1 time(s)"
    assert section[2] == f"  last events ({explain.LAST_EVENTS} of 7):"
    assert section[3].split() == ["at", "phase", "reason"]  # the events as a table, under its header
    assert [line.split()[-1] for line in section[4:]] == ["2", "3", "4", "5", "6"]
    assert "lifecycle:" not in explain.text(explain.account(row("FR", None)))  # none reported, none shown
