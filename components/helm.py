"""A pinned Helm release, the way every component installs an upstream chart.

A pin (components/versions.yaml, a ``ChartPin``) may carry ``values``: overrides that belong to the
pinned version itself, whoever installs it (e.g. an image moved to another repository). They are
merged under the component's own values, which win on a conflict.

The Helm release is named exactly as the Pulumi resource (no random suffix), so the Services a chart
derives from the release name (``<name>-postgresql``...) have names other components can address.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.pins import ChartPin


def merged(base: dict, over: dict) -> dict:
    """``over`` laid over ``base``, nested mappings merged key by key."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def release(
    name: str,
    pin: ChartPin,
    namespace: str,
    values: dict,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] | None = None,
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
        name=name,
        chart=f"{pin.repo}/{pin.chart}" if pin.oci else pin.chart,
        version=pin.version,
        repository_opts=None if pin.oci else k8s.helm.v3.RepositoryOptsArgs(repo=pin.repo),
        namespace=namespace,
        create_namespace=True,
        values=merged(pin.values, values),
        atomic=True,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
    )


def postgresql(
    name: str,
    pin: ChartPin,
    namespace: str,
    database: str,
    user: str,
    secret: tuple[str, str],
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
) -> k8s.helm.v3.Release:
    """A PostgreSQL of the pinned chart with one database and user, whose password (also the admin's)
    is key ``secret[1]`` of the existing Secret ``secret[0]``, so the chart generates none."""
    secret_name, key = secret
    auth = {
        "database": database,
        "username": user,
        "existingSecret": secret_name,
        "secretKeys": {"userPasswordKey": key, "adminPasswordKey": key},
    }
    return release(f"{name}-postgresql", pin, namespace, {"auth": auth}, parent, depends_on=depends_on)
