"""A scheduler stand-in on loopback that answers the thesis contract instantly.

For the policy tests and the policy benchmark (benchmarks/policy_latency.py), where the scheduler's
own algorithm is not under test: both use it, so it lives with the other loopback stand-ins.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SchedulerStandIn:
    """A scheduler on loopback answering the thesis contract; `mode` picks its behaviour.

    "first": the first eligible zone, two hours after the request's earliest start;
    "error": HTTP 500; "zone:<Z>": always zone Z. Releases (DELETE /reservations/<key>) are
    answered 200 and kept, path and query, in `released`.
    """

    def __init__(self) -> None:
        self.mode = "first"
        self.requests: list[dict[str, Any]] = []
        self.released: list[str] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.requests.append(body)
                if stand_in.mode == "error":
                    self._send(500, {"detail": "forecast store unavailable"})
                    return
                zone = (
                    stand_in.mode.split(":", 1)[1] if stand_in.mode.startswith("zone:") else body["eligible_regions"][0]
                )
                self._send(200, {"scheduling_location": zone, "scheduling_time": "2027-01-01T02:00:00Z"})

            def do_DELETE(self) -> None:
                stand_in.released.append(self.path)
                self._send(200, {"phase": "Released"})

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
