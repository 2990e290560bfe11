"""OCI image layouts packed with umoci (Debian's): layers added as reproducible tars, the config
written with fixed times, unreferenced blobs collected. The same inputs give the same digest."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from release.run import sh
from release.spec import NONROOT, ImageSpec, Source


@dataclass(frozen=True)
class Layer:
    tar: Path
    created_by: str  # the history entry: what made this layer


@dataclass(frozen=True)
class Built:
    """An image in an OCI layout directory: ``<layout>:<tag>``, and its manifest's digest."""

    spec: ImageSpec
    layout: Path
    digest: str

    @property
    def reference(self) -> str:
        return f"{self.layout}:{self.spec.tag}"

    def size(self) -> int:
        """Bytes of its compressed layers and config, as a registry stores them."""
        manifest = json.loads(blob(self.layout, self.digest))
        return int(manifest["config"]["size"]) + sum(int(layer["size"]) for layer in manifest["layers"])


def blob(layout: Path, digest: str) -> bytes:
    algorithm, hex_ = digest.split(":", 1)
    return layout.joinpath("blobs", algorithm, hex_).read_bytes()


def pack(spec: ImageSpec, layers: list[Layer], layout: Path, source: Source, user: int = NONROOT) -> Built:
    """A fresh layout at ``layout`` holding ``spec`` built from ``layers``, bottom first."""
    if layout.exists():
        shutil.rmtree(layout)
    image = f"{layout}:{spec.tag}"
    created = source.created
    sh("oci layout", ["umoci", "init", "--layout", layout])
    sh("oci image", ["umoci", "new", "--image", image])
    for layer in layers:
        history = ["--history.created", created, "--history.created_by", layer.created_by]
        sh(f"layer {layer.tar.name}", ["umoci", "raw", "add-layer", "--image", image, *history, layer.tar])
    sh("oci config", _config(image, spec, source, user))
    sh("oci gc", ["umoci", "gc", "--layout", layout])
    return Built(spec, layout, manifest_digest(layout, spec.tag))


def derive(base: Built, spec: ImageSpec, layout: Path, source: Source, user: int = NONROOT) -> Built:
    """A fresh layout at ``layout`` holding ``spec`` over ``base``'s layers, none added: the same
    files under another entrypoint (the base's variables are kept unless ``spec`` sets them)."""
    if layout.exists():
        shutil.rmtree(layout)
    shutil.copytree(base.layout, layout)
    sh("oci config", [*_config(f"{layout}:{base.spec.tag}", spec, source, user), "--tag", spec.tag])
    if spec.tag != base.spec.tag:
        sh("oci untag", ["umoci", "rm", "--image", f"{layout}:{base.spec.tag}"])
    sh("oci gc", ["umoci", "gc", "--layout", layout])
    return Built(spec, layout, manifest_digest(layout, spec.tag))


def _config(image: str, spec: ImageSpec, source: Source, user: int) -> list[str]:
    """umoci's config of ``image`` as ``spec`` says, with the source's fixed time."""
    created = source.created
    config = ["umoci", "config", "--image", image, "--no-history", "--created", created, "--author", "greenops"]
    config += ["--config.user", f"{user}:{user}", "--config.workingdir", spec.workdir]
    config += [f"--config.entrypoint={part}" for part in spec.entrypoint]
    config += [f"--config.cmd={part}" for part in spec.cmd] or ["--clear=config.cmd"]
    config += [f"--config.env={k}={v}" for k, v in spec.env]
    config += [f"--config.label={k}={v}" for k, v in spec.labels(source.revision, created).items()]
    return config


def manifest_digest(layout: Path, tag: str) -> str:
    index = json.loads(layout.joinpath("index.json").read_text())
    for entry in index["manifests"]:
        if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            digest: str = entry["digest"]
            # what the index says is checked against the bytes: a layout edited by hand is refused
            if "sha256:" + hashlib.sha256(blob(layout, digest)).hexdigest() != digest:
                raise ValueError(f"{layout}: manifest {digest} does not match its content")
            return digest
    raise ValueError(f"{layout}: no image tagged {tag!r}")
