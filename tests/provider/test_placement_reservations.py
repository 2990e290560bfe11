"""Placement and the scheduler's record of placements, against a real OPA and a real scheduler on
loopback: a retried create books once, each phase reaches the record, retirement and delete give
the capacity back, a replacement books its new key before the old one goes, and a report the
scheduler could not take is made again on the next pass."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration


@pytest.fixture
def servers():
    with placement_servers() as both:
        yield both


def record(scheduler, **params) -> dict[str, dict]:
    """The record, as the platform's admin reads it."""
    r = httpx.get(f"{scheduler.url}/reservations", params=params, headers=scheduler.admin_headers)
    assert r.status_code == 200, r.text
    return {x["key"]: x for x in r.json()["reservations"]}


def start_of(outs):
    from datetime import datetime

    return datetime.fromisoformat(outs["decision"]["schedulingTime"].replace("Z", "+00:00"))


def test_the_record_follows_the_lifecycle_and_delete_releases(servers):
    opa, scheduler = servers
    clock = Clock()
    provider = PlacementProvider(clock)
    p = props(servers) | {"stack": "dev"}
    key = reservation_key(p)
    assert key.startswith("dev/etl/")
    out = provider.create(p).outs
    retried = provider.create(p).outs  # a create retried after the engine lost its answer
    assert retried["decision"] == out["decision"]
    [row] = record(scheduler, tenant="data").values()
    d = out["decision"]
    assert row["key"] == key and row["phase"] == "Scheduled" and row["path"] == "pulumi"
    assert (row["provider"], row["region"], row["zone"]) == (d["provider"], d["region"], d["zone"])
    assert row["workload"]["name"] == "etl" and out["reservation"] == {"key": key, "phase": "Scheduled"}

    clock.now = start_of(out)
    running = provider.update("greenvm-etl", out, p).outs
    assert running["phase"] == "Running" and running["reservation"]["phase"] == "Running"
    assert record(scheduler)[key]["phase"] == "Running"

    clock.now = start_of(out) + timedelta(hours=2, minutes=1)
    done = provider.update("greenvm-etl", running, p).outs
    assert done["phase"] == "Completed" and done["reservation"]["phase"] == "Completed"
    assert key not in record(scheduler)  # completed runs no longer count
    assert record(scheduler, all=True)[key]["phase"] == "Completed"

    provider.delete("greenvm-etl", done)  # already terminal: the record keeps Completed
    assert record(scheduler, all=True)[key]["phase"] == "Completed"


def test_delete_of_a_scheduled_workload_releases_it_and_a_retried_delete_is_harmless(servers):
    _, scheduler = servers
    provider = PlacementProvider(Clock())
    p = props(servers) | {"stack": "dev"}
    out = provider.create(p).outs
    provider.delete("greenvm-etl", out)
    provider.delete("greenvm-etl", out)
    row = record(scheduler, all=True)[reservation_key(p)]
    assert row["phase"] == "Released" and row["reason"] == "workload etl removed from stack dev"


def test_a_replacement_books_its_new_key_before_the_old_is_released(servers):
    _, scheduler = servers
    provider = PlacementProvider(Clock())
    old = props(servers) | {"stack": "dev"}
    new = {**old, "workload": {**old["workload"], "cpu": 2}}
    old_out = provider.create(old).outs
    provider.create(new)  # Pulumi creates the replacement first ...
    assert set(record(scheduler)) == {reservation_key(old), reservation_key(new)}
    provider.delete("greenvm-etl", old_out)  # ... then deletes the old one
    assert set(record(scheduler)) == {reservation_key(new)}
    released = record(scheduler, all=True)[reservation_key(old)]
    assert released["reason"] == (
        f"workload etl replaced in stack dev: its spec changed, and its new placement is {reservation_key(new)}"
    )


def test_a_report_the_scheduler_missed_is_made_on_the_next_pass(servers, tmp_path):
    opa, scheduler = servers
    clock = Clock()
    provider = PlacementProvider(clock)
    p = props(servers) | {"stack": "dev"}
    out = provider.create(p).outs
    scheduler.stop()  # down when the run starts
    clock.now = start_of(out)
    running = provider.update("greenvm-etl", out, p).outs
    assert running["phase"] == "Running" and running["reservation"]["phase"] == "Scheduled"
    assert provider.diff("greenvm-etl", running, p).changes  # the lag alone is a change to apply
    # the same record: the stack's token, kept there, is known to the restarted scheduler
    with SchedulerServer(port=scheduler.port, database=scheduler.database) as back:
        synced = provider.update("greenvm-etl", running, p).outs
        assert synced["reservation"]["phase"] == "Running"
        assert record(back)[reservation_key(p)]["phase"] == "Running"
        assert not provider.diff("greenvm-etl", synced, p).changes
