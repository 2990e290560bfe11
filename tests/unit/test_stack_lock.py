"""greenops' own lock of a file-backend stack: where it lives, who it refuses, what it says."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from greenops.engine.stack_lock import StackLocked, holding, lock_file


def test_it_lives_beside_the_state_and_only_on_a_file_backend(tmp_path):
    url = f"file://{tmp_path}?metadata=skip"
    assert lock_file(url, "p", "dev") == tmp_path / ".greenops" / "locks" / "p" / "dev.lock"
    assert lock_file(url, "p", "organization/p/dev") == lock_file(url, "p", "dev")  # a fully qualified name
    # a relative folder is the CLI's, which runs in the project's folder
    assert lock_file("file://state", "p", "dev", "/srv/proj") == Path("/srv/proj/state/.greenops/locks/p/dev.lock")
    assert lock_file("s3://bucket", "p", "dev") is None and lock_file(None, "p", "dev") is None


def test_another_thread_is_refused_naming_the_holder_and_the_holders_own_nested_hold_is_one(tmp_path):
    url = f"file://{tmp_path}"
    refused: list[str] = []

    def other() -> None:
        try:
            with holding(url, "p", "dev"):
                refused.append("held")
        except StackLocked as exc:
            refused.append(str(exc))

    with holding(url, "p", "dev"), holding(url, "p", "dev"):  # nested: the same hold
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        with holding(url, "p", "other-stack"):  # another stack is another lock
            pass
    assert len(refused) == 1 and refused[0].startswith("stack dev is being updated by another run (greenops run `")
    assert f"pid {os.getpid()} on " in refused[0]
    with holding(url, "p", "dev"):  # released when the outer hold ended, not the nested one
        assert lock_file(url, "p", "dev").read_text().startswith("{")
    assert lock_file(url, "p", "dev").read_text() == ""


def test_other_backends_take_nothing():
    with holding("s3://bucket", "p", "dev"), holding("s3://bucket", "p", "dev"):
        pass


def test_a_holder_mid_write_is_still_a_refusal(tmp_path):
    url = f"file://{tmp_path}"
    with holding(url, "p", "dev"):
        lock_file(url, "p", "dev").write_text('{"pid": ')
        with pytest.raises(StackLocked, match=r"\(another greenops run\)"):
            threading_hold(url)


def threading_hold(url: str) -> None:
    """A hold taken from another thread; its exception re-raised here."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            with holding(url, "p", "dev"):
                pass
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            caught.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if caught:
        raise caught[0]
