"""The release's cache of slow, input-keyed results (the Debian root filesystem, the locked
virtualenvs), outside the checkout like tools/install.sh's: a fresh clone on a warm machine reuses them."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("GREENOPS_RELEASE_CACHE", Path(base) / "greenops" / "release"))


def key_of(parts: Iterable[str | bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:16]


def cached(kind: str, key: str, make: Callable[[Path], None], refresh: bool = False) -> Path:
    """``<cache>/<kind>-<key>``, made by ``make(tmp_dir)`` unless a complete one is there. A build
    cut short leaves only its temporary directory, which the next one removes. Two runs at once
    (two checkouts' suites on one machine) make an entry once: the second waits for the first's."""
    done = cache_root() / f"{kind}-{key}"
    if done.joinpath(".complete").exists() and not refresh:
        return done
    done.parent.mkdir(parents=True, exist_ok=True)
    with done.with_name(done.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, or the process dies
        if done.joinpath(".complete").exists() and not refresh:
            return done  # made by the run this one waited for
        tmp = done.with_name(done.name + ".tmp")
        for stale in (tmp, done):
            if stale.exists():
                shutil.rmtree(stale)
        tmp.mkdir(parents=True)
        make(tmp)
        tmp.joinpath(".complete").touch()
        tmp.rename(done)
    # one entry per kind: an older key's gigabytes (an earlier lock, base date) are not read again
    for older in done.parent.glob(f"{kind}-*"):
        if older != done and len(older.name) == len(done.name) and older.is_dir():
            shutil.rmtree(older, ignore_errors=True)
    return done
