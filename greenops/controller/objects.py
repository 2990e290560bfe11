"""What Krateo rendered for a VmTemplate, read back from the API server, and what the cloud
operator reports about it.

Krateo installs a VmTemplate's chart as a Helm release named after the VmTemplate, in its
namespace, and Helm marks every object it manages with its release (``meta.helm.sh/release-name``
and ``-namespace``), refusing to adopt another release's. That mark, not the objects' names, is how
the controller finds a VmTemplate's objects: the names are the chart's business (a hash of the
namespace and name, or an older set's), the release is Helm's contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenops.catalog import load_catalog
from greenops.placing.lifecycle import Observation
from greenops.placing.observe import verdict
from greenops.renderers import provider_kinds, vm_kind

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


class RenderedObjects:
    """Reads a VmTemplate's rendered objects with the controller's client (get/list on the
    providers' kinds is all its ClusterRole grants there)."""

    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api)
        self._missing = client.ApiException

    def found(self, template: dict[str, Any]) -> list[dict[str, Any]]:
        meta = template["metadata"]
        provider = (template.get("spec") or {}).get("provider")
        if not provider:
            return []
        crds = load_catalog().crd_kinds
        objects = []
        for api_version, kind in provider_kinds(provider):
            group, version = api_version.split("/")
            try:
                listed = self._custom.list_namespaced_custom_object(
                    group, version, meta["namespace"], crds[(group, kind)].plural
                )
            except self._missing as exc:
                if exc.status == 404:  # the kind is not served (its operator's CRDs absent): none exist
                    continue
                raise
            objects += [o for o in listed.get("items") or [] if _released_by(o, meta)]
        return objects

    def observe(self, template: dict[str, Any], running: bool) -> Observation:
        """The operator's verdict. Before the VM has run, an absent object has not been rendered
        yet (the wait is bounded by the last start that meets the deadline); once it has, an absent
        VM object was deleted outside the platform."""
        provider = template["spec"]["provider"]
        found = self.found(template)
        vm = vm_kind(provider)
        gone = running and not any(o["kind"] == vm for o in found)
        missing = (f"{vm} of Helm release {template['metadata']['name']}",) if gone else ()
        return verdict(provider, found, missing)


def _released_by(obj: dict[str, Any], template_meta: dict[str, Any]) -> bool:
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    namespace = notes.get(RELEASE_NAMESPACE, template_meta["namespace"])
    return bool(notes.get(RELEASE_NAME) == template_meta["name"] and namespace == template_meta["namespace"])
