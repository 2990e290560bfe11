"""Which workloads a pass has something to do for, from the rows the previous pass recorded.

A full pass registers every workload, so its cost grows with the stack even when one gate opens.
A pass of the due workloads (``greenops reconcile --due``)
registers only these and targets their resources; the engine keeps every other resource as it
is. What makes a workload due:

- it is new (no row yet), or gone from the stack (its row remains: its resources are deleted);
- its declaration changed since the row was written (the row carries the spec's digest);
- the clock reached its next change (the gate, the last start, the end of the run) or does so
  within ``ahead``;
- its VM is Provisioning: the pass reads the operator's verdict, which no clock predicts;
- its objects (operator mode) are not what a full pass would declare: the empty ConfigGroup of a
  run that ended in the last pass is removed in the next.

A Running VM's operator is still read by every full pass (the watch loop's beat), not by a pass of
the due workloads: a failure reported mid-run is recorded within one interval, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from greenops.common.clock import parse_time
from greenops.models import Provisioning, Workload, spec_digest
from greenops.placing.declared import objects_declared

# Each Placement judges the clock when it runs, a little after the pass's instant: a change due
# within this margin is taken in this pass. (Objects declared ahead of a gate, as a full pass
# declares them, make a workload due by themselves: "objects to declare".)
DUE_AHEAD = timedelta(minutes=1)


def declaration_digest(workload: Workload, provisioning: Provisioning) -> str:
    """What a row remembers of the declaration it was written for: any edit changes it, and so does
    a change of how it is provisioned (which changes its resources, not its reservation)."""
    return spec_digest({**workload.spec(), "provisioning": provisioning.value})


@dataclass(frozen=True)
class Due:
    """The workloads one pass must register (``declared``) and the ones whose resources it deletes
    (``removed``), each with why, in the stack's order."""

    declared: dict[str, str]
    removed: dict[str, str]

    @property
    def names(self) -> set[str]:
        return set(self.declared) | set(self.removed)

    def __bool__(self) -> bool:
        return bool(self.declared or self.removed)

    def summary(self) -> str:
        """``due 12 (10 next change reached, 2 new)``: how many, and why, for the pass's log line."""
        reasons = Counter([*self.declared.values(), *self.removed.values()])
        return f"due {len(self.names)} (" + ", ".join(f"{n} {why}" for why, n in reasons.most_common()) + ")"


def why_due(
    row: Mapping[str, Any] | None,
    digest: str,
    provisioning: Provisioning,
    now: datetime,
    ahead: timedelta = DUE_AHEAD,
) -> str | None:
    """Why a declared workload is due in a pass at ``now``, or None when nothing changes for it."""
    if not row or not row.get("phase"):
        return "new"
    if row.get("spec") != digest:
        return "declaration changed"
    if row["phase"] == "Provisioning":
        return "awaiting its operator" if provisioning is Provisioning.OPERATOR else "awaiting its VM"
    change = row.get("nextChangeAt")
    if change and parse_time(str(change)) <= now + ahead:
        return "next change reached"
    # The pass that records a run's end still declares its (then empty) objects; the next removes them.
    if provisioning is Provisioning.OPERATOR and bool(row.get("objects")) != bool(objects_declared(row, now)):
        return "objects to remove" if row.get("objects") else "objects to declare"
    return None


def due_workloads(
    rows: Iterable[Mapping[str, Any]],
    declared: Iterable[tuple[Workload, Provisioning]],
    now: datetime,
    ahead: timedelta = DUE_AHEAD,
) -> Due:
    """The due workloads of a stack whose previous pass exported ``rows`` and which now declares
    ``declared`` (each workload with its provisioning)."""
    by_name = {str(r.get("workload")): r for r in rows}
    due: dict[str, str] = {}
    names: set[str] = set()
    for workload, provisioning in declared:
        names.add(workload.name)
        why = why_due(by_name.get(workload.name), declaration_digest(workload, provisioning), provisioning, now, ahead)
        if why:
            due[workload.name] = why
    removed = {name: "no longer declared" for name in by_name if name not in names}
    return Due(due, removed)
