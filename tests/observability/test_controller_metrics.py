"""The cluster path's controller with ``--metrics-port``, on real servers (etcd + kube-apiserver,
OPA as the admission webhook, the scheduler): its /metrics after a VmTemplate is admitted, its gate
opens and its run ends on the controller's clock (a file the test plays forward), after a forged
hold expires, with a second replica that does not lead, and beside a controller whose scheduler
credential is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import parse_time, set_clock_file
from greenops.controller.metrics import CAUSES, DEPENDENCIES
from greenops.local.controller import ControllerProcess
from greenops.local.controlplane import free_port
from greenops.observability import names
from tests.observability.metrics_text import Samples, scrape, value, wait_for
from tests.support.cluster_path import HOLD_SECONDS, cluster_path, template

pytestmark = [pytest.mark.integration, pytest.mark.tools]

LEAD = timedelta(seconds=300)  # the chart's default provisioningLeadSeconds
PHASES = ("Provisioning", "Running", "Completed", "Failed")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with cluster_path(tmp_path_factory.mktemp("tls")) as servers:
        yield servers


def controller(cluster, tmp_path, identity: str, clock=None, **kw) -> ControllerProcess:
    return ControllerProcess(
        scheduler_url=cluster.sched.url,
        token=kw.pop("token", cluster.controller_token),
        kubeconfig=cluster.cp.kubeconfig_path,
        identity=identity,
        resync_seconds=0.3,
        readiness="applied",  # no cloud operator here: the run counts from the gate
        clock_file=clock,
        metrics_port=free_port(),
        log=tmp_path / f"{identity}.log",
        **kw,
    )


def metrics_url(c: ControllerProcess) -> str:
    return f"http://127.0.0.1:{c.metrics_port}/metrics"


def transitions(s: Samples) -> dict[str, float | None]:
    return {phase: value(s, names.CONTROLLER_TRANSITIONS, phase=phase) for phase in PHASES}


def test_transitions_releases_and_the_leader_on_metrics(cluster, tmp_path):
    clock = tmp_path / "now"
    # two hours behind the scheduler's clock, which may place a run at once: every gate is ahead
    set_clock_file(clock, datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2))
    c, b = controller(cluster, tmp_path, "leader", clock), controller(cluster, tmp_path, "standby", clock)
    with c:
        c.wait_leading()
        with b:  # a second replica, once the first leads
            url = metrics_url(c)
            s = scrape(url)
            assert value(s, names.CONTROLLER_LEADER) == 1.0
            assert value(wait_for(metrics_url(b), lambda s: True), names.CONTROLLER_LEADER) == 0.0  # it waits
            assert transitions(s) == dict.fromkeys(PHASES, 0.0)  # every series from the start, at zero
            assert {x: value(s, names.CONTROLLER_RELEASES, cause=x) for x in CAUSES} == dict.fromkeys(CAUSES, 0.0)

            with cluster.cp.client() as k:
                r = k.post(cluster.path("team-a", ""), json=template("measured", "team-a", eligibleProviders=["azure"]))
                assert r.status_code == 201, r.text
            key = r.json()["metadata"]["annotations"]["greenops.io/reservation"]
            row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
            assert transitions(scrape(url)) == dict.fromkeys(PHASES, 0.0)  # confirmed and recorded: no transition

            set_clock_file(clock, parse_time(row["start"]) - LEAD + timedelta(seconds=1))
            row = cluster.wait(key, lambda r: r["phase"] == "Running")
            s = wait_for(url, lambda s: transitions(s)["Running"] == 1.0, what="the run started")
            assert transitions(s) == {"Provisioning": 1.0, "Running": 1.0, "Completed": 0.0, "Failed": 0.0}

            set_clock_file(clock, parse_time(row["lifecycle"]["runningSince"]) + timedelta(hours=1, seconds=1))
            cluster.wait(key, lambda r: r["phase"] == "Completed")
            s = wait_for(url, lambda s: transitions(s)["Completed"] == 1.0, what="the run retired")
            c.wait_passes(3)  # passes that find nothing to do count nothing more
            s = scrape(url)
            assert transitions(s) == {"Provisioning": 1.0, "Running": 1.0, "Completed": 1.0, "Failed": 0.0}
            assert value(s, names.CONTROLLER_PASS_SECONDS, "_count") >= 3

            # a CREATE that never stored its object: its hold expires (the clock is past it) and is released
            forged = cluster.hold_never_stored("team-b")
            cluster.wait(forged, lambda r: r["phase"] == "Released", timeout=HOLD_SECONDS + 20)
            s = wait_for(
                url, lambda s: value(s, names.CONTROLLER_RELEASES, cause="hold_expired") == 1.0, what="release"
            )
            assert value(s, names.CONTROLLER_RELEASES, cause="gone") == 0.0
            # the API server and the scheduler answered every call
            assert {d: value(s, names.CONTROLLER_ERRORS, dependency=d) for d in DEPENDENCIES} == dict.fromkeys(
                DEPENDENCIES, 0.0
            )

            # the leader stops cleanly and gives the Lease up: the standby leads, and says so
            c.stop()
            b.wait_leading()
            assert value(scrape(metrics_url(b)), names.CONTROLLER_LEADER) == 1.0


def test_a_refused_scheduler_credential_counts_as_the_schedulers_errors(cluster, tmp_path):
    """A controller of its own Lease whose token the scheduler refuses: every sweep fails on the record."""
    with controller(cluster, tmp_path, "refused", token="not-a-token", extra_args=["--lease-name", "refused"]) as c:
        c.wait_leading()
        s = wait_for(
            metrics_url(c),
            lambda s: (value(s, names.CONTROLLER_ERRORS, dependency="scheduler") or 0) >= 2,
            what="the scheduler's errors",
        )
        assert value(s, names.CONTROLLER_ERRORS, dependency="apiserver") == 0.0
        assert value(s, names.CONTROLLER_PASS_SECONDS, "_count") == 0.0  # no pass got past reading the record
