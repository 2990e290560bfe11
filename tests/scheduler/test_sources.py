"""Carbon sources: profiles, traces, seasonal-naive, OIP and Electricity Maps clients."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest

from greenops.intensity import ProfileSource, SeasonalNaiveSource, SourceUnavailable, TraceSource, UnknownZone
from greenops.intensity.electricitymaps import ElectricityMapsSource
from greenops.intensity.oip import OipSource
from greenops.intensity.series import Series
from greenops.models.forecast_features import feature_row

H = 3600.0
FIXTURES = Path(__file__).parent / "fixtures"
NOW = datetime(2026, 11, 21, 12, 30, tzinfo=UTC).timestamp()


def test_profiles_follow_month_and_hour(catalog):
    src = ProfileSource(catalog)
    s = src.series("FR", NOW, NOW + 30 * H, NOW)
    assert s.step == H and s.start == NOW - 0.5 * H
    table = catalog.profile("FR").monthHour
    assert s.values[0] == table[10][12] and s.values[12] == table[11 - 1][0]
    assert src.series("FI", NOW, NOW + 5 * H, NOW).values.std() == 0  # annual mean: flat
    with pytest.raises(UnknownZone):
        src.series("ATLANTIS", NOW, NOW + H, NOW)


def test_seasonal_naive_never_looks_ahead():
    start = NOW - 10 * 24 * H
    values = np.arange(20 * 24, dtype=float)  # strictly increasing: any look-ahead would show
    trace = TraceSource({"Z": Series(start, H, values)})
    naive = SeasonalNaiveSource(trace)
    s = naive.series("Z", NOW, NOW + 48 * H, NOW)
    observed_before_now = trace.full("Z").value_at(np.array([NOW - H]))[0]
    assert s.values.max() <= observed_before_now
    # same hour yesterday
    assert s.value_at(np.array([NOW + 2 * H]))[0] == trace.full("Z").value_at(np.array([NOW + 2 * H - 24 * H]))[0]
    weekly = SeasonalNaiveSource(trace, period=7 * 24 * H)
    assert weekly.series("Z", NOW, NOW + H, NOW).values[0] == trace.full("Z").value_at(np.array([NOW - 7 * 24 * H]))[0]


@pytest.mark.shared_data
def test_traces_from_an_electricitymaps_folder(shared_data):
    src = TraceSource.from_directory(shared_data / "greendcc_ci_2023")
    assert len(src.zones()) == 16 and {"DE", "GB", "US-CAL-CISO"} <= src.zones()
    t0 = datetime(2023, 6, 1, tzinfo=UTC).timestamp()
    s = src.series("GB", t0, t0 + 24 * H, t0)
    assert s.step == H and len(s.values) == 24 and 0 < s.values.mean() < 500
    with pytest.raises(UnknownZone, match="does not cover"):
        src.series("GB", t0 + 400 * 24 * H, t0 + 401 * 24 * H, t0)


def test_trace_folder_must_be_electricitymaps_format(tmp_path):
    (tmp_path / "x.csv").write_text("Time,Carbon Intensity\n2020-01-01 00:00:00,1\n")
    with pytest.raises(ValueError, match="not an Electricity Maps export"):
        TraceSource.from_directory(tmp_path)


# --- OIP ----------------------------------------------------------------------------------
class FakeOip:
    """An OIP v2 server's wire format, per MLServer: only `served` models exist."""

    def __init__(self, served: dict[str, float], status: int = 200):
        self.served, self.status, self.calls = served, status, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        model = request.url.path.split("/")[3]
        body = json.loads(request.content)
        self.calls.append((model, body))
        if model not in self.served:
            return httpx.Response(404, json={"error": f"Model {model} not found"})
        if self.status != 200:
            return httpx.Response(self.status, json={"error": "boom"})
        row = body["inputs"][0]["data"]
        assert body["inputs"][0]["shape"] == [1, 171] and len(row) == 171
        level = self.served[model]
        return httpx.Response(
            200,
            json={
                "model_name": model,
                "outputs": [{"name": "predictions", "shape": [1, 72], "datatype": "FP64", "data": [level] * 72}],
            },
        )


def test_oip_zone_model_then_generic_then_fallback():
    profiles = ProfileSource()
    fake = FakeOip({"forecaster-fr": 42.0, "forecaster-generic": 99.0})
    src = OipSource("http://oip", fallback=profiles, transport=httpx.MockTransport(fake))
    s = src.series("FR", NOW, NOW + 100 * H, NOW)
    assert s.values[:72].tolist() == [42.0] * 72  # the zone's model for its horizon
    assert s.values[72:].tolist() == profiles.series("FR", s.start + 72 * H, NOW + 100 * H, NOW).values.tolist()
    assert src.series("DE", NOW, NOW + 10 * H, NOW).values[0] == 99.0  # no forecaster-de: the generic one
    # cached per zone and hour: no new request
    calls = len(fake.calls)
    src.series("FR", NOW + 60, NOW + 2 * H, NOW + 60)
    assert len(fake.calls) == calls
    assert src.answers == {"zone": 1, "generic": 1, "fallback": 0}


def test_oip_per_model_hosts_as_kserve_names_them():
    fake = FakeOip({"forecaster-generic": 77.0})
    hosts = []

    def by_host(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        if request.url.host != "forecaster-generic-predictor.forecasting.svc":
            raise httpx.ConnectError("name does not resolve")  # no InferenceService for this zone
        return fake(request)

    src = OipSource(
        "http://{model}-predictor.forecasting.svc", fallback=ProfileSource(), transport=httpx.MockTransport(by_host)
    )
    assert src.series("FR", NOW, NOW + 2 * H, NOW).values[0] == 77.0
    assert hosts == ["forecaster-fr-predictor.forecasting.svc", "forecaster-generic-predictor.forecasting.svc"]
    assert src.answers == {"zone": 0, "generic": 1, "fallback": 0}


def test_oip_features_carry_history_and_calendar():
    fake = FakeOip({"forecaster-fr": 1.0})
    src = OipSource("http://oip", fallback=ProfileSource(), transport=httpx.MockTransport(fake))
    src.series("FR", NOW, NOW + H, NOW)
    row = fake.calls[0][1]["inputs"][0]["data"]
    start = np.floor(NOW / H) * H
    assert row[-3:] == feature_row(np.zeros(168), start)[-3:] == [12.0, 5.0, 11.0]  # 12:00 UTC, Saturday, November


def test_oip_down_falls_back_to_profiles_and_without_fallback_is_unavailable():
    def down(request):
        raise httpx.ConnectError("connection refused")

    profiles = ProfileSource()
    with_fallback = OipSource("http://oip", fallback=profiles, transport=httpx.MockTransport(down))
    assert (
        with_fallback.series("FR", NOW, NOW + 5 * H, NOW).values.tolist()
        == profiles.series("FR", NOW, NOW + 5 * H, NOW).values.tolist()
    )
    assert with_fallback.answers["fallback"] == 1
    bare = OipSource("http://oip", history=profiles, transport=httpx.MockTransport(down))
    with pytest.raises(SourceUnavailable, match="unreachable"):
        bare.series("FR", NOW, NOW + 5 * H, NOW)
    broken = OipSource(
        "http://oip", history=profiles, transport=httpx.MockTransport(FakeOip({"forecaster-fr": 1}, status=500))
    )
    with pytest.raises(SourceUnavailable, match="HTTP 500"):
        broken.series("FR", NOW, NOW + 5 * H, NOW)


# --- Electricity Maps (recorded response shapes) -------------------------------------------
def recorded(name: str, status: int = 200):
    payload = json.loads((FIXTURES / name).read_text())

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["auth-token"] == "secret-token"
        assert request.url.path.endswith("/carbon-intensity/forecast")
        return httpx.Response(status, json=payload)

    return httpx.MockTransport(handler)


def test_electricitymaps_forecast_then_fallback_beyond_the_horizon():
    profiles = ProfileSource()
    src = ElectricityMapsSource(
        "secret-token", fallback=profiles, transport=recorded("electricitymaps_forecast_DE.json")
    )
    s = src.series("DE", NOW, NOW + 48 * H, NOW)
    assert s.step == H and s.covers(NOW, NOW + 48 * H)
    assert s.value_at(np.array([NOW]))[0] == 302  # current partial hour takes the first forecast value
    assert s.value_at(np.array([NOW + 2 * H]))[0] == 297  # 14:30 falls in the 14:00 forecast hour
    beyond = NOW + 40 * H
    assert s.value_at(np.array([beyond]))[0] == profiles.series("DE", beyond, beyond + H, NOW).values[0]


@pytest.mark.parametrize(
    "fixture,status,error",
    [
        ("electricitymaps_unauthorized.json", 401, "refused the token"),
        ("electricitymaps_unknown_zone.json", 404, "no forecast for zone"),
        ("electricitymaps_forecast_DE.json", 503, "HTTP 503"),
    ],
)
def test_electricitymaps_errors_are_named(fixture, status, error):
    src = ElectricityMapsSource("secret-token", zones=frozenset({"DE"}), transport=recorded(fixture, status))
    with pytest.raises((SourceUnavailable, UnknownZone), match=error):
        src.series("DE", NOW, NOW + 5 * H, NOW)
