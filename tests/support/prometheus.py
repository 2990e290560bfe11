"""A real Prometheus (the pinned build in .tools/bin) on loopback, scraping given targets every second,
for tests that assert what an on-call engineer's queries would show.

    with PrometheusServer([Target("scheduler", sched.url, token)], workdir=tmp_path) as prom:
        prom.wait_for('sum by (result) (greenops_scheduler_bookings_total)', lambda r: len(r) == 3)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService
from tests.support.common import require_tool


@dataclass(frozen=True)
class Target:
    job: str
    url: str  # http://127.0.0.1:PORT
    token: str | None = None  # presented as a bearer credential, read from a file like a mounted Secret
    metrics_path: str = "/metrics"
    labels: dict[str, str] = field(default_factory=dict)  # target labels, as a ServiceMonitor's relabeling sets


@dataclass
class PrometheusServer(ProcessService):
    targets: Sequence[Target] = ()
    jobs: Sequence[dict[str, Any]] = ()  # scrape configs as they are (tests/support/monitors.py makes them)
    workdir: Path = field(default_factory=Path)
    scrape_interval: str = "1s"
    rule_files: Sequence[Path] = ()  # evaluated every scrape interval; their alerts are the ALERTS series
    port: int = 0
    startup_timeout: float = 60.0
    name = "prometheus"

    def start(self) -> None:
        binary = require_tool("prometheus")  # skips (fails in CI) when the pinned build is absent
        self.port = self.port or free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(json.dumps(self._config()))  # JSON is YAML
        self._launch(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            self.workdir / "prometheus.log",
        )
        self._wait_ready(f"{self.url}/-/ready")

    def _config(self) -> dict[str, Any]:
        jobs = []
        for t in self.targets:
            url = urlsplit(t.url)
            job: dict[str, Any] = {
                "job_name": t.job,
                "scheme": url.scheme,
                "metrics_path": t.metrics_path,
                "static_configs": [{"targets": [url.netloc], "labels": dict(t.labels)}],
            }
            if t.token is not None:
                secret = self.workdir / f"{t.job}.token"
                secret.write_text(t.token)
                secret.chmod(0o600)
                job["authorization"] = {"type": "Bearer", "credentials_file": str(secret)}
            jobs.append(job)
        interval = self.scrape_interval
        return {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(f) for f in self.rule_files],
            "scrape_configs": [*jobs, *self.jobs],
        }

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector ``promql`` evaluates to now: [{"metric": {labels}, "value": [t, "v"]}]."""
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10)
        r.raise_for_status()
        body = r.json()
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(
        self, promql: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """``query(promql)`` once ``done`` accepts it (scrapes come every interval); the last answer,
        whatever it is, after ``timeout``, for the caller's assertion to show."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if done(result) or time.monotonic() > deadline:
                return result
            time.sleep(0.5)


def by_label(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    """An instant vector as {the value of ``label``: the sample's value}."""
    return {s["metric"].get(label, ""): float(s["value"][1]) for s in result}
