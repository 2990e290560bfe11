"""Each image's build: its root filesystem's parts as layers, packed by release.oci."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from release import python_env
from release.cache import cached, key_of
from release.layers import tar_layer
from release.oci import Built, Layer, derive, pack
from release.rootfs import debian_base
from release.run import PROJECT, ReleaseError, sh, tool
from release.spec import (
    DEBIAN_BASE_DATE,
    GREENOPS,
    GREENOPS_VENV,
    KUBE_MGMT_STANDIN,
    MLSERVER_VENV,
    NONROOT,
    POSTGRESQL,
    POSTGRESQL_ENTRYPOINT,
    POSTGRESQL_PACKAGES,
    Source,
    bundle_init_spec,
    mlserver_spec,
    opa_spec,
)

# what the bundle-init container runs (sh -c "mkdir -p ... && cp ..."), and two to look with
BUSYBOX_APPLETS = ("sh", "cp", "mkdir", "ls", "cat")
MLSERVER_REQUIREMENTS = PROJECT / "tools" / "mlserver" / "requirements.txt"
MLSERVER_LOCK = PROJECT / "release" / "mlserver.lock"


@contextmanager
def _scratch(work: Path, name: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _copy_rootfs(base: Path, to: Path, linked: bool = False) -> Path:
    """A copy of ``base``'s rootfs at ``to``. ``linked``: hard links, no space and no time, for a
    copy that only gains new files (pip installing a distribution not yet in the venv creates each
    of its files; nothing already there is written, so the cached tree is never changed)."""
    sh("copy of the root filesystem", ["cp", "-al" if linked else "-a", base / "rootfs", to])
    return to


def _with_parents(members: list[str], stop: str) -> list[str]:
    """``members`` and each directory above them, up to and including ``stop``."""
    out = set(members)
    for member in members:
        for parent in PurePosixPath(member).parents:
            if len(parent.parts) < len(PurePosixPath(stop).parts):
                break
            out.add(str(parent))
    return sorted(out)


# Layers made from cached trees (the Debian base, the locked venvs) carry the base date, not the
# commit's: they depend on the base and the lock only, so every commit's images share them.
def _base_layer(base: Path, work: Path) -> Layer:
    return Layer(tar_layer(base / "rootfs", work / "debian.tar", DEBIAN_BASE_DATE), "mmdebstrap bookworm minbase")


def build_greenops(work: Path, wheel: Path, source: Source, refresh_base: bool = False) -> Built:
    """Debian + a venv of the locked dependencies (one layer, cached) + the greenops wheel (one layer)."""
    epoch = source.epoch
    base = debian_base(refresh_base)
    lock = python_env.LOCK

    def deps(out: Path) -> None:
        rootfs = _copy_rootfs(base, out / "rootfs")
        house = python_env.wheelhouse(lock, out / "wheelhouse")
        python_env.install_venv(
            rootfs, GREENOPS_VENV, house, DEBIAN_BASE_DATE, "--require-hashes", "-r", f"/tmp/wheelhouse/{lock.name}"
        )
        _keep_only_pip(house)

    # the lock is copied into the wheelhouse, which the chroot sees as /tmp/wheelhouse
    def deps_with_lock(out: Path) -> None:
        out.joinpath("wheelhouse").mkdir()
        shutil.copy(lock, out / "wheelhouse" / lock.name)
        deps(out)

    venv = cached("greenops-deps", key_of([base.name, lock.read_bytes()]), deps_with_lock)
    with _scratch(work, "greenops") as scratch:
        rootfs = _copy_rootfs(venv, scratch / "rootfs", linked=True)
        house = scratch / "wheelhouse"
        house.mkdir()
        shutil.copy(wheel, house / wheel.name)
        shutil.copy(venv / "wheelhouse" / next(p.name for p in (venv / "wheelhouse").glob("pip-*.whl")), house)
        python_env.install_venv(rootfs, GREENOPS_VENV, house, epoch, "--no-deps", f"/tmp/wheelhouse/{wheel.name}")
        app = python_env.installed_files(rootfs, GREENOPS_VENV, "greenops-platform")
        site = f"{GREENOPS_VENV.lstrip('/')}/lib/python3.11/site-packages"
        deps_layer = tar_layer(
            venv / "rootfs", scratch / "deps.tar", DEBIAN_BASE_DATE, _venv_members(venv / "rootfs", GREENOPS_VENV)
        )
        layers = [
            _base_layer(base, scratch),
            Layer(deps_layer, f"python -m venv {GREENOPS_VENV} && pip install --require-hashes -r requirements.lock"),
            Layer(
                tar_layer(rootfs, scratch / "app.tar", epoch, _with_parents(app, site)),
                f"pip install --no-deps {wheel.name}",
            ),
        ]
        return pack(GREENOPS, layers, work / "oci" / GREENOPS.name, source)


def _keep_only_pip(house: Path) -> None:
    """The wheelhouse, once installed, down to pip's wheel (the app layer's install runs it)."""
    for wheel in house.iterdir():
        if not wheel.name.startswith("pip-"):
            wheel.unlink()


def _venv_members(rootfs: Path, venv: str) -> list[str]:
    """Every path of ``venv`` (and its parents) in ``rootfs``, relative to it."""
    top = rootfs / venv.lstrip("/")
    members = [str(p.relative_to(rootfs)) for p in [top, *top.rglob("*")]]
    return _with_parents(members, PurePosixPath(venv.lstrip("/")).parts[0])


def _passwd(root: Path) -> None:
    """/etc/passwd and /etc/group naming the one user, for tools that look their user up."""
    etc = root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    etc.joinpath("passwd").write_text(
        f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{NONROOT}:{NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n"
    )
    etc.joinpath("group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
    for tmp in (root / "tmp", root / "home" / "nonroot"):
        tmp.mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "home" / "nonroot").chmod(0o755)


def build_opa(work: Path, source: Source, opa_version: str) -> Built:
    """The pinned static OPA (tools/install.sh's build), Debian's CA certificates, one user."""
    binary = Path(tool("opa"))
    if not binary.exists():
        raise ReleaseError("opa is not built: run tools/install.sh opa")
    base = debian_base()
    with _scratch(work, "opa") as scratch:
        root = scratch / "root"
        _passwd(root)
        certs = root / "etc" / "ssl" / "certs"
        certs.mkdir(parents=True)
        shutil.copy(base / "rootfs" / "etc" / "ssl" / "certs" / "ca-certificates.crt", certs)
        shutil.copy(binary.resolve(), root / "opa")
        (root / "opa").chmod(0o755)
        layer = Layer(tar_layer(root, scratch / "opa.tar", source.epoch), "opa (tools/install.sh), CA certificates")
        return pack(opa_spec(opa_version), [layer], work / "oci" / "opa", source)


def busybox_package_version() -> str:
    """The Debian version apt installs, e.g. 1:1.35.0-4+deb12u1+b1."""
    out = sh("busybox-static version", ["apt-cache", "show", "--no-all-versions", "busybox-static"])
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("Version: "))


def upstream(debian_version: str) -> str:
    return debian_version.split(":", 1)[-1].split("-", 1)[0]  # 1:1.35.0-4+deb12u1 -> 1.35.0


def build_bundle_init(work: Path, source: Source) -> Built:
    """Debian's busybox-static: ``sh``, ``mkdir`` and ``cp``, all the init container runs."""
    version = busybox_package_version()

    def download(out: Path) -> None:
        sh(
            "busybox-static package",
            ["apt-get", "download", "-q", "-o", 'Acquire::Retries="5"', "busybox-static"],
            cwd=out,
        )

    # the package of the version apt names, downloaded once
    (deb,) = cached("busybox-static", key_of([version]), download).glob("busybox-static_*.deb")
    with _scratch(work, "bundle-init") as scratch:
        unpacked = scratch / "deb"
        sh("busybox-static unpack", ["dpkg-deb", "-x", deb, unpacked])
        root = scratch / "root"
        _passwd(root)
        (root / "bin").mkdir()
        shutil.copy(unpacked / "bin" / "busybox", root / "bin" / "busybox")
        for applet in BUSYBOX_APPLETS:
            (root / "bin" / applet).symlink_to("busybox")
        copyright_ = unpacked / "usr" / "share" / "doc" / "busybox-static" / "copyright"
        (root / "usr" / "share" / "doc" / "busybox-static").mkdir(parents=True)
        shutil.copy(copyright_, root / "usr" / "share" / "doc" / "busybox-static")
        layer = Layer(tar_layer(root, scratch / "busybox.tar", source.epoch), f"busybox-static ({deb.name})")
        return pack(bundle_init_spec(upstream(version)), [layer], work / "oci" / "bundle-init", source)


def mlserver_version() -> str:
    for line in MLSERVER_REQUIREMENTS.read_text().splitlines():
        if line.startswith("mlserver=="):
            return line.split("==", 1)[1].strip()
    raise ReleaseError(f"{MLSERVER_REQUIREMENTS}: no mlserver== pin")


def build_mlserver(work: Path, source: Source) -> Built:
    """Debian + MLServer and its MLflow runtime, from release/mlserver.lock (the forecasters' pins)."""
    base = debian_base()
    lock = MLSERVER_LOCK

    def make(out: Path) -> None:
        rootfs = _copy_rootfs(base, out / "rootfs")
        house = python_env.wheelhouse(lock, out / "wheelhouse")
        shutil.copy(lock, house / lock.name)
        python_env.install_venv(
            rootfs, MLSERVER_VENV, house, DEBIAN_BASE_DATE, "--require-hashes", "-r", f"/tmp/wheelhouse/{lock.name}"
        )

    venv = cached("mlserver", key_of([base.name, lock.read_bytes()]), make)
    with _scratch(work, "mlserver") as scratch:
        layers = [
            _base_layer(base, scratch),
            Layer(
                tar_layer(
                    venv / "rootfs",
                    scratch / "mlserver.tar",
                    DEBIAN_BASE_DATE,
                    _venv_members(venv / "rootfs", MLSERVER_VENV),
                ),
                f"python -m venv {MLSERVER_VENV} && pip install --require-hashes -r mlserver.lock",
            ),
        ]
        return pack(mlserver_spec(mlserver_version()), layers, work / "oci" / "mlserver-forecasters", source)


# The first start makes the cluster in $PGDATA (an empty volume) as this user, with the password
# from a mounted file and the database the client names; every later start serves what is there.
# Password (SCRAM) for every client over TCP; the socket lives in /tmp (the root is read-only).
_POSTGRESQL_START = """#!/bin/sh
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" \\
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-instructions
    echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "CREATE DATABASE \\"$POSTGRES_DB\\"" | postgres --single -D "$PGDATA" postgres >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
"""


def build_postgresql(work: Path, source: Source) -> Built:
    """Debian with its PostgreSQL server (one cached base), NONROOT in passwd, and the start script."""
    base = debian_base(packages=POSTGRESQL_PACKAGES)
    with _scratch(work, "postgresql") as scratch:
        root = scratch / "root"
        etc = root / "etc"
        etc.mkdir(parents=True)
        for name, line in (
            ("passwd", f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/tmp:/sbin/nologin\n"),
            ("group", f"nonroot:x:{NONROOT}:\n"),
        ):
            etc.joinpath(name).write_text((base / "rootfs" / "etc" / name).read_text() + line)
        script = root / POSTGRESQL_ENTRYPOINT.lstrip("/")
        script.parent.mkdir(parents=True)
        script.write_text(_POSTGRESQL_START)
        script.chmod(0o755)
        layers = [
            Layer(
                tar_layer(base / "rootfs", scratch / "debian.tar", DEBIAN_BASE_DATE),
                "mmdebstrap bookworm minbase postgresql",
            ),
            Layer(tar_layer(root, scratch / "start.tar", source.epoch), "nonroot user, greenops-postgresql"),
        ]
        return pack(POSTGRESQL, layers, work / "oci" / POSTGRESQL.name, source)


def build_kube_mgmt_standin(work: Path, greenops: Built, source: Source) -> Built:
    """The greenops image's layers under KUBE_MGMT_STANDIN's entrypoint (seconds: no layer is built)."""
    return derive(greenops, KUBE_MGMT_STANDIN, work / "oci" / KUBE_MGMT_STANDIN.name, source)
