"""The dashboard in a real browser (Debian's headless Chromium) against a running stack on loopback:
the real engine places three workloads through OPA and the scheduler (each tenant with its own
token), a VmTemplate's booking (OPA's principal) stands for the cluster path, and the page must show
both paths' rows, the timeline with one bar per row (hover: the decision and the alternatives
weighed) and the zones' forecasts, with no console error. Served by the scheduler itself (the
in-cluster route, behind a reader's token: it shows the tenants that principal reads) and by
`greenops dashboard`'s loopback app (no token in the browser)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import system_clock
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient
from greenops.engine import automation
from greenops.insight import explain
from greenops.insight.dashboard import SchedulerData
from greenops.insight.dashboard.routes import local_app
from greenops.local.controlplane import free_port
from greenops.local.demo import next_evening
from tests.support import loopback
from tests.support.browser import headless_page, require_browser
from tests.support.engine import engine_stack, iso, render_mode_config

pytestmark = [pytest.mark.tools, pytest.mark.e2e]
NAME = "batch<b>vm</b>"


def workloads(t0: datetime) -> list[dict]:
    due = iso(t0 + timedelta(hours=16))
    return [
        {
            "name": "eu-etl",
            "cpu": 4,
            "memory": 8,
            "duration": "2h",
            "deadline": due,
            "originRegion": "westeurope",
            "dataResidency": "eu",
            "tenant": "data",
        },
        {
            "name": "settle-de",
            "cpu": 2,
            "memory": 8,
            "duration": "2h",
            "deadline": due,
            "originRegion": "germanywestcentral",
            "maxLatency": 8,
            "eligibleProviders": ["azure"],
            "tenant": "energy",
        },
        {
            "name": "render-gb",
            "cpu": 8,
            "memory": 32,
            "duration": "3h",
            "deadline": due,
            "originRegion": "eu-west-2",
            "maxLatency": 5,
            "eligibleProviders": ["aws"],
            "tenant": "media",
        },
    ]


def cluster_booking(client: httpx.Client, t0: datetime) -> str:
    """What OPA's webhook books for an admitted VmTemplate (path cluster, its namespace/name/uid key)."""
    key = "demo/batch-vm/5d7e0c1a-0000-4000-8000-000000000001"
    body = {
        "eligible_regions": ["FR", "DE"],
        "deadline": iso(t0 + timedelta(hours=20)),
        "duration": 1.0,
        "cpu": 2.0,
        "memory": 4.0,
        "tenant": "demo",
        "path": "cluster",
        "earliest_start": iso(t0),
        "regions": {"FR": "azure/francecentral", "DE": "azure/germanywestcentral"},
        # a name is the users' text: the page must show it, never render it
        "workload": {
            "name": NAME,
            "cpu": 2,
            "memory": 4,
            "durationHours": 1,
            "deadline": iso(t0 + timedelta(hours=20)),
        },
    }
    r = client.put(f"/reservations/{key}", json=body)
    assert r.status_code == 200, r.text
    return key


def check_page(url: str, shot, keys: set[str], token: str | None = None) -> None:
    from selenium.webdriver.common.by import By

    with headless_page(url, shot, wait_for_css="#timeline .main-svg", token=token) as page:
        d = page.driver
        shown = {tr.get_attribute("data-key") for tr in d.find_elements(By.CSS_SELECTOR, "#placements tbody tr")}
        assert shown == keys
        assert NAME in d.find_element(By.ID, "placements").text  # shown as text
        assert not d.find_elements(By.CSS_SELECTOR, "#timeline b, #placements b")  # never as markup
        paths = {
            tr.find_elements(By.TAG_NAME, "td")[2].text
            for tr in d.find_elements(By.CSS_SELECTOR, "#placements tbody tr")
        }
        assert paths == {"pulumi", "cluster"}
        bars = d.execute_script(
            "return document.getElementById('timeline').data.find(t => t.name === 'chosen window');"
        )
        assert len(bars["y"]) == len(keys)
        assert any(label.startswith("batch&lt;b&gt;vm&lt;/b&gt; (") for label in bars["y"])  # escaped for plotly
        hovers = "\n".join(bars["hovertext"])
        assert "also weighed:" in hovers  # eu-etl had several zones to choose from
        assert d.execute_script("return document.querySelectorAll('#timeline .barlayer .point').length") >= len(keys)
        zones = d.execute_script(
            "return document.getElementById('intensity').data.filter(t => t.name.endsWith(' forecast')).length"
        )
        assert zones >= 2
        assert "gCO2e" in d.find_element(By.ID, "totals").text
        # each workload links to why it runs where and when: explain's account, in the page
        d.find_element(By.LINK_TEXT, "eu-etl").click()
        explained = d.find_element(By.ID, "explanation").text
        assert "(pulumi path" in explained and "dataResidency eu" in explained  # the constraint chain
        assert "<- chosen" in explained and "why: " in explained and "mapping: zone " in explained
    assert page.console_errors() == []
    assert shot.stat().st_size > 20_000


def test_the_dashboard_in_a_real_browser(tmp_path):
    require_browser()

    t0 = next_evening(datetime.now(UTC))
    with loopback.servers() as (scheduler, opa):
        st = engine_stack(
            tmp_path,
            "board",
            t0,
            render_mode_config(opa.url, scheduler.url, tmp_path / "rendered", workloads=workloads(t0)),
            secrets=loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads(t0))),
        )
        automation.run(st, "up", stream=False)
        # the platform's reader (every tenant, read only): what an on-call engineer's dashboard uses
        TOKEN = scheduler.issue("dashboard-reader", None, paths=["api"], role="read")  # noqa: N806
        webhook = scheduler.issue("webhook", None, paths=["cluster"])  # books as OPA's principal does
        with httpx.Client(base_url=scheduler.url, headers={"Authorization": f"Bearer {webhook}"}) as client:
            cluster_key = cluster_booking(client, t0)
        with httpx.Client(base_url=scheduler.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            keys = {r["key"] for r in client.get("/reservations").json()["reservations"]}
            # a reader may not book
            refused = client.put(f"/reservations/{cluster_key}", json={})
            assert refused.status_code == 403 and "needs the write role" in refused.text
        assert cluster_key in keys and len(keys) == 4

        # a tenant's token sees its own tenant's rows only, on the same route
        energy_only = scheduler.issue("energy-reader", ["energy"], paths=["api"], role="read")
        with httpx.Client(base_url=scheduler.url, headers={"Authorization": f"Bearer {energy_only}"}) as client:
            own = client.get("/dashboard/api/placements").json()["placements"]
            assert [r["workload"] for r in own] == ["settle-de"]
            assert client.get("/dashboard/api/placements", params={"tenant": "media"}).json()["placements"] == []
            assert client.get(f"/dashboard/explain/{cluster_key}").status_code == 404  # another tenant's

        # the scheduler's own route carries the scheduler's authentication
        assert httpx.get(f"{scheduler.url}/dashboard").status_code == 401
        assert httpx.get(f"{scheduler.url}/dashboard/explain/{cluster_key}").status_code == 401
        unknown = httpx.get(
            f"{scheduler.url}/dashboard/explain/no/such/key", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert unknown.status_code == 404 and "no/such/key" in unknown.text
        check_page(f"{scheduler.url}/dashboard", tmp_path / "scheduler-dashboard.png", keys, token=TOKEN)
        # filtered by tenant: only that tenant's rows (the timeline follows the filter)
        with httpx.Client(base_url=scheduler.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            energy = client.get("/dashboard/api/placements", params={"tenant": "energy"}).json()["placements"]
        assert [r["workload"] for r in energy] == ["settle-de"] and energy[0]["phase"] == "Scheduled"
        with headless_page(
            f"{scheduler.url}/dashboard?tenant=energy",
            tmp_path / "filtered.png",
            wait_for_css="#timeline .main-svg",
            token=TOKEN,
        ) as page:
            rows = page.driver.execute_script(
                "return [...document.querySelectorAll('#placements tbody tr')].map(tr => tr.dataset.key)"
            )
        assert rows == [energy[0]["key"]] and page.console_errors() == []

        # explain finds each path's reservation by its own key prefix
        with RetryingClient(scheduler.url, token=TOKEN) as reader:
            assert explain.find(reader, "settle-de", "board")["key"].startswith("board/settle-de/")
            assert explain.find(reader, "demo/batch-vm", "board")["key"] == cluster_key
            with pytest.raises(GreenOpsError, match="no reservation under board/batch-vm/"):
                explain.find(reader, "batch-vm", "board")

        # `greenops dashboard`: the same page from the loopback app reading the scheduler over HTTP
        import uvicorn

        port = free_port()
        with RetryingClient(scheduler.url, token=TOKEN) as reader:
            server = uvicorn.Server(
                uvicorn.Config(
                    local_app(SchedulerData(reader), system_clock), host="127.0.0.1", port=port, log_level="warning"
                )
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            try:
                for _ in range(100):
                    if server.started:
                        break
                    time.sleep(0.05)
                check_page(f"http://127.0.0.1:{port}/dashboard", tmp_path / "local-dashboard.png", keys)
            finally:
                server.should_exit = True
                thread.join(10)
