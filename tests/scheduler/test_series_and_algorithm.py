from datetime import UTC, datetime

import numpy as np
import pytest

from greenops.intensity.series import Series
from greenops.search.algorithm import (
    SLOT,
    CapacityLedger,
    Job,
    NoFeasibleWindow,
    best_placement,
    candidate_starts,
    candidates,
    place_batch,
)

H = 3600.0
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def hourly(values, start=T0):
    return Series(start, H, np.array(values, dtype=float))


# --- series ------------------------------------------------------------------------------
def test_window_mean_is_exact_for_steps():
    s = hourly([100, 200, 300, 400])
    assert s.window_means(np.array([T0]), 2 * H)[0] == pytest.approx(150)
    # A start between data points weighs each step by its overlap: 0.5h@100 + 1h@200 + 0.5h@300
    assert s.window_means(np.array([T0 + 0.5 * H]), 2 * H)[0] == pytest.approx(200)
    assert s.window_means(np.array([T0 + 0.75 * H]), 0.5 * H)[0] == pytest.approx(150)


def test_what_a_series_computes_once_is_shared_read_only():
    s = hourly([100, 200, 300, 400])
    assert s.boundaries is s.boundaries
    with pytest.raises(ValueError, match="read-only"):
        s.boundaries[0] = 0
    first = s.window_means(np.array([T0, T0 + 0.5 * H]), 2 * H)
    assert first.tolist() == s.window_means(np.array([T0, T0 + 0.5 * H]), 2 * H).tolist() == [150, 200]


def test_value_at_and_slice():
    s = hourly([1, 2, 3, 4])
    assert list(s.value_at(np.array([T0, T0 + 1.5 * H, T0 + 3.99 * H]))) == [1, 2, 4]
    part = s.slice(T0 + 1.2 * H, T0 + 2.1 * H)
    assert part.start == T0 + H and list(part.values) == [2, 3]


def test_series_rejects_missing_values():
    with pytest.raises(ValueError, match="missing"):
        hourly([1, float("nan")])


def test_from_pandas_infers_step_and_fills_gaps():
    import pandas as pd

    idx = pd.to_datetime(["2026-01-01T00:00Z", "2026-01-01T00:30Z", "2026-01-01T01:30Z"])
    s = Series.from_pandas(pd.Series([1.0, 2.0, 4.0], index=idx))
    assert s.step == 1800 and list(s.values) == [1, 2, 2, 4]


# --- the window search ---------------------------------------------------------------------
def test_candidates_include_breakpoints_and_ends():
    s = hourly([5] * 6)
    starts = candidate_starts(s, T0 + 600, T0 + 4 * H, 1.5 * H)
    assert T0 + 600 in starts and T0 + 4 * H in starts
    assert T0 + H in starts and T0 + 0.5 * H in starts  # a data point, and a data point minus D


@pytest.mark.parametrize("seed", range(5))
def test_candidates_are_the_distinct_points_in_order(seed):
    rng = np.random.default_rng(seed)
    s = Series(T0 + rng.integers(0, 4) * 900, 900.0, rng.uniform(0, 500, 200))
    earliest = T0 + float(rng.uniform(0, 3600))
    for duration in (900.0, 2 * H, float(rng.uniform(60, 5 * H))):
        latest = earliest + float(rng.uniform(0, 40 * H))
        b = s.boundaries
        expected = np.unique(np.concatenate((b, b - duration, [earliest, latest])))
        expected = expected[(expected >= earliest) & (expected <= latest)]
        assert np.array_equal(candidate_starts(s, earliest, latest, duration), expected)
        # the means kept with the series' breakpoints are the very values worked out afresh
        for lo, hi in ((earliest, latest), (earliest + 1234.5, latest), (s.start, s.start)):
            starts, means = candidates(s, lo, hi, duration)
            assert np.array_equal(means, s.window_means(starts, duration))
    assert candidate_starts(s, s.end + H, s.end + 2 * H, H).tolist() == [s.end + H, s.end + 2 * H]
    # a range of one instant, on a data point or not, and an empty one
    assert candidate_starts(s, s.start + H, s.start + H, H).tolist() == [s.start + H]
    assert candidate_starts(s, earliest, earliest, H).tolist() == [earliest]
    assert candidate_starts(s, earliest + 1, earliest, H).size == 0


def test_picks_the_cleanest_window_across_zones_and_time():
    forecasts = {"A": hourly([300, 300, 100, 100, 300, 300]), "B": hourly([250] * 6)}
    p = best_placement(forecasts, Job(2, 4, 2 * H), now=T0, deadline=T0 + 6 * H)
    assert (p.zone, p.start, p.mean_intensity) == ("A", T0 + 2 * H, 100)


def test_start_between_data_points_can_win():
    # From now (00:30) a 1h job is best started at 01:00; from 00:30 to 01:30 only a half hour counts.
    forecasts = {"A": hourly([100, 400, 100])}
    p = best_placement(forecasts, Job(1, 1, H), now=T0 + 0.5 * H, deadline=T0 + 3 * H)
    assert p.start == T0 + 2 * H and p.mean_intensity == 100
    # Now at 00:30 with the deadline at 01:30: the only window straddles two steps.
    p = best_placement(forecasts, Job(1, 1, H), now=T0 + 0.5 * H, deadline=T0 + 1.5 * H)
    assert p.start == T0 + 0.5 * H and p.mean_intensity == pytest.approx(250)


@pytest.mark.parametrize("seed", range(20))
def test_exact_optimum_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    forecasts = {z: hourly(rng.uniform(20, 600, 48)) for z in "ABC"}
    now = T0 + rng.uniform(0, 3) * H
    duration = rng.uniform(0.3, 9) * H
    deadline = now + duration + rng.uniform(1, 30) * H
    p = best_placement(forecasts, Job(1, 1, duration), now, deadline)
    assert now <= p.start <= deadline - duration  # the time window holds
    grid = np.arange(now, deadline - duration + 1e-9, 60.0)  # every minute
    brute = min(float(forecasts[z].window_means(grid, duration).min()) for z in forecasts)
    assert p.mean_intensity <= brute + 1e-9


def test_ties_are_deterministic():
    forecasts = {"B": hourly([50] * 4), "A": hourly([50] * 4)}
    p = best_placement(forecasts, Job(1, 1, H), now=T0, deadline=T0 + 4 * H)
    assert (p.zone, p.start) == ("A", T0)
    assert best_placement(dict(reversed(list(forecasts.items()))), Job(1, 1, H), T0, T0 + 4 * H) == p


def test_no_time_for_the_job():
    with pytest.raises(NoFeasibleWindow, match="no time"):
        best_placement({"A": hourly([1] * 4)}, Job(1, 1, 3 * H), now=T0 + 2 * H, deadline=T0 + 4 * H)


# --- capacity: no black hole ---------------------------------------------------------------
def test_capacity_spreads_a_burst():
    forecasts = {"CLEAN": hourly([10] * 24), "OK": hourly([100] * 24), "DIRTY": hourly([700] * 24)}
    ledger = CapacityLedger(capacity_vcpu=64)
    placements = place_batch(forecasts, Job(4, 8, 2 * H), 100, T0, T0 + 6 * H, ledger)
    zones = {z: sum(p.zone == z for p in placements) for z in forecasts}
    # 64 vCPU per slot hold 16 jobs; three 2h windows before the deadline: 48 per zone, cleanest first
    assert zones == {"CLEAN": 48, "OK": 48, "DIRTY": 4}
    for row in ledger._used.values():
        assert max(row.values()) <= 64


def test_a_full_calendar_is_an_error():
    ledger = CapacityLedger(capacity_vcpu=4)
    ledger.reserve("A", T0, 4 * H, 4)
    with pytest.raises(NoFeasibleWindow, match="capacity"):
        best_placement({"A": hourly([1] * 4)}, Job(1, 1, H), T0, T0 + 4 * H, ledger)


def test_job_larger_than_a_slot_never_fits():
    with pytest.raises(NoFeasibleWindow):
        best_placement({"A": hourly([1] * 4)}, Job(8, 1, H), T0, T0 + 4 * H, CapacityLedger(4))


def test_ledger_forgets_the_past():
    ledger = CapacityLedger(10)
    ledger.reserve("A", T0, 3 * H, 5)
    ledger.forget_before(T0 + 2 * H)
    assert sorted(ledger._used["A"]) == [int(T0 // SLOT) + 2]


def test_the_ledger_reads_the_same_hours_whether_few_or_many_are_booked():
    first = int(T0 // SLOT)
    sparse = CapacityLedger(10)
    sparse.reserve("A", T0 + 2 * H, 2 * H, 3)
    sparse.reserve("A", T0 + 30 * H, H, 1)  # beyond the hours read
    assert sparse.used("A", first, 6).tolist() == [0, 0, 3, 3, 0, 0]
    dense = CapacityLedger(10)
    dense.reserve("A", T0 - 5 * H, 12 * H, 2)  # more hours booked than read
    assert dense.used("A", first, 4).tolist() == [2, 2, 2, 2]
    assert dense.used("B", first, 2).tolist() == [0, 0]
    assert dense.booked("A") and not dense.booked("B")


def test_a_zone_whose_hours_were_all_given_back_is_free():
    first = int(T0 // SLOT)
    ledger = CapacityLedger(4, {"A": {first: 0.0, first + 1: 0.0}})  # as the record reads released hours
    assert not ledger.booked("A")
    assert best_placement({"A": hourly([1] * 4)}, Job(4, 1, H), T0, T0 + 4 * H, ledger).start == T0


def test_batch_total_is_close_to_the_optimum():
    """Greedy batch placement vs the LP relaxation of the optimal assignment (a lower bound)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(3)
    zones = {z: hourly(rng.uniform(50, 500, 24)) for z in "ABCD"}
    job, n, cap = Job(4, 8, 2 * H), 60, 16
    ledger = CapacityLedger(cap)
    greedy = place_batch(zones, job, n, T0, T0 + 24 * H, ledger)
    greedy_total = sum(p.mean_intensity for p in greedy)
    # LP: x[z, s] jobs starting at hour s in zone z; each slot's load <= cap/cpu; sum x = n.
    starts = np.arange(0, 23)
    cost, cols = [], []
    for z, s in zones.items():
        for k in starts:
            cost.append(s.window_means(np.array([T0 + k * H]), job.duration)[0])
            cols.append((z, k))
    a_ub, b_ub = [], []
    for z in zones:
        for slot in range(24):
            a_ub.append([1.0 if (cz == z and k <= slot < k + 2) else 0.0 for cz, k in cols])
            b_ub.append(cap / job.cpu)
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=[[1.0] * len(cols)], b_eq=[n], bounds=(0, None))
    assert res.status == 0
    assert greedy_total <= 1.10 * res.fun
