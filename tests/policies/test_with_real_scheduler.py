"""OPA's admission path against the real scheduler service: placed, then failing closed, then back."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.catalog import select_size
from greenops.common.clock import stamp
from greenops.local.controlplane import free_port
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import namespace_manifest, put_namespaces
from tests.support.admission import admission_review
from tests.support.principals import declare_opa

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def tenant_opa(**kw):
    """The webhook's OPA with the reviews' namespace replicated as kube-mgmt would: ml, labelled
    tenant ml. Reviews are sent with the API server's token (opa.webhook_headers)."""
    with OpaServer(serves="webhook", **kw) as opa:
        put_namespaces(opa.url, {"ml": namespace_manifest("ml", "ml")}, token=opa.admin_token)
        yield opa


def send(opa: OpaServer, body: dict) -> dict:
    """The webhook's answer to ``body``, sent as the API server sends it (with its token)."""
    return httpx.post(f"{opa.url}/", headers=opa.webhook_headers, json=body, timeout=20).json()["response"]


def review(deadline: str) -> dict:
    spec = {
        "vmName": "train",
        "cpu": 4,
        "memory": 8,
        "duration": "2h",
        "deadline": deadline,
        "maxLatency": 100,
        "originRegion": "westeurope",
        "dataResidency": "eu",
        "tenant": "ml",
    }
    obj = {"metadata": {"name": "train", "namespace": "ml"}, "spec": spec}
    return admission_review("5d0e1f2a-3b4c-4d5e-9f60-718293a4b5c1", "CREATE", object=obj)


def test_place_fail_closed_and_recover(opa_binary, catalog, tmp_path):
    port = free_port()
    deadline = stamp(datetime.now(UTC) + timedelta(days=2))
    # OPA's principal is declared (by its token's digest), so each scheduler started here knows it
    declared = declare_opa(tmp_path)
    with tenant_opa(scheduler_url=f"http://127.0.0.1:{port}", scheduler_token=declared.tokens["opa"]) as opa:
        with SchedulerServer(port=port, principals=declared.path):
            answer = send(opa, review(deadline))
            assert answer["allowed"], answer
            patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
            region = catalog.region(patch["/spec/provider"], patch["/spec/schedulingLocation"])
            assert region.eu
            start = datetime.fromisoformat(patch["/spec/schedulingTime"].replace("Z", "+00:00"))
            assert start + timedelta(hours=2) <= datetime.fromisoformat(deadline.replace("Z", "+00:00"))
        down = send(opa, review(deadline))
        assert down["allowed"] is False and "failing closed" in down["status"]["message"]
        assert "unreachable" in down["status"]["message"]
        with SchedulerServer(port=port, principals=declared.path):
            assert send(opa, review(deadline))["allowed"]


# --- re-applying a placed VmTemplate ------------------------------------------------------------
DECISION = ("provider", "schedulingLocation", "schedulingTime", "vmSize")
ANNOTATION = "greenops.io/decision"


DELETE_UID = "5d0e1f2a-3b4c-4d5e-9f60-718293a4b5c2"  # the hand-made reviews' uid


def admission(op: str, obj: dict, old: dict | None = None) -> dict:
    name = obj["metadata"]["name"]
    return admission_review(DELETE_UID, op, namespace="ml", name=name, object=obj, oldObject=old)


def apply_patch(obj: dict, answer: dict) -> dict:
    """The object as the API server stores it: the answer's JSONPatch applied."""
    ops = json.loads(base64.b64decode(answer["patch"]))
    try:
        import jsonpatch
    except ImportError:  # not a dependency: OPA only answers with "add", applied here
        out = copy.deepcopy(obj)
        for op in ops:
            assert op["op"] == "add", op
            *parents, key = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
            target = out
            for p in parents:
                target = target[p]
            target[key] = op["value"]
        return out
    return jsonpatch.apply_patch(obj, ops)


def with_spec(obj: dict, **fields) -> dict:
    out = copy.deepcopy(obj)
    out["spec"].update(fields)
    return out


def recorded(obj: dict) -> dict:
    return json.loads(obj["metadata"]["annotations"][ANNOTATION])


def test_reapplied_placed_vmtemplate_is_placed_again_not_denied(opa_binary, catalog, tmp_path):
    """`kubectl apply` of a placed VmTemplate sends OPA's own fields and annotation back with the
    user's change: they are OPA's decision, not the user's provider/region requests."""
    port = free_port()
    deadline = stamp(datetime.now(UTC) + timedelta(days=2))
    created = review(deadline)["request"]["object"]
    declared = declare_opa(tmp_path)
    with tenant_opa(scheduler_url=f"http://127.0.0.1:{port}", scheduler_token=declared.tokens["opa"]) as opa:

        def admit(body):
            return send(opa, body)

        with SchedulerServer(port=port, principals=declared.path):
            answer = admit(admission("CREATE", created))
            assert answer["allowed"], answer
            placed = apply_patch(created, answer)
            assert recorded(placed) == {k: placed["spec"][k] for k in DECISION}

            more_cpu = with_spec(placed, cpu=8)
            answer = admit(admission("UPDATE", more_cpu, placed))
            assert answer["allowed"], answer
            replaced = apply_patch(more_cpu, answer)
            spec = replaced["spec"]
            assert spec["vmSize"] == select_size(catalog, spec["provider"], spec["schedulingLocation"], 8, 8).name
            assert catalog.region(spec["provider"], spec["schedulingLocation"]).eu
            assert recorded(replaced) == {k: spec[k] for k in DECISION}

            # Ruling the current provider out was denied as "requested provider ... is not allowed".
            others = [p for p in ("azure", "gcp", "aws") if p != spec["provider"]]
            moved = with_spec(replaced, eligibleProviders=others)
            answer = admit(admission("UPDATE", moved, replaced))
            assert answer["allowed"], answer
            assert apply_patch(moved, answer)["spec"]["provider"] in others

        # Scheduler stopped: an unchanged re-apply is still admitted (the decision is kept, no
        # call), a raised cpu fails closed (it asked the scheduler).
        kept = admit(admission("UPDATE", replaced, replaced))
        assert kept["allowed"], kept
        assert apply_patch(replaced, kept) == replaced
        changed = admit(admission("UPDATE", with_spec(replaced, cpu=16), replaced))
        assert changed["allowed"] is False and "failing closed" in changed["status"]["message"]


def test_opa_presents_the_schedulers_token_and_fails_closed_without_it(opa_binary):
    deadline = stamp(datetime.now(UTC) + timedelta(days=2))
    with SchedulerServer() as scheduler:
        opa_token = scheduler.issue("opa", None, paths=["cluster"])
        with tenant_opa(scheduler_url=scheduler.url, scheduler_token=opa_token) as opa:
            assert send(opa, review(deadline))["allowed"]
        booked = httpx.get(f"{scheduler.url}/reservations", headers=scheduler.admin_headers).json()["reservations"]
        assert [(r["tenant"], r["path"]) for r in booked] == [("ml", "cluster")]  # the namespace's tenant
        with tenant_opa(scheduler_url=scheduler.url) as opa:
            denied = send(opa, review(deadline))
        # a token of the Pulumi path is not OPA's: the scheduler refuses the cluster booking by name
        pulumi_only = scheduler.issue("ml-stack", ["ml"], paths=["pulumi"])
        with tenant_opa(scheduler_url=scheduler.url, scheduler_token=pulumi_only) as opa:
            wrong_path = send(opa, review(deadline))
    assert denied["allowed"] is False
    assert "failing closed" in denied["status"]["message"] and "answered HTTP 401" in denied["status"]["message"]
    assert "bearer token is required" in denied["status"]["message"]
    assert wrong_path["allowed"] is False and "answered HTTP 403" in wrong_path["status"]["message"]
    assert "may not book on path cluster" in wrong_path["status"]["message"]


# --- DELETE reviews release nothing: the controller releases on the deletion it observes -------
def test_a_delete_review_releases_nothing_not_even_the_namespaces_own(opa_binary, tmp_path):
    """The real scheduler holds Pulumi-path bookings (one of a stack named like the namespace, one
    with a two-segment key), a VmTemplate's of namespace team-b and namespace ml's own. DELETE
    reviews for namespace ml that name each of them in oldObject's annotation are allowed and
    release none: a review (forged or not) is no proof that the object is gone."""
    from greenops.placing.scheduler_client import Reservation, SchedulerClient

    port = free_port()
    deadline = datetime.now(UTC) + timedelta(days=2)
    declared = declare_opa(tmp_path)
    with (
        tenant_opa(scheduler_url=f"http://127.0.0.1:{port}", scheduler_token=declared.tokens["opa"]) as opa,
        SchedulerServer(port=port, principals=declared.path) as server,
    ):
        put_namespaces(opa.url, {ns: namespace_manifest(ns, ns) for ns in ("ml", "team-b")}, token=opa.admin_token)
        ml = server.issue("ml-ci", ["ml"], paths=["pulumi"])

        def admit(body):
            return send(opa, body)

        def active() -> set[str]:
            listed = httpx.get(f"{server.url}/reservations", headers=server.admin_headers, timeout=10)
            return {r["key"] for r in listed.json()["reservations"]}

        def delete(key: str) -> dict:
            stored = {"metadata": {"name": "train", "namespace": "ml", "annotations": {RESERVATION: key}}}
            forged = admission("DELETE", stored, stored)
            forged["request"]["object"] = None
            return admit(forged)

        with SchedulerClient(server.url, token=ml) as s:
            for key in ("ml/etl/3f2a9c1e7b4d", "stack/workload"):
                s.schedule(["FR"], deadline, 2, 2, 4, reservation=Reservation(key=key, tenant="ml", path="pulumi"))
        theirs = review(stamp(deadline))
        theirs["request"].update(namespace="team-b", uid="7c6b5a49-3827-4165-8f4e-3d2c1b0a9f8e")
        theirs["request"]["object"]["metadata"]["namespace"] = "team-b"
        theirs["request"]["object"]["spec"]["tenant"] = "team-b"
        assert admit(theirs)["allowed"]
        assert admit(review(stamp(deadline)))["allowed"]
        team_b = "team-b/train/7c6b5a49-3827-4165-8f4e-3d2c1b0a9f8e"
        own = f"ml/train/{review(stamp(deadline))['request']['uid']}"
        before = active()
        assert {"ml/etl/3f2a9c1e7b4d", "stack/workload", team_b, own} <= before
        for key in ("ml/etl/3f2a9c1e7b4d", "stack/workload", team_b, own):
            assert delete(key) == {"uid": DELETE_UID, "allowed": True}
        assert active() == before  # nothing was released


RESERVATION = "greenops.io/reservation"
