"""The controller's two foundations on a real kube-apiserver: the VmTemplate list+watch (versions,
bookmarks, 410 Gone) and leader election on a Lease (one leader, a takeover only after expiry,
an immediate one after a clean hand-over)."""

from __future__ import annotations

import threading
import time

import pytest

from greenops.controller.kube import api_client
from greenops.controller.lease import LeaseElector
from greenops.controller.watch import Changed, Listed, VmTemplateWatch
from greenops.local.controlplane import LocalControlPlane
from greenops.local.webhook import GROUP, VERSION, vmtemplate_crd
from tests.support.common import require_tool

pytestmark = [pytest.mark.integration, pytest.mark.tools]
NS = "ctl"


def template(name: str) -> dict:
    spec = {
        "vmName": name,
        "cpu": 2,
        "memory": 4,
        "duration": "1h",
        "maxLatency": 2000,
        "tenant": NS,
        "deadline": "2030-01-01T00:00:00Z",
        "originRegion": "westeurope",  # required by the workload contract, the CRD's schema included
    }
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VmTemplate", "metadata": {"name": name}, "spec": spec}


@pytest.fixture(scope="module")
def cp():
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    with LocalControlPlane() as cp:
        cp.create_crd(vmtemplate_crd())
        with cp.client() as k:
            k.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).raise_for_status()
        yield cp


def path(name: str = "") -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/vmtemplates" + (f"/{name}" if name else "")


class Collector:
    """Runs a watch's stream in a thread and keeps what it yields."""

    def __init__(self, watch: VmTemplateWatch):
        self.watch, self.items, self.stop = watch, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        for item in self.watch.stream(self.stop):
            self.items.append(item)

    def wait_for(self, predicate, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [i for i in list(self.items) if predicate(i)]
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"nothing matched within {timeout}s; got {self.items}")

    def close(self):
        self.stop.set()


def changed(kind: str, name: str):
    return lambda i: isinstance(i, Changed) and i.type == kind and i.object["metadata"]["name"] == name


def test_lists_then_watches_every_change(cp):
    with cp.client() as k:
        k.post(path(), json=template("before")).raise_for_status()
    c = Collector(VmTemplateWatch(api_client(str(cp.kubeconfig_path)), timeout_seconds=5))
    try:
        [listed] = c.wait_for(lambda i: isinstance(i, Listed))
        assert "before" in {o["metadata"]["name"] for o in listed.objects}
        with cp.client() as k:
            k.post(path(), json=template("after")).raise_for_status()
            obj = k.get(path("after")).json()
            obj["metadata"]["annotations"] = {"touched": "yes"}
            k.put(path("after"), json=obj).raise_for_status()
            k.delete(path("before")).raise_for_status()
        c.wait_for(changed("ADDED", "after"))
        c.wait_for(changed("MODIFIED", "after"))
        c.wait_for(changed("DELETED", "before"))
        # the server ends each watch request after 5 s and the stream resumes from its version:
        # nothing is listed again and no event is delivered twice
        time.sleep(6)
        with cp.client() as k:
            k.post(path(), json=template("later")).raise_for_status()
        c.wait_for(changed("ADDED", "later"))
        assert sum(isinstance(i, Listed) for i in c.items) == 1
        assert len(c.wait_for(changed("ADDED", "after"))) == 1
    finally:
        c.close()


def test_a_restarted_watch_resumes_from_its_version_without_a_gap(cp):
    api = api_client(str(cp.kubeconfig_path))
    first = VmTemplateWatch(api, timeout_seconds=5)
    version = first.list().resource_version
    with cp.client() as k:  # changes while nobody watches
        k.post(path(), json=template("unwatched")).raise_for_status()
        k.delete(path("unwatched")).raise_for_status()
    resumed = VmTemplateWatch(api, timeout_seconds=5)
    resumed.resource_version = version
    c = Collector(resumed)
    try:
        c.wait_for(changed("ADDED", "unwatched"))
        c.wait_for(changed("DELETED", "unwatched"))
        assert not any(isinstance(i, Listed) for i in c.items)
    finally:
        c.close()


def test_a_version_too_old_lists_again(cp):
    api = api_client(str(cp.kubeconfig_path))
    w = VmTemplateWatch(api, timeout_seconds=5)
    w.resource_version = "1"  # older than anything the API server's watch cache still holds
    c = Collector(w)
    try:
        c.wait_for(lambda i: isinstance(i, Listed))
    finally:
        c.close()


def test_one_leader_a_takeover_after_expiry_and_at_once_after_a_hand_over(cp):
    api = api_client(str(cp.kubeconfig_path))
    a = LeaseElector(api, NS, "ctl-lease", "a", duration=3, renew_deadline=2)
    b = LeaseElector(api, NS, "ctl-lease", "b", duration=3, renew_deadline=2)
    assert a.try_acquire_or_renew() and a.leading()
    assert not b.try_acquire_or_renew() and not b.leading()
    assert a.try_acquire_or_renew()
    # a stops renewing (a hung or killed pod): b waits a whole lease duration from when it saw the
    # last renewal, and a has stepped down by its own deadline before that
    started = time.monotonic()
    while not b.try_acquire_or_renew():
        assert time.monotonic() - started < 10
        time.sleep(0.2)
    assert time.monotonic() - started >= 2.5
    assert not a.leading()
    assert not a.try_acquire_or_renew()
    # b hands over cleanly: a takes it at its next round
    b.release()
    assert not b.leading()
    assert a.try_acquire_or_renew()


def test_racing_candidates_never_both_win(cp):
    api = api_client(str(cp.kubeconfig_path))
    electors = [
        LeaseElector(api_client(str(cp.kubeconfig_path)), NS, "race", f"c{i}", duration=5, renew_deadline=3)
        for i in range(6)
    ]
    del api
    barrier = threading.Barrier(len(electors))
    wins: list[str] = []

    def run(e):
        barrier.wait()
        if e.try_acquire_or_renew():
            wins.append(e.identity)

    threads = [threading.Thread(target=run, args=(e,)) for e in electors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
