"""What a direct-mode pass declares, decided before anything is declared.

In operator mode a workload's Kubernetes objects come out of its Placement's outputs, which a
preview does not know. A direct workload's cloud resources are declared from the placement's
*record* instead, read before the pass (the stack's own ``placementRecords`` output, or the state
itself when the Automation API hands it in), so ``pulumi preview`` shows the VM an ``up`` creates.

The pass's verdict is ``advance`` of the recorded lifecycle at the pass's instant, the same function
the Placement runs. The Placement is handed the verdict and the record it came from, runs the same
step at the same instant, and refuses the pass if its own record differs: a VM is never created or
deleted on the strength of a record older than the placement's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from greenops.clock import parse_time, stamp
from greenops.models import Decision, Workload, spec_digest
from greenops.placement.lifecycle import Lifecycle, Window, advance

# The stack output the program reads back on its next pass (a reference to its own stack).
RECORDS_OUTPUT = "placementRecords"
# The Pulumi type of every Placement (a dynamic resource) in a stack's state.
PLACEMENT_TYPE = "pulumi-python:dynamic:Resource"


class Record(BaseModel):
    """One placement as its Placement last recorded it: for which spec, the decision, the lifecycle."""

    model_config = ConfigDict(frozen=True)

    spec: str  # the workload spec's digest: a record of another spec is no record of this one
    decision: dict[str, Any]
    lifecycle: dict[str, Any]


def record_of(outputs: Mapping[str, Any]) -> Record | None:
    """The record in a Placement's outputs; None before it has placed anything."""
    workload, decision, lifecycle = outputs.get("workload"), outputs.get("decision"), outputs.get("lifecycle")
    if not (isinstance(workload, dict) and decision and lifecycle):
        return None
    # The state holds every number as a float (cpu 2.0): the spec is compared as the model writes it.
    spec = Workload.model_validate(workload, context={"check_deadline": False}).spec()
    return Record(spec=spec_digest(spec), decision=decision, lifecycle=lifecycle)


def records_in_state(deployment: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every Placement's record in an exported state (``pulumi stack export``), by workload name:
    what each placement recorded last, even when the update that recorded it failed later on (the
    stack's outputs keep the last successful update's)."""
    out: dict[str, dict[str, Any]] = {}
    for resource in deployment.get("resources") or []:
        if resource.get("type") != PLACEMENT_TYPE or resource.get("delete"):
            continue  # (a resource pending deletion is an old copy being replaced)
        outputs = resource.get("outputs") or {}
        record = record_of(outputs)
        if record is not None:
            out[str(outputs["workload"].get("name"))] = record.model_dump()
    return out


@dataclass(frozen=True)
class Verdict:
    """This pass's answer for one direct workload: is its VM declared, at which instant, and from
    which recorded lifecycle (``basis``; None when there is no record of this spec)."""

    at: datetime
    basis: dict[str, Any] | None
    declared: bool
    decision: Decision | None

    def props(self) -> dict[str, Any]:
        """What the Placement is handed, to take the same step and check the basis."""
        return {"at": stamp(self.at), "basis": self.basis, "declared": self.declared}


def verdict(workload: Workload, recorded: Mapping[str, Any] | None, lead: timedelta, now: datetime) -> Verdict:
    """The VM is declared when the recorded lifecycle, advanced to ``now``, is Provisioning or
    Running and keeps its decision (a missed window placed again is declared on the next pass, once
    the new decision is recorded)."""
    record = Record.model_validate(recorded) if recorded else None
    if record is None or record.spec != spec_digest(workload.spec()):
        return Verdict(now, None, False, None)
    decision = Decision.from_document(record.decision)
    step = advance(Lifecycle.from_document(record.lifecycle), Window.of(workload, decision, lead), now)
    declared = step.replace is None and step.lifecycle.phase.materialised
    return Verdict(now, record.lifecycle, declared, decision)


def pass_instant(direct: Mapping[str, Any]) -> datetime:
    """The instant a verdict was reached at (``Verdict.props``)."""
    return parse_time(str(direct["at"]))
