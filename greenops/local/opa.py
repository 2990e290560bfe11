"""Run a real OPA server on loopback with the policy bundle (tests, benchmarks, ``greenops demo``)."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from greenops.common.toolpaths import tool_path
from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService
from greenops.observability import tracing
from greenops.policies import (
    ADMIN_TOKEN_VARIABLE,
    DECISION_LOG_FLAGS,
    METRICS_TOKEN_VARIABLE,
    QUERY_TOKEN_VARIABLE,
    SERVES_VARIABLE,
    WEBHOOK_TOKEN_VARIABLE,
)
from greenops.policies.bundle import build, default_revision


@dataclass
class OpaServer(ProcessService):
    """``with OpaServer(scheduler_url=...) as opa: opa.url`` builds the bundle and serves it."""

    scheduler_url: str | None = None
    scheduler_token: str | None = None  # the bearer token http.send presents to the scheduler (OPA's principal)
    # OPA always runs with --authentication=token --authorization=basic (system.authz): decision
    # queries need query_token (or admin_token), writes need admin_token (kube-mgmt's). Fresh random
    # ones unless given: there is no anonymous OPA API, here or in a cluster.
    query_token: str = field(default_factory=lambda: secrets.token_hex(24))
    admin_token: str = field(default_factory=lambda: secrets.token_hex(24))
    metrics_token: str = field(default_factory=lambda: secrets.token_hex(24))  # the scraper's: GET /metrics only
    # What this process serves (system.authz), as in a cluster, where each is a process of its own:
    # "decisions" (the Data API; no admission review, whoever sends it) or "webhook" (admission
    # reviews, POST /, for whoever presents webhook_token: the API server, through its admission
    # kubeconfig; see greenops.local.webhook.WebhookAccess).
    serves: Literal["decisions", "webhook"] = "decisions"
    webhook_token: str = field(default_factory=lambda: secrets.token_hex(24))
    bundle: Path | None = None
    startup_timeout: float = 30.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-opa-")))
    port: int = 0
    tls_cert: Path | None = None  # serve HTTPS (the API server calls webhooks over TLS only)
    tls_key: Path | None = None
    # OTLP/HTTP collector for OPA's decision spans (OPA's distributed_tracing); default: this
    # process's OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, none: no traces
    otlp_endpoint: str | None = field(default_factory=tracing.endpoint)
    name = "opa"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls_cert else 'http'}://127.0.0.1:{self.port}"

    @property
    def query_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.query_token}"}

    @property
    def webhook_headers(self) -> dict[str, str]:
        """What the API server sends with a review (serves="webhook" only)."""
        return {"Authorization": f"Bearer {self.webhook_token}"}

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    @property
    def metrics_url(self) -> str:
        """OPA's Prometheus metrics; GET them with ``metrics_token`` as the bearer token."""
        return f"{self.url}/metrics"

    def start(self) -> None:
        bundle = self.bundle or build(self.workdir / "policy-bundle.tar.gz", default_revision())
        self.port = self.port or free_port()
        env = dict(os.environ)
        # Every query allocates; collecting less often trims the latency tail (measured in
        # benchmarks/policy_latency.py).
        env.setdefault("GOGC", "400")
        if self.scheduler_url:
            env["SCHEDULER_URL"] = self.scheduler_url
        if self.scheduler_token:
            env["GREENOPS_SCHEDULER_TOKEN"] = self.scheduler_token
        env[QUERY_TOKEN_VARIABLE] = self.query_token
        env[ADMIN_TOKEN_VARIABLE] = self.admin_token
        env[METRICS_TOKEN_VARIABLE] = self.metrics_token
        env[SERVES_VARIABLE] = self.serves
        if self.serves == "webhook":
            env[WEBHOOK_TOKEN_VARIABLE] = self.webhook_token
        auth = ["--authentication=token", "--authorization=basic"]
        # Read-optimised store: catalog lookups skip a JSON-to-AST conversion on every read.
        tls = (
            ["--tls-cert-file", str(self.tls_cert), "--tls-private-key-file", str(self.tls_key)]
            if self.tls_cert
            else []
        )
        config = []
        if self.otlp_endpoint:
            path = self.workdir / "config.json"
            path.write_text(json.dumps({"distributed_tracing": tracing.opa_distributed_tracing(self.otlp_endpoint)}))
            config = ["--config-file", str(path)]
        self._launch(
            [
                tool_path("opa"),
                "run",
                "--server",
                "--addr",
                f"127.0.0.1:{self.port}",
                "--log-level",
                "error",
                "--optimize-store-for-read-speed",
                *auth,
                *DECISION_LOG_FLAGS,  # to opa.log, masked (policies/rego/log.rego)
                *tls,
                *config,
                "--bundle",
                str(bundle),
            ],
            self.workdir / "opa.log",  # its decision log, one JSON event a line, among its own lines
            env=env,
        )
        self._wait_ready(f"{self.url}/health?bundles")
