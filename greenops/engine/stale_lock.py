"""A stack lock left behind by a run that died (``kill -9``, a node lost mid-pass).

Pulumi's file backend (``file://``) has no lock expiry and ``pulumi cancel`` does not apply to it,
so one killed run would make every later unattended pass skip forever. Its lock file records the
holder's host and pid: a lock held by a process of this host that no longer runs (or is no longer
a Pulumi process) is stale and is removed, as is a lock's temporary file that a writer killed
before its rename left a minute ago or more. Locks of other hosts, and other backends, are never
touched: only their holder can know.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from greenops.common.file_backend import backend_folder

ABANDONED_TEMPORARY_SECONDS = 60


def _alive_pulumi(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"pulumi" in cmdline


def clear_stale_locks(backend_url: str | None, project: str, stack: str) -> list[str]:
    """Remove this stack's stale locks on a file backend; one line per lock removed, saying whose."""
    state = backend_folder(backend_url)
    if state is None:
        return []
    folder = state / ".pulumi" / "locks"
    removed = []
    for temporary in folder.glob(f"*/{project}/{stack}/*.json.*.tmp"):
        # A lock being written lives as a temporary file for microseconds before its rename; one a
        # minute old was left by a writer killed in between, and Pulumi reads it as a held lock.
        try:
            if time.time() - temporary.stat().st_mtime > ABANDONED_TEMPORARY_SECONDS:
                temporary.unlink()
                removed.append(f"cleared a lock of stack {stack} that its writer left half-written ({temporary.name})")
        except OSError:
            continue  # renamed or removed as we looked: its writer is alive
    for lock in folder.glob(f"*/{project}/{stack}/*.json"):
        try:
            holder = json.loads(lock.read_text())
        except (OSError, ValueError):
            continue
        if holder.get("hostname") != socket.gethostname() or _alive_pulumi(int(holder.get("pid") or 0)):
            continue
        for path in (lock, lock.with_name(lock.name + ".attrs")):
            path.unlink(missing_ok=True)
        removed.append(
            f"cleared a stale lock of stack {stack}: pid {holder.get('pid')} on {holder.get('hostname')} "
            f"took it at {holder.get('timestamp')} and is gone"
        )
    return removed
