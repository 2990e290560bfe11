"""Debian's user space for the images, made by mmdebstrap from Debian's own packages (no base
image is pulled from a registry), reproducible for one package set: SOURCE_DATE_EPOCH fixes every
timestamp mmdebstrap and dpkg write."""

from __future__ import annotations

import os
from pathlib import Path

from release.cache import cached, key_of
from release.run import Arg, sh
from release.spec import BASE_PACKAGES, DEBIAN_BASE_DATE, DEBIAN_MIRRORS, DEBIAN_SUITE

# documentation and translations are not read in a container
_EXCLUDES = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*")
# the licences are kept
_INCLUDES = ("/usr/share/doc/*/copyright",)


# bumped when what is done to the root filesystem after mmdebstrap changes: a new cache entry
_RECIPE = "apt-partial-root"


def debian_base(refresh: bool = False, packages: tuple[str, ...] = BASE_PACKAGES) -> Path:
    """A cached directory whose ``rootfs`` is a minbase Debian with ``packages``, made with
    SOURCE_DATE_EPOCH at DEBIAN_BASE_DATE, and whose ``packages.txt`` lists every package and
    version in it.

    The cache is keyed by the suite, mirrors, packages and that date: Debian's updates reach the
    images when the date moves, or with ``refresh`` (the same key, made again from today's mirror)."""
    epoch = DEBIAN_BASE_DATE
    key = key_of([DEBIAN_SUITE, *DEBIAN_MIRRORS, *packages, str(epoch), _RECIPE])

    def make(out: Path) -> None:
        rootfs = out / "rootfs"
        argv: list[Arg] = [
            "mmdebstrap",
            "--quiet",
            "--mode=root",
            "--variant=minbase",
            # a mirror's hiccup is retried, not a failed build
            '--aptopt=Acquire::Retries "5"',
            "--format=directory",
            f"--include={','.join(packages)}",
            *[f"--dpkgopt=path-exclude={p}" for p in _EXCLUDES],
            *[f"--dpkgopt=path-include={p}" for p in _INCLUDES],
            DEBIAN_SUITE,
            rootfs,
            *DEBIAN_MIRRORS,
        ]
        sh("debian root filesystem", argv, env={"SOURCE_DATE_EPOCH": str(epoch)})
        # apt leaves its download directories owned by _apt or by root, from one run to the next
        # (two otherwise identical bases differed in this alone): root's, as a fresh install has them
        for partial in ("var/cache/apt/archives/partial", "var/lib/apt/lists/partial"):
            os.chown(rootfs / partial, 0, 0)
        listing = sh("package list", ["chroot", rootfs, "dpkg-query", "-W", "-f", "${Package} ${Version}\\n"])
        out.joinpath("packages.txt").write_text("".join(sorted(listing.splitlines(keepends=True))))

    # one kind per package set: each keeps its newest entry, and the base with python3 and the
    # one with PostgreSQL's server no longer evict each other, build after build
    kind = "debian" if packages == BASE_PACKAGES else "debian-" + "+".join(sorted(packages))
    return cached(kind, key, make, refresh)
