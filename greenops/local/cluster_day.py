"""The demo's cluster path over a simulated day: the controller (a real process, its clock a file the
demo plays forward) follows each admitted VmTemplate, and the demo prints what the record says at
each next change: the gate, the start and the retirement.

No Krateo and no cloud operator run on this machine, so no VM object appears: the controller asks
for the render at the gate (``spec.render``, a new generation) as it would in a cluster, and with
readiness ``applied`` a run counts from its gate, as the Pulumi path's does here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from greenops.charts import PROVISIONING_LEAD_SECONDS
from greenops.common.clock import parse_time, set_clock_file, stamp
from greenops.common.httpclient import RetryingClient
from greenops.insight.record_rows import listed
from greenops.local.controller import ControllerProcess

STEP = timedelta(seconds=1)  # how far past a change the clock is put, as a controller's resync would see it
VERB = {"Provisioning": "gate", "Running": "started", "Completed": "retired", "Failed": "failed"}


@dataclass
class ClusterDay:
    controller: ControllerProcess
    clock: Path
    scheduler: RetryingClient
    say: Callable[[str], None]

    def rows(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The cluster path's rows by tenant and key: two tenants' reservations of one key are two."""
        return {(r["tenant"], r["key"]): r for r in listed(self.scheduler, path="cluster")}

    def next_change(self, rows: dict[tuple[str, str], dict[str, Any]]) -> datetime | None:
        """The next instant the clock alone moves a VmTemplate: its gate, or the end of its run."""
        due = []
        for r in rows.values():
            if r["phase"] == "Scheduled":
                due.append(parse_time(r["start"]) - timedelta(seconds=PROVISIONING_LEAD_SECONDS))
            elif r["phase"] == "Running" and r.get("runningSince"):
                due.append(parse_time(r["runningSince"]) + timedelta(hours=r["hours"]))
        return min(due, default=None)

    def play(self, start: datetime, until: datetime) -> int:
        """Move the controller's clock to each next change up to ``until``, printing what the record
        says changed; the number of steps. A change already due (a VmTemplate placed to start at
        once) is taken one step after the clock; a step that changes nothing ends the play."""
        now, steps, before = start, 0, self.rows()
        while (change := self.next_change(before)) is not None and change <= until:
            now = max(change, now) + STEP
            set_clock_file(self.clock, now)
            self.controller.wait_passes(2)
            after = self.rows()
            self.say(f"   [{stamp(now)}]")
            changed = [
                (key, row)
                for key, row in sorted(after.items())
                if (before.get(key, {}).get("phase"), before.get(key, {}).get("reason"))
                != (row["phase"], row["reason"])
            ]
            for (_, key), row in changed:
                self.say(f"      {VERB.get(row['phase'], row['phase'].lower()):8} {key.split('/')[1]}: {row['reason']}")
            if not changed:
                self.say("      nothing changed: the controller is not following (see its log)")
                break
            before, steps = after, steps + 1
        return steps
