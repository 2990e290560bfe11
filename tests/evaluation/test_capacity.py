"""The capacity scenario (greenops/evaluation/capacity.py, bound.py) and the scarcity price
(greenops/search/scarcity.py): invariants on generated streams, and the scenario's claims on a
fortnight of the real 2025 traces."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenops.evaluation import capacity as c
from greenops.evaluation.bound import offline_bound
from greenops.evaluation.capacity_moves import run_reoptimised
from greenops.intensity import TraceSource
from greenops.intensity.series import Series
from greenops.search.algorithm import CapacityLedger, Job, best_placement
from greenops.search.scarcity import ScarcityPrice, Urgent, UrgentOutlook

FIRST = datetime(2025, 3, 3, tzinfo=UTC)
HOURS = 24 * 30
H = 3600


def synthetic_traces(seed: int) -> c.Traces:
    """A month of hourly intensity per zone from a week before FIRST (the forecaster's history)."""
    rng = np.random.default_rng(seed)
    index = pd.date_range(FIRST - pd.Timedelta(days=8), periods=HOURS + 8 * 24, freq="1h", tz="UTC")
    base = {"DE": 350.0, "FR": 45.0, "GB": 200.0}
    series = {z: pd.Series(b + rng.normal(0, b / 4, len(index)).clip(-b / 2), index=index) for z, b in base.items()}
    hourly = {z: s[s.index >= pd.Timestamp(FIRST)].to_numpy() for z, s in series.items()}
    return c.Traces(FIRST, hourly, TraceSource({z: Series.from_pandas(s) for z, s in series.items()}))


requests_strategy = st.lists(
    st.builds(
        c.Request,
        origin=st.sampled_from(c.ZONES),
        arrival=st.integers(0, 72),
        duration=st.integers(1, 8),
        slack=st.integers(0, 24),
        cpu=st.sampled_from([2, 4, 8]),
    ),
    min_size=1,
    max_size=30,
).map(lambda rs: sorted(rs, key=lambda r: r.arrival))


def every_policy(requests: list[c.Request], traces: c.Traces, capacity: float) -> dict[str, c.Outcome]:
    forecasts = c.Forecasts(traces, c.mean_7d(traces))
    history = [c.Request("FR", -30, 4, 0, 8), c.Request("DE", -150, 2, 0, 4)]
    return {
        "round-robin": c.simulate("rr", c.round_robin(), requests, traces, capacity),
        "cleanest now": c.simulate("cn", c.cleanest_now(traces), requests, traces, capacity),
        "first fit": c.simulate("ff", c.first_fit_origin(), requests, traces, capacity),
        "greenops": c.run_greenops("g", requests, traces, forecasts, capacity),
        "priced": c.run_greenops("p", requests, traces, forecasts, capacity, ScarcityPrice(), history),
        "re-optimised": run_reoptimised("re", requests, traces, forecasts, capacity, ScarcityPrice(), history),
    }


ONLINE = ("round-robin", "cleanest now", "first fit", "greenops", "priced")  # nothing booked ever moves


@pytest.fixture(scope="module")
def traces() -> c.Traces:
    return synthetic_traces(3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=requests_strategy, capacity=st.sampled_from([8.0, 12.0, 24.0, 64.0]))
def test_no_policy_exceeds_capacity_starts_early_or_hides_a_miss(traces, requests, capacity):
    for name, out in every_policy(requests, traces, capacity).items():
        used = {z: np.zeros(HOURS) for z in c.ZONES}
        for r, zone, start in out.placements:
            assert start >= r.arrival, f"{name} started a VM before it was asked for"
            used[zone][start : start + r.duration] += r.cpu
        assert all((u <= capacity + 1e-9).all() for u in used.values()), f"{name} went over capacity"
        late = sum(start > r.latest_start for r, _, start in out.placements)
        assert out.missed == late and len(out.placements) + out.unplaced == len(requests), name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=requests_strategy, capacity=st.sampled_from([12.0, 24.0, 64.0]))
def test_a_decision_never_changes_for_requests_that_came_after_it(traces, requests, capacity):
    """Online, one request at a time: what was decided for the first k requests is what a run on those
    k alone decides (nothing booked is moved by a later request, and no decision saw the future)."""
    k = max(1, len(requests) // 2)
    full, prefix = every_policy(requests, traces, capacity), every_policy(requests[:k], traces, capacity)
    for name in ONLINE:
        assert full[name].placements[: len(prefix[name].placements)] == prefix[name].placements, name


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=requests_strategy, capacity=st.sampled_from([12.0, 24.0, 64.0, float("inf")]))
def test_the_offline_bound_is_below_every_plan_that_meets_its_deadlines(traces, requests, capacity):
    bound = offline_bound(requests, traces, capacity)
    assert bound.status.startswith("optimal")
    for name, out in every_policy(requests, traces, capacity).items():
        if out.missed == 0 and bound.missed < 1e-9:
            assert bound.grams <= out.grams + 1e-6, f"{name} beat the bound"
    assert bound.missed <= min(o.missed for o in every_policy(requests, traces, capacity).values()) + 1e-9


def flat(value: float, hours: int = 48) -> Series:
    return Series(0.0, H, np.full(hours, value))


def test_a_price_only_reorders_what_fits_and_is_nothing_without_a_capacity():
    forecasts = {"FR": flat(40.0), "GB": flat(200.0)}
    job = Job(cpu=4, memory=1, duration=2 * H)
    unbounded = CapacityLedger()
    assert best_placement(forecasts, job, 0, 24 * H, unbounded, price=ScarcityPrice()) == best_placement(
        forecasts, job, 0, 24 * H, unbounded
    )
    ledger = CapacityLedger(capacity_vcpu=8)
    ledger.reserve("FR", 0, 2 * H, 4)  # FR's first two hours half full: the next 4 vCPU would fill them
    flexible = best_placement(forecasts, job, 0, 24 * H, ledger, price=ScarcityPrice())
    assert (flexible.zone, flexible.start, flexible.mean_intensity) == ("FR", 2 * H, 40.0)  # a later clean hour
    urgent = best_placement(forecasts, job, 0, 2 * H, ledger, price=ScarcityPrice())
    assert (urgent.zone, urgent.start) == ("FR", 0)  # no other start: it pays, and still fits
    ledger.reserve("FR", 0, 2 * H, 4)
    assert best_placement(forecasts, job, 0, 2 * H, ledger, price=ScarcityPrice()).zone == "GB"  # full is full


def test_the_urgent_outlook_is_last_weeks_urgent_load_yet_to_come():
    week = 7 * 86400
    made = [Urgent(10 * H, 3 * H, 8), Urgent(20 * H, 1 * H, 4)]
    outlook = UrgentOutlook(made, known_since=0)
    now = week + 12 * H  # a week and 12 hours on: the 10:00 request of last week was made before "now"
    expected = np.zeros(16)  # hours 08:00 to 24:00 of this week's day
    expected[20 - 8] = 4.0  # only last week's 20:00 request was made after 12:00
    assert outlook("FR", (week + 8 * H) // H, 16, now).tolist() == expected.tolist()
    expected[10 - 8 : 13 - 8] = 8.0  # at midnight both are still to come
    assert outlook("FR", (week + 8 * H) // H, 16, week).tolist() == expected.tolist()
    assert not UrgentOutlook(made, known_since=0)("FR", 0, 24, 3 * H).any()  # nothing known a day back


# --- the scenario on a fortnight of the real 2025 traces ------------------------------------------


@pytest.fixture(scope="module")
def fortnight(shared_data):
    traces = c.Traces.load(shared_data)
    requests = c.workload(weeks=2)
    return traces, requests, c.warm_up(), c.Forecasts(traces, c.mean_7d(traces))


@pytest.mark.shared_data
def test_with_room_to_spare_the_price_is_never_behind_the_cleanest_zone_now(fortnight):
    traces, requests, history, forecasts = fortnight
    [level] = c.levels(requests, (2.0,))
    cleanest = c.simulate("cn", c.cleanest_now(traces), requests, traces, level.capacity)
    plain = c.run_greenops("g", requests, traces, forecasts, level.capacity)
    priced = c.run_greenops("p", requests, traces, forecasts, level.capacity, ScarcityPrice(), history)
    assert priced.grams < cleanest.grams and priced.grams < plain.grams


@pytest.mark.shared_data
def test_below_the_peak_the_price_misses_fewer_deadlines_than_round_robin_and_plain_greenops(fortnight):
    traces, requests, history, forecasts = fortnight
    [level] = c.levels(requests, (0.5,))
    rr = c.simulate("rr", c.round_robin(), requests, traces, level.capacity)
    plain = c.run_greenops("g", requests, traces, forecasts, level.capacity)
    priced = c.run_greenops("p", requests, traces, forecasts, level.capacity, ScarcityPrice(), history)
    assert priced.missed < plain.missed < rr.missed
