"""From a generic workload to a decision: policy, scheduler, mapping back, size and image; and the
recorded lifecycle of each placement."""

from .lifecycle import Lifecycle, Phase, advance
from .planner import PlacementError, place
from .scheduler_client import SchedulerClient, SchedulerUnavailable

__all__ = ["Lifecycle", "Phase", "PlacementError", "SchedulerClient", "SchedulerUnavailable", "advance", "place"]
