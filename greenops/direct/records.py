"""What a direct-mode pass declares, decided before anything is declared.

In operator mode a workload's Kubernetes objects come out of its Placement's outputs, which a
preview does not know. A direct workload's cloud resources are declared from the placement's
*record* instead, read before the pass (the stack's own ``placementRecords`` output, or the state
itself when the Automation API hands it in), so ``pulumi preview`` shows the VM an ``up`` creates.

The pass's verdict is ``advance`` of the recorded lifecycle at the pass's instant, the same function
the Placement runs, with the VM's existence as the observation (``observation``): a VM created by an
earlier pass (the record's ``machine``) makes the run Running from that pass; one not created by
the last start that meets the deadline makes it Failed; one that was there and is gone from the
state makes it Failed, never silently recreated. The Placement is handed the verdict and the record
it came from, runs the same step at the same instant, and refuses the pass if its own record
differs: a VM is never created or deleted on the strength of a record older than the placement's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from greenops.common.clock import parse_time, stamp
from greenops.models import Decision, Provisioning, Workload, spec_digest
from greenops.placing.lifecycle import Lifecycle, Observation, Window, advance

# The stack output the program reads back on its next pass (a reference to its own stack).
RECORDS_OUTPUT = "placementRecords"
# The Pulumi types of every Placement (a dynamic resource) and of its parent in a stack's state.
PLACEMENT_TYPE = "pulumi-python:dynamic:Resource"
COMPONENT_TYPE = "greenops:index:GreenWorkload"


class Record(BaseModel):
    """One placement as its Placement last recorded it: for which spec, the decision, the lifecycle."""

    model_config = ConfigDict(frozen=True)

    spec: str  # the workload spec's digest: a record of another spec is no record of this one
    decision: dict[str, Any]
    lifecycle: dict[str, Any]
    # The VM as an earlier pass created it: resourceId, privateIp and since (that pass's instant);
    # {"gone": id} when the state no longer has the VM it had; None before one was created.
    machine: dict[str, Any] | None = None


def record_of(
    outputs: Mapping[str, Any], machine: Mapping[str, Any] | None = None, workload_name: str | None = None
) -> Record | None:
    """The record in a Placement's outputs; None before it has placed anything, or when the workload
    it holds no longer validates (a placement of an older catalog is no record of today's spec)."""
    workload, decision, lifecycle = outputs.get("workload"), outputs.get("decision"), outputs.get("lifecycle")
    if not (isinstance(workload, dict) and decision and lifecycle):
        return None
    try:
        # The state holds every number as a float (cpu 2.0): the spec is compared as the model writes it.
        spec = Workload.model_validate(workload, context={"check_deadline": False}).spec()
    except ValidationError:
        return None
    return Record(spec=spec_digest(spec), decision=decision, lifecycle=lifecycle, machine=dict(machine or {}) or None)


def records_in_state(deployment: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every direct Placement's record in an exported state (``pulumi stack export``), by workload
    name: what each placement recorded last, even when the update that recorded it failed later on
    (the stack's outputs keep the last successful update's), with its VM as the state has it."""
    resources = [r for r in deployment.get("resources") or [] if not r.get("delete")]  # (delete: an old copy)
    ids = {r.get("id") for r in resources}
    machines = {r["urn"]: (r.get("outputs") or {}).get("machine") for r in resources if r.get("type") == COMPONENT_TYPE}
    out: dict[str, dict[str, Any]] = {}
    for resource in resources:
        outputs = resource.get("outputs") or {}
        if resource.get("type") != PLACEMENT_TYPE or outputs.get("provisioning") != Provisioning.DIRECT.value:
            continue
        machine = machines.get(resource.get("parent", "")) or {}
        if machine.get("resourceId") and machine["resourceId"] not in ids:
            machine = {"gone": machine["resourceId"]}  # deleted outside the platform, and refreshed
        record = record_of(outputs, machine)
        if record is not None:
            out[str(outputs["workload"].get("name"))] = record.model_dump()
    return out


def observation(machine: Mapping[str, Any] | None) -> Observation:
    """What the record says of the VM, as the lifecycle reads an operator's report."""
    m = machine or {}
    if m.get("gone"):
        return Observation(ready=False, missing=(f"the VM {m['gone']}",))
    if m.get("resourceId"):
        return Observation(ready=True, ready_since=parse_time(str(m["since"])))
    return Observation(ready=False, detail="the VM is being created by the cloud's Pulumi provider")


@dataclass(frozen=True)
class Verdict:
    """This pass's answer for one direct workload: is its VM declared, at which instant, and from
    which recorded lifecycle (``basis``; None when there is no record of this spec)."""

    at: datetime
    basis: dict[str, Any] | None
    declared: bool
    decision: Decision | None
    machine: dict[str, Any] | None = None

    def props(self) -> dict[str, Any]:
        """What the Placement is handed, to take the same step and check the basis."""
        return {"at": stamp(self.at), "basis": self.basis, "declared": self.declared, "machine": self.machine}

    def since(self) -> str:
        """When the VM came to be: the pass that first created it (this one, if none did before)."""
        return str((self.machine or {}).get("since") or stamp(self.at))


def verdict(workload: Workload, recorded: Mapping[str, Any] | None, lead: timedelta, now: datetime) -> Verdict:
    """The VM is declared when the recorded lifecycle, advanced to ``now`` (whole seconds, as the
    Placement reads it back) with the VM as its observation, is Provisioning or Running and keeps
    its decision (a missed window placed again is declared on the next pass, once the new decision
    is recorded)."""
    now = now.replace(microsecond=0)
    record = Record.model_validate(recorded) if recorded else None
    if record is None or record.spec != spec_digest(workload.spec()):
        return Verdict(now, None, False, None)
    decision = Decision.from_document(record.decision)
    window = Window.of(workload, decision, lead)
    step = advance(Lifecycle.from_document(record.lifecycle), window, now, lambda: observation(record.machine))
    declared = step.replace is None and step.lifecycle.phase.materialised
    return Verdict(now, record.lifecycle, declared, decision, record.machine)


def pass_instant(direct: Mapping[str, Any]) -> datetime:
    """The instant a verdict was reached at (``Verdict.props``)."""
    return parse_time(str(direct["at"]))
