"""CertManager: cert-manager, which issues the serving certificates of ASO v2's and KServe's webhooks
(their charts declare cert-manager Issuers and Certificates, their CRDs ``cert-manager.io/inject-ca-from``).
The platform installs it before them; a cluster that already runs one says so with
``certManager: {enabled: false, existing: true}`` (components/platform_config.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.hardening import CONTAINER_SECURITY, POD_SECURITY, Resources
from components.helm import release
from components.pins import ChartPin
from components.platform_config import CertManagerConfig

# The controller, its webhook, the CA injector and the post-install check: each a key of the chart's
# values ("" is the controller, at the top level), each with the same three settings.
PARTS = {
    "": Resources(cpu="50m", memory="128Mi", cpu_limit="500m"),
    "webhook": Resources(cpu="20m", memory="64Mi", cpu_limit="250m"),
    "cainjector": Resources(cpu="20m", memory="128Mi", cpu_limit="250m"),
    "startupapicheck": Resources(cpu="10m", memory="64Mi", cpu_limit="100m"),
}


def hardened() -> dict:
    """The chart's securityContext (the pod's), containerSecurityContext and resources for every
    part: its defaults are already restricted; set here so they stay so whatever a release changes."""
    values: dict = {}
    for part, resources in PARTS.items():
        settings = {
            "securityContext": POD_SECURITY,
            "containerSecurityContext": CONTAINER_SECURITY,
            "resources": resources.json(),
        }
        (values.setdefault(part, {}) if part else values).update(settings)
    return values


def chart_values(c: CertManagerConfig) -> dict:
    return {
        **hardened(),
        # The chart's own CRD templates (crds.enabled, since v1.15; installCRDs is deprecated): Helm
        # upgrades them with the release, unlike crds/ files. keep: an uninstall leaves the CRDs, and
        # with them every Certificate and Issuer other parts own, to be removed deliberately.
        "crds": {"enabled": True, "keep": True},
        # Leases in its own namespace: kube-system is not writable on GKE Autopilot.
        "global": {"leaderElection": {"namespace": c.namespace}},
        # startupapicheck (on by default) is a post-install hook: with the release's atomic wait it
        # completes only once the webhook answers, so the parts after it never meet an unready webhook.
    }


@dataclass
class CertManagerArgs:
    config: CertManagerConfig
    chart: ChartPin  # components/versions.yaml cert_manager


class CertManager(pulumi.ComponentResource):
    def __init__(self, name: str, args: CertManagerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:CertManager", name, None, opts)
        c = args.config
        self.release = release(name, args.chart, c.namespace, chart_values(c), self)
        self.register_outputs({"version": args.chart.version, "namespace": c.namespace})
