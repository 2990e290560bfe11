"""The tenancy audit's second round, on the controller's loops: one tenant's bad object (an
annotation no key can be, a request the record refuses) is logged, counted and skipped, and the
pass goes on for every other tenant. Against the real scheduler, with the controller's own
RecordKeeper and Record."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from greenops.common.clock import parse_time
from greenops.controller.metrics import ControllerMetrics
from greenops.controller.record import Record, RecordRefused
from greenops.controller.record_keeper import RESERVATION_ANNOTATION, RecordKeeper
from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sched(tmp_path_factory):
    log = tmp_path_factory.mktemp("controller-loops") / "scheduler.log"
    with SchedulerServer(log=log, env={"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_HOLD_SECONDS": "30"}) as s:
        yield s, s.issue("opa", None, paths=["cluster"]), s.issue("controller", None, paths=["cluster"], role="report")


def vmtemplate(namespace: str, name: str, key: str) -> dict:
    return {"metadata": {"namespace": namespace, "name": name, "annotations": {RESERVATION_ANNOTATION: key}}}


def book(s: SchedulerServer, opa: str, key: str, tenant: str) -> None:
    r = httpx.put(
        f"{s.url}/reservations/{key}",
        json=booking(tenant=tenant, path="cluster"),
        headers={"Authorization": f"Bearer {opa}"},
        timeout=15,
    )
    assert r.is_success, r.text


@pytest.mark.parametrize(
    "bad_key",
    ["team-c/evil/\x00", "team-c/evil/a b", "team-c/evil/" + "u" * 600, "team-c/evil/\u00e9"],
    ids=["nul", "space", "long", "non-ascii"],
)
def test_a_bad_annotation_is_skipped_and_the_sweep_goes_on(sched, bad_key):
    s, opa, controller = sched
    record = Record(s.url, lambda: controller)
    metrics = ControllerMetrics()
    good = f"team-a/good-{abs(hash(bad_key))}/uid"
    book(s, opa, good, "team-a")
    keeper = RecordKeeper(record, lambda: parse_time(NOW) + timedelta(seconds=5), lambda: True, metrics=metrics)
    # the bad object first: before, its error ended the pass and the good hold was never confirmed
    objects = [vmtemplate("team-c", "evil", bad_key), vmtemplate("team-a", good.split("/")[1], good)]
    keeper.sweep(lambda: (objects, "42"))
    assert record.get(good)["held_until"] is None  # confirmed
    assert metrics.skipped.labels("malformed_key")._value.get() == 1
    record.close()


def test_a_key_no_url_can_carry_is_this_requests_refusal_not_the_schedulers(sched):
    s, _, controller = sched
    record = Record(s.url, lambda: controller)
    with pytest.raises(RecordRefused, match="Invalid non-printable"):
        record.get("team-c/evil/\x00")
    with pytest.raises(RecordRefused, match="answered 422"):
        record.patch("team-c/evil/x", {"phase": "NotAPhase"})
    record.close()


def test_a_watch_list_with_a_bad_object_confirms_the_rest(sched):
    # A watch's first list: an object whose spec.tenant no record holds (the record refuses the
    # request: 422) came first and ended the list's handling; the good hold waited for a sweep.
    s, opa, controller = sched
    record = Record(s.url, lambda: controller)
    metrics = ControllerMetrics()
    good = "team-a/listed-good/uid"
    book(s, opa, good, "team-a")
    keeper = RecordKeeper(record, lambda: parse_time(NOW) + timedelta(seconds=5), lambda: True, metrics=metrics)
    bad = vmtemplate("team-c", "evil", "team-c/evil/uid")
    bad["spec"] = {"tenant": "team\x00c"}
    keeper.listed([bad, vmtemplate("team-a", "listed-good", good)])
    assert record.get(good, tenant="team-a")["held_until"] is None  # confirmed
    assert metrics.skipped.labels("refused")._value.get() == 1
    record.close()
