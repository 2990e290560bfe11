"""Signals as the kernel may deliver them: to any thread of a process that does not block them."""

from __future__ import annotations

import ctypes
import signal
from pathlib import Path


def signal_another_thread(pid: int, sig: signal.Signals) -> int:
    """Send ``sig`` to one of the process's threads other than its main one that does not block it,
    as the kernel may deliver a signal sent to the process. The oldest first (a server's, started
    before the command's loop), since threads that serve one request come and go. Its thread id."""
    tgkill = ctypes.CDLL(None, use_errno=True).tgkill
    for tid in sorted(int(t.name) for t in (Path("/proc") / str(pid) / "task").iterdir() if int(t.name) != pid):
        try:
            status = (Path("/proc") / str(pid) / "task" / str(tid) / "status").read_text()
        except FileNotFoundError:  # it ended meanwhile
            continue
        blocked = int(next(ln for ln in status.splitlines() if ln.startswith("SigBlk:")).split()[1], 16)
        if not blocked & (1 << (sig - 1)) and tgkill(pid, tid, sig) == 0:
            return tid
    raise AssertionError(f"process {pid} has no other thread that takes {sig.name}")
