"""Visibility from the scheduler's record (``greenops placements``): placements made through the
Pulumi path listed, filtered to the EU, and re-evaluated against the real OPA without a region."""

from __future__ import annotations

import pytest

from greenops import cli
from greenops.common.httpclient import RetryingClient
from greenops.insight import placements
from greenops.policies.client import OpaClient
from greenops.provider.placement import PlacementProvider
from tests.provider.test_placement_provider import Clock, props
from tests.provider.test_placement_reservations import servers  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


def test_list_filter_and_who_is_affected_without_a_region(servers, monkeypatch, capsys):  # noqa: F811
    opa, scheduler = servers
    provider = PlacementProvider(Clock())
    pinned = props(servers, name="pinned", provider="azure", region="swedencentral") | {"stack": "dev"}
    eu = props(servers, name="eu-any") | {"stack": "dev"}
    anywhere = props(
        servers,
        name="anywhere",
        dataResidency="none",
        tenant="web",
        eligibleProviders=["gcp"],
        originRegion="us-central1",
    ) | {"stack": "dev"}
    for p in (pinned, eu, anywhere):
        provider.create(p)
    reader = scheduler.issue("reader", None, paths=["api"], role="read")
    with RetryingClient(scheduler.url, token=reader) as client:
        rows = placements.active(client)
        assert {r["workload"]["name"] for r in rows} == {"pinned", "eu-any", "anywhere"}
        assert {r["workload"]["name"] for r in placements.active(client, eu=True)} >= {"pinned", "eu-any"}
        assert [r["workload"]["name"] for r in placements.active(client, tenant="web")] == ["anywhere"]
        assert [
            r["workload"]["name"]
            for r in placements.active(client, region="swedencentral")
            if r["workload"]["name"] == "pinned"
        ] == ["pinned"]
    with OpaClient(opa.url, token=opa.query_token) as client:
        impacts = {i.key.split("/")[1]: i for i in placements.affected(rows, "swedencentral", client)}
    assert impacts["pinned"].verdict == "loses eligibility" and impacts["pinned"].remaining == []
    assert "anywhere" not in impacts  # gcp only, in the US: swedencentral is nothing to it
    if "eu-any" in impacts:
        assert impacts["eu-any"].verdict in ("must move", "one option fewer") and impacts["eu-any"].remaining

    endpoints = {"endpoints": {"opaUrl": opa.url, "schedulerUrl": scheduler.url}}
    monkeypatch.setattr(cli, "_stack_raw", lambda stack, project=cli.REPO: endpoints)
    monkeypatch.setenv("GREENOPS_SCHEDULER_TOKEN", reader)
    monkeypatch.setenv("GREENOPS_OPA_TOKEN", opa.query_token)
    assert cli.main(["placements", "--eu", "--without-region", "swedencentral"]) == 0
    out = capsys.readouterr().out
    assert "without swedencentral:" in out and "loses eligibility" in out and "dev/pinned/" in out
    assert "anywhere" not in out
