"""Placement policy as code: Rego packages, their bundle and their settings."""

import hashlib
import hmac

# OPA's API tokens, read by system.authz (rego/authz.rego) from OPA's environment: the query token
# (greenops:opaToken, Placement's) and the admin token (greenops:opaAdminToken, kube-mgmt's).
QUERY_TOKEN_VARIABLE = "GREENOPS_OPA_QUERY_TOKEN"
ADMIN_TOKEN_VARIABLE = "GREENOPS_OPA_ADMIN_TOKEN"
# The scraper's token: GET /metrics and nothing else (system.authz).
METRICS_TOKEN_VARIABLE = "GREENOPS_OPA_METRICS_TOKEN"
# The API server's token on the webhook's own OPA process: POST / (admission reviews) and nothing else.
WEBHOOK_TOKEN_VARIABLE = "GREENOPS_OPA_WEBHOOK_TOKEN"
# What an OPA process serves (system.authz): "webhook" (admission reviews, for the API server only)
# or, when unset or anything else, "decisions" (the Data API's queries; no admission review).
SERVES_VARIABLE = "GREENOPS_OPA_SERVES"

# OPA's decision logs, on its console (stderr), each event masked first by system.log.mask
# (rego/log.rego: credential-like fields erased). Locally and in a cluster alike.
DECISION_LOG_FLAGS = ("--set=decision_logs.console=true",)

# The packages a query-token holder may evaluate: system.authz's query_packages (rego/authz.rego; a
# test holds the two equal), and the only OPA paths the external Ingress routes.
QUERY_PACKAGES = ("placement", "quota", "workload")
DECISION_API_PATHS = tuple(f"/v1/data/greenops/{package}" for package in QUERY_PACKAGES)


def metrics_token(admin_token: str) -> str:
    """The scraper's token, derived from the admin token (HMAC-SHA256): it needs no secret of its
    own in the stack, changes when the admin token is rotated, and reveals nothing of it."""
    return hmac.new(admin_token.encode(), b"greenops-opa-metrics", hashlib.sha256).hexdigest()


def webhook_token(admin_token: str) -> str:
    """The token the API server presents to the webhook's OPA (its admission kubeconfig), derived
    from the admin token as the metrics token is: nothing more to set, rotated with it."""
    return hmac.new(admin_token.encode(), b"greenops-opa-webhook", hashlib.sha256).hexdigest()
