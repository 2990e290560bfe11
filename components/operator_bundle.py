"""One YAML manifest out of a pinned upstream release archive, for operators that publish no chart
and no plain-YAML asset (Config Connector: its operator ships only inside ``release-bundle.tar.gz``).

The archive is downloaded once, verified against the sha256 pinned in ``components/versions.yaml``
and kept in a content-addressed cache (``$GREENOPS_CACHE_DIR``, else ``$XDG_CACHE_HOME/greenops``,
else ``~/.cache/greenops``; under ``bundles/<sha256>.tar.gz``). A cached file is verified again on
every read, so a corrupted one is fetched anew. Air-gapped: put the archive at that path by hand.
Every failure is a named ``OperatorBundleError`` (a ``pulumi.RunError``: one line, no traceback).
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

import httpx
import pulumi
import yaml

from components.pins import SHA256, OperatorBundle


class OperatorBundleError(pulumi.RunError):
    """The pinned operator bundle cannot be used; the message names the archive and the reason."""


class BundleDownloadError(OperatorBundleError):
    pass


class BundleChecksumError(OperatorBundleError):
    pass


class BundleLayoutError(OperatorBundleError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("GREENOPS_CACHE_DIR")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "greenops"
    return Path(root) / "bundles"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(
    url: str,
    sha256: str,
    *,
    cache: Path | None = None,
    transport: httpx.BaseTransport | None = None,
    timeout: float = 60.0,
) -> bytes:
    """The archive's bytes, from the cache when intact, else downloaded; never returned unverified."""
    if not SHA256.match(sha256 or ""):
        raise BundleChecksumError(
            f"{url}: no valid sha256 pinned ({sha256!r}); pin the archive's sha256 "
            "next to its URL in components/versions.yaml"
        )
    path = (cache or cache_dir()) / f"{sha256}.tar.gz"
    if path.is_file():
        data = path.read_bytes()
        if _sha256(data) == sha256:
            return data
        path.unlink()  # corrupted or truncated: fetch it again
    try:
        with httpx.Client(transport=transport, timeout=timeout, follow_redirects=True) as client:
            response = client.get(url)
    except httpx.HTTPError as exc:
        raise BundleDownloadError(f"{url}: download failed: {exc}") from None
    if response.status_code != 200:
        raise BundleDownloadError(f"{url}: download failed: HTTP {response.status_code}")
    data = response.content
    actual = _sha256(data)
    if actual != sha256:
        raise BundleChecksumError(
            f"{url}: sha256 mismatch: pinned {sha256}, downloaded {actual}; "
            "refusing to apply it (a re-published or tampered archive, or a wrong pin)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".partial-", delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)  # atomic: a concurrent run reads the whole archive or none
    return data


def extract_manifest(archive: bytes, member: str, source: str) -> str:
    """The text of ``member`` (a path inside the archive), checked to be Kubernetes YAML."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            # upstream archives may or may not prefix their paths with "./"
            found = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            info = found.get(member.removeprefix("./"))
            if info is None:
                raise BundleLayoutError(f"{source}: no {member} in the archive; it holds: {', '.join(sorted(found))}")
            raw = tar.extractfile(info).read()
    except tarfile.TarError as exc:
        raise BundleLayoutError(f"{source}: not a tar archive: {exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(raw.decode("utf-8")) if d is not None]
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BundleLayoutError(f"{source}: {member} is not YAML: {type(exc).__name__}") from None
    if not docs or not all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") for d in docs):
        raise BundleLayoutError(
            f"{source}: {member} is not a Kubernetes manifest (every document needs apiVersion and kind)"
        )
    return raw.decode("utf-8")


def operator_manifest(
    bundle: OperatorBundle | Mapping[str, str],
    *,
    cache: Path | None = None,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """The operator's YAML a pin names: the member ``operator_manifest`` of the archive at
    ``operator_bundle``, once the archive matches ``sha256``. A mapping with those keys (a pin written
    out by hand, e.g. the Autopilot variant tried before it is committed) is validated as one first;
    other keys in it, such as ``version``, are not needed here."""
    if not isinstance(bundle, OperatorBundle):
        bundle = OperatorBundle.model_validate(bundle, extra="ignore")
    archive = fetch(bundle.operator_bundle, bundle.sha256, cache=cache, transport=transport)
    return extract_manifest(archive, bundle.operator_manifest, bundle.operator_bundle)
