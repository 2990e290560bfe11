"""Whether a pass declares a workload's VM objects (operator mode): its ConfigGroup exists only
while the workload can have objects, so a waiting or finished workload costs the engine two
resources (its component and its Placement) rather than three and a Construct call.

The program decides from the row its previous pass exported (phase and next change), before
anything is declared, so a preview shows what the update does; the Placement is told, and never
materialises objects the program did not declare (greenops/provider/placement.py: the gate is held
for one pass, and a placement whose own record says its objects exist refuses a pass that would
drop them). A workload with no row yet is decided in this pass: its ConfigGroup follows the phase
its Placement records (known once it is created, so a preview does not show it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from greenops.common.clock import parse_time

# A Scheduled workload's objects are declared from this long before its gate: the Placement judges
# the gate on its own clock, later in the pass than the program's instant, and a pass over
# thousands of workloads takes minutes.
DECLARED_AHEAD = timedelta(minutes=10)
MATERIALISED = ("Provisioning", "Running")


def objects_declared(
    previous: Mapping[str, Any] | None, now: datetime, ahead: timedelta = DECLARED_AHEAD
) -> bool | None:
    """Whether this pass declares the objects, from the previous pass's row: False for a workload
    that cannot have objects in this pass (Scheduled with its gate more than ``ahead`` away, or
    Completed or Failed: the pass that recorded that deleted them), True otherwise. None without a
    row (a new or renamed workload, a stack without outputs yet): its decision is made in this pass,
    and the objects follow the phase it records."""
    if not previous or not previous.get("phase"):
        return None
    phase = previous["phase"]
    if phase in MATERIALISED:
        return True
    if phase == "Scheduled":
        gate = previous.get("nextChangeAt")
        return gate is None or parse_time(str(gate)) <= now + ahead
    return phase not in ("Completed", "Failed")
