"""cert-manager is a platform part, pinned, installed before ASO and KServe (whose charts declare
cert-manager Certificates for their webhooks), or named as an existing install; never silently missing."""

from __future__ import annotations

import pulumi
import pytest
import yaml
from pulumi.runtime.mocks import MockMonitor

from components.platform_config import VERSIONS_FILE
from tests.components.test_platform_mocks import PROD, collect, of, run_platform, unwrap

RELEASE = "kubernetes:helm.sh/v3:Release"
CERT_MANAGER = (RELEASE, "cert-manager")
AFTER_IT = ("aso-aso", "kserve-crds", "kserve-controller")


@pytest.fixture
def dependencies(monkeypatch) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(type, name) -> the (type, name) of every resource it waits for, as the engine would be told.
    The mocks do not record dependencies, so the monitor's registration call is wrapped."""
    recorded: dict[tuple[str, str], set[tuple[str, str]]] = {}
    register = MockMonitor.RegisterResource

    def parse(urn: str) -> tuple[str, str]:
        qualified, name = urn.rsplit("::", 1)
        return qualified.rsplit("::", 1)[-1].rsplit("$", 1)[-1], name

    def recording(self, request):
        recorded[(request.type, request.name)] = {parse(u) for u in request.dependencies}
        return register(self, request)

    monkeypatch.setattr(MockMonitor, "RegisterResource", recording)
    return recorded


def test_cert_manager_is_pinned_with_its_crds():
    pin = yaml.safe_load(VERSIONS_FILE.read_text())["cert_manager"]
    m = collect(PROD)
    [component] = of(m, "greenops:platform:CertManager")
    [release] = [r for r in of(m, RELEASE) if r.name == "cert-manager"]
    assert release.inputs["chart"] == "oci://quay.io/jetstack/charts/cert-manager"
    assert release.inputs["version"] == pin["version"] and pin["version"].startswith("v1.")
    assert release.inputs["namespace"] == "cert-manager" and release.inputs["createNamespace"] is True
    values = unwrap(release.inputs["values"])
    assert values["crds"] == {"enabled": True, "keep": True} and "installCRDs" not in values  # deprecated since v1.15
    assert values["global"]["leaderElection"]["namespace"] == "cert-manager"
    assert release.inputs["atomic"] is True  # waits for the post-install startupapicheck: the webhook answers


def test_aso_and_kserve_wait_for_cert_manager(dependencies):
    m = collect(PROD)
    for name in AFTER_IT:
        assert CERT_MANAGER in dependencies[(RELEASE, name)], name
    assert not {d for d in dependencies[CERT_MANAGER] if d[0] == RELEASE}  # it waits for no other release
    names = [r.name for r in of(m, RELEASE)]
    assert names.index("cert-manager") < min(names.index(n) for n in AFTER_IT)


def test_an_existing_cert_manager_is_relied_on_and_not_installed(dependencies):
    m = collect({**PROD, "certManager": {"enabled": False, "existing": True}})
    assert not of(m, "greenops:platform:CertManager")
    assert "cert-manager" not in [r.name for r in of(m, RELEASE)]
    assert {r.name for r in of(m, RELEASE)} >= set(AFTER_IT)
    assert not [n for n in AFTER_IT if CERT_MANAGER in dependencies[(RELEASE, n)]]


def test_without_aso_and_kserve_it_may_be_off():
    m = collect({**PROD, "azure": {"enabled": False}, "kserve": {"enabled": False}, "certManager": {"enabled": False}})
    assert not of(m, "greenops:platform:CertManager")


@pytest.mark.parametrize(
    "platform, message",
    [
        (
            {**PROD, "certManager": {"enabled": False}},
            r"greenops:platform\.certManager: azure \(ASO v2\) and kserve \(KServe\) need cert-manager to issue "
            r"webhook "
            r"certificates: set certManager\.enabled: true \(the platform installs it\), or certManager\.existing: "
            r"true",
        ),
        (
            {**PROD, "azure": {"enabled": False}, "certManager": {"enabled": False}},
            r"greenops:platform\.certManager: kserve \(KServe\) needs cert-manager",
        ),
        (
            {**PROD, "certManager": {"existing": True}},
            r"greenops:platform\.certManager: existing: true needs enabled: false",
        ),
    ],
)
def test_a_missing_or_doubled_cert_manager_is_refused_by_name(platform, message):
    from greenops.stack import program

    run_platform(platform)
    with pytest.raises(pulumi.RunError, match=message):
        program.run()
