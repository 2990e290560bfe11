"""A workload as a stack file or a workloads file declares it, and the clock the stack-config tests
parse it at."""

from __future__ import annotations

from datetime import UTC, datetime

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def workload(name: str, **over) -> dict:
    """2 vCPU and 4 GiB for 1 h from West Europe, due in 2027, no tenant; ``over`` adds or changes any field."""
    return {
        "name": name,
        "cpu": 2,
        "memory": 4,
        "duration": "1h",
        "deadline": "2027-01-01T00:00:00Z",
        "originRegion": "westeurope",
        **over,
    }
