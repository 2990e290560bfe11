"""The controller against real servers: it confirms admission's holds, releases on observed
deletion (and on deletions nobody watched), expires forged holds, survives kill -9 without losing
or doubling anything, and of two replicas only the leader acts."""

from __future__ import annotations

import time

import pytest

from greenops.local.controller import ControllerProcess, action_of, actions_when
from tests.support.cluster_path import HOLD_SECONDS, controller_process, template

pytestmark = [pytest.mark.integration, pytest.mark.tools]


def controller(cluster, identity: str, tmp_path) -> ControllerProcess:
    return controller_process(cluster, tmp_path, identity)


def create(cluster, ns: str, name: str) -> str:
    with cluster.cp.client() as k:
        r = k.post(cluster.path(ns), json=template(name, ns))
        assert r.status_code == 201, r.text
        return r.json()["metadata"]["annotations"]["greenops.io/reservation"]


def delete(cluster, ns: str, name: str) -> None:
    with cluster.cp.client() as k:
        assert k.delete(cluster.path(ns, name)).status_code == 200


def acting_unled(p: ControllerProcess) -> list[str]:
    """The actions a replica logged while it was not leading (between its "not leading any more"
    and its next "leading as", or before its first)."""
    leading, unled = False, []
    for line in p.log.read_text(errors="replace").splitlines():
        if "leading as " in line:
            leading = True
        elif "not leading any more" in line:
            leading = False
        elif (action := action_of(line)) is not None and not leading:
            unled.append(action)
    return unled


def confirmed(row) -> bool:
    # a run whose best window is now has its gate opened by the same pass: Provisioning is confirmed too
    return row["held_until"] is None and row["phase"] in ("Scheduled", "Provisioning", "Running")


def released(row) -> bool:
    return row["phase"] == "Released"


def test_a_stored_object_confirms_its_hold_and_its_deletion_releases_it(cluster, tmp_path):
    with controller(cluster, "solo", tmp_path) as c:
        c.wait_leading()
        key = create(cluster, "team-a", "confirm-me")
        booked = cluster.reservation(key)
        assert booked is not None
        row = cluster.wait(key, confirmed)
        assert row["revision"] == booked["revision"]  # confirming is not a new booking
        delete(cluster, "team-a", "confirm-me")
        cluster.wait(key, released)
        # the admission webhook's DELETE review may release it first; either way it is released once
        actions = actions_when([c], f"confirmed {key}")
        assert actions.count(f"confirmed {key}") == 1
        assert actions.count(f"released {key}") <= 1


def test_a_forged_creates_hold_expires_with_a_reason(cluster, tmp_path):
    key = cluster.hold_never_stored("team-b")
    assert cluster.reservation(key)["held_until"] is not None
    with controller(cluster, "sweeper", tmp_path) as c:
        c.wait_leading()
        row = cluster.wait(key, released, timeout=HOLD_SECONDS + 20)
        assert row["reason"].startswith("hold expired at ") and "no VmTemplate was stored under it" in row["reason"]


def test_kill_9_mid_stream_then_restart_loses_and_doubles_nothing(cluster, tmp_path):
    first = controller(cluster, "first", tmp_path)
    with first:
        first.wait_leading()
        gone = create(cluster, "team-a", "deleted-while-dead")
        cluster.wait(gone, confirmed)
        first.kill()
    before = cluster.reservation(gone)
    # what happens while no controller runs: a deletion the webhook does not release (OPA keeps the
    # booking of a DELETE only if it is reachable; here the controller must find it by the list) and
    # a new object whose hold nobody confirms yet
    with cluster.cp.client() as k:
        obj = k.get(cluster.path("team-a", "deleted-while-dead")).json()
    born = create(cluster, "team-b", "born-while-dead")
    delete(cluster, "team-a", "deleted-while-dead")
    after_delete = cluster.reservation(gone)
    assert cluster.reservation(born)["held_until"] is not None

    with controller(cluster, "second", tmp_path) as second:
        second.wait_leading()
        row = cluster.wait(born, confirmed)
        row = cluster.wait(gone, released)
        # released exactly once: one revision more than when it was confirmed
        assert row["revision"] == before["revision"] + 1
        assert obj["metadata"]["annotations"]["greenops.io/reservation"] == gone
        by_second = [] if released(after_delete) else [f"released {gone}"]
        actions = actions_when([first, second], f"confirmed {born}", *by_second)
        assert actions.count(f"confirmed {born}") == 1
        assert actions.count(f"confirmed {gone}") == 1
        assert actions.count(f"released {gone}") == (0 if released(after_delete) else 1)


def test_two_replicas_act_once(cluster, tmp_path):
    with controller(cluster, "left", tmp_path) as left, controller(cluster, "right", tmp_path) as right:
        deadline = time.monotonic() + 30
        while not any("leading as" in p.log.read_text() for p in (left, right) if p.log.exists()):
            assert time.monotonic() < deadline, "no replica leads"
            time.sleep(0.1)
        keys = [create(cluster, "team-a", f"pair-{n}") for n in range(4)]
        for key in keys:
            cluster.wait(key, confirmed)
        # Each hold is confirmed once, by a replica that led when it did. Usually one replica does it
        # all; on a loaded machine a missed renewal of the 4 s lease may hand leadership over
        # mid-way, and then the other replica's confirmations come after its own "leading as".
        for p in (left, right):
            assert not acting_unled(p), (p.identity, p.log.read_text())
        actions = actions_when([left, right], *(f"confirmed {key}" for key in keys))
        for key in keys:
            assert actions.count(f"confirmed {key}") == 1, (left.actions(), right.actions())


def test_deleted_while_opa_is_down_is_still_released(cluster, tmp_path):
    """Last in the module: OPA stays down."""
    with controller(cluster, "outage", tmp_path) as c:
        c.wait_leading()
        key = create(cluster, "team-b", "outage")
        cluster.wait(key, confirmed)
        cluster.opa.stop()
        delete(cluster, "team-b", "outage")  # the DELETE hook fails open: the API server deletes anyway
        row = cluster.wait(key, released)
        assert row["reason"] == "VmTemplate team-b/outage deleted (observed by the controller)"
        assert actions_when([c], f"released {key}").count(f"released {key}") == 1
