"""The cluster path on a local control plane: the VmTemplate CRD (as Krateo would generate it from
the chart's schema), a TLS identity for OPA, the webhook's own OPA process and the credential the
API server presents to it, the mutating webhook pointing at it by URL, and the namespaces copied
into it as kube-mgmt would."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import secrets
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from greenops.charts import CHART_SOURCE
from greenops.local.controlplane import free_port
from greenops.local.opa import OpaServer
from greenops.policies.webhook import TENANT_LABEL, webhook_configuration
from greenops.policies.webhook import VMTEMPLATE_GROUP as GROUP
from greenops.policies.webhook import VMTEMPLATE_VERSION as VERSION

if TYPE_CHECKING:
    from greenops.local.controlplane import LocalControlPlane


@dataclass(frozen=True)
class WebhookAccess:
    """Where the API server calls the webhook's own OPA process (a loopback port chosen before
    either starts, since the API server reads its webhook credentials once, at start) and the bearer
    token it presents there. ``LocalControlPlane(webhook_tokens=access.tokens)`` configures the API
    server; ``access.opa(...)`` is the OPA process that checks the token."""

    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(24))

    @property
    def tokens(self) -> dict[str, str]:
        return {f"127.0.0.1:{self.port}": self.token}

    def opa(self, **kw: Any) -> OpaServer:
        """The webhook's OPA (admission reviews only); ``kw`` sets OpaServer's other fields."""
        return OpaServer(serves="webhook", port=self.port, webhook_token=self.token, **kw)


@dataclass(frozen=True)
class TlsIdentity:
    ca_pem: bytes
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class ServingPems:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def serving_pems(dns_names: tuple[str, ...] = ("localhost",), ips: tuple[str, ...] = ("127.0.0.1",)) -> ServingPems:
    """A throw-away CA and a serving certificate for ``dns_names`` and ``ips``, as PEM."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "greenops-local-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (ips or dns_names)[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ServingPems(
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def loopback_tls(folder: Path) -> TlsIdentity:
    """A throw-away CA and a serving certificate for 127.0.0.1 / localhost, written to ``folder``."""
    pems = serving_pems()
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "tls.crt", folder / "tls.key"
    cert_file.write_bytes(pems.cert_pem)
    key_file.write_bytes(pems.key_pem)
    key_file.chmod(0o600)
    return TlsIdentity(pems.ca_pem, cert_file, key_file)


# The schema keywords carried into the CRD as they are: the string rules (pattern, maxLength, the
# reserved names under "not") must reach the API server, which checks every VmTemplate with them.
# So must the workload contract's bounds and forms (minimum, maximum, minLength, distinct items), and an
# object field's own fields (run.script), which a structural schema would otherwise prune.
_CRD_KEYWORDS = (
    "description", "enum", "minimum", "maximum", "pattern", "items", "minLength", "maxLength", "maxItems", "not",
    "properties", "required",
)  # fmt: skip


def _structural(schema: Any) -> Any:
    """A nested schema as a structural CRD schema takes it: ``additionalProperties`` beside
    ``properties`` is refused there (unknown fields are pruned instead), and a list of objects keyed
    by name is a map list."""
    if isinstance(schema, dict):
        out = {k: _structural(v) for k, v in schema.items() if k != "additionalProperties"}
        items = schema.get("items") or {}
        if schema.get("type") == "array" and "name" in (items.get("required") or []):
            # a list keyed by name (run.env): the API server refuses a name given twice, as the model does
            out["x-kubernetes-list-type"], out["x-kubernetes-list-map-keys"] = "map", ["name"]
        return out
    return schema


def vmtemplate_crd() -> dict[str, Any]:
    """The VmTemplate CRD as Krateo core-provider generates it from values.schema.json."""
    schema = json.loads((CHART_SOURCE / "values.schema.json").read_text())
    props: dict[str, dict[str, Any]] = {}
    for name, prop in schema["properties"].items():
        p = {k: _structural(v) if k in ("properties", "items") else v for k, v in prop.items() if k in _CRD_KEYWORDS}
        types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        if len(types) > 1:
            p["x-kubernetes-int-or-string"] = True
        else:
            p["type"] = types[0]
        if "exclusiveMinimum" in prop:
            p["minimum"], p["exclusiveMinimum"] = prop["exclusiveMinimum"], True
        if prop.get("uniqueItems"):  # a structural schema forbids uniqueItems; a set list refuses duplicates
            p["x-kubernetes-list-type"] = "set"
        props[name] = p
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"vmtemplates.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": "VmTemplate",
                "plural": "vmtemplates",
                "singular": "vmtemplate",
                "listKind": "VmTemplateList",
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "required": schema["required"], "properties": props},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


def install_admission(
    cp: LocalControlPlane,
    opa_url: str,
    ca_pem: bytes,
    namespaces: Iterable[str] | Mapping[str, str | None] = (),
    token: str | None = None,
) -> None:
    """The VmTemplate CRD, the webhook to OPA and the given namespaces, on a local control plane.

    A namespace given by name alone is its own tenant (label greenops.io/tenant=<name>); a mapping
    gives each namespace's tenant, None for no label. The namespaces are then copied into OPA, with
    ``token``, its admin token (kube-mgmt's).
    """
    tenants = dict(namespaces) if isinstance(namespaces, Mapping) else {ns: ns for ns in namespaces}
    cp.create_crd(vmtemplate_crd())
    with cp.client() as k:
        k.post(
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
            json=webhook_configuration({"url": f"{opa_url.rstrip('/')}/"}, base64.b64encode(ca_pem).decode()),
        ).raise_for_status()
        for ns, tenant in tenants.items():
            k.post("/api/v1/namespaces", json=namespace_manifest(ns, tenant))
    replicate_namespaces(cp, opa_url, ca_pem, token)


def namespace_manifest(name: str, tenant: str | None) -> dict[str, Any]:
    """A Namespace whose VmTemplates belong to ``tenant`` (None: no label, the default tenant)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {TENANT_LABEL: tenant} if tenant is not None else {}},
    }


def replicate_namespaces(
    cp: LocalControlPlane, opa_url: str, ca_pem: bytes | None = None, token: str | None = None
) -> None:
    """Copy every Namespace into OPA's data.kubernetes.namespaces, as kube-mgmt's
    --replicate-cluster=v1/namespaces does in a cluster (here once: call again after a change)."""
    with cp.client() as k:
        r = k.get("/api/v1/namespaces")
        r.raise_for_status()
        put_namespaces(opa_url, {i["metadata"]["name"]: i for i in r.json()["items"]}, ca_pem, token)


def put_namespaces(
    opa_url: str, namespaces: dict[str, dict[str, Any]], ca_pem: bytes | None = None, token: str | None = None
) -> None:
    """Replace OPA's data.kubernetes.namespaces (name -> Namespace) as kube-mgmt writes it.
    ``token``: OPA's admin token, when OPA requires one."""
    verify = ssl.create_default_context(cadata=ca_pem.decode()) if ca_pem else True
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(verify=verify, timeout=10, headers=headers) as opa:
        opa.put(f"{opa_url.rstrip('/')}/v1/data/kubernetes/namespaces", json=namespaces).raise_for_status()
