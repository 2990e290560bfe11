"""Forecast-source failures are counted even when the fallback answers: the decision goes on, but an
on-call engineer must see that the forecasts are not the model's."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from greenops.local.controlplane import free_port
from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking
from tests.support.scrape import scrape

pytestmark = pytest.mark.integration


def test_an_unreachable_model_server_is_an_error_of_its_source(tmp_path: Path):
    # nothing listens on the port: every forecast falls back to the bundled profiles
    source = f"oip:http://127.0.0.1:{free_port()}"
    with SchedulerServer(source=source, log=tmp_path / "s.log", env={"GREENOPS_NOW": NOW}) as sched:
        writer = sched.issue("team-a-ci", ["team-a"], paths=["pulumi"])
        reader = sched.issue("prometheus", None, paths=["api"], role="read")
        r = httpx.post(
            f"{sched.url}/scheduling",
            json=booking(eligible_regions=["FR", "DE"]),
            headers={"Authorization": f"Bearer {writer}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        seen = scrape(sched.url, reader)
        # one failed call per zone, under the source's kind (not its URL)
        assert seen.by("greenops_scheduler_forecast_errors_total", "source") == {"oip": 2}
        assert seen.by("greenops_scheduler_forecast_duration_seconds_count", "source") == {"oip": 2}
        assert seen.value("greenops_scheduler_bookings_total", path="pulumi", tenant="team-a", result="placed") == 1
