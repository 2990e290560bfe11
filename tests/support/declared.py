"""What a stack program declares: its Kubernetes objects, evaluated under Pulumi mocks with the
stack's own file and secrets. The tls provider's resources are answered with real keys and
certificates, made from their inputs (a CertRequest's names, a LocallySignedCert's CA), so a test
can serve what the platform would serve and trust what it would export.

Used by the dry-run test (a real API server judges every object) and the external-access test
(a real ingress data plane routes by the declared Ingresses).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC

import pulumi
import pytest
import yaml

from tests.components.test_platform_mocks import CREDENTIALS, SECRET_SIG, Mocks
from tests.support.common import REPO

try:  # captured before tests/conftest.py's autouse fixture swaps in its stand-in archive
    from components.operator_bundle import fetch as REAL_FETCH
except ImportError:
    REAL_FETCH = None


# Pulumi's marker for a value not known until apply; under mocks there should be none.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# Component wrappers the provider expands (not expanded under mocks), and Helm releases.
NOT_OBJECTS = {
    "kubernetes:helm.sh/v3:Release": "Helm release (no chart registry reachable)",
    "kubernetes:helm.sh/v4:Chart": "Helm chart (no chart registry reachable)",
    "kubernetes:yaml/v2:ConfigFile": "yaml.v2.ConfigFile (expanded by the provider, not under mocks)",
    "kubernetes:yaml/v2:ConfigGroup": "yaml.v2.ConfigGroup (expanded by the provider, not under mocks)",
}
# Secret values a real stack sets with `pulumi config set --secret` (see the stack files).
STACK_SECRETS = {
    "greenops:kubeconfig": "apiVersion: v1",
    "greenops:mlflowDbPassword": "db-pass",
    "greenops:s3AccessKey": "ak",
    "greenops:s3SecretKey": "sk",
    "greenops:schedulerDbPassword": "sched-db-pass",
    # the scheduler's admin, OPA's token at the scheduler, OPA's query and admin tokens
    **CREDENTIALS,
}


# -- the objects a stack declares -------------------------------------------------------------------
class TlsMocks(Mocks):
    """The platform mocks, with the tls provider's resources made for real from their inputs: a
    key per PrivateKey, a CA per SelfSignedCert, a CSR with the requested DNS names, and a
    certificate signed by the CA a LocallySignedCert names. The API server then judges TLS Secrets
    on real PEM, and a test can serve and verify exactly what the program declares."""

    def __init__(self):
        super().__init__()
        self.outputs: dict[tuple[str, str], dict] = {}  # (type, name) -> outputs

    def new_resource(self, args):
        rid, outs = super().new_resource(args)
        made = _tls(args.typ, reveal(args.inputs)) if args.typ.startswith("tls:") else {}
        outs = {**outs, **made}
        self.outputs[(args.typ, args.name)] = outs
        return [rid, outs]

    def output(self, typ: str) -> dict:
        found = [o for (t, _), o in self.outputs.items() if t == typ]
        assert len(found) == 1, f"{len(found)} resources of type {typ}"
        return found[0]


def _tls(typ: str, inputs: dict) -> dict:
    from datetime import datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    pem = serialization.Encoding.PEM
    now = datetime.now(UTC)

    def name(subject: dict | None) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (subject or {}).get("commonName") or "greenops")])

    def key_of(text: str):
        return serialization.load_pem_private_key(text.encode(), password=None)

    def dated(builder: x509.CertificateBuilder, hours: float) -> x509.CertificateBuilder:
        return (
            builder.serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(hours=hours))
        )

    if typ == "tls:index/privateKey:PrivateKey":
        key = ec.generate_private_key(ec.SECP256R1())
        return {
            "privateKeyPem": key.private_bytes(
                pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ).decode()
        }
    if typ == "tls:index/selfSignedCert:SelfSignedCert":
        key, subject = key_of(inputs["privateKeyPem"]), name(inputs.get("subject"))
        builder = dated(
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key()),
            inputs.get("validityPeriodHours") or 24,
        )
        if inputs.get("isCaCertificate"):
            builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        return {"certPem": builder.sign(key, hashes.SHA256()).public_bytes(pem).decode()}
    if typ == "tls:index/certRequest:CertRequest":
        key = key_of(inputs["privateKeyPem"])
        builder = x509.CertificateSigningRequestBuilder().subject_name(name(inputs.get("subject")))
        if inputs.get("dnsNames"):
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in inputs["dnsNames"]]), critical=False
            )
        return {"certRequestPem": builder.sign(key, hashes.SHA256()).public_bytes(pem).decode()}
    if typ == "tls:index/locallySignedCert:LocallySignedCert":
        csr = x509.load_pem_x509_csr(inputs["certRequestPem"].encode())
        ca = x509.load_pem_x509_certificate(inputs["caCertPem"].encode())
        builder = dated(
            x509.CertificateBuilder().subject_name(csr.subject).issuer_name(ca.subject).public_key(csr.public_key()),
            inputs.get("validityPeriodHours") or 24,
        )
        for ext in csr.extensions:
            builder = builder.add_extension(ext.value, critical=ext.critical)
        return {"certPem": builder.sign(key_of(inputs["caPrivateKeyPem"]), hashes.SHA256()).public_bytes(pem).decode()}
    return {}


def reveal(value):
    """``value`` with every Pulumi secret marker replaced by the value inside it."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return reveal(value["value"])
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    assert value != UNKNOWN, "an input is unknown under mocks: the manifest would be incomplete"
    if isinstance(value, float) and value.is_integer():
        # Pulumi carries every number as a float; the Kubernetes provider writes a whole one as JSON
        # does in Go (1.0 -> 1), which an int32 field such as a printer column's priority needs
        return int(value)
    return value


@dataclass
class Declared:
    stack: str
    objects: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "<type> <name>: why"
    mocks: TlsMocks | None = None  # every resource's inputs and outputs
    helm_namespaces: dict[str, str] = field(default_factory=dict)  # namespace -> release creating it


def evaluate_stack(stack: str) -> Declared:
    """The stack program with its own stack file (every greenops:* key) and its secrets, under mocks."""
    config = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    settings = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    settings.update(STACK_SECRETS)
    m = TlsMocks()
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack=stack, preview=False)
    pulumi.runtime.set_all_config(settings, secret_keys=list(STACK_SECRETS))
    out = Declared(stack, mocks=m)

    @pulumi.runtime.test
    def go():
        from greenops.stack import program

        program.run()

    with pytest.MonkeyPatch.context() as patch:
        _offline_bundles(patch, out)
        go()
    for r in m.resources:
        if not r.typ.startswith("kubernetes:"):
            continue
        inputs = reveal(r.inputs)
        if r.typ == "kubernetes:yaml/v2:ConfigGroup":
            children = config_group_objects(inputs)
            if children:
                out.objects += [manifest(f"kubernetes:{_type_of(c)}", r.name, c) for c in children]
                continue
        if r.typ in NOT_OBJECTS:
            out.skipped.append(f"{r.typ} {r.name}: {NOT_OBJECTS[r.typ]}")
            if r.typ == "kubernetes:helm.sh/v3:Release" and inputs.get("createNamespace"):
                out.helm_namespaces.setdefault(inputs.get("namespace") or "default", r.name)
            continue
        assert not r.typ.endswith("Patch"), f"{r.typ} {r.name}: patch resources are not judged by this harness yet"
        out.objects.append(manifest(r.typ, r.name, inputs))
    return out


def _offline_bundles(patch: pytest.MonkeyPatch, out: Declared) -> None:
    """Config Connector's real pinned operator archive (from the cache, else downloaded), never the
    unit tests' stand-in: the API server must judge upstream's objects. When it cannot be had (no
    network, nothing cached), an empty manifest, and the report says so."""
    try:
        import components.config_connector as kcc
        import components.operator_bundle as bundles
        from components.operator_bundle import BundleDownloadError
    except ImportError:
        return
    real = getattr(kcc, "operator_manifest", None)
    if real is None or REAL_FETCH is None:
        return
    patch.setattr(bundles, "fetch", REAL_FETCH)

    def operator_manifest(pin, *args, **kwargs):
        try:
            return real(pin, *args, **kwargs)
        except BundleDownloadError as exc:
            out.skipped.append(
                f"Config Connector operator manifest: NOT JUDGED, the pinned archive is not cached "
                f"and cannot be downloaded ({exc})"
            )
            return ""

    patch.setattr(kcc, "operator_manifest", operator_manifest)


def config_group_objects(inputs: dict) -> list[dict]:
    """The objects a ConfigGroup is handed literally (``yaml`` text, ``objs``); files are not read."""
    texts = inputs.get("yaml") or []
    texts = [texts] if isinstance(texts, str) else texts
    objs = [d for t in texts for d in yaml.safe_load_all(t) if d]
    objs += [o for o in inputs.get("objs") or [] if isinstance(o, dict)]
    for o in objs:  # a List kind holds its objects in items
        if o.get("kind", "").endswith("List") and "items" in o:
            objs += o["items"]
    return [o for o in objs if not (o.get("kind", "").endswith("List") and "items" in o)]


def _type_of(obj: dict) -> str:
    api = obj["apiVersion"]
    return f"{api if '/' in api else 'core/' + api}:{obj['kind']}"


def manifest(typ: str, name: str, inputs: dict) -> dict:
    """{apiVersion, kind, metadata, ...the rest of the inputs}; the name Pulumi would autoname."""
    _, group_version, kind = typ.split(":")
    group, version = group_version.rsplit("/", 1)
    api_version = version if group == "core" else f"{group}/{version}"
    assert inputs.get("apiVersion", api_version) == api_version and inputs.get("kind", kind) == kind, typ
    metadata = dict(inputs.get("metadata") or {})
    if not metadata.get("name"):
        # Pulumi autonames <resource name>-<8 random chars>; a stable suffix stands in for it.
        metadata["name"] = f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    rest = {k: v for k, v in inputs.items() if k not in ("apiVersion", "kind", "metadata")}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **rest}
