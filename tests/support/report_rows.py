"""Completed runs on the public 2023 traces, as the stack records them (``row``), and a mean
over a trace read independently with pandas, to check the report's figures against."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from greenops.models import Decision, Workload
from greenops.placing.lifecycle import Lifecycle, Phase
from greenops.stack.program import placement_row

# A March evening in Frankfurt: decided at 17:00 for the night, 3 h before the next noon.
DECIDED = datetime(2023, 3, 14, 17, tzinfo=UTC)
DEADLINE = datetime(2023, 3, 15, 12, tzinfo=UTC)
START = datetime(2023, 3, 15, 2, tzinfo=UTC)  # the decided (expected) start
RAN_FROM = datetime(2023, 3, 15, 2, 20, tzinfo=UTC)  # the operator reported the VM ready 20 min late
RETIRED = datetime(2023, 3, 15, 5, 24, tzinfo=UTC)  # the retiring pass came by 4 min after the end
HOURS = 3
TRACE_FILES = {"DE": "DE-LU_2023_hourly.csv", "GB": "GB_2023_hourly.csv"}


def mean_over(series: pd.Series, start: datetime, end: datetime) -> float:
    return float(series[(series.index >= start) & (series.index < end)].mean())


def row(
    name: str,
    phase: Phase,
    zone: str = "DE",
    region: str = "europe-west3",
    start: datetime = START,
    since: datetime | None = RAN_FROM,
    done: datetime | None = RETIRED,
    decided: datetime = DECIDED,
    deadline: datetime = DEADLINE,
) -> dict:
    """The stack's record of one placed workload (``placement_row``), through its lifecycle."""
    workload = Workload.model_validate(
        {"name": name, "cpu": 4, "memory": 16, "duration": HOURS, "deadline": deadline, "originRegion": region},
        context={"now": decided},
    )
    decision = Decision(
        provider="gcp",
        region=region,
        zone=zone,
        scheduling_time=start,
        vm_size="e2-standard-4",
        image="projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts",
        expected_intensity=250.0,
        baseline_intensity=400.0,
        decided_at=decided,
    )
    lc = Lifecycle.placed(decided, "placed")
    if phase is Phase.FAILED:
        lc = lc.to(Phase.FAILED, start + timedelta(hours=1), "missed its window", failed_at=start + timedelta(hours=1))
    elif phase is not Phase.SCHEDULED:
        assert since is not None
        lc = lc.to(Phase.PROVISIONING, since, "gate opened", gate_opened_at=since).to(
            Phase.RUNNING, since, "running", running_since=since
        )
        if phase is Phase.COMPLETED:
            assert done is not None
            lc = lc.to(Phase.COMPLETED, done, "completed", completed_at=done)
    return placement_row(workload, decision.document(), lc.document())
