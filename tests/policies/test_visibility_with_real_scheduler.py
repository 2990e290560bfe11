"""OPA's visibility queries against the real scheduler's record, on loopback: a Pulumi-path and a
cluster-path booking both show up, the EU filter and `affected` read the catalog, and a scheduler
that cannot be asked is reported as an error, never as an empty list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from tests.support.principals import declare_opa

pytestmark = pytest.mark.integration

VISIBILITY = "/v1/data/greenops/visibility"
# (key, tenant, path, provider, region): one booking per path, one in the EU and one not
PULUMI = ("dev/etl/0a1b", "data", "pulumi", "azure", "francecentral")
CLUSTER = ("ml/train/u-1", "ml", "cluster", "aws", "us-east-1")


def book(scheduler, catalog, booking, token) -> dict:
    key, tenant, path, provider, region = booking
    zone = catalog.region(provider, region).zone
    deadline = stamp(datetime.now(UTC) + timedelta(days=2))
    r = httpx.post(
        f"{scheduler.url}/scheduling",
        timeout=20,
        headers={"Authorization": f"Bearer {token}"},
        json={
            "eligible_regions": [zone],
            "deadline": deadline,
            "duration": 2,
            "cpu": 2,
            "memory": 4,
            "key": key,
            "tenant": tenant,
            "path": path,
            "regions": {zone: f"{provider}/{region}"},
        },
    )
    assert r.status_code == 200, r.text
    return {
        "key": key,
        "tenant": tenant,
        "path": path,
        "provider": provider,
        "region": region,
        "zone": zone,
        "schedulingTime": r.json()["scheduling_time"],
        "eu": catalog.region(provider, region).eu,
    }


def ask(opa, rule="", region=None) -> dict:
    """The Data API's whole answer: {"result": ...} when the document is defined, {} when not,
    without the decision_id every answer carries (the key to its decision log event)."""
    r = httpx.post(
        f"{opa.url}{VISIBILITY}{rule}",
        json={"input": {"region": region} if region else {}},
        headers=opa.admin_headers,  # the platform's query: every tenant's reservations
        timeout=20,
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert isinstance(answer.pop("decision_id"), str)
    return answer


@pytest.mark.parametrize("declared", [False, True], ids=["issued", "declared"])
def test_visibility_reads_both_paths_from_the_record_and_reports_a_scheduler_it_cannot_ask(
    opa_binary, catalog, tmp_path, declared
):
    """OPA's principal (every tenant, the cluster path) reads every tenant's reservations, whether
    its token was issued through the API or declared by digest as a cluster install does."""
    opa_principal = declare_opa(tmp_path) if declared else None
    with SchedulerServer(principals=opa_principal.path if opa_principal else None) as scheduler:
        opa_token = opa_principal.tokens["opa"] if opa_principal else scheduler.issue("opa", None, paths=["cluster"])
        data_stack = scheduler.issue("data-stack", ["data"], paths=["pulumi"])
        with OpaServer(scheduler_url=scheduler.url, scheduler_token=opa_token) as opa:
            assert ask(opa, "/placed") == {"result": []}  # asked, and nothing is placed: not an error
            pulumi, cluster = book(scheduler, catalog, PULUMI, data_stack), book(scheduler, catalog, CLUSTER, opa_token)
            assert pulumi["eu"] and not cluster["eu"]
            # A replicated VmTemplate is not a placement the record knows: visibility has one source.
            assert (
                httpx.put(
                    f"{opa.url}/v1/data/kubernetes/vmtemplates",
                    json={
                        "ml": {
                            "old": {"spec": {"vmName": "old", "provider": "gcp", "schedulingLocation": "europe-west9"}}
                        }
                    },
                    headers=opa.admin_headers,
                ).status_code
                == 204
            )

            doc = ask(opa, region="us-east-1")["result"]
            assert "error" not in doc
            assert sorted(doc["placed"], key=lambda w: w["key"]) == [pulumi, cluster]
            assert doc["placed_in_eu"] == [pulumi]
            assert doc["affected"] == [cluster]
            assert ask(opa, "/affected", region="francecentral") == {"result": [pulumi]}
            assert ask(opa, "/affected", region="westus") == {"result": []}

            scheduler.stop()
            # Could not ask: the documents are undefined (no "result"), and `error` says why.
            assert ask(opa, "/placed_in_eu") == {}
            assert ask(opa, "/affected", region="us-east-1") == {}
            error = ask(opa, "/error")["result"]
            assert error.startswith(f"scheduler at {scheduler.url} unreachable: ")
            assert ask(opa, region="us-east-1") == {"result": {"error": error}}


def test_a_scheduler_refusing_opas_token_is_an_error_naming_the_status(opa_binary, catalog):
    with SchedulerServer() as scheduler:
        book(scheduler, catalog, PULUMI, scheduler.issue("data-stack", ["data"], paths=["pulumi"]))
        with OpaServer(scheduler_url=scheduler.url) as opa:  # OPA given no credential at the scheduler
            assert ask(opa, "/placed") == {}
            assert ask(opa) == {
                "result": {
                    "error": f"scheduler at {scheduler.url} answered HTTP 401: "
                    "unauthenticated: a bearer token is required: send Authorization: Bearer <token> "
                    "(greenops token issue)"
                }
            }
        with OpaServer(scheduler_url=scheduler.url, scheduler_token="not-a-token-it-knows") as opa:
            assert ask(opa, "/placed") == {}
            assert ask(opa)["result"]["error"] == (
                f"scheduler at {scheduler.url} answered HTTP 401: "
                "unauthenticated: the bearer token is not known: send Authorization: Bearer <token> "
                "(greenops token issue)"
            )
