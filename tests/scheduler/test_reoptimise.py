"""Re-optimising the bookings that have not started (greenops/search/reoptimise.py): on generated
calendars, what users rely on holds: nothing over capacity, nothing gated moved, no move within the
gate's lead or past the deadline, the churn bounded, and the ledger equal to the bookings."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from greenops.intensity.series import Series
from greenops.reservations.slots import slots_of
from greenops.search import reoptimise as ro
from greenops.search.algorithm import Assignment, CapacityLedger, Job, NoFeasibleWindow, decide
from greenops.search.scarcity import ScarcityPrice

H = 3600
ZONES = ("DE", "FR", "GB")
LEAD = 0.5 * H


def series(seed: int) -> dict[str, Series]:
    rng = np.random.default_rng(seed)
    return {z: Series(0.0, H, rng.uniform(30, 400, 96)) for z in ZONES}


shape = st.tuples(st.integers(0, 30), st.integers(1, 6), st.integers(0, 24), st.sampled_from([2, 4, 8]))


def book(ledger: CapacityLedger, forecasts, shapes, keys) -> list[ro.Request]:
    """Requests made at their arrival hour, one at a time, as the service books them."""
    out = []
    for key, (arrival, hours, slack, cpu) in zip(keys, shapes, strict=True):
        job = Job(cpu, 1, hours * H)
        deadline = (arrival + slack + hours) * H
        try:
            a = decide(forecasts, job, arrival * H, deadline, ledger)
        except NoFeasibleWindow:
            continue
        ledger.reserve(a.zone, a.start, job.duration, cpu)
        out.append(ro.Request(key, job, deadline, a, moves=key % 4))
    return out


def used(bookings: dict[object, tuple[Assignment, Job]]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for a, job in bookings.values():
        for slot in slots_of(a.start, a.start + job.duration):
            out[a.zone][slot] += job.cpu
    return out


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 50),
    capacity=st.sampled_from([8.0, 12.0, 16.0]),
    before=st.lists(shape, min_size=1, max_size=25),
    arriving=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 12), st.sampled_from([2, 4, 8])), max_size=10),
    now_hour=st.integers(0, 30),
    priced=st.booleans(),
)
def test_a_pass_never_exceeds_capacity_moves_a_gated_booking_or_moves_past_its_bounds(
    seed, capacity, before, arriving, now_hour, priced
):
    forecasts = series(seed)
    ledger = CapacityLedger(capacity)
    now = now_hour * H + 0.25 * H  # a quarter past: the bookings of the next hour are within the lead
    waiting = book(ledger, forecasts, before, range(len(before)))
    arrivals = [
        ro.Request(f"new-{i}", Job(cpu, 1, hours * H), now + (slack + hours) * H)
        for i, (hours, slack, cpu) in enumerate(arriving)
    ]
    step = ro.reoptimise(
        waiting, arrivals, lambda _r, _now: forecasts, now, LEAD, ledger, ScarcityPrice() if priced else None
    )

    final = {w.key: (w.booked, w.job) for w in waiting}
    moved = [m.key for m in step.moves]
    assert len(moved) == len(set(moved)), "a booking moved twice in one pass"
    by_key = {w.key: w for w in waiting}
    for m in step.moves:
        w = by_key[m.key]
        assert w.booked is not None and w.booked.start - LEAD > now, "a gated booking moved"
        assert w.moves < ro.MAX_MOVES, "a booking moved past its cap"
        assert m.before == w.booked and m.reason
        assert m.after.start >= now + LEAD, "moved to a start within the gate's lead"
        assert m.after.start + w.job.duration <= w.deadline + 1e-6, "moved past its deadline"
        final[m.key] = (m.after, w.job)
    for r in arrivals:
        assert (r.key in step.placed) != (r.key in step.unplaced)
        if r.key in step.placed:
            a = step.placed[r.key]
            assert now <= a.start and a.start + r.job.duration <= r.deadline + 1e-6
            final[r.key] = (a, r.job)
    expected = used(final)
    for zone in ZONES:
        row = {s: v for s, v in ledger._used.get(zone, {}).items() if v > 1e-9}
        assert row == {s: v for s, v in expected[zone].items() if v > 1e-9}, "the ledger is not the bookings"
        assert all(v <= capacity + 1e-9 for v in row.values()), "over capacity"


def test_an_urgent_arrival_takes_a_clean_window_from_a_flexible_booking_which_moves_and_says_why():
    clean, dirty = np.full(48, 40.0), np.full(48, 400.0)
    forecasts = {"FR": Series(0.0, H, clean), "GB": Series(0.0, H, dirty)}
    ledger = CapacityLedger(8)
    flexible = Job(8, 1, 2 * H)
    ledger.reserve("FR", 2 * H, 2 * H, 8)  # booked yesterday: FR from 02:00, deadline 24:00
    ledger.reserve("FR", 10 * H, 2 * H, 8)  # and one from 10:00 that nothing needs: it stays, though 06:00 is as clean
    waiting = [
        ro.Request("flexible", flexible, 24 * H, Assignment("FR", 2 * H, 40.0)),
        ro.Request("bystander", flexible, 24 * H, Assignment("FR", 10 * H, 40.0)),
    ]
    urgent = ro.Request("urgent", Job(8, 1, 4 * H), 4 * H)  # must run 00:00-04:00
    step = ro.reoptimise(waiting, [urgent], lambda _r, _now: forecasts, 0.0, LEAD, ledger)
    assert step.placed["urgent"] == Assignment("FR", 0.0, 40.0)
    [move] = step.moves
    assert (move.after.zone, move.after.start) == ("FR", 4 * H) and move.reason == ro.DISPLACED


def test_a_booking_inside_its_gates_lead_stays_and_a_stuck_move_undoes_the_pass():
    forecasts = {"FR": Series(0.0, H, np.full(48, 40.0))}
    ledger = CapacityLedger(8)
    ledger.reserve("FR", 0.25 * H, 2 * H, 8)
    gated = ro.Request("gated", Job(8, 1, 2 * H), 24 * H, Assignment("FR", 0.25 * H, 40.0))
    urgent = ro.Request("urgent", Job(8, 1, 2 * H), 2 * H)
    step = ro.reoptimise([gated], [urgent], lambda _r, _now: forecasts, 0.0, LEAD, ledger)
    assert step.moves == [] and step.unplaced == ["urgent"]  # the gated one keeps its hours
    # a waiting booking with no window left but its own: the pass is undone, the arrival placed alone
    ledger = CapacityLedger(8)
    ledger.reserve("FR", 2 * H, 2 * H, 8)
    tight = ro.Request("tight", Job(8, 1, 2 * H), 4 * H, Assignment("FR", 2 * H, 40.0))
    longer = ro.Request("longer", Job(8, 1, 3 * H), 4 * H)  # less slack: placed first, it takes 00:00-03:00
    step = ro.reoptimise([tight], [longer], lambda _r, _n: forecasts, 0.0, 0.0, ledger)
    assert step.moves == [] and step.unplaced == ["longer"] and step.placed == {}
    assert ledger._used["FR"] == {2: 8.0, 3: 8.0}  # as before the pass
