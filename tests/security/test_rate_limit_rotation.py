"""The rate limit holds per principal: naming other tenants in the body does not reset it."""

from __future__ import annotations

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking

pytestmark = pytest.mark.integration


def test_rotating_the_bodys_tenant_does_not_dodge_the_limit(tmp_path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "3/minute"}
    with SchedulerServer(env=env, log=tmp_path / "s.log") as sched:
        several = sched.issue("platform-ci", ["t0", "t1", "t2", "t3", "t4"], paths=["pulumi"])
        other = sched.issue("other-ci", ["t9"], paths=["pulumi"])
        headers = {"Authorization": f"Bearer {several}"}
        codes = [
            httpx.post(f"{sched.url}/scheduling", json=booking(tenant=f"t{i}"), headers=headers, timeout=15).status_code
            for i in range(5)
        ]
        assert codes == [200, 200, 200, 429, 429]
        refused = httpx.post(f"{sched.url}/scheduling", json=booking(tenant="t0"), headers=headers, timeout=15)
        assert refused.headers["retry-after"] and "principal platform-ci" in refused.json()["detail"]
        # another principal's budget is its own
        theirs = httpx.post(
            f"{sched.url}/scheduling", json=booking(), headers={"Authorization": f"Bearer {other}"}, timeout=15
        )
        assert theirs.status_code == 200


def test_two_tokens_with_one_name_do_not_share_a_limit(tmp_path):
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "2/minute"}
    with SchedulerServer(env=env, log=tmp_path / "s.log") as sched:
        # names are labels an admin chooses; the limit follows the credential
        first = sched.issue("ci", ["t1"], paths=["pulumi"])
        second = sched.issue("ci", ["t2"], paths=["pulumi"])

        def codes(token: str) -> list[int]:
            headers = {"Authorization": f"Bearer {token}"}
            return [
                httpx.post(f"{sched.url}/scheduling", json=booking(), headers=headers, timeout=15).status_code
                for _ in range(3)
            ]

        assert codes(first) == [200, 200, 429]
        assert codes(second) == [200, 200, 429]


def test_one_tenants_admissions_do_not_spend_anothers_budget(tmp_path):
    # OPA's one principal admits every namespace's VmTemplates, under the namespace's tenant (which
    # no object's author chooses): its limit is kept per tenant, and a dry run spends only its own
    env = {"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_RATE_LIMIT": "3/minute"}
    with SchedulerServer(env=env, log=tmp_path / "s.log") as sched:
        opa = {"Authorization": f"Bearer {sched.issue('opa', None, paths=['cluster'])}"}

        def admit(tenant: str, key: str, dry_run: bool = False) -> int:
            body = booking(key=key, tenant=tenant, path="cluster", dry_run=dry_run)
            return httpx.post(f"{sched.url}/scheduling", json=body, headers=opa, timeout=15).status_code

        assert [admit("team-a", f"a/vm/{i}", dry_run=True) for i in range(4)] == [200, 200, 200, 429]
        assert admit("team-b", "b/vm/1") == 200  # a real CREATE of another tenant is not crowded out
        assert admit("team-a", "a/vm/9") == 429  # the flooding tenant stays limited
        listed = httpx.get(f"{sched.url}/reservations", headers=sched.admin_headers, timeout=15).json()
        assert [r["key"] for r in listed["reservations"]] == ["b/vm/1"]  # dry runs booked nothing
