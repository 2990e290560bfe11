"""The release's cache of slow builds: two runs at once make an entry once, a cut-short build is
made again, and entries of different kinds (the Debian bases with different packages) do not evict
each other."""

from __future__ import annotations

import threading
import time

import pytest

from release import cache


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENOPS_RELEASE_CACHE", str(tmp_path))
    return tmp_path


def test_two_runs_at_once_make_an_entry_once_and_both_get_it():
    made: list[str] = []

    def make(out):
        made.append(threading.current_thread().name)
        time.sleep(0.5)  # long enough for the other run to arrive while this one builds
        (out / "rootfs").mkdir()

    got: list = []
    runs = [threading.Thread(target=lambda: got.append(cache.cached("debian", "k" * 16, make))) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(made) == 1, made
    assert got[0] == got[1] and (got[0] / "rootfs").is_dir() and (got[0] / ".complete").exists()


def test_a_build_cut_short_is_made_again(root):
    def fails(out):
        (out / "half").touch()
        raise RuntimeError("cut short")

    with pytest.raises(RuntimeError):
        cache.cached("debian", "a" * 16, fails)
    done = cache.cached("debian", "a" * 16, lambda out: (out / "whole").touch())
    assert (done / "whole").exists() and not (done / "half").exists()


def test_kinds_keep_their_own_newest_entry(root):
    base = cache.cached("debian", "a" * 16, lambda out: None)
    other = cache.cached("debian-postgresql-15", "b" * 16, lambda out: None)
    assert base.exists() and other.exists()  # neither evicts the other
    newer = cache.cached("debian", "c" * 16, lambda out: None)
    assert newer.exists() and not base.exists() and other.exists()  # an older key of the same kind goes
