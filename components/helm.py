"""A pinned Helm release, the way every component installs an upstream chart.

A pin (components/versions.yaml) may carry ``values``: overrides that belong to the pinned version
itself, whoever installs it (e.g. an image moved to another repository). They are merged under the
component's own values, which win on a conflict.

The Helm release is named exactly as the Pulumi resource (no random suffix), so the Services a chart
derives from the release name (``<name>-postgresql``...) have names other components can address.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def merged(base: dict, over: dict) -> dict:
    """``over`` laid over ``base``, nested mappings merged key by key."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def release(
    name: str,
    pin: dict,
    namespace: str,
    values: dict,
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource] | None = None,
) -> k8s.helm.v3.Release:
    repo = pin["repo"]
    oci = repo.startswith("oci://")
    return k8s.helm.v3.Release(
        name,
        name=name,
        chart=f"{repo}/{pin['chart']}" if oci else pin["chart"],
        version=pin["version"],
        repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=repo),
        namespace=namespace,
        create_namespace=True,
        values=merged(pin.get("values") or {}, values),
        atomic=True,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
    )
