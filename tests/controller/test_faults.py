"""The controller under the faults of a real cluster: an API server that dies mid-watch, and a
CREATE that is booked by admission but never stored, then retried."""

from __future__ import annotations

import httpx
import pytest

from greenops.local.controller import ControllerProcess, actions_when
from greenops.local.webhook import GROUP
from tests.support.cluster_path import HOLD_SECONDS, controller_process, template

pytestmark = [pytest.mark.integration, pytest.mark.tools]

RESYNC = 1.0


def controller(cluster, tmp_path, name: str) -> ControllerProcess:
    return controller_process(cluster, tmp_path, name, resync_seconds=RESYNC)


def create(cluster, ns: str, name: str, **spec) -> httpx.Response:
    with cluster.cp.client() as k:
        return k.post(cluster.path(ns), json=template(name, ns, **spec))


def keys_under(cluster, prefix: str) -> dict[str, dict]:
    r = httpx.get(
        f"{cluster.sched.url}/reservations",
        params={"all": "true", "key_prefix": prefix},
        headers=cluster.sched.admin_headers,
        timeout=10,
    )
    r.raise_for_status()
    return {row["key"]: row for row in r.json()["reservations"]}


def confirmed(row) -> bool:
    return row["held_until"] is None and row["phase"] in ("Scheduled", "Provisioning", "Running")


def test_an_api_server_restart_mid_watch_loses_nothing(cluster, tmp_path):
    with controller(cluster, tmp_path, "restart") as c:
        c.wait_leading()
        r = create(cluster, "team-a", "before-restart")
        assert r.status_code == 201, r.text
        before = r.json()["metadata"]["annotations"]["greenops.io/reservation"]
        cluster.wait(before, confirmed)

        cluster.cp.restart_apiserver(down_seconds=2)  # kill -9: the open watch breaks mid-stream

        r = create(cluster, "team-b", "after-restart")
        assert r.status_code == 201, r.text
        after = r.json()["metadata"]["annotations"]["greenops.io/reservation"]
        cluster.wait(after, confirmed, timeout=60)
        with cluster.cp.client() as k:
            assert k.delete(cluster.path("team-a", "before-restart")).status_code == 200
        cluster.wait(before, lambda row: row["phase"] == "Released", timeout=60)
        actions = actions_when([c], f"confirmed {before}", f"confirmed {after}")
        assert actions.count(f"confirmed {before}") == 1
        assert actions.count(f"confirmed {after}") == 1
        assert actions.count(f"released {before}") <= 1  # the DELETE hook may have released it first


def test_a_create_retried_after_its_booking_leaves_one_reservation(cluster, tmp_path):
    """Admission books, then a later admission step refuses, so the object is never stored: the
    client retries, and the retry is a new request with a new key. The first hold must not last."""
    refusing = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "refuse-once"},
        "webhooks": [
            {
                "name": "refuse-once.greenops.test",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",  # unreachable: every CREATE fails after the mutating webhook booked
                "timeoutSeconds": 2,
                "clientConfig": {"url": "https://127.0.0.1:9/", "caBundle": ""},
                "rules": [
                    {
                        "apiGroups": [GROUP],
                        "apiVersions": ["*"],
                        "operations": ["CREATE"],
                        "resources": ["vmtemplates"],
                    }
                ],
            }
        ],
    }
    with controller(cluster, tmp_path, "retry") as c:
        c.wait_leading()
        with cluster.cp.client() as k:
            assert (
                k.post(
                    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", json=refusing
                ).status_code
                == 201
            )
        refused = create(cluster, "team-a", "retried")
        assert refused.status_code >= 500 or refused.status_code == 400, refused.text
        first = keys_under(cluster, "team-a/retried/")
        assert len(first) == 1, first  # booked by admission although nothing was stored
        (lost,) = first
        with cluster.cp.client() as k:
            k.delete("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/refuse-once")
        retried = create(cluster, "team-a", "retried")
        assert retried.status_code == 201, retried.text
        kept = retried.json()["metadata"]["annotations"]["greenops.io/reservation"]
        assert kept != lost
        cluster.wait(kept, confirmed)
        row = cluster.wait(lost, lambda r: r["phase"] == "Released", timeout=HOLD_SECONDS + 30)
        assert row["reason"].startswith("hold expired at ")
        active = {k: r for k, r in keys_under(cluster, "team-a/retried/").items() if r["phase"] != "Released"}
        assert list(active) == [kept]
