"""Signatures and SBOMs: cosign (Go module proxy build) signs each pushed artifact by digest with an
offline key pair and attests its CycloneDX SBOM (syft's, for images); verification fails for any
other key or any other content. No transparency log: it is not reachable here, and an offline key
is the release's trust root (docs/operations/install.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from release.run import Arg, sh, tool

_PLAIN = ("127.0.0.1:", "localhost:")


def _password() -> dict[str, str]:
    # cosign reads the key's password from COSIGN_PASSWORD; a local release's throwaway key has none
    return {"COSIGN_PASSWORD": os.environ.get("COSIGN_PASSWORD", "")}


def _registry_flags(reference: str) -> list[str]:
    return ["--allow-http-registry=true", "--allow-insecure-registry=true"] if reference.startswith(_PLAIN) else []


def generate_key_pair(directory: Path) -> tuple[Path, Path]:
    """A new key pair ``cosign.key`` (encrypted with COSIGN_PASSWORD) and ``cosign.pub`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in ("cosign.key", "cosign.pub"):
        directory.joinpath(old).unlink(missing_ok=True)
    sh("key pair", [tool("cosign"), "generate-key-pair", "--output-key-prefix", directory / "cosign"], env=_password())
    return directory / "cosign.key", directory / "cosign.pub"


def sign(reference: str, key: Path) -> None:
    """Sign ``reference`` (``repo@sha256:...``): the signature is stored beside it in its registry."""
    argv: list[Arg] = [
        tool("cosign"),
        "sign",
        "--yes",
        "--key",
        key,
        "--use-signing-config=false",
        "--tlog-upload=false",
        *_registry_flags(reference),
    ]
    sh(f"signing {reference}", [*argv, reference], env=_password())


def attest_sbom(reference: str, sbom: Path, key: Path) -> None:
    """Attach ``sbom`` (CycloneDX JSON) to ``reference`` as a signed in-toto attestation."""
    argv: list[Arg] = [tool("cosign"), "attest", "--yes", "--key", key, "--type", "cyclonedx", "--predicate", sbom]
    argv += ["--use-signing-config=false", "--tlog-upload=false", *_registry_flags(reference)]
    sh(f"attesting the SBOM of {reference}", [*argv, reference], env=_password())


def verify(reference: str, public_key: Path) -> None:
    """The signature of ``reference`` checks against ``public_key``, or a ReleaseError."""
    argv: list[Arg] = [
        tool("cosign"),
        "verify",
        "--key",
        public_key,
        "--insecure-ignore-tlog=true",
        *_registry_flags(reference),
    ]
    sh(f"verifying {reference}", [*argv, reference])


def verify_sbom(reference: str, public_key: Path) -> str:
    """The attested SBOM's envelope of ``reference``, once its signature checks against ``public_key``."""
    argv: list[Arg] = [tool("cosign"), "verify-attestation", "--key", public_key, "--type", "cyclonedx"]
    argv += ["--insecure-ignore-tlog=true", *_registry_flags(reference)]
    return sh(f"verifying the SBOM of {reference}", [*argv, reference])


def image_sbom(layout: Path, out: Path) -> Path:
    """syft's CycloneDX SBOM of the image in ``layout``: Debian's packages and the venv's."""
    env = {"SYFT_CHECK_FOR_APP_UPDATE": "false"}
    sh(
        f"SBOM of {layout.name}",
        [tool("syft"), "scan", f"oci-dir:{layout}", "-q", "-o", f"cyclonedx-json={out}"],
        env=env,
    )
    return out


def python_sbom(lock: Path, out: Path) -> Path:
    """cyclonedx-bom's SBOM of the locked Python environment (what every greenops venv holds)."""
    cyclonedx = Path(sys.executable).with_name("cyclonedx-py")
    sh(
        "SBOM of the Python environment",
        [cyclonedx, "requirements", lock, "--output-format", "JSON", "--output-file", out],
    )
    return out
