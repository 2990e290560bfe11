"""The OIP client reads a model's prediction interval from its extra output tensors, and falls back
to no interval for a model that answers one tensor (the wire format per MLServer's MLflow runtime;
tests/forecasting/test_mlops_integration.py checks it against the real server)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import numpy as np
import pytest

from greenops.intensity import ProfileSource, SourceUnavailable
from greenops.intensity.oip import OipSource

H = 3600.0
NOW = datetime(2026, 11, 21, 12, 30, tzinfo=UTC).timestamp()


def server(outputs: list[dict]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"model_name": "forecaster-fr", "outputs": outputs})

    return httpx.MockTransport(handle)


def tensor(name: str, values: list[float]) -> dict:
    return {"name": name, "shape": [1, len(values)], "datatype": "FP64", "data": values}


def test_named_outputs_give_the_forecast_and_its_bands():
    hours = np.arange(72.0)
    outputs = [
        tensor("forecast", list(100 + hours)),
        tensor("lower", list(90 + hours)),
        tensor("upper", list(120 + hours)),
    ]
    src = OipSource("http://oip", history=ProfileSource(), transport=server(outputs))
    s = src.series("FR", NOW, NOW + 10 * H, NOW)
    b = src.bands("FR", NOW, NOW + 10 * H, NOW)
    assert b is not None and b.coverage is None and "model" in b.method
    assert np.array_equal(b.lower.values, s.values - 10) and np.array_equal(b.upper.values, s.values + 20)
    assert (b.lower.start, b.upper.start) == (s.start, s.start)
    assert src.answers["zone"] == 1  # one inference serves the series and its bands (cached per hour)
    assert src.bands("FR", NOW, NOW + 80 * H, NOW) is None  # beyond the horizon nothing is claimed


def test_a_model_with_one_output_has_no_bands_and_the_order_does_not_matter():
    old = OipSource("http://oip", history=ProfileSource(), transport=server([tensor("output-1", [50.0] * 72)]))
    assert old.series("FR", NOW, NOW + 5 * H, NOW).values[0] == 50 and old.bands("FR", NOW, NOW + 5 * H, NOW) is None
    shuffled = [tensor("upper", [70.0] * 72), tensor("forecast", [60.0] * 72), tensor("lower", [55.0] * 72)]
    src = OipSource("http://oip", history=ProfileSource(), transport=server(shuffled))
    assert src.series("FR", NOW, NOW + 5 * H, NOW).values[0] == 60
    assert src.bands("FR", NOW, NOW + 5 * H, NOW).upper.values[0] == 70


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ([tensor("forecast", [1.0] * 72), tensor("lower", [1.0] * 72), tensor("upper", [1.0] * 24)], "another length"),
        (
            [tensor("forecast", [1.0] * 72), tensor("lower", [None] * 72), tensor("upper", [1.0] * 72)],
            "'lower'",
        ),
    ],
)
def test_bad_bounds_cost_the_intervals_not_the_forecast(outputs, message):
    src = OipSource("http://oip", history=ProfileSource(), transport=server(outputs))
    assert src.series("FR", NOW, NOW + 5 * H, NOW).values[0] == 1.0  # the model's own forecast, not a fallback
    assert src.bands("FR", NOW, NOW + 5 * H, NOW) is None  # bounds it could not give are not claimed


def test_a_bad_forecast_tensor_is_named():
    bad = [tensor("forecast", [None] * 72), tensor("lower", [1.0] * 72), tensor("upper", [1.0] * 72)]
    src = OipSource("http://oip", history=ProfileSource(), transport=server(bad))
    with pytest.raises(SourceUnavailable, match="'forecast'"):
        src.series("FR", NOW, NOW + 5 * H, NOW)
