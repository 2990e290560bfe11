"""From a generic workload to a decision: policy, scheduler, mapping back, size and image."""
from .lifecycle import Status, status_at
from .planner import PlacementError, place
from .scheduler_client import SchedulerClient, SchedulerUnavailable

__all__ = ["PlacementError", "SchedulerClient", "SchedulerUnavailable", "Status", "place", "status_at"]
