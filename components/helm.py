"""A pinned Helm release, the way every component installs an upstream chart."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def release(name: str, pin: dict, namespace: str, values: dict, parent: pulumi.Resource,
            depends_on: list[pulumi.Resource] | None = None) -> k8s.helm.v3.Release:
    repo = pin["repo"]
    oci = repo.startswith("oci://")
    return k8s.helm.v3.Release(
        name,
        chart=f"{repo}/{pin['chart']}" if oci else pin["chart"],
        version=pin["version"],
        repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=repo),
        namespace=namespace,
        create_namespace=True,
        values=values,
        atomic=True,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
    )
