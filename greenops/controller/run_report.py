"""The run's report of its end, prepared at the gate for the chart to render (cluster path).

A VmTemplate with a ``run`` gets, just before the controller asks Krateo to render at its gate, a
Secret ``<name>-greenops-run`` in its namespace holding the report script
(greenops.renderers.user_data.report_script): the scheduler's completion URL for its reservation and
a completion token good for that one reservation. The chart reads the Secret (lookup) into the VM's
user-data; the token is never a chart value, never in the VmTemplate, never logged. The Secret is
owned by the VmTemplate (deleted with it) and immutable.

Only ``create`` on Secrets is needed. The scheduler issues a reservation's token once per decision:
a pass that was cut short after the token was issued, or a Secret of that name already there (its
tenant's, in its own namespace), leaves the VM without a report, logged; the run then ends, as
without a completion URL, by the VM powering itself off.
"""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import quote

from greenops.common.errors import one_line
from greenops.policies.webhook import VMTEMPLATE_GROUP, VMTEMPLATE_VERSION
from greenops.renderers.user_data import REPORT_KEY, REPORT_SECRET_SUFFIX, report_script

from .record import Record

log = logging.getLogger(__name__)


class RunReport:
    """``completion_url``: the scheduler's base URL as the VMs reach it."""

    def __init__(self, api: Any, record: Record, completion_url: str):
        self.api = api
        self.record = record
        self.completion_url = completion_url.rstrip("/")

    def prepare(self, template: dict[str, Any], row: dict[str, Any]) -> None:
        meta, spec = template["metadata"], template.get("spec") or {}
        if not isinstance(spec.get("run"), dict):
            return  # it runs nothing, so it reports nothing
        where = f"VmTemplate {meta['namespace']}/{meta['name']}"
        token = self.record.completion_token(row["key"], tenant=row["tenant"])
        if token is None:
            log.warning("%s: its completion token was issued already; its VM reports its end by powering off", where)
            return
        url = f"{self.completion_url}/reservations/{quote(row['key'], safe='/')}/completion"
        try:
            self._create(meta, report_script(url, token))
        except Exception as exc:  # the API server's refusal: logged without the token, never fatal
            status = getattr(exc, "status", None)
            why = "a Secret of that name is there already" if status == 409 else one_line(f"{status or ''} {exc}")[:200]
            log.warning("%s: its run's report was not written (%s); its VM reports its end by powering off", where, why)

    def _create(self, meta: dict[str, Any], script: str) -> None:
        from kubernetes import client

        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{meta['name']}{REPORT_SECRET_SUFFIX}",
                "namespace": meta["namespace"],
                "labels": {"app.kubernetes.io/managed-by": "greenops-controller"},
                "ownerReferences": [
                    {
                        "apiVersion": f"{VMTEMPLATE_GROUP}/{VMTEMPLATE_VERSION}",
                        "kind": "VmTemplate",
                        "name": meta["name"],
                        "uid": meta["uid"],
                    }
                ],
            },
            "type": "Opaque",
            "immutable": True,
            "data": {REPORT_KEY: base64.b64encode(script.encode()).decode()},
        }
        client.CoreV1Api(self.api).create_namespaced_secret(meta["namespace"], body)
