"""Where OPA and the scheduler answer, and how patiently they are asked: written once, read by the
stack config, the GreenWorkload component, Placement, the platform's components and the CLI."""

from __future__ import annotations

import os
from pathlib import Path

OPA_PORT = 8181  # OPA on loopback (the embedded default); in a cluster it serves HTTPS on its Service
SCHEDULER_PORT = 8080
LOCAL_OPA_URL = f"http://127.0.0.1:{OPA_PORT}"
LOCAL_SCHEDULER_URL = f"http://127.0.0.1:{SCHEDULER_PORT}"
SCHEDULER_SERVICE = "greenops-scheduler"  # the platform's Deployment and Service
SCHEDULER_NAMESPACE = "greenops"
TIMEOUT_SECONDS = 10.0  # per call from the Pulumi path
ATTEMPTS = 3
# How long in all one Placement call may wait out the scheduler's rate limit (its Retry-After):
# long enough to ride out a minute's window of a per-principal limit when many workloads share one
# credential, short enough that a stuck limit is named within the pass instead of stalling it.
RATE_LIMIT_WAIT_SECONDS = 150.0


def in_cluster_scheduler_url(namespace: str = SCHEDULER_NAMESPACE) -> str:
    return f"http://{SCHEDULER_SERVICE}.{namespace}.svc:{SCHEDULER_PORT}"


# The variable a client (the CLI, Placement without a stack credential, OPA's http.send) reads the
# credential it presents to the scheduler from. The scheduler itself never reads it.
SCHEDULER_TOKEN_VARIABLE = "GREENOPS_SCHEDULER_TOKEN"
OPA_TOKEN_VARIABLE = "GREENOPS_OPA_TOKEN"  # a client's query token for OPA's decisions, likewise
# ... or a file holding it, read at each use: a projected ServiceAccount token (audience
# greenops-scheduler) that the kubelet rotates in place
SCHEDULER_TOKEN_FILE_VARIABLE = "GREENOPS_SCHEDULER_TOKEN_FILE"


def ambient_scheduler_token() -> str | None:
    """The credential a client finds in its environment: the variable, else the file it names."""
    if token := os.environ.get(SCHEDULER_TOKEN_VARIABLE):
        return token
    if path := os.environ.get(SCHEDULER_TOKEN_FILE_VARIABLE):
        try:
            return Path(path).read_text().strip() or None
        except OSError:
            return None  # the scheduler then answers 401, naming what is missing
    return None
