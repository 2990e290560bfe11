"""The vm-template chart's values.schema.json, generated from greenops.models.strings.

    python -m greenops.charts.schema            -> rewrites components/charts/vm-template/values.schema.json

The schema is committed because it ships inside the chart: helm checks every install against it,
and Krateo's core-provider generates the VmTemplate CRD from it, so the API server applies the same
rules to every VmTemplate. A test holds the committed file equal to this output.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from greenops.catalog import load_catalog
from greenops.charts import CHART_SOURCE
from greenops.models import contract
from greenops.models.strings import RFC3339, RULES

# `gate <instant>` | `end <instant>`, the instant as the platform writes one (greenops.common.clock.stamp)
RENDER_PATTERN = "^(gate|end) " + RFC3339.removeprefix("^")

# The workload's fields as the contract (greenops.models.contract) writes them: types, bounds, forms.
CONTRACT = contract.json_schema_properties(list(load_catalog().providers), load_catalog().image_names)

# Every value's description and the chart's own values; the workload's fields get their schema from
# the contract and the strings' from RULES. Each string value of the chart is bounded and has a
# pattern or an enum.
_PROPERTIES: dict[str, dict[str, Any]] = {
    "vmName": {"description": "Name of the VM: names its objects, with a hash of the VmTemplate's namespace/name"},
    "cpu": {"description": "Minimum vCPUs"},
    "memory": {"description": "Minimum RAM in GB"},
    "duration": {
        "description": f"Duration of the workload: {contract.DURATION_EXPECTED}; the VM is retired at "
        "schedulingTime + duration",
    },
    "deadline": {"description": "Deadline, RFC 3339"},
    "maxLatency": {"description": "Maximum latency in ms from originRegion (2000 = none)"},
    "originRegion": {"description": "Cloud region the latency is measured from"},
    "eligibleProviders": {"description": "Providers the workload may use (distinct; none: the platform's default)"},
    "dataResidency": {"description": "EU-only placement"},
    "tenant": {"description": "Tenant, set on every object's labels; admission refuses one not the namespace's"},
    "run": {
        "description": "What the VM runs: {script: a shell script}, started once at first boot; the VM powers itself "
        "off when it ends (none: the VM runs nothing)",
    },
    "image": {
        "description": "The OS image by name, mapped per provider and region by the chart's catalog (none: "
        "Ubuntu 22.04 LTS)",
    },
    "provider": {"description": "Set by the admission policy"},
    "schedulingLocation": {"description": "Cloud region, set by the admission policy"},
    "schedulingTime": {"description": "Start time (RFC 3339 UTC), set by the admission policy"},
    "vmSize": {"description": "Provider VM size, set by the admission policy"},
    # A spec field, not an annotation: Krateo renders a composition again when its generation changes
    # (a spec change), and an annotation leaves the generation as it is (greenops.controller.progress).
    "render": {
        "type": "string",
        "maxLength": 64,
        "pattern": RENDER_PATTERN,
        "description": "Set by the greenops controller: `gate <instant>` or `end <instant>`, when it asked Krateo "
        "to render the VM's objects (at the gate) or to remove them (at the end); the chart renders by the clock",
    },
    "provisioningLeadSeconds": {
        "type": "integer",
        "minimum": 0,
        "description": "Render this long before schedulingTime",
    },
    "namespace": {
        "description": "Optional; when set it must be the VmTemplate's own namespace, where its objects always go",
    },
    "azureResourceGroup": {
        "description": "Azure resource group (made by the platform) that owns the Azure objects",
    },
    "azureSubscriptionId": {"description": "Subscription of azureResourceGroup: the owners' ARM id needs it"},
    "adminUsername": {"description": "The VM's administrator (Azure); names Azure refuses are refused"},
    "sshPublicKey": {"description": "One OpenSSH public key line for adminUsername (Azure)"},
    "gcpProject": {"description": "GCP project of the Config Connector objects"},
    "skipAwait": {"type": "boolean", "description": "Annotate pulumi.com/skipAwait (no controller running)"},
}


def values_schema() -> dict[str, Any]:
    properties = {
        name: {**(RULES[name].json_schema() if name in RULES else {}), **CONTRACT.get(name, {}), **prop}
        for name, prop in _PROPERTIES.items()
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "object",
        "required": contract.REQUIRED,
        "properties": properties,
    }


def render() -> str:
    return json.dumps(values_schema(), indent=2) + "\n"


SCHEMA_FILE = CHART_SOURCE / "values.schema.json"


def main() -> int:
    SCHEMA_FILE.write_text(render(), encoding="utf-8")
    print(f"chart schema: wrote {SCHEMA_FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
