"""Scope stubs for the operators' CRDs, for the render-to-directory Kubernetes provider.

A ConfigGroup must know whether each kind is namespaced. Against a cluster it asks the API
server; in render mode there is none, and it fails on the ASO, Config Connector and ACK kinds.
Declaring a CustomResourceDefinition through the same provider teaches it the scope. These stubs
carry the upstream names and scope (from data/crds.json) with an open schema, are labelled
`greenops.io/render-stub`, and exist only in render mode: a cluster gets the operators' real CRDs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from greenops.catalog import load_catalog
from greenops.renderers import rendered_kinds


@dataclass
class RenderModeCrdsArgs:
    provider: k8s.Provider


COMPONENT_TYPE = "greenops:index:RenderModeCrds"
NAME = "render-mode-crds"  # the program's one instance (a targeted pass names it too)


class RenderModeCrds(pulumi.ComponentResource):
    def __init__(self, name: str, args: RenderModeCrdsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(COMPONENT_TYPE, name, None, opts)
        kinds = load_catalog().crd_kinds
        self.crds = []
        for api_version, kind in rendered_kinds():
            group, version = api_version.split("/")
            fact = kinds[(group, kind)]
            self.crds.append(
                k8s.apiextensions.v1.CustomResourceDefinition(
                    fact.name,
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=fact.name, labels={"greenops.io/render-stub": "true"}),
                    # A mapping, not CustomResourceDefinitionSpecArgs: the typed JSONSchemaPropsArgs
                    # (pulumi-kubernetes 4.25) sends x_kubernetes_preserve_unknown_fields under its
                    # Python name, not as x-kubernetes-preserve-unknown-fields; a mapping is sent as written.
                    spec={
                        "group": group,
                        "scope": fact.scope,
                        "names": {"kind": kind, "plural": fact.plural, "singular": fact.singular},
                        "versions": [
                            {
                                "name": version,
                                "served": True,
                                "storage": True,
                                "schema": {
                                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                                },
                            }
                        ],
                    },
                    opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
                )
            )
        self.register_outputs({"crds": [c.metadata["name"] for c in self.crds]})

    def known(self) -> pulumi.Output[bool]:
        """True once the provider has been handed every stub in this update, with no dependency on
        them: the VM objects wait for it, yet no workload depends on the stubs in the state, so a
        pass of the due workloads can target the stubs without reaching every other workload
        (greenops/engine/automation.py: up_due)."""

        async def handed() -> bool:
            for crd in self.crds:
                await crd.id.future()
            return True

        return pulumi.Output.from_input(handed())
