"""AdmissionReviews as the API server sends them to the admission webhook (OPA's POST /), made by
hand for the tests that call OPA directly."""

from __future__ import annotations

from typing import Any


def admission_review(
    uid: str,
    operation: str,
    *,
    group: str = "composition.krateo.io",
    version: str = "v1",
    kind: str = "VmTemplate",
    **request: Any,
) -> dict:
    """An admission.k8s.io/v1 AdmissionReview of an ``operation`` on a ``kind`` object; ``request``
    adds the request's other fields under the API server's names (namespace, name, object,
    oldObject, dryRun), in that order."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "operation": operation,
            **request,
        },
    }
