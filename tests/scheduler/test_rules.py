"""The placement rules (point, interval, sure), the seasonal sources' conformal intervals, the
forecast's record that the sure rule weighs, and the rule as a field of POST /scheduling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from greenops.common.clock import stamp
from greenops.intensity import Bands, SeasonalNaiveSource, TraceSource
from greenops.intensity.naive import SeasonalMeanSource
from greenops.intensity.series import Series
from greenops.models.forecast_conformal import conformal_offsets
from greenops.reservations import ReservationStore
from greenops.scheduler import decider
from greenops.scheduler.api import create_app
from greenops.search.algorithm import (
    MIN_TRACK,
    TRACK_DAYS,
    Assignment,
    CapacityLedger,
    Job,
    best_placement,
    decide,
    sure_enough,
    worth_moving,
)
from greenops.search.track import track_record

H = 3600.0
DAY = 86400.0
NOW = datetime(2031, 3, 4, 0, 0, tzinfo=UTC)
T0 = NOW.timestamp()
JOB = Job(cpu=1, memory=1, duration=H)


def nightly(days: int, cheap: str) -> TraceSource:
    """Hourly, ``days`` days up to 10 days after NOW: 100 g/kWh, except 04:00, which is 50 every day
    (``cheap="always"``) or 50 on even days and 150 on odd ones (``"alternating"``): then yesterday's
    cheap hour is today's dear one, and a forecast that repeats yesterday moves every other job the
    wrong way."""
    start = T0 - days * DAY
    hours = np.arange((days + 10) * 24)
    values = np.full(len(hours), 100.0)
    at_four = hours % 24 == 4
    day = hours // 24
    values[at_four] = 50.0 if cheap == "always" else np.where(day[at_four] % 2 == 0, 50.0, 150.0)
    return TraceSource({"ZZ": Series(start, H, values)})


def test_point_is_the_default_and_unchanged():
    forecast = {"ZZ": nightly(40, "always").full("ZZ").slice(T0, T0 + 10 * H)}
    best = best_placement(forecast, JOB, T0, T0 + 10 * H)
    assert decide(forecast, JOB, T0, T0 + 10 * H, CapacityLedger()) == best
    assert best.start == T0 + 4 * H
    with pytest.raises(ValueError, match="unknown rule 'maybe'"):
        decide(forecast, JOB, T0, T0 + 10 * H, CapacityLedger(), "maybe")  # type: ignore[arg-type]


def flat_bands(forecast: Series, half_width: float) -> Bands:
    return Bands(
        Series(forecast.start, forecast.step, forecast.values - half_width),
        Series(forecast.start, forecast.step, forecast.values + half_width),
        0.8,
        "test",
    )


def test_interval_rule_moves_only_when_the_intervals_do_not_overlap():
    forecast = nightly(40, "always").full("ZZ").slice(T0, T0 + 10 * H)  # 100 at once, 50 at 04:00
    args = ({"ZZ": forecast}, JOB, T0, T0 + 10 * H, CapacityLedger(), "interval")
    narrow, wide = {"ZZ": flat_bands(forecast, 20)}, {"ZZ": flat_bands(forecast, 30)}
    assert decide(*args, bands=narrow, default_zone="ZZ").start == T0 + 4 * H  # 50 + 20 < 100 - 20
    assert decide(*args, bands=wide, default_zone="ZZ").start == T0  # 50 + 30 > 100 - 30: stay
    assert decide(*args, bands={"ZZ": None}, default_zone="ZZ").start == T0  # no interval: not sure, stay
    best, default = Assignment("YY", T0 + 4 * H, 50.0), Assignment("ZZ", T0, 100.0)
    assert not worth_moving(best, default, {"YY": None, "ZZ": flat_bands(forecast, 1)}, H)  # one side unknown
    best, default = Assignment("ZZ", T0 + 4 * H, 50.0), Assignment("ZZ", T0, 100.0)
    assert worth_moving(best, default, narrow, H) and not worth_moving(best, default, wide, H)
    assert not worth_moving(default, default, narrow, H)  # staying is no move


def test_sure_enough_asks_the_mean_gain_to_beat_its_standard_error():
    rng = np.random.default_rng(1)
    assert sure_enough(np.full(TRACK_DAYS, 5.0) + rng.normal(0, 1, TRACK_DAYS))
    assert not sure_enough(rng.normal(0, 10, TRACK_DAYS) - 3)
    assert not sure_enough(np.full(MIN_TRACK - 1, 5.0))  # too few decisions say nothing
    assert sure_enough(np.concatenate([np.full(MIN_TRACK + 1, 5.0), [np.nan] * 5, [4.0]]))  # NaN: no forecast


def test_the_sure_rule_stays_without_a_record_and_moves_with_a_good_one():
    forecast = {"ZZ": nightly(40, "always").full("ZZ").slice(T0, T0 + 10 * H)}
    args = (forecast, JOB, T0, T0 + 10 * H, CapacityLedger(), "sure")
    assert decide(*args, default_zone="ZZ").start == T0
    assert decide(*args, default_zone="ZZ", track=np.full(TRACK_DAYS, 50.0)).start == T0 + 4 * H
    assert decide(*args, default_zone="ZZ", track=np.full(TRACK_DAYS, -50.0)).start == T0


@pytest.mark.parametrize(("cheap", "moves"), [("always", True), ("alternating", False)])
def test_the_record_replays_the_decision_on_earlier_days(cheap, moves):
    source = SeasonalNaiveSource(nightly(40, cheap))
    track = track_record(source, ["ZZ"], JOB, T0, T0 + 10 * H, T0, "ZZ")
    assert track is not None and len(track) == TRACK_DAYS and np.isfinite(track).all()
    if moves:
        assert (track == 50.0).all()  # yesterday's 04:00 was right every day
    else:
        # on odd days yesterday's cheap hour costs 50 more than staying; on even days it did not move
        assert set(track) == {0.0, -50.0}
    assert sure_enough(track) is moves
    # no record of the past (a source without `observed`), no record
    assert track_record(_Blind(source), ["ZZ"], JOB, T0, T0 + 10 * H, T0, "ZZ") is None


class _Blind(SeasonalNaiveSource):
    def __init__(self, inner: SeasonalNaiveSource):
        super().__init__(inner.trace)

    def observed(self, zone, t0, t1):
        return None


def test_seasonal_bands_are_conformal_on_the_past_only():
    rng = np.random.default_rng(7)
    start = T0 - 60 * DAY
    values = 200 + 50 * np.sin(2 * np.pi * np.arange(70 * 24) / 24) + rng.normal(0, 10, 70 * 24)
    trace = TraceSource({"ZZ": Series(start, H, values)})
    for source in (SeasonalNaiveSource(trace), SeasonalMeanSource(trace, 7)):
        bands = source.bands("ZZ", T0 - 2 * H, T0 + 24 * H, T0)
        forecast = source.series("ZZ", T0 - 2 * H, T0 + 24 * H, T0)
        assert bands is not None and bands.coverage == 0.8
        assert np.array_equal(bands.lower.values[:2], forecast.values[:2])  # observed: no interval
        assert (bands.lower.values[2:] < forecast.values[2:]).all() and (
            bands.upper.values[2:] > forecast.values[2:]
        ).all()
        # the future does not move the interval
        changed = values.copy()
        changed[int((T0 - start) / H) :] += 500
        other = type(source)(TraceSource({"ZZ": Series(start, H, changed)}))
        assert np.array_equal(other.bands("ZZ", T0 - 2 * H, T0 + 24 * H, T0).upper.values, bands.upper.values)
    # coverage over many issue times: about the 80 % asked for (noise N(0, 10), naive misses N(0, 14))
    naive = SeasonalNaiveSource(trace)
    inside = []
    for now in T0 - DAY * np.arange(1, 25):
        b = naive.bands("ZZ", now, now + 24 * H, now)
        actual = trace.full("ZZ").slice(now, now + 24 * H).values
        inside.append((actual >= b.lower.values) & (actual <= b.upper.values))
    assert 0.72 <= np.mean(inside) <= 0.88
    lo, hi = conformal_offsets(np.arange(10.0), 0.8)
    assert (lo, hi) == (0.0, 9.0)  # taken outwards on a small sample
    with pytest.raises(ValueError, match="coverage"):
        conformal_offsets(np.arange(10.0), 1.0)


def test_scheduling_takes_the_rule_and_stays_when_the_record_says_so(tmp_path, monkeypatch):
    source = SeasonalNaiveSource(nightly(40, "alternating"))
    store = ReservationStore(f"sqlite:///{tmp_path / 'r.db'}")
    # an odd day: yesterday's 04:00 was cheap, so the point forecast moves there, and today it is dear
    now = NOW + timedelta(days=1)
    body = {
        "eligible_regions": ["ZZ"],
        "origin_zone": "ZZ",
        "deadline": stamp(now + timedelta(hours=10)),
        "duration": 1.0,
        "cpu": 1.0,
        "memory": 1.0,
        "dry_run": True,
    }
    try:
        app = create_app(source, clock=lambda: now, store=store, admin_tokens=["rules-test-admin-token"])
        with TestClient(app, headers={"Authorization": "Bearer rules-test-admin-token"}) as client:
            point, sure = (
                client.post("/scheduling", json=body),
                client.post("/scheduling", json={**body, "rule": "sure"}),
            )
            assert point.status_code == sure.status_code == 200, (point.text, sure.text)
            assert point.json()["rule"] == "point" and sure.json()["rule"] == "sure"
            assert point.json()["scheduling_time"] == stamp(now + timedelta(hours=4))
            assert sure.json()["scheduling_time"] == stamp(now)  # the record: half the moves cost 50
            interval = client.post("/scheduling", json={**body, "rule": "interval"})
            assert interval.status_code == 200 and interval.json()["rule"] == "interval"
            bad = client.post("/scheduling", json={**body, "rule": "maybe"})
            assert bad.status_code == 422 and "rule" in bad.text
            # the record multiplies the search by 28: past the work limit, sure alone is refused by name
            far = {**body, "deadline": stamp(now + timedelta(days=9))}  # 216 h x 1 zone
            monkeypatch.setattr(decider, "MAX_WORK", 1000)
            assert client.post("/scheduling", json=far).status_code == 200
            refused = client.post("/scheduling", json={**far, "rule": "sure"})
            assert refused.status_code == 422 and refused.json()["detail"].startswith("rule: sure replays")
            monkeypatch.undo()
            # a booking made without the field replays for a request that names the default rule
            booked = client.post("/scheduling", json={**body, "dry_run": False, "key": "k"})
            again = client.post("/scheduling", json={**body, "dry_run": False, "key": "k", "rule": "point"})
            assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == booked.json()
    finally:
        store.close()


def test_an_origin_outside_the_eligible_zones_still_runs_now_unless_sure():
    forecast = {"ZZ": nightly(40, "always").full("ZZ").slice(T0, T0 + 10 * H)}
    args = (forecast, JOB, T0, T0 + 10 * H, CapacityLedger(), "sure")
    # the origin "XX" has no forecast here: the default run is the cleanest eligible zone now, not the best window
    assert decide(*args, default_zone="XX").start == T0
    assert decide(*args, default_zone="XX", track=np.full(TRACK_DAYS, 50.0)).start == T0 + 4 * H


def test_explain_says_when_a_rule_kept_the_default_run():
    from greenops.insight.explain import account

    answer = {
        "scheduling_location": "FR",
        "scheduling_time": "2030-01-01T00:00:00Z",
        "expected_intensity": 60.0,
        "rule": "sure",
        "considered": [
            {"scheduling_location": "FR", "expected_intensity": 60.0},
            {"scheduling_location": "SE", "expected_intensity": 20.0},
        ],
    }
    row = {"key": "k", "path": "pulumi", "phase": "Scheduled", "tenant": "t", "answer": answer}
    why = account(row)["why"]
    assert why.startswith("rule 'sure' kept the run at the earliest start in FR") and "SE (20)" in why
    assert account({**row, "answer": {**answer, "rule": "point"}})["why"].startswith("FR had the lowest")


def test_the_replays_count_against_the_requests_timeout():
    import time

    from greenops.search.algorithm import DecisionTimeout

    source = SeasonalNaiveSource(nightly(40, "always"))
    with pytest.raises(DecisionTimeout, match="replaying the decision on earlier days"):
        track_record(source, ["ZZ"], JOB, T0, T0 + 10 * H, T0, "ZZ", give_up_at=time.monotonic() - 1)
