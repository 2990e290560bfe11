# Who may call OPA's own API, when OPA runs with
#   opa run --server --authentication=token --authorization=basic ...
# OPA then asks data.system.authz.allow before serving any request, with input
#   {"method": "POST", "path": ["v1", "data", ...], "params": {...}, "headers": {...},
#    "identity": "<bearer token>" (only when one was sent), "body": ... (POST / and POST /v1/data)}
# and answers 401 with `reason` when `allowed` is false.
#
# - GET /health (and /health/live, /health/ready, ?bundles, ?plugins): open, for the kubelet's probes.
# - POST / (OPA's default decision, system.main): open. It is the mutating webhook's call. The API
#   server cannot present a bearer token to a webhook on managed clusters (AKS, GKE, EKS expose no
#   --admission-control-config-file), so the webhook is protected by TLS (OPA's serving certificate,
#   pinned by the webhook's caBundle) and by reaching only OPA's Service, not by a token.
# - Decision queries (GET/POST /v1/data/greenops/<package>/... for the packages in
#   `query_packages`): the query token (Placement's OpaClient, greenops:opaToken) or the admin token.
# - GET /metrics (OPA's Prometheus metrics): the metrics token (GREENOPS_OPA_METRICS_TOKEN, the
#   scraper's), which may do nothing else, or the admin token. A metrics token equal to another
#   token is ignored: it never stands for that token's caller.
# - Everything else, including every write to /v1/policies and /v1/data: the admin token only
#   (kube-mgmt's, greenops:opaAdminToken). Bundle-owned roots (greenops, system) stay read-only
#   for everyone: OPA refuses writes under a bundle's roots.
#
# The tokens are never in the bundle: OPA reads them from its environment, GREENOPS_OPA_QUERY_TOKEN
# and GREENOPS_OPA_ADMIN_TOKEN (Kubernetes Secrets through secretKeyRef in a cluster). An unset or
# empty variable matches no caller, and the two tokens being equal grants neither.
# METADATA
# title: OPA's own API authorization
# description: >-
#   Who may query and who may write: the query token reads greenops decisions, kube-mgmt's
#   admin token writes.
package system.authz

import rego.v1

# The packages a query-token holder may evaluate. greenops.scheduler and greenops.admission are
# left out: evaluating them calls the scheduler (which books), and the scheduler package holds the
# scheduler's own bearer token.
query_packages := {"placement", "visibility", "quota", "workload"}

default allow := {"allowed": false, "reason": "request denied by system.authz"}

allow := {"allowed": true} if {
	_permitted
} else := {"allowed": false, "reason": _reason}

# -- who is calling -----------------------------------------------------------------------------
_token(variable) := token if {
	token := object.get(opa.runtime(), ["env", variable], "")
	is_string(token)
	token != ""
}

_misconfigured if _token("GREENOPS_OPA_ADMIN_TOKEN") == _token("GREENOPS_OPA_QUERY_TOKEN")

# Digests are compared, so the comparison's time says nothing about a matching prefix.
_presents(variable) if {
	is_string(input.identity)
	crypto.sha256(input.identity) == crypto.sha256(_token(variable))
}

caller := "admin" if {
	not _misconfigured
	_presents("GREENOPS_OPA_ADMIN_TOKEN")
} else := "query" if {
	not _misconfigured
	_presents("GREENOPS_OPA_QUERY_TOKEN")
} else := "metrics" if {
	not _shared_metrics_token
	_presents("GREENOPS_OPA_METRICS_TOKEN")
}

_shared_metrics_token if _token("GREENOPS_OPA_METRICS_TOKEN") == _token("GREENOPS_OPA_ADMIN_TOKEN")

_shared_metrics_token if _token("GREENOPS_OPA_METRICS_TOKEN") == _token("GREENOPS_OPA_QUERY_TOKEN")

# -- what each caller may do ---------------------------------------------------------------------
_permitted if {
	input.method in {"GET", "HEAD"}
	input.path[0] == "health"
}

_permitted if {
	input.method == "POST"
	input.path == [""]
}

_permitted if {
	caller == "query"
	input.method in {"GET", "POST"}
	_decision_query(input.path)
}

_permitted if {
	caller == "metrics"
	input.method == "GET"
	input.path == ["metrics"]
}

_permitted if caller == "admin"

_decision_query(path) if {
	array.slice(path, 0, 3) == ["v1", "data", "greenops"]
	path[3] in query_packages
}

# -- why not -------------------------------------------------------------------------------------
_request := sprintf("%v /%v", [input.method, concat("/", input.path)])

_reason := "OPA is misconfigured: the query and admin tokens are the same, so neither is accepted" if {
	_misconfigured
} else := sprintf("%v needs a bearer token (Authorization: Bearer ...)", [_request]) if {
	not input.identity
} else := sprintf("%v: the bearer token was refused", [_request]) if {
	not caller
} else := sprintf(
	"%v: the query token may only read greenops decisions; writes need kube-mgmt's admin token",
	[_request],
) if {
	caller == "query"
} else := sprintf("%v: the metrics token may only read GET /metrics", [_request]) if {
	caller == "metrics"
} else := sprintf("%v is not allowed", [_request])
