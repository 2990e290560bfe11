"""What each artifact is: one definition, read by the daemonless build here and checked against the
Dockerfiles a user with Docker builds (tests/release/test_dockerfiles.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime

from greenops import __version__
from release.run import PROJECT

# Where the release is published; a platform team publishing to its own registry passes another.
DEFAULT_REPOSITORY = "ghcr.io/greenops-platform"
SOURCE_URL = "https://github.com/greenops-platform/greenops-platform"

# The Debian every image's user space comes from: the release the build machine and the thesis's
# VMs run, with its security updates (the Dockerfiles' base: debian:bookworm-slim).
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
# The Debian root filesystem is made once per this date (its SOURCE_DATE_EPOCH, and its cache key):
# every commit's images share one base layer, whatever the cache holds. Moving it to a later day
# takes in Debian's security updates: the day's packages, as the mirror serves them then.
DEBIAN_BASE_DATE = 1795910400  # 2026-11-29T00:00:00Z
# python3 is Debian's 3.11, inside requires-python; ca-certificates for the clouds' and the
# registry's TLS; tzdata for the zones' local time in the dashboard
BASE_PACKAGES = ("python3", "ca-certificates", "tzdata")

NONROOT = 65532  # the distroless "nonroot" user, which the platform's pod security contexts name
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageSpec:
    """One image: its repository name, tag and OCI config."""

    name: str
    tag: str
    title: str
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    workdir: str = "/"
    pin: str = ""  # its entry in components/versions.yaml

    def labels(self, revision: str, created: str) -> dict[str, str]:
        return {
            "org.opencontainers.image.title": self.title,
            "org.opencontainers.image.version": self.tag,
            "org.opencontainers.image.revision": revision,
            "org.opencontainers.image.created": created,
            "org.opencontainers.image.source": SOURCE_URL,
            "org.opencontainers.image.licenses": "Apache-2.0",
            # the greenops release each image belongs to, whatever its own upstream version
            "io.greenops.release": __version__,
        }


GREENOPS_VENV = "/opt/greenops"
MLSERVER_VENV = "/opt/mlserver"

GREENOPS = ImageSpec(
    name="greenops",
    tag=__version__,
    title="greenops: the scheduler, the controller and the CLI",
    # the scheduler Deployment passes only args; the controller's command is `python -m greenops.controller`
    entrypoint=(f"{GREENOPS_VENV}/bin/greenops-scheduler",),
    env=(
        ("PATH", f"{GREENOPS_VENV}/bin:{SYSTEM_PATH}"),
        # the root filesystem is read-only in the pods: nothing to write bytecode to, and no need
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONUNBUFFERED", "1"),
    ),
    pin="greenops_image",
)


# kube-mgmt cannot be had here (its image is on Docker Hub only, its module not on the Go proxy):
# the real node's OPA pods run greenops.local.kube_mgmt, which takes its flags, from the greenops
# image's own layers under another entrypoint (built on request only, for those suites)
KUBE_MGMT_STANDIN = ImageSpec(
    name="kube-mgmt-standin",
    tag=__version__,
    title="a stand-in for kube-mgmt: greenops.local.kube_mgmt, for the real node's suites only",
    entrypoint=(f"{GREENOPS_VENV}/bin/python", "-m", "greenops.local.kube_mgmt"),
    env=GREENOPS.env,
)


# Debian's PostgreSQL server, for a reservation record in a pod where no chart's image can be had
# (the real node's suites); initdb and the server run as NONROOT, which needs a passwd entry.
POSTGRESQL_MAJOR = "15"
POSTGRESQL_PACKAGES = (f"postgresql-{POSTGRESQL_MAJOR}", "ca-certificates")
POSTGRESQL_ENTRYPOINT = "/usr/local/bin/greenops-postgresql"
POSTGRESQL = ImageSpec(
    name="postgresql",
    tag=POSTGRESQL_MAJOR,
    title="PostgreSQL, Debian's server: the scheduler's reservation record in a pod",
    entrypoint=(POSTGRESQL_ENTRYPOINT,),
    env=(
        ("PATH", f"/usr/lib/postgresql/{POSTGRESQL_MAJOR}/bin:{SYSTEM_PATH}"),
        ("PGDATA", "/var/lib/postgresql/data"),
    ),
    workdir="/tmp",
)


def opa_spec(opa_version: str) -> ImageSpec:
    return ImageSpec(
        name="opa",
        tag=f"{opa_version}-static",
        title="OPA, the pinned static binary",
        entrypoint=("/opa",),
        cmd=("run",),
        pin="opa_image",
    )


def bundle_init_spec(busybox_version: str) -> ImageSpec:
    return ImageSpec(
        name="bundle-init",
        tag=busybox_version,
        title="bundle-init: Debian's static busybox, which copies the shipped policy bundle for OPA",
        env=(("PATH", "/bin"),),
        pin="bundle_init_image",
    )


def mlserver_spec(mlserver_version: str) -> ImageSpec:
    return ImageSpec(
        name="mlserver-forecasters",
        tag=mlserver_version,
        title="MLServer with the forecasters' serving pins",
        entrypoint=(f"{MLSERVER_VENV}/bin/mlserver", "start"),
        cmd=("/mnt/models",),
        env=(
            ("PATH", f"{MLSERVER_VENV}/bin:{SYSTEM_PATH}"),
            ("PYTHONUNBUFFERED", "1"),
        ),
        workdir="/tmp",
        pin="mlserver_image",
    )


@dataclass(frozen=True)
class Source:
    """The commit being released: its id and its time, the SOURCE_DATE_EPOCH of every artifact."""

    revision: str
    epoch: int
    dirty: bool = field(default=False)

    @property
    def created(self) -> str:
        return datetime.fromtimestamp(self.epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def source() -> Source:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=PROJECT, capture_output=True, text=True, check=True).stdout.strip()

    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return Source(revision=git("rev-parse", "HEAD"), epoch=int(git("log", "-1", "--format=%ct")), dirty=dirty)
