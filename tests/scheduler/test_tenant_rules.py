"""Per-tenant rules on the real service (greenops/scheduler/tenant_rules.py): a booking that asks for
more than its tenant's rules allow is refused naming the rule, whatever path it comes by; another
tenant, and a request within the rules, are booked as before."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.policies.settings import PolicySettings, TenantRules

pytestmark = pytest.mark.integration

POLICY = """
default_tenant_vcpu_quota: null
tenant_rules:
  media:
    providers: [azure]
    residency: eu
    max_cpu: 8
    max_memory_gb: 32
"""


@pytest.fixture(scope="module")
def service():
    folder = Path(tempfile.mkdtemp(prefix="greenops-rules-"))
    (folder / "policy.yaml").write_text(POLICY)
    env = {"GREENOPS_SCHEDULER_POLICY_CONFIG": str(folder / "policy.yaml")}
    with SchedulerServer(env=env, log=folder / "s.log") as s:
        s.tokens = {t: s.issue(f"{t}-ci", [t]) for t in ("media", "research")}
        yield s


def post(service, tenant: str, **over) -> httpx.Response:
    body = {
        "eligible_regions": ["FR"],
        "regions": {"FR": "azure/francecentral"},
        "deadline": stamp(datetime.now(UTC) + timedelta(days=1)),
        "duration": 2,
        "cpu": 4,
        "memory": 8,
        "dry_run": True,
    } | over
    headers = {"Authorization": f"Bearer {service.tokens[tenant]}"}
    return httpx.post(f"{service.url}/scheduling", json=body, headers=headers, timeout=15)


def test_within_its_rules_a_tenant_books_as_before(service):
    assert post(service, "media").status_code == 200


@pytest.mark.parametrize(
    ("over", "named"),
    [
        ({"cpu": 16}, "cpu: tenant media's rule max_cpu 8: the request asks for 16 vCPU per job"),
        ({"memory": 64}, "memory: tenant media's rule max_memory_gb 32: the request asks for 64 GB per job"),
        (
            {"regions": {"FR": "gcp/europe-west9"}},
            "regions: tenant media's rule providers ['azure'] does not allow gcp",
        ),
        (
            {"eligible_regions": ["US-CAL-CISO"], "regions": {"US-CAL-CISO": "azure/westus"}},
            "regions: tenant media's rule residency eu: azure/westus (zone US-CAL-CISO) is not in the EU",
        ),
        ({"regions": {}}, "zone(s) FR are not mapped to a provider/region"),
    ],
)
def test_asking_for_more_is_refused_naming_the_rule(service, over, named):
    r = post(service, "media", **over)
    assert r.status_code == 403 and named in r.json()["detail"], r.text


def test_another_tenants_rules_are_not_its_own(service):
    assert post(service, "research", cpu=16, regions={}).status_code == 200


def test_the_rules_are_validated_once_at_the_edge_and_shipped_in_the_bundle():
    settings = PolicySettings.model_validate({"tenant_rules": {"media": {"providers": ["azure"], "max_cpu": 8}}})
    assert settings.rules("media").providers == ["azure"] and settings.rules("other") == TenantRules()
    assert settings.document()["tenant_rules"]["media"]["max_cpu"] == 8
    for bad in ({"providers": ["oracle"]}, {"regions": ["westeurope"]}, {"max_cpu": 0}, {"colour": "red"}):
        with pytest.raises(ValueError):
            PolicySettings.model_validate({"tenant_rules": {"media": bad}})
