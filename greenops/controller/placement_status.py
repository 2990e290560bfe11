"""A VmTemplate's placement and phase on an object of its own, as ``kubectl get vmplacements`` shows.

Krateo's core-provider generates the VmTemplate CRD from the chart's values schema: its ``status``
is Krateo's (the composition's conditions), closed to other fields, and its printer columns are
Krateo's. So the controller writes a VmPlacement of the same name, owned by the VmTemplate (the
garbage collector deletes it with its VmTemplate), whose status subresource holds what the record
says: phase (Pending with its place in the queue while it waits), provider, region, zone, booked
start and end, expected intensity, the reason, the times the lifecycle recorded and the digest of
the decision. The API server prints PHASE, POSITION, PROVIDER, REGION, START and EXPECTED from it (the CRD's
printer columns).

Writing is best effort, as Events are: the record is the truth, a refused write is logged and done
again at the next pass. What was last written is remembered, so an unchanged pass writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from greenops.charts.vmplacement import GROUP, KIND, PLURAL, REASON_CHARS, VERSION
from greenops.common.clock import stamp
from greenops.placing.lifecycle import Lifecycle
from greenops.policies.webhook import VMTEMPLATE_GROUP, VMTEMPLATE_VERSION

log = logging.getLogger(__name__)


def status_of(row: dict[str, Any], lifecycle: Lifecycle) -> dict[str, Any]:
    """The VmPlacement's status from a reservation row (``GET /reservations?detail=true``) and the
    lifecycle the pass recorded for it."""
    answer = row.get("answer") or {}
    ended = lifecycle.completed_at or lifecycle.failed_at
    status: dict[str, Any] = {
        "phase": lifecycle.phase.value,
        "provider": row.get("provider"),
        "region": row.get("region"),
        "zone": row.get("zone"),
        "start": row.get("start"),
        "end": row.get("end"),
        "expectedIntensity": answer.get("expected_intensity"),
        "reason": lifecycle.reason[:REASON_CHARS],
        "gateOpenedAt": stamp(lifecycle.gate_opened_at) if lifecycle.gate_opened_at else None,
        "runningSince": stamp(lifecycle.running_since) if lifecycle.running_since else None,
        "endedAt": stamp(ended) if ended else None,
        "reservation": row["key"],
        "decision": _digest(answer) if answer else None,
    }
    return {k: v for k, v in status.items() if v is not None}


def waiting_status_of(row: dict[str, Any]) -> dict[str, Any]:
    """The VmPlacement's status while its reservation waits in the scheduler's queue (Pending): its
    place, why it waits and since when; no placement yet."""
    status = {
        "phase": "Pending",
        "position": row.get("position"),
        "queuedAt": row.get("queued_at"),
        "reason": (row.get("reason") or "waiting in the scheduler's queue")[:REASON_CHARS],
        "reservation": row["key"],
    }
    return {k: v for k, v in status.items() if v is not None}


def _digest(answer: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(answer, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


class PlacementStatus:
    """Writes each VmTemplate's VmPlacement through ``api`` (a kubernetes ApiClient)."""

    def __init__(self, api: Any, on_error: Callable[[], None] = lambda: None):
        self.api = api
        self.on_error = on_error
        self._written: dict[str, dict[str, Any]] = {}  # uid of the VmTemplate -> the status last written

    def show(self, template: dict[str, Any], status: dict[str, Any]) -> None:
        meta = template["metadata"]
        uid = meta.get("uid") or f"{meta['namespace']}/{meta['name']}"
        if self._written.get(uid) == status:
            return
        try:
            self._write(meta, status)
        except Exception as exc:  # the API server's refusal, or no VmPlacement CRD: logged, never fatal
            self.on_error()
            log.warning("VmPlacement %s/%s not written: %s", meta["namespace"], meta["name"], _short(exc))
            return
        self._written[uid] = status

    def forget(self, template: dict[str, Any]) -> None:
        """Its VmTemplate is gone: so is the VmPlacement it owned."""
        meta = template.get("metadata") or {}
        self._written.pop(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}", None)

    def _write(self, meta: dict[str, Any], status: dict[str, Any]) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        api = client.CustomObjectsApi(self.api)
        ns, name = meta["namespace"], meta["name"]
        try:
            api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, _placement(meta))
        except ApiException as exc:
            if exc.status != 409:  # 409: it exists already, from an earlier pass or leader
                raise
            existing = api.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
            owners = [o.get("uid") for o in existing["metadata"].get("ownerReferences") or []]
            if meta["uid"] not in owners:  # a VmTemplate of the same name before this one: not ours to show
                api.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
                api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, _placement(meta))
        # status is a subresource: a create ignores it, and a merge patch of it replaces only its fields
        nulls = {k: None for k in _CLEARED if k not in status}
        api.patch_namespaced_custom_object_status(GROUP, VERSION, ns, PLURAL, name, {"status": {**nulls, **status}})


# what a merge patch must clear when a status no longer has it (the queue's fields once placed)
_CLEARED = ("gateOpenedAt", "runningSince", "endedAt", "position", "queuedAt")


def _placement(meta: dict[str, Any]) -> dict[str, Any]:
    owner = {
        "apiVersion": f"{VMTEMPLATE_GROUP}/{VMTEMPLATE_VERSION}",
        "kind": "VmTemplate",
        "name": meta["name"],
        "uid": meta["uid"],
        # no blockOwnerDeletion: that would need the right to set finalizers on VmTemplates
        "controller": True,
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "greenops-controller"},
            "ownerReferences": [owner],
        },
        "spec": {"vmTemplate": meta["name"]},
    }


def _short(exc: Exception) -> str:
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    return f"{status} {reason}" if status else f"{type(exc).__name__}: {exc}"
