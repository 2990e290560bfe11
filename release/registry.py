"""A real OCI registry on loopback (Debian's docker-registry: CNCF distribution), and moving
artifacts in and out of registries with skopeo (Debian's), by digest."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from greenops.local.controlplane import free_port
from release.run import ReleaseError, sh


@contextmanager
def local_registry(storage: Path) -> Iterator[str]:
    """A registry serving ``storage`` on 127.0.0.1 over plain HTTP (loopback only): its host:port."""
    storage.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="registry-") as conf_dir:
        config = Path(conf_dir) / "config.yml"
        config.write_text(
            json.dumps(
                {
                    "version": 0.1,
                    "log": {"level": "warn"},
                    "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
                    "http": {"addr": f"127.0.0.1:{port}"},
                }
            )
        )
        log = open(Path(conf_dir) / "registry.log", "w")  # noqa: SIM115 - closed below, after the server
        server = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
        try:
            host = f"127.0.0.1:{port}"
            _wait(host, server, Path(log.name))
            yield host
        finally:
            server.terminate()
            server.wait(timeout=10)
            log.close()


def _wait(host: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise ReleaseError(f"registry exited {server.returncode}: {log.read_text()[-1000:]}")
        try:
            if httpx.get(f"http://{host}/v2/", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise ReleaseError(f"registry on {host} did not answer in 30 s")


def _tls(reference: str, flag: str) -> list[str]:
    # plain HTTP only to a registry on loopback; TLS is verified everywhere else
    return [f"--{flag}=false"] if reference.startswith(("127.0.0.1:", "localhost:")) else []


def push(layout_ref: str, reference: str) -> None:
    """``oci:<layout>:<tag>`` to ``docker://<reference>``, byte for byte (the digest stays)."""
    argv = ["skopeo", "copy", "--quiet", "--preserve-digests", *_tls(reference, "dest-tls-verify")]
    sh(f"push {reference}", [*argv, f"oci:{layout_ref}", f"docker://{reference}"])


def push_pinned(entry: dict[str, Any], to: str, name: str) -> str:
    """A release manifest's ``entry`` (layout, tag, digest) pushed as ``to/name:tag``; the
    reference by digest that pulls exactly what was built."""
    push(f"{entry['layout']}:{entry['tag']}", f"{to}/{name}:{entry['tag']}")
    return f"{to}/{name}@{entry['digest']}"


def remote_digest(reference: str) -> str:
    """The sha256 of the manifest the registry serves for ``reference``, computed from its bytes."""
    raw = sh(
        f"manifest of {reference}",
        ["skopeo", "inspect", "--raw", *_tls(reference, "tls-verify"), f"docker://{reference}"],
    )
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


def pull(reference: str, layout_ref: str) -> None:
    """``docker://<reference>`` (by digest) into ``oci:<layout>:<tag>``; skopeo checks every blob's digest."""
    argv = ["skopeo", "copy", "--quiet", "--preserve-digests", *_tls(reference, "src-tls-verify")]
    sh(f"pull {reference}", [*argv, f"docker://{reference}", f"oci:{layout_ref}"])
