"""Where a placed workload is in its life: the time gate and retirement."""
from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum


class Status(str, Enum):
    SCHEDULED = "Scheduled"  # decided, start time not reached: nothing provider-specific exists
    RUNNING = "Running"  # start time reached, within its duration: the VM's manifests exist
    COMPLETED = "Completed"  # start + duration passed: the VM is retired

    @property
    def materialised(self) -> bool:
        return self is Status.RUNNING


def status_at(now: datetime, start: datetime, duration: timedelta, lead: timedelta = timedelta(0)) -> Status:
    """``lead`` opens the gate that much before the start, so the VM is up when its slot begins
    (the thesis' provisioningTimeOffset)."""
    if now < start - lead:
        return Status.SCHEDULED
    if now < start + duration:
        return Status.RUNNING
    return Status.COMPLETED
