"""The simulated clock a running process follows: GREENOPS_NOW wins, then GREENOPS_CLOCK_FILE,
re-read at every call, then the system clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import set_clock_file, system_clock


def test_the_file_is_read_at_every_call_and_now_wins(tmp_path):
    path = tmp_path / "now"
    t0 = datetime(2030, 1, 1, 2, tzinfo=UTC)
    set_clock_file(path, t0)
    env = {"GREENOPS_CLOCK_FILE": str(path)}
    assert system_clock(env) == t0
    set_clock_file(path, t0 + timedelta(hours=3))
    assert system_clock(env) == t0 + timedelta(hours=3)
    assert system_clock({**env, "GREENOPS_NOW": "2031-01-01T00:00:00Z"}) == datetime(2031, 1, 1, tzinfo=UTC)
    assert abs(system_clock({}) - datetime.now(UTC)) < timedelta(seconds=5)


def test_an_absent_file_is_an_error_that_names_it(tmp_path):
    with pytest.raises(ValueError, match="GREENOPS_CLOCK_FILE .*absent"):
        system_clock({"GREENOPS_CLOCK_FILE": str(tmp_path / "absent")})
