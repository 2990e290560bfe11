"""The reservation record under faults, through real scheduler processes: a burst with a
``kill -9`` in the middle (SQLite), and two replicas on one real PostgreSQL server (the burst and
its checks: tests/support/burst.py)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from tests.support.burst import CAPACITY, NOW, assert_record_matches, burst, issue_tokens, retry_each

pytestmark = pytest.mark.integration


def test_kill_9_mid_burst_on_sqlite_loses_and_doubles_nothing(tmp_path):
    database = f"sqlite:///{tmp_path / 'reservations.db'}"
    env = {"GREENOPS_NOW": NOW}
    first = SchedulerServer(capacity_vcpu=CAPACITY, database=database, env=env, log=tmp_path / "first.log")
    first.start()
    answered: list[int] = []
    try:
        tokens = issue_tokens(first)
        with ThreadPoolExecutor(1) as runner:
            pending = runner.submit(burst, [first.url], 300, 16, tokens, answered)
            while len(answered) < 100:
                assert not pending.done(), "the burst finished before the kill"
                time.sleep(0.01)
            first.kill()
            killed_at = len(answered)
            second = SchedulerServer(
                capacity_vcpu=CAPACITY, database=database, env=env, port=first.port, log=tmp_path / "second.log"
            )
            with second:
                got = pending.result()
                print(
                    f"\nkill -9 after {killed_at} of 300 answers; "
                    f"{sum(r[-1].status_code == 200 for r in got.values())} placed, "
                    f"{sum(r[-1].status_code == 409 for r in got.values())} refused"
                )
                assert len(got) == 300
                assert_record_matches(database, got)
                retry_each([second.url], got, tokens)
                assert_record_matches(database, got)
    finally:
        first.stop()


def test_two_replicas_on_one_real_postgresql_never_overbook(tmp_path):
    with PostgresServer() as pg:
        env = {"GREENOPS_NOW": NOW}
        with (
            SchedulerServer(capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "a.log") as a,
            SchedulerServer(capacity_vcpu=CAPACITY, database=pg.url, env=env, log=tmp_path / "b.log") as b,
        ):
            urls = [a.url, b.url]
            tokens = issue_tokens(a)
            got = burst(urls, 500, 48, tokens)
            placed = sum(r[-1].status_code == 200 for r in got.values())
            print(f"\ntwo replicas, 500 requests: {placed} placed, {500 - placed} refused")
            assert_record_matches(pg.url, got)
            retry_each(urls, got, tokens)
            assert_record_matches(pg.url, got)
