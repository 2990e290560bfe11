"""The queue's order (greenops.reservations.queue) and what a round of admissions skips
(greenops.scheduler.queueing.Hopeless), on rows as the record holds them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from greenops.reservations.queue import in_admission_order
from greenops.scheduler.queueing import LEFT, NO_QUOTA, NO_ROOM, Hopeless

T0 = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)


def row(key: str, tenant: str, priority: int = 100, after: int = 0, cpu: float = 4, **request) -> dict:
    return {
        "key": key,
        "tenant": tenant,
        "priority": priority,
        "queued_at": T0 + timedelta(seconds=after),
        "created_at": T0,
        "milli_cpu": round(cpu * 1000),
        "jobs": 1,
        "request": {"eligible_regions": ["FR", "DE"], "cpu": cpu, "duration": 2, "deadline": "2027-01-10T09:00:00Z"}
        | request,
    }


def keys(rows: list[dict]) -> list[str]:
    return [r["key"] for r in rows]


def test_a_higher_class_first_then_fair_across_tenants_then_oldest():
    rows = [row(f"a{i}", "a", after=i) for i in range(4)] + [row("b0", "b", after=10), row("c0", "c", 1000, 20)]
    assert keys(in_admission_order(rows, {}, T0)) == ["c0", "a0", "b0", "a1", "a2", "a3"]


def test_the_tenant_holding_less_goes_first_and_then_the_one_served_least_recently():
    rows = [row("a0", "a"), row("b0", "b", after=5)]
    assert keys(in_admission_order(rows, {"a": (8000, None)}, T0)) == ["b0", "a0"]
    served = {"a": (0, T0 - timedelta(minutes=1)), "b": (0, T0 - timedelta(hours=1))}
    assert keys(in_admission_order(rows, served, T0)) == ["b0", "a0"]
    assert keys(in_admission_order(rows, {}, T0)) == ["a0", "b0"]


def test_a_round_skips_what_asks_for_as_much_as_what_found_no_room():
    hopeless = Hopeless()
    small = row("s", "a", cpu=4)
    hopeless.learn(small, NO_ROOM)
    assert hopeless.covers(row("bigger", "b", cpu=8))
    assert hopeless.covers(row("narrower", "b", deadline="2027-01-10T08:00:00Z"))
    assert not hopeless.covers(row("smaller", "b", cpu=2))
    assert not hopeless.covers(row("wider", "b", deadline="2027-01-10T10:00:00Z"))
    assert not hopeless.covers(row("elsewhere", "b", eligible_regions=["FR"]))
    hopeless.learn(row("q", "c", cpu=6), NO_QUOTA)
    assert hopeless.covers(row("c-more", "c", cpu=6, eligible_regions=["PL"]))
    assert not hopeless.covers(row("c-less", "c", cpu=5, eligible_regions=["PL"]))
    hopeless.learn(row("gone", "d", cpu=1), LEFT)
    assert not hopeless.covers(row("d", "d", cpu=1, eligible_regions=["PL"]))
