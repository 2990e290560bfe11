"""Bookings nobody will release: the Pulumi-path reservations of a stack that no longer runs.

A Pulumi-path booking is released by its Placement's delete. A stack removed without a destroy
(``pulumi stack rm --force``, a lost state backend, a project deleted) never runs that delete: its
bookings stay Scheduled, hold capacity and quota, and keep the overdue-gate alert firing. Every
Pulumi pass marks its stack seen (``ReservationStore.stack_seen``); a Scheduled booking whose stack
has not been seen, and which has not itself changed, for ``grace`` is an orphan, and the sweep
releases it with a reason that says so.

Only Scheduled bookings are swept: a Provisioning or Running one has a VM that may still exist,
and giving its capacity back would let another booking over-fill the zone while it runs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import UnknownReservation
from .listing import ListingFilter
from .store import ReservationStore
from .tables import stored_utc

DEFAULT_GRACE = timedelta(days=1)


@dataclass(frozen=True)
class Orphan:
    tenant: str
    key: str
    stack: str
    last_seen: datetime  # the later of its stack's last pass and its own last change

    def reason(self, grace: timedelta) -> str:
        return (
            f"orphaned: stack {self.stack} of tenant {self.tenant} has not been seen by a Pulumi pass since "
            f"{self.last_seen.isoformat(timespec='seconds')} (grace {grace}); released by the orphan sweep"
        )


def stack_of(key: str) -> str:
    """A Pulumi-path key is ``<stack>/<workload>/<spec digest>``: the stack is all but the last two."""
    parts = key.rsplit("/", 2)
    return parts[0] if len(parts) == 3 else key


def orphans(
    store: ReservationStore, now: datetime, grace: timedelta = DEFAULT_GRACE, tenants: Collection[str] | None = None
) -> list[Orphan]:
    """The orphans of ``tenants`` (None: every tenant)."""
    seen = store.stacks_seen()
    out = []
    for row in store.list(ListingFilter(path="pulumi", phase="Scheduled"), tenants=tenants):
        stack = stack_of(row["key"])
        changed = stored_utc(row["updated_at"])
        last = max(changed, seen.get((row["tenant"], stack), changed))
        if last < now - grace:
            out.append(Orphan(row["tenant"], row["key"], stack, last))
    return out


class _Changed(Exception):
    """The booking changed between the sweep's read and its release: it is not an orphan."""


def sweep(
    store: ReservationStore, now: datetime, grace: timedelta = DEFAULT_GRACE, tenants: Collection[str] | None = None
) -> list[Orphan]:
    """Release every orphan; what was released. Each release checks, under the row's lock, that the
    booking is still Scheduled and unchanged since the sweep read it; a replica sweeping at the same
    time releases nothing twice."""
    done = []
    for orphan in orphans(store, now, grace, tenants):

        def unchanged(row: dict[str, object], orphan: Orphan = orphan) -> None:
            updated = row["updated_at"]
            assert isinstance(updated, datetime)
            if row["phase"] != "Scheduled" or stored_utc(updated) > orphan.last_seen:
                raise _Changed

        try:
            store.report(orphan.tenant, orphan.key, "Released", orphan.reason(grace), now, authorize=unchanged)
        except (_Changed, UnknownReservation):
            continue
        done.append(orphan)
    return done
