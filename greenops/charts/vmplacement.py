"""The VmPlacement CRD: a VmTemplate's placement and phase, on an object of its own.

Krateo's core-provider generates the VmTemplate CRD from the chart's values schema: its ``status``
is Krateo's (the composition's conditions), closed to other fields, and its printer columns are
Krateo's. So the platform installs this CRD beside the chart (components/controller.py), and the
controller writes a VmPlacement of each VmTemplate's name (greenops.controller.placement_status).
The API server prints PHASE, POSITION (in the scheduler's queue, while Pending), PROVIDER, REGION,
START and EXPECTED from its status.
"""

from __future__ import annotations

from typing import Any

GROUP = "greenops.io"
VERSION = "v1alpha1"
KIND = "VmPlacement"
PLURAL = "vmplacements"
REASON_CHARS = 1024  # as an Event's message: the whole reason stays in the record

_STRING = {"type": "string"}
_INSTANT = {"type": "string", "format": "date-time"}


def placement_crd() -> dict[str, Any]:
    """The VmPlacement CRD: a status subresource the controller alone writes, and printer columns."""
    status = {
        "phase": {
            "type": "string",
            "enum": ["Pending", "Scheduled", "Provisioning", "Running", "Completed", "Failed"],
        },
        "position": {"type": "integer", "minimum": 1, "description": "its place in the scheduler's queue (Pending)"},
        "queuedAt": {**_INSTANT, "description": "when it joined the scheduler's queue"},
        "provider": _STRING,
        "region": _STRING,
        "zone": _STRING,
        "start": {**_INSTANT, "description": "the booked start (schedulingTime)"},
        "end": {**_INSTANT, "description": "the booked start plus the duration"},
        "expectedIntensity": {"type": "number", "description": "mean gCO2eq/kWh over the run, as decided"},
        "reason": {**_STRING, "maxLength": REASON_CHARS},
        "gateOpenedAt": _INSTANT,
        "runningSince": {**_INSTANT, "description": "the actual start, as the cloud operator reported it"},
        "endedAt": {**_INSTANT, "description": "when it was recorded Completed or Failed"},
        "reservation": {**_STRING, "description": "the reservation's key in the scheduler's record"},
        "decision": {**_STRING, "description": "the first 12 hex digits of the SHA-256 of the decision"},
    }
    columns = [
        ("Phase", ".status.phase", "string", 0),
        ("Position", ".status.position", "integer", 0),
        ("Provider", ".status.provider", "string", 0),
        ("Region", ".status.region", "string", 0),
        ("Start", ".status.start", "string", 0),
        ("Expected", ".status.expectedIntensity", "number", 0),
        ("Running-Since", ".status.runningSince", "string", 1),
        ("Reason", ".status.reason", "string", 1),
        ("Age", ".metadata.creationTimestamp", "date", 0),
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "plural": PLURAL,
                "singular": "vmplacement",
                "listKind": f"{KIND}List",
                "shortNames": ["vmp"],
                "categories": ["greenops"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {
                            "name": name,
                            "jsonPath": path,
                            "type": typ,
                            **({"priority": priority} if priority else {}),
                            **({"description": "gCO2eq/kWh"} if name == "Expected" else {}),
                        }
                        for name, path, typ, priority in columns
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "The placement and phase of the VmTemplate of the same name",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"vmTemplate": {**_STRING, "description": "its VmTemplate"}},
                                },
                                "status": {"type": "object", "properties": status},
                            },
                        }
                    },
                }
            ],
        },
    }
