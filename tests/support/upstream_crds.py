"""The upstream CRDs of ../shared/crds as a local API server without their operators can serve them."""

from __future__ import annotations


def local_crd(crd: dict) -> dict:
    """ASO ships its CRDs with ``conversion.strategy: Webhook`` served by the operator itself
    (service azureserviceoperator-webhook-service, CA injected by cert-manager). No operator runs
    here, so every create of a non-storage version (the chart writes v1api20240301/v1api20220301,
    the storage versions are v20250301storage/v20220301storage) fails with "conversion webhook ...
    service not found". Conversion ``None`` lets the API server store what it accepted; the request
    is still validated and pruned against the real schema of the version the chart writes, and the
    test compares what is stored with what was rendered, so nothing can be silently dropped."""
    if (crd["spec"].get("conversion") or {}).get("strategy") == "Webhook":
        crd = dict(crd, spec=dict(crd["spec"], conversion={"strategy": "None"}))
    return crd
