"""The demo's claim that one of its two far-apart VmTemplates always waits: for every month and
every 5 minutes of the day (and across each month's end), at least one of them has a best window
that starts later than at once, on the profiles the demo's scheduler uses."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

from greenops.catalog import load_catalog
from greenops.intensity import ProfileSource
from greenops.local.demo import APART, cluster_templates
from greenops.models.duration import parse_duration
from greenops.search.algorithm import Job, best_placement


def test_one_of_the_far_apart_templates_waits_at_any_instant_of_the_year():
    catalog, source = load_catalog(), ProfileSource()
    specs = {t["metadata"]["name"]: t["spec"] for t in cluster_templates() if t["metadata"]["name"] in APART}
    zones = {name: catalog.region("azure", spec["originRegion"]).zone for name, spec in specs.items()}
    assert len(set(zones.values())) == 2  # maxLatency 8 leaves each template its own region's zone
    some = next(iter(specs.values()))
    due_in = datetime.fromisoformat(some["deadline"]) - datetime.now(UTC)
    assert timedelta(hours=15) < due_in <= timedelta(hours=16)
    job = Job(2, 4, parse_duration(some["duration"]).total_seconds())
    instants = []
    for month in range(1, 13):
        last = calendar.monthrange(2027, month)[1]
        for day in (15, last):
            start = datetime(2027, month, day, tzinfo=UTC)
            instants += [start + timedelta(minutes=5 * i) for i in range(288)]
    for now in instants:
        t0, t1 = now.timestamp(), (now + timedelta(hours=16)).timestamp()
        starts = [best_placement({z: source.series(z, t0, t1, t0)}, job, t0, t1).start for z in zones.values()]
        assert max(starts) - t0 >= 60, f"at {now:%Y-%m-%d %H:%M} UTC both templates start at once: {zones}"
