"""The real OPA server with the real bundle, over loopback."""

from __future__ import annotations

import base64
import json
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest

from greenops.catalog import select_size
from greenops.policies.bundle import ROOTS, build, stage
from greenops.policies.client import OpaClient, PolicyDenied, PolicyUnavailable
from tests.support.admission import admission_review

pytestmark = pytest.mark.integration
# The review's uid: the API server's are UUIDs, and admission books and releases only keys ending in one.
UID = "1f1c0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

WORKLOAD = {
    "name": "etl",
    "cpu": 4,
    "memory": 8,
    "duration": "2h",
    "deadline": "2030-01-01T00:00:00Z",
    "originRegion": "italynorth",
    "tenant": "data",
}


def vmtemplate(**spec):
    base = {
        "vmName": "vm-1",
        "cpu": 2,
        "memory": 4,
        "duration": "3h",
        "deadline": "2030-01-01T00:00:00Z",
        "maxLatency": 100,
        "originRegion": "italynorth",
        "eligibleProviders": ["azure"],
        "tenant": "t1",
    }
    base.update(spec)
    return {
        "apiVersion": "composition.krateo.io/v1-2-0",
        "kind": "VmTemplate",
        "metadata": {"name": "vm-1", "namespace": "greenops"},
        "spec": base,
    }


def review(op="CREATE", obj=None, old=None, kind="VmTemplate"):
    return admission_review(
        UID, op, version="v1-2-0", kind=kind, namespace="greenops", name="vm-1", object=obj, oldObject=old
    )


def admit(webhook, body) -> dict:
    # POST / is the webhook's call, on its own OPA, with the API server's token (system.authz)
    r = httpx.post(f"{webhook.url}/", json=body, headers=webhook.webhook_headers, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def patch_of(answer) -> dict:
    """The spec fields the patch adds (the decision annotation it also adds is left out)."""
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert all(op["op"] == "add" for op in ops)
    return {op["path"].removeprefix("/spec/"): op["value"] for op in ops if op["path"].startswith("/spec/")}


def recorded_by(answer) -> dict:
    """The decision the patch records in the greenops.io/decision annotation."""
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    [value] = [op["value"] for op in ops if op["path"] == "/metadata/annotations"]
    return json.loads(value["greenops.io/decision"])


# --- the Data API decision -------------------------------------------------------------------
def test_thesis_latency_example_on_the_real_catalog(opa, catalog):
    with OpaClient(opa.url, token=opa.query_token) as c:
        d = c.decision(dict(WORKLOAD, eligibleProviders=["azure"], maxLatency=100))
    azure = d["eligible"]["azure"]
    assert {"italynorth", "francecentral"} <= set(azure)
    assert "japaneast" not in azure and "westus" not in azure
    for region in azure:
        assert region == "italynorth" or catalog.latency_ms("azure", "italynorth", region) <= 100


def test_eu_residency_on_the_real_catalog(opa, catalog):
    with OpaClient(opa.url, token=opa.query_token) as c:
        d = c.decision(dict(WORKLOAD, dataResidency="eu"))
    regions = [(p, r) for p, rs in d["eligible"].items() for r in rs]
    assert len(regions) > 20
    assert all(catalog.region(p, r).eu for p, r in regions)
    assert d["zones"] == sorted({catalog.region(p, r).zone for p, r in regions})


def candidates(opa, workload) -> list[dict]:
    r = httpx.post(
        f"{opa.url}/v1/data/greenops/placement/candidates",
        json={"input": {"workload": workload}},
        headers=opa.query_headers,
    )
    return r.json()["result"]


def test_rego_picks_the_same_size_as_python(opa, catalog):
    for cpu, mem in [(1, 1), (2, 16), (4, 8), (8, 64), (16, 32)]:
        ranked = candidates(opa, dict(WORKLOAD, cpu=cpu, memory=mem))
        assert len(ranked) > 90
        for cand in ranked:
            assert cand["vmSize"] == select_size(catalog, cand["provider"], cand["region"], cpu, mem).name


def test_zone_maps_back_to_a_candidate(opa, catalog):
    with OpaClient(opa.url, token=opa.query_token) as c:
        d = c.decision(dict(WORKLOAD, dataResidency="eu"), zone="FR")
    sel = d["selection"]
    assert sel["zone"] == "FR" and catalog.region(sel["provider"], sel["region"]).zone == "FR"
    fr = [x for x in candidates(opa, dict(WORKLOAD, dataResidency="eu")) if x["zone"] == "FR"]
    assert sel == fr[0] and sel["latencyMs"] == min(x["latencyMs"] for x in fr)


def test_conflict_is_refused_with_the_constraint_chain(opa):
    with OpaClient(opa.url, token=opa.query_token) as c, pytest.raises(PolicyDenied) as info:
        c.require_allowed(dict(WORKLOAD, originRegion="westus", dataResidency="eu", maxLatency=20))
    assert "dataResidency eu leaves" in str(info.value) and "maxLatency 20 ms from westus leaves 0" in str(info.value)


def test_the_decision_hands_the_tenants_quota_to_the_scheduler(opa):
    """Policy sets the cap; the scheduler counts the tenant's active reservations of both paths."""
    with OpaClient(opa.url, token=opa.query_token) as c:
        d = c.decision(dict(WORKLOAD, tenant="research"))
    assert d["allowed"] and d["errors"] == []
    assert d["tenantQuotaVcpu"] == 256


def test_unreachable_opa_is_a_clear_error():
    with (
        OpaClient("http://127.0.0.1:9", attempts=2, backoff=0.01, timeout=0.5) as c,
        pytest.raises(PolicyUnavailable) as info,
    ):
        c.decision(WORKLOAD)
    assert "OPA at http://127.0.0.1:9 did not answer the placement query" in str(info.value)


# --- the admission path (system.main, POST /) --------------------------------------------------
def test_create_is_patched_from_the_schedulers_answer(webhook, scheduler, catalog):
    scheduler.mode = "zone:FR"
    scheduler.requests.clear()
    answer = admit(webhook, review(obj=vmtemplate()))
    assert answer["response"]["uid"] == UID and answer["response"]["allowed"] is True
    patch = patch_of(answer)
    # Zone FR maps back to the Azure region in FR nearest to the origin (France South, 12 ms).
    fr = [r.name for r in catalog.regions_in_zone("FR", "azure")]
    nearest = min(fr, key=lambda r: catalog.latency_ms("azure", "italynorth", r))
    assert patch == {
        "provider": "azure",
        "schedulingLocation": nearest,
        "schedulingTime": "2027-01-01T02:00:00Z",
        "vmSize": select_size(catalog, "azure", nearest, 2, 4).name,
    }
    assert recorded_by(answer) == patch
    sent = scheduler.requests[-1]
    assert sent["number_of_jobs"] == 1 and sent["duration"] == 3 and sent["cpu"] == 2 and sent["memory"] == 4
    assert "FR" in sent["eligible_regions"] and "JP-TK" not in sent["eligible_regions"]
    assert sent["deadline"] == "2030-01-01T00:00:00Z"
    assert sent["origin_zone"] == "IT-NO"  # italynorth's zone, for the scheduler's baseline
    # booked as the object's reservation, under its namespace's tenant
    assert sent["key"] == f"greenops/vm-1/{UID}" and sent["path"] == "cluster" and sent["tenant"] == "t1"
    assert sent["dry_run"] is False and sent["regions"]["FR"] == f"azure/{nearest}"
    assert sent["workload"]["cpu"] == 2 and sent["tenant_quota_vcpu"] == 512  # the default cap


def test_patch_respects_eu_residency_and_latency(webhook, scheduler, catalog):
    scheduler.mode = "first"
    answer = admit(
        webhook, review(obj=vmtemplate(eligibleProviders=["azure", "gcp", "aws"], dataResidency="eu", maxLatency=50))
    )
    patch = patch_of(answer)
    region = catalog.region(patch["provider"], patch["schedulingLocation"])
    assert region.eu
    origin = catalog.nearest_region(
        patch["provider"], *(lambda r: (r.lat, r.lon))(catalog.region("azure", "italynorth"))
    )
    assert region.name == origin.name or catalog.latency_ms(patch["provider"], origin.name, region.name) <= 50


def test_conflict_is_denied(webhook, scheduler):
    answer = admit(webhook, review(obj=vmtemplate(originRegion="westus", dataResidency="eu", maxLatency=10)))
    assert answer["response"]["allowed"] is False
    assert "no eligible region" in answer["response"]["status"]["message"]


def test_scheduler_failure_fails_closed(webhook, scheduler):
    scheduler.mode = "error"
    answer = admit(webhook, review(obj=vmtemplate()))
    msg = answer["response"]["status"]["message"]
    assert answer["response"]["allowed"] is False
    assert "failing closed" in msg and "HTTP 500: forecast store unavailable" in msg
    scheduler.mode = "first"


def test_a_denial_after_booking_releases_the_booking(webhook, scheduler):
    scheduler.mode = "zone:US-CAL-CISO"  # a zone it was not asked for
    scheduler.released.clear()
    try:
        answer = admit(webhook, review(obj=vmtemplate()))
    finally:
        scheduler.mode = "first"
    msg = answer["response"]["status"]["message"]
    assert answer["response"]["allowed"] is False and "the scheduler chose zone US-CAL-CISO" in msg
    assert msg.endswith(f"its reservation greenops/vm-1/{UID} was released")
    [released] = scheduler.released
    assert released.startswith(f"/reservations/greenops/vm-1/{UID}?reason=admission+denied")
    assert "&tenant=" in released  # the namespace's tenant, which the booking was made under


def test_the_pulumi_path_releases_a_booking_it_cannot_map(opa, scheduler):
    from greenops.models import Workload
    from greenops.placing import SchedulerClient, place
    from greenops.placing.planner import PlacementError

    scheduler.mode = "zone:US-CAL-CISO"  # not among the EU workload's zones
    scheduler.released.clear()
    workload = Workload.model_validate(dict(WORKLOAD, name="etl", dataResidency="eu"))
    try:
        with (
            OpaClient(opa.url, token=opa.query_token) as o,
            SchedulerClient(scheduler.url) as s,
            pytest.raises(PlacementError) as info,
        ):
            place(workload, o, s, key="dev/etl/abc")
    finally:
        scheduler.mode = "first"
    assert str(info.value) == (
        "the scheduler chose zone US-CAL-CISO, which maps to no eligible region; "
        "its reservation dev/etl/abc was released"
    )
    [released] = scheduler.released
    assert released.startswith("/reservations/dev/etl/abc?reason=zone+US-CAL-CISO+maps+to+no+eligible+region")
    assert released.endswith(f"&tenant={workload.tenant}")


def test_a_delete_is_allowed_and_releases_nothing(webhook, scheduler):
    # a review is no proof that the object is gone: the controller releases on the deletion it sees
    placed = vmtemplate()
    key = "greenops/vm-1/0a9d8c7b-6e5f-4a3b-9c2d-1e0f9a8b7c6d"  # the uid of the CREATE's review
    placed["metadata"]["annotations"] = {"greenops.io/reservation": key}
    scheduler.released.clear()
    calls = len(scheduler.requests)
    answer = admit(webhook, review(op="DELETE", old=placed))
    assert answer["response"] == {"uid": UID, "allowed": True}
    assert scheduler.released == [] and len(scheduler.requests) == calls  # the scheduler was not called


def test_a_create_asks_for_a_new_key(webhook, scheduler):
    admit(webhook, review(obj=vmtemplate()))
    assert scheduler.requests[-1]["new_key"] is True and scheduler.requests[-1]["key"].endswith(UID)


def test_the_decisions_opa_serves_no_review(opa):
    for headers in ({}, opa.query_headers, opa.admin_headers):
        r = httpx.post(f"{opa.url}/", json=review(obj=vmtemplate()), headers=headers, timeout=10)
        assert r.status_code == 401 and "served only by the webhook's own OPA listener" in r.text


def test_a_spec_tenant_not_the_namespaces_is_denied(webhook, scheduler):
    answer = admit(webhook, review(obj=vmtemplate(tenant="media")))
    assert answer["response"]["status"]["message"] == (
        'VmTemplate greenops/vm-1: spec.tenant "media" disagrees with namespace greenops\'s label greenops.io/tenant '
        '"t1": '
        'the tenant is the namespace\'s (remove spec.tenant or set it to "t1")'
    )


def test_the_tenant_label_is_the_one_python_sets(opa):
    from greenops.policies.webhook import TENANT_LABEL

    # greenops.tenancy is no decision package: only the admin token reads it
    label = httpx.get(f"{opa.url}/v1/data/greenops/tenancy/label", headers=opa.admin_headers)
    assert label.json()["result"] == TENANT_LABEL


# Visibility reads the real scheduler's record, not replicated VmTemplates:
# tests/policies/test_visibility_with_real_scheduler.py.


def test_unchanged_update_keeps_the_decision_without_calling_the_scheduler(webhook, scheduler):
    decision = {
        "provider": "azure",
        "schedulingLocation": "italynorth",
        "schedulingTime": "2029-12-29T00:00:00Z",
        "vmSize": "Standard_F2s_v2",
    }
    decided = vmtemplate(**decision)
    decided["metadata"]["annotations"] = {"greenops.io/decision": json.dumps(decision)}
    before = len(scheduler.requests)
    answer = admit(webhook, review(op="UPDATE", obj=vmtemplate(), old=decided))
    assert patch_of(answer)["schedulingLocation"] == "italynorth"
    assert len(scheduler.requests) == before


@pytest.mark.parametrize(
    "body,message",
    [
        ({}, "malformed AdmissionReview: request missing"),
        ([], "malformed AdmissionReview: body must be an object"),
        ({"request": "x"}, "malformed AdmissionReview: request missing"),
        ({"request": {"uid": None}}, "malformed AdmissionReview: request.uid must be a string"),
        (
            {"request": {"uid": "u", "kind": "VmTemplate", "operation": "CREATE"}},
            "malformed AdmissionReview: request.kind.kind must be a string",
        ),
        (
            {"request": {"uid": "u", "kind": {"kind": "VmTemplate"}, "operation": ["CREATE"]}},
            "malformed AdmissionReview: request.operation must be a string",
        ),
    ],
)
def test_malformed_reviews_get_a_clean_answer(webhook, body, message):
    answer = admit(webhook, body)
    assert answer["response"]["allowed"] is False and answer["response"]["status"]["message"] == message


@pytest.mark.parametrize(
    "spec_patch,fragment",
    [
        ({"cpu": "four"}, 'cpu: "four" is not valid: a whole number of vCPUs'),
        # strings are checked against their rules first (spec_fields.rego)
        ({"deadline": 12}, "spec.deadline: must be a string (an RFC 3339 time"),
        ({"deadline": "2030-13-45T00:00:00Z"}, 'deadline: "2030-13-45T00:00:00Z" is not valid: an RFC 3339 time'),
        ({"eligibleProviders": "azure"}, 'eligibleProviders: "azure" is not valid: a list of distinct provider names'),
        ({"originRegion": None}, "spec.originRegion: must be a string (a cloud region name"),
        ({"originRegion": "atlantis"}, 'originRegion: unknown region "atlantis"'),
    ],
)
def test_wrong_types_in_the_spec_are_named(webhook, spec_patch, fragment):
    answer = admit(webhook, review(obj=vmtemplate(**spec_patch)))
    assert answer["response"]["allowed"] is False and fragment in answer["response"]["status"]["message"]


def test_vmtemplate_without_spec(webhook):
    answer = admit(webhook, review(obj={"metadata": {"name": "vm-1", "namespace": "greenops"}}))
    assert answer["response"]["status"]["message"] == "VmTemplate greenops/vm-1: spec must be an object"


def test_unknown_kinds_pass_unchanged(webhook):
    answer = admit(webhook, review(obj={"metadata": {"name": "cm"}, "data": {}}, kind="ConfigMap"))
    assert answer["response"] == {"uid": UID, "allowed": True}


# --- the bundle ------------------------------------------------------------------------------
def test_bundle_manifest_roots_and_revision(opa_binary, tmp_path):
    out = build(tmp_path / "b.tar.gz", "test-rev")
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("/.manifest"))
        data = json.load(tar.extractfile("/data.json"))
    assert manifest["revision"] == "test-rev" and manifest["roots"] == ROOTS
    assert {"/admission.rego", "/placement.rego", "/system.rego", "/authz.rego", "/data.json"} <= names
    assert "/constraints.rego" in names  # placement.rego's constraint chain, a package of its own
    assert not [n for n in names if n.endswith("_test.rego")]
    assert set(data["greenops"]) == {"catalog", "config", "string_rules", "workload_contract"}


def test_the_rego_tests_contract_is_the_models(opa_binary, tmp_path):
    """The Rego unit tests pass the workload contract as an argument (testdata.workload_contract, the
    bundle's shape for their catalog's providers): it must be the one the bundle ships, as the model
    reads it, and workload.rego's no-constraint latency its default."""
    from greenops.catalog import load_catalog
    from greenops.models import contract, strings

    src = stage(tmp_path / "b", include_tests=True)
    query = "[data.greenops.testdata.workload_contract, data.greenops.testdata.string_rules.tenant]"
    out = subprocess.run(
        [opa_binary, "eval", "--format", "json", "--bundle", str(src), query], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    shipped, tenant = json.loads(out.stdout)["result"][0]["expressions"][0]["value"]
    assert shipped == contract.bundle_document(["azure", "gcp", "aws"], load_catalog().image_names)
    assert tenant["pattern"] == strings.RULES["tenant"].pattern
    assert shipped["maxLatency"]["default"] == contract.NO_LATENCY_CONSTRAINT_MS


def test_rego_unit_tests_pass(opa_binary, tmp_path):
    src = stage(tmp_path / "b", include_tests=True)
    result = subprocess.run([opa_binary, "test", str(src), "--format", "json"], capture_output=True, text=True)
    report = json.loads(result.stdout)
    failed = [t["name"] for t in report if t.get("fail") or t.get("error")]
    assert result.returncode == 0 and not failed, failed
    assert len(report) >= 50


def test_rego_is_formatted_and_strictly_checked(opa_binary):
    """`opa fmt --fail` (no file differs from its formatted form) and `opa check --strict` (no unused
    variables, imports or shadowed names), as next to `opa test` in any Rego project."""
    rego = Path(__file__).resolve().parents[2] / "greenops" / "policies" / "rego"
    fmt = subprocess.run([opa_binary, "fmt", "--fail", "--list", str(rego)], capture_output=True, text=True)
    assert fmt.returncode == 0, f"not opa-fmt formatted: {fmt.stdout or fmt.stderr}"
    check = subprocess.run([opa_binary, "check", "--strict", str(rego)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    long = [
        f"{f.name}:{i}"
        for f in sorted(rego.glob("*.rego"))
        for i, line in enumerate(f.read_text().splitlines(), 1)
        if len(line.expandtabs(4)) > 120
    ]
    assert long == [], "Rego lines (policy and tests) over 120 columns, a tab counting 4"
