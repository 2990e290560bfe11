"""The loopback cluster's client certificate authority: the API server trusts it (--client-ca-file),
and a node's kubelet presents a certificate it signed, as ``system:node:<name>`` in
``system:nodes`` (what the Node authorizer and NodeRestriction know a kubelet by)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = dt.timedelta(days=2)  # a throw-away cluster's lifetime, with room to spare


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True)
class ClientCertificate:
    cert: Path
    key: Path


class Authority:
    """A CA kept in ``folder`` (ca.crt, and its key, readable by root only)."""

    def __init__(self, folder: Path, name: str = "greenops-loopback-ca") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path = folder / "ca.crt"
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue_client(self, common_name: str, organizations: tuple[str, ...], stem: str) -> ClientCertificate:
        """A client certificate for ``common_name`` in ``organizations``, written as <stem>.crt/.key."""
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([*names, x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        out = ClientCertificate(self.folder / f"{stem}.crt", self.folder / f"{stem}.key")
        out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        out.key.write_bytes(_key_pem(key))
        out.key.chmod(0o600)
        return out
