"""The report's Electricity Maps history (``GET /carbon-intensity/past-range``) against a real HTTP
server on loopback that answers in the API's documented shape with the recorded 2023 trace: the
same figures as the trace folder, in spans of at most 10 days, with the token sent; a refused token
is a reason on the row."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from greenops.common.clock import parse_time
from greenops.insight import hindsight
from greenops.insight.carbon_history import ElectricityMapsHistory
from greenops.placing.lifecycle import Phase
from tests.support.report_rows import DECIDED, row

pytestmark = pytest.mark.shared_data
TOKEN = "test-token"


class PastRange(BaseHTTPRequestHandler):
    """Electricity Maps' past-range endpoint over one zone's hourly trace."""

    hourly: dict[str, pd.Series]
    asked: list[tuple[str, str, str]]

    def do_GET(self) -> None:
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if self.headers.get("auth-token") != TOKEN:
            return self._send(401, {"message": "unauthorized"})
        if url.path != "/v3/carbon-intensity/past-range" or q.get("zone") not in self.hourly:
            return self._send(404, {"message": f"zone {q.get('zone')} not found"})
        start, end = parse_time(q["start"]), parse_time(q["end"])
        self.asked.append((q["zone"], q["start"], q["end"]))
        if end - start > timedelta(days=10):
            return self._send(400, {"message": "the range must be at most 10 days for hourly data"})
        s = self.hourly[q["zone"]]
        s = s[(s.index >= start) & (s.index < end)]
        data = [
            {
                "zone": q["zone"],
                "carbonIntensity": float(v),
                "datetime": t.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "emissionFactorType": "lifecycle",
                "isEstimated": False,
                "estimationMethod": None,
            }
            for t, v in s.items()
        ]
        self._send(200, {"zone": q["zone"], "data": data, "temporalGranularity": "hourly"})

    def _send(self, status: int, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:  # quiet: the test reads what was asked
        pass


@pytest.fixture
def api(by_minute) -> Iterator[tuple[str, list]]:
    asked: list[tuple[str, str, str]] = []
    handler = type(
        "Handler", (PastRange,), {"hourly": {z: s.resample("1h").first() for z, s in by_minute.items()}, "asked": asked}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v3", asked
    finally:
        server.shutdown()
        server.server_close()


def test_the_history_gives_the_traces_figures(api, history):
    url, asked = api
    placed = {**row("etl", Phase.COMPLETED), "eligibleZones": ["DE", "GB"]}
    from_api = hindsight.truth(placed, ElectricityMapsHistory(TOKEN, base_url=url))
    assert from_api == hindsight.truth(placed, history)
    assert {zone for zone, *_ in asked} == {"DE", "GB"}


def test_a_long_window_is_asked_in_spans_the_api_accepts(api, history):
    url, asked = api
    placed = row("etl", Phase.COMPLETED, deadline=DECIDED + timedelta(days=12))
    from_api = hindsight.truth(placed, ElectricityMapsHistory(TOKEN, base_url=url))
    assert from_api["oracle"] == hindsight.truth(placed, history)["oracle"] is not None
    spans = [(parse_time(a), parse_time(b)) for zone, a, b in asked if parse_time(b) - parse_time(a) > timedelta(1)]
    assert len(spans) == 2 and all(b - a <= timedelta(days=10) for a, b in spans)
    assert spans[0][1] == spans[1][0]  # contiguous


def test_a_refused_token_is_a_reason_on_the_row(api):
    url, _ = api
    truth = hindsight.truth(row("etl", Phase.COMPLETED), ElectricityMapsHistory("wrong", base_url=url))
    assert truth["actual"] is None and truth["oracle"] is None
    assert truth["truthNote"].startswith("actual unknown: Electricity Maps refused the token (HTTP 401)")
