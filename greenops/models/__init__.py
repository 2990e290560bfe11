"""Domain models, validated with pydantic at the edge of the system."""

from .decision import Decision
from .duration import format_duration, parse_duration
from .workload import NO_LATENCY_CONSTRAINT_MS, DataResidency, Provisioning, Workload, spec_digest

__all__ = [
    "Decision",
    "DataResidency",
    "NO_LATENCY_CONSTRAINT_MS",
    "Provisioning",
    "Workload",
    "format_duration",
    "parse_duration",
    "spec_digest",
]
