"""Which stack locks are stale: only a dead process's on this host, only on a file backend."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

from greenops.engine.stale_lock import clear_stale_locks


def lock(backend, host: str, pid: int, stack: str = "s"):
    folder = backend / ".pulumi" / "locks" / "organization" / "proj" / stack
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{host}-{pid}.json"
    path.write_text(json.dumps({"pid": pid, "username": "u", "hostname": host, "timestamp": "2027-01-01T00:00:00Z"}))
    (folder / f"{path.name}.attrs").write_text("{}")
    return path


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_dead_local_holder_is_cleared_and_said(tmp_path):
    stale = lock(tmp_path, socket.gethostname(), dead_pid())
    other_host = lock(tmp_path, "elsewhere", dead_pid())
    other_stack = lock(tmp_path, socket.gethostname(), dead_pid(), stack="t")
    said = clear_stale_locks(f"file://{tmp_path}", "proj", "s")
    assert len(said) == 1 and said[0].startswith("cleared a stale lock of stack s: pid ")
    assert not stale.exists() and not stale.with_name(stale.name + ".attrs").exists()
    assert other_host.exists() and other_stack.exists()  # only its holder can know


def test_a_live_process_that_is_not_pulumi_does_not_hold_it(tmp_path):
    # pid reuse: a live process with the recorded pid that is not a Pulumi run means the lock is stale
    reused = lock(tmp_path, socket.gethostname(), subprocess.Popen(["sleep", "5"]).pid)
    assert clear_stale_locks(f"file://{tmp_path}", "proj", "s") and not reused.exists()


def test_other_backends_are_never_touched(tmp_path):
    kept = lock(tmp_path, socket.gethostname(), dead_pid())
    assert clear_stale_locks("s3://bucket", "proj", "s") == [] and clear_stale_locks(None, "proj", "s") == []
    assert kept.exists()


def test_a_backend_url_with_a_query_names_the_same_folder(tmp_path):
    # greenops' runs add ?metadata=skip to a file backend (greenops/common/file_backend.py)
    stale = lock(tmp_path, socket.gethostname(), dead_pid())
    assert clear_stale_locks(f"file://{tmp_path}?metadata=skip", "proj", "s") and not stale.exists()


def test_a_temporary_lock_file_its_writer_left_is_cleared_once_a_minute_old(tmp_path):
    """fileblob writes a lock as `<uuid>.json.<hex>.tmp`, then renames it: a writer killed in
    between leaves an empty file that every later run reads as a broken lock."""
    folder = tmp_path / ".pulumi" / "locks" / "organization" / "proj" / "s"
    folder.mkdir(parents=True)
    left = folder / "9dde1a84-8e8c-4a9e-bbf6-ea8972980f50.json.18ec6c9c0740fb8e.tmp"
    fresh = folder / "c7627045-fc3f-484a-be57-ac2a1450576f.json.18ec6c9c0740fb8f.tmp"
    left.touch()
    fresh.touch()
    old = time.time() - 61
    os.utime(left, (old, old))
    said = clear_stale_locks(f"file://{tmp_path}", "proj", "s")
    assert said == [f"cleared a lock of stack s that its writer left half-written ({left.name})"]
    assert not left.exists() and fresh.exists()  # a fresh one is a live writer's, about to be renamed
