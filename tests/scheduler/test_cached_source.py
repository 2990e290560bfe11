"""The series kept between decisions (sources.cached): a cut of the kept series is what the source
itself would answer; the source is asked again when its data changes (a new revision), when the
clock reaches a new hour, or for a longer period; a call about an earlier hour leaves what is kept;
a source without a revision is always asked. Through the app: a booking after the forecast changed
is placed on the new one."""

from __future__ import annotations

from collections.abc import Hashable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from greenops.common.clock import stamp
from greenops.intensity import CarbonSource, ProfileSource, TraceSource, UnknownZone
from greenops.intensity.cached import CachedSource
from greenops.intensity.series import Series
from greenops.scheduler.api import create_app

H = 3600.0
NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
T = NOW.timestamp()
TOKEN = "cached-source-admin-token"


class Issued(CarbonSource):
    """Forecasts issued every hour: the level of each zone as set for the hour of ``now``, counted."""

    name = "issued"

    def __init__(self, levels: dict[str, float], revision: Hashable | None = 1):
        self.levels = dict(levels)
        self.by_hour: dict[int, dict[str, float]] = {}
        self.rev = revision
        self.asked: list[tuple[str, float, float]] = []

    def zones(self) -> frozenset[str]:
        return frozenset(self.levels)

    def revision(self) -> Hashable | None:
        return self.rev

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        if zone not in self.levels:
            raise UnknownZone(zone)
        self.asked.append((zone, t0, t1))
        level = self.by_hour.get(int(now // H), self.levels)[zone]
        start = np.floor(t0 / H) * H
        hours = start // H + np.arange(int(np.ceil((t1 - start) / H)))
        return Series(start, H, level + hours % 3)  # not flat, so a wrong cut shows


def same(a: Series, b: Series) -> bool:
    return a.start == b.start and a.step == b.step and np.array_equal(a.values, b.values)


def test_periods_within_the_kept_one_are_cut_from_it_as_the_source_would_answer():
    source = Issued({"A": 100})
    cached = CachedSource(source)
    first = cached.series("A", T, T + 48 * H, T)
    for t0, t1 in [(T + 600, T + 24 * H), (T + 5 * H + 1, T + 48 * H), (T + 1799.5, T + 1800.25)]:
        assert same(cached.series("A", t0, t1, T + 120), source.series("A", t0, t1, T + 120))
    assert same(first, source.series("A", T, T + 48 * H, T))
    assert len(source.asked) == 1 + 4  # the first call, then only the direct calls of this test


def test_a_period_cut_again_in_the_same_hour_is_the_same_series():
    # what the window arithmetic works out on a cut (boundaries, running integral) is then reused
    cached = CachedSource(Issued({"A": 100}))
    cached.series("A", T, T + 48 * H, T)
    first = cached.series("A", T + 600, T + 24 * H, T + 60)
    assert cached.series("A", T + 900, T + 24 * H - 60, T + 120) is first  # the same data points
    assert cached.series("A", T + 2 * H, T + 24 * H, T + 120) is not first
    assert not first.values.flags.writeable


def test_a_longer_period_asks_once_for_both_and_keeps_them():
    source = Issued({"A": 100})
    cached = CachedSource(source)
    cached.series("A", T + 10 * H, T + 20 * H, T)
    cached.series("A", T, T + 30 * H, T)
    assert source.asked[-1] == ("A", T, T + 30 * H)
    cached.series("A", T + 25 * H, T + 29 * H, T)
    assert len(source.asked) == 2


def test_a_new_hour_asks_again_and_an_earlier_one_leaves_what_is_kept():
    source = Issued({"A": 100})
    source.by_hour[int(T // H) + 1] = {"A": 500}
    cached = CachedSource(source)
    assert cached.series("A", T, T + 4 * H, T + 10).values.min() == 100
    assert cached.series("A", T + H, T + 4 * H, T + H).values.min() == 500  # issued in the next hour
    assert len(source.asked) == 2
    # a replay of a day earlier is passed on, and the next hour's series stays kept
    assert cached.series("A", T - 24 * H, T - 20 * H, T - 24 * H).values.min() == 100
    assert cached.series("A", T + 2 * H, T + 4 * H, T + H + 60).values.min() == 500
    assert len(source.asked) == 3


def test_a_new_revision_asks_again_and_none_asks_every_time():
    source = Issued({"A": 100})
    cached = CachedSource(source)
    cached.series("A", T, T + 4 * H, T)
    source.levels["A"], source.rev = 300, 2  # the source's data changed
    assert cached.series("A", T, T + 4 * H, T).values.min() == 300
    source.rev = None
    cached.series("A", T, T + 4 * H, T)
    cached.series("A", T, T + 4 * H, T)
    assert len(source.asked) == 4


def test_an_unknown_zone_is_still_named():
    with pytest.raises(UnknownZone):
        CachedSource(Issued({"A": 100})).series("B", T, T + H, T)


@pytest.mark.parametrize("seed", range(3))
def test_profiles_and_traces_cut_from_the_kept_series_equal_their_own(seed):
    rng = np.random.default_rng(seed)
    trace = TraceSource({"A": Series(T - 10 * 24 * H, 900.0, rng.uniform(50, 500, 40 * 96))})
    for source in (ProfileSource(), trace):
        cached = CachedSource(source)
        zone = sorted(source.zones())[0]
        now = T + float(rng.uniform(0, H))
        for _ in range(50):
            t0 = now + float(rng.uniform(0, 5 * 24 * H))
            t1 = t0 + float(rng.uniform(1, 20 * 24 * H))
            assert same(cached.series(zone, t0, t1, now), source.series(zone, t0, t1, now)), (t0, t1)


# --- through the app ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def book(client: TestClient, key: str) -> str:
    body = {
        "key": key,
        "eligible_regions": ["A", "B"],
        "deadline": stamp(NOW + timedelta(hours=6)),
        "duration": 2,
        "cpu": 1,
        "memory": 1,
    }
    r = client.post("/scheduling", json=body)
    assert r.status_code == 200, r.text
    zone: str = r.json()["scheduling_location"]
    return zone


@pytest.fixture
def issued() -> Issued:
    return Issued({"A": 100, "B": 200})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def client(issued, clock):
    app = create_app(issued, capacity_vcpu=100, clock=clock, admin_tokens=[TOKEN])
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def test_a_booking_after_the_forecast_changed_is_placed_on_the_new_one(client, issued):
    assert book(client, "k/1") == "A"
    assert book(client, "k/2") == "A"
    asked = len(issued.asked)
    issued.levels["A"], issued.rev = 900, 2
    assert book(client, "k/3") == "B"
    assert len(issued.asked) > asked


def test_a_booking_in_a_new_hour_is_placed_on_the_forecast_issued_then(client, issued, clock):
    issued.by_hour[int(T // H) + 1] = {"A": 900, "B": 200}
    assert book(client, "k/1") == "A"
    clock.now = NOW + timedelta(minutes=59)
    assert book(client, "k/2") == "A"
    clock.now = NOW + timedelta(hours=1)
    assert book(client, "k/3") == "B"
