"""What the controller does with what it sees: every handler is idempotent (it compares the record
with the object and changes only what differs), so a replayed event, a relist after a restart or
a second look by a new leader changes nothing that was already right.

- An object stored with a reservation key in its annotation confirms that key's hold.
- An observed DELETED event releases the key (releasing is final and a retry is a no-op).
- A lifecycle pass (``progress``) moves each confirmed reservation along with what the API server
  shows (greenops.controller.progress).
- A sweep compares the record's active cluster-path reservations with the API server's list:
  a confirmed reservation whose object is absent was deleted while nobody watched (OPA down, the
  controller restarting) and is released; a hold past its time whose object never appeared was a
  forged, failed or abandoned CREATE and is released with that reason. A hold still within its
  time is left alone: its CREATE may be in flight.

A key is its tenant's in the record: an object's reservation is its tenant's (the ``spec.tenant``
admission writes, the namespace's) reservation of its key, and every call names that tenant.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from greenops.common.clock import stamp
from greenops.common.errors import one_line

from .metrics import ControllerMetrics
from .progress import PENDING, Progress
from .record import Record, RecordRefused, RecordUnavailable, held_until
from .watch import key_of

RESERVATION_ANNOTATION = "greenops.io/reservation"  # written by admission (policies/rego/admission.rego)
# the phases of a reservation its object holds: a queued one (Pending) included
HELD_PHASES = (PENDING, "Scheduled", "Provisioning", "Running")
log = logging.getLogger(__name__)
passes = logging.getLogger("greenops.controller.passes")


# the scheduler's key schema (greenops/scheduler/contract.py): printable ASCII, no space, 512 at most
_KEY = re.compile(r"^[\x21-\x7e]{1,512}$")


def annotated(obj: dict[str, Any]) -> bool:
    """Whether the object carries a reservation annotation at all (valid or not)."""
    return RESERVATION_ANNOTATION in ((obj.get("metadata") or {}).get("annotations") or {})


def reservation_key(obj: dict[str, Any]) -> str | None:
    """The key admission recorded on the object, when it is a cluster-path key of its namespace
    (``<namespace>/<name>/<uid>``) that the scheduler's key schema admits: a user-edited annotation
    naming someone else's key, or one no key can be (a NUL byte, a space, 10 kB), is ignored."""
    meta = obj.get("metadata") or {}
    key = (meta.get("annotations") or {}).get(RESERVATION_ANNOTATION)
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        return None
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != meta.get("namespace") or not all(parts):
        return None
    return key


def tenant_of(obj: dict[str, Any]) -> str | None:
    """The object's tenant as admission recorded it (``spec.tenant``: the namespace's when the spec
    named none); None when it has none, and the record then takes the one tenant's that holds the key."""
    tenant = (obj.get("spec") or {}).get("tenant")
    return tenant if isinstance(tenant, str) and tenant else None


def owned(rows_of_key: list[dict[str, Any]], obj: dict[str, Any]) -> dict[str, Any] | None:
    """Of the rows of the object's key, its own reservation: its tenant's (with no tenant recorded on
    the object, the only row of that key)."""
    tenant = tenant_of(obj)
    mine = [r for r in rows_of_key if tenant is None or r["tenant"] == tenant]
    return mine[0] if len(mine) == 1 else None


class RecordKeeper:
    def __init__(
        self,
        record: Record,
        clock: Callable[[], datetime],
        acting: Callable[[], bool],
        progress: Progress | None = None,
        metrics: ControllerMetrics | None = None,
    ):
        self.record = record
        self.clock = clock
        self.acting = acting  # False once this replica is no longer the leader: it stops at once
        self._progress = progress
        self.metrics = metrics or ControllerMetrics()

    def _act(self, what: str, key: str, call: Callable[[], Any]) -> Any:
        if not self.acting():
            log.info("not leading: %s %s left to the leader", what, key)
            return None
        result = call()
        log.info("%s %s", what, key, extra={"action": what, "key": key})
        return result

    def listed(self, objects: list[dict[str, Any]]) -> None:
        """A watch's list: each object's hold confirmed on its own, so one tenant's bad object (a
        request the record refuses) is skipped and counted, never in the way of the rest."""
        for obj in objects:
            self._isolated(obj, partial(self.stored, obj))

    def stored(self, obj: dict[str, Any]) -> None:
        """An object is in the API server (listed, added or modified): confirm its hold."""
        key = reservation_key(obj)
        if key is None:
            return
        tenant = tenant_of(obj)
        row = self.record.get(key, tenant=tenant)
        if row is None or row["phase"] not in HELD_PHASES:
            return
        if held_until(row) is not None:
            whose = row["tenant"]
            self._act("confirmed", key, lambda: self.record.patch(key, {"confirm": True}, tenant=whose))

    def deleted(self, obj: dict[str, Any]) -> None:
        key = reservation_key(obj)
        if key is None:
            return
        row = self.record.get(key, tenant=tenant_of(obj))
        if row is None or row["phase"] not in HELD_PHASES:
            return  # released already: a replayed DELETED changes nothing
        self._release(row, f"VmTemplate {key_of(obj)} deleted (observed by the controller)", "deleted")

    def progress(self, templates: list[dict[str, Any]]) -> None:
        """A lifecycle pass over every VmTemplate whose reservation is active. One object's failure
        (its API read refused, a field unreadable) is logged with its key and does not stop the rest."""
        if self._progress is None:
            return
        began = time.monotonic()
        rows = self.record.active(detail=True)
        by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            by_key[r["key"]].append(r)
        changed = 0
        for template in templates:
            key = reservation_key(template)
            row = None if key is None else owned(by_key.get(key, []), template)
            if key is None or row is None:
                continue
            if not self.acting():
                log.info("not leading: lifecycle pass left to the leader")
                return
            try:
                after = self._progress.step(template, row)
            except RecordUnavailable:
                raise  # the scheduler is down: the whole pass waits for the next one
            except Exception as exc:
                self.metrics.failed(exc)
                log.warning("lifecycle %s: %s: %s; the next pass retries", key, type(exc).__name__, one_line(str(exc)))
                continue
            if after is not None:
                changed += 1
                log.info("%s %s: %s", after.phase.value, key, after.reason, extra={"action": "lifecycle", "key": key})
        self.metrics.pass_seconds.observe(time.monotonic() - began)
        passes.info("lifecycle pass: %d VmTemplates, %d reservations, %d changed", len(templates), len(rows), changed)

    def sweep(self, list_objects: Callable[[], tuple[list[dict[str, Any]], str]]) -> None:
        """Compare the record with the API server. The record is read first, then the list, so every
        reservation considered was booked before the list was taken: its object, if stored, is in it."""
        rows = self.record.active()
        objects, version = list_objects()
        now = self.clock()
        # each object's own reservation: its tenant's of its key (any tenant's when it records none)
        live = {(tenant_of(o), k) for o in objects if (k := reservation_key(o)) is not None}
        for obj in objects:
            if reservation_key(obj) is None and annotated(obj):
                self._skip(obj, "malformed_key", "its greenops.io/reservation annotation is no key of its namespace")
                continue
            self._isolated(obj, partial(self.stored, obj))
        for row in rows:
            key = row["key"]
            if (row["tenant"], key) in live or (None, key) in live:
                continue
            until = held_until(row)
            if until is not None and until > now:
                continue  # its CREATE may still be in flight
            if until is not None:
                reason = (
                    f"hold expired at {stamp(until)}: no VmTemplate was stored under it (a forged, denied "
                    "or abandoned CREATE)"
                )
                self._isolated(row, partial(self._release, row, reason, "hold_expired"))
            else:
                reason = (
                    f"VmTemplate {'/'.join(key.split('/')[:2])} is gone: absent from the API server's list "
                    f"at resourceVersion {version} (deleted while nobody watched)"
                )
                self._isolated(row, partial(self._release, row, reason, "gone"))

    def _isolated(self, what: dict[str, Any], step: Callable[[], Any]) -> None:
        """One object's (or row's) step of a pass. Its own failure (the record refused its request,
        a field unreadable) is logged, counted and skipped: one tenant's bad object never stops the
        pass for everyone. The scheduler being unreachable stops the pass: nothing else can go on."""
        try:
            step()
        except RecordUnavailable:
            raise
        except Exception as exc:
            self._skip(what, "refused" if isinstance(exc, RecordRefused) else "error", one_line(str(exc)))

    def _skip(self, what: dict[str, Any], reason: str, why: str) -> None:
        self.metrics.skipped.labels(reason).inc()
        meta = what.get("metadata") or {}
        name = f"VmTemplate {meta.get('namespace')}/{meta.get('name')}" if meta else f"reservation {what.get('key')}"
        log.warning("%s skipped (%s): %s; the pass goes on", name, reason, why[:300])

    def _release(self, row: dict[str, Any], reason: str, cause: str) -> None:
        """Release the reservation ``row``; counted by ``cause`` (deleted, gone, hold_expired) when
        the record had it."""
        key, tenant = row["key"], row["tenant"]
        if self._act("released", key, lambda: self.record.release(key, reason, tenant=tenant)) is not None:
            self.metrics.released(cause)
