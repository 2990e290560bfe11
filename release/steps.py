"""The release's steps, each reading and extending ``<out>/release.json``: what was built (name,
tag, digest, size), where it was pushed, and the pins written. ``all`` runs them in order."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from greenops import __version__
from release import artifacts, images, pins, python_env, registry, sign
from release.oci import Built, manifest_digest
from release.run import ReleaseError, sh, tool
from release.spec import DEFAULT_REPOSITORY, source

IMAGES = ("greenops", "opa", "bundle-init", "mlserver-forecasters")
# built on request only (--only): what the real node's suites run where no upstream image can be had
EXTRA_IMAGES = ("postgresql", "kube-mgmt-standin")
# an image made from another's layers, which is then built first
DERIVED_FROM = {"kube-mgmt-standin": "greenops"}
MANIFEST = "release.json"


def _load(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    if not path.exists():
        raise ReleaseError(f"{path} is missing: run `python -m release build` first")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _save(out: Path, manifest: dict[str, Any]) -> None:
    out.joinpath(MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def lock() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wheel, _ = python_env.build_dist(Path(tmp), source().epoch)
        python_env.write_lock(
            [str(wheel)], python_env.LOCK, "# `python -m release lock` from pyproject.toml's pins (do not edit)"
        )
    python_env.write_lock(
        ["-r", str(images.MLSERVER_REQUIREMENTS)],
        images.MLSERVER_LOCK,
        "# `python -m release lock` from tools/mlserver/requirements.txt (do not edit)",
    )


def build(out: Path, only: list[str] | None = None, refresh_base: bool = False) -> dict[str, Any]:
    """Every artifact into ``out``; ``release.json`` says what each is."""
    src = source()
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"version": __version__, "revision": src.revision, "epoch": src.epoch, "images": {}}
    if src.dirty:
        manifest["dirty"] = True  # built from uncommitted changes: the revision alone does not name it
    started = time.monotonic()
    wheel, sdist = python_env.build_dist(out / "dist", src.epoch)
    manifest["dist"] = {p.name: _sha256(p) for p in (wheel, sdist)}
    makers = {
        "greenops": lambda: images.build_greenops(out, wheel, src, refresh_base),
        "opa": lambda: images.build_opa(out, src, _opa_version()),
        "bundle-init": lambda: images.build_bundle_init(out, src),
        "mlserver-forecasters": lambda: images.build_mlserver(out, src),
        "postgresql": lambda: images.build_postgresql(out, src),
        "kube-mgmt-standin": lambda: images.build_kube_mgmt_standin(out, made["greenops"], src),
    }
    made: dict[str, Built] = {}
    wanted = list(only or IMAGES)
    for name in [base for name in wanted if (base := DERIVED_FROM.get(name)) and base not in wanted] + wanted:
        began = time.monotonic()
        made[name] = makers[name]()
        manifest["images"][name] = _entry(made[name], time.monotonic() - began)
    policy = artifacts.policy_bundle(out, src)
    manifest["policy"] = _entry(policy, 0.0)
    chart = artifacts.package_chart(out / "chart", src.epoch)
    manifest["chart"] = {"package": chart.name, "sha256": _sha256(chart)}
    manifest["build_seconds"] = round(time.monotonic() - started, 1)
    _save(out, manifest)
    return manifest


def _opa_version() -> str:
    said = sh("opa version", [tool("opa"), "version"])
    return next(line.split(": ", 1)[1] for line in said.splitlines() if line.startswith("Version: "))


def _entry(built: Built, seconds: float) -> dict[str, Any]:
    return {
        "tag": built.spec.tag,
        "digest": built.digest,
        "size": built.size(),
        "layout": str(built.layout),
        "pin": built.spec.pin,
        "seconds": round(seconds, 1),
    }


def _oci_artifacts(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {**manifest["images"], artifacts.POLICY.name: manifest["policy"]}


def publish(out: Path, to: str) -> dict[str, Any]:
    """Push every OCI artifact to registry ``to``, pull each back by digest and check it."""
    manifest = _load(out)
    published: dict[str, str] = {}
    for name, entry in _oci_artifacts(manifest).items():
        by_digest = registry.push_pinned(entry, to, name)
        served = registry.remote_digest(by_digest)
        if served != entry["digest"]:
            raise ReleaseError(f"{name}: the registry serves {served} for {by_digest}")
        with tempfile.TemporaryDirectory() as tmp:
            registry.pull(by_digest, f"{tmp}/pulled:check")
            pulled = manifest_digest(Path(tmp) / "pulled", "check")
        if pulled != entry["digest"]:
            raise ReleaseError(f"{name}: pulled back {pulled}, built {entry['digest']}")
        published[name] = by_digest
    chart_digest = artifacts.push_chart(out / "chart" / manifest["chart"]["package"], to)
    manifest["chart"]["digest"] = chart_digest
    published["chart"] = f"{to}/charts/vm-template@{chart_digest}"
    manifest["published"] = {"registry": to, "references": published}
    _save(out, manifest)
    return manifest


def _published(out: Path, to: str) -> dict[str, Any]:
    manifest = _load(out)
    if manifest.get("published", {}).get("registry") != to:
        raise ReleaseError(
            f"nothing of this build is published to {to}: run `python -m release publish --registry {to}`"
        )
    return manifest


def sign_all(out: Path, to: str, key: Path) -> None:
    """Sign every published artifact; attest each image's SBOM (syft) to it."""
    manifest = _published(out, to)
    sboms = out / "sbom"
    sboms.mkdir(exist_ok=True)
    sign.python_sbom(python_env.LOCK, sboms / "python-environment.cdx.json")
    references = manifest["published"]["references"]
    for name, reference in references.items():
        sign.sign(reference, key)
        if name in manifest["images"]:
            sbom = sign.image_sbom(Path(manifest["images"][name]["layout"]), sboms / f"{name}.cdx.json")
            sign.attest_sbom(reference, sbom, key)


def verify_all(out: Path, to: str, public_key: Path) -> None:
    manifest = _published(out, to)
    for name, reference in manifest["published"]["references"].items():
        sign.verify(reference, public_key)
        if name in manifest["images"]:
            sign.verify_sbom(reference, public_key)


def _chosen(manifest: dict[str, Any], repository: str) -> dict[str, str]:
    return {
        entry["pin"]: f"{repository}/{name}:{entry['tag']}@{entry['digest']}"
        for name, entry in manifest["images"].items()
        if entry["pin"]
    }


def pin(out: Path, repository: str, versions: Path = pins.VERSIONS_FILE) -> dict[str, str]:
    """Each built image's ``repository/name:tag@digest`` into ``versions`` (components/versions.yaml)."""
    manifest = _load(out)
    chosen = _chosen(manifest, repository)
    pins.write_pins(chosen, versions)
    manifest["pins"] = chosen
    _save(out, manifest)
    return chosen


def pin_mismatches(out: Path, repository: str, versions: Path = pins.VERSIONS_FILE) -> list[str]:
    """``entry: pinned X, built Y`` for each of our images whose pin is not what this build made."""
    return [
        f"{entry}: pinned {pinned}, built {reference}"
        for entry, reference in _chosen(_load(out), repository).items()
        if (pinned := pins.read_pin(entry, versions)) != reference
    ]


def run(command: str, args: argparse.Namespace) -> None:
    out: Path = args.out
    if command == "lock":
        lock()
    elif command == "build":
        build(out, args.only, args.refresh_base)
    elif command == "publish":
        publish(out, _required(args.registry))
    elif command == "sign":
        sign_all(out, _required(args.registry), _required(args.key))
    elif command == "verify":
        verify_all(out, _required(args.registry), _required(args.key))
    elif command == "pin":
        pin(out, args.repository or args.registry or DEFAULT_REPOSITORY)
    else:
        release_all(out, args)


def _required(value: Any) -> Any:
    if value is None:
        raise ReleaseError("this step needs --registry (and sign/verify --key)")
    return value


def release_all(out: Path, args: argparse.Namespace) -> None:
    manifest = build(out, args.only)
    with ExitStack() as stack:
        to = args.registry or f"{stack.enter_context(registry.local_registry(out / 'registry'))}/greenops-platform"
        publish(out, to)
        key = args.key
        if key is None:
            key, public = sign.generate_key_pair(out / "keys")
        else:
            public = key.with_suffix(".pub")
        sign_all(out, to, key)
        verify_all(out, to, public)
    chosen = pin(out, args.repository or args.registry or DEFAULT_REPOSITORY)
    for name, entry in _load(out)["images"].items():
        print(
            f"{name:22} {entry['tag']:16} {entry['digest']}  {entry['size'] / 1e6:7.1f} MB  {entry['seconds']:6.1f} s"
        )
    for entry, reference in chosen.items():
        print(f"pinned {entry}: {reference}")
    if manifest.get("dirty"):
        print("built from uncommitted changes: the pins name images no commit rebuilds")
    shutil.rmtree(out / "registry", ignore_errors=True) if args.registry is None else None
