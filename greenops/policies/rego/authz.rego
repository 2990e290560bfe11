# Who may call OPA's own API, when OPA runs with
#   opa run --server --authentication=token --authorization=basic ...
# OPA then asks data.system.authz.allow before serving any request, with input
#   {"method": "POST", "path": ["v1", "data", ...], "params": {...}, "headers": {...},
#    "identity": "<bearer token>" (only when one was sent), "body": ... (POST / and POST /v1/data)}
# and answers 401 with `reason` when `allowed` is false.
#
# The platform runs two OPA processes, because one `opa run` serves its whole API on every
# --addr it listens on: what a process serves is set by GREENOPS_OPA_SERVES in its environment.
# - "decisions" (the default, also when unset): the Data API's decision queries. POST / (the
#   admission review) is refused here whoever calls, so a pod that reaches this listener cannot
#   book through it.
# - "webhook": POST / only, for the API server, which presents the webhook token
#   (GREENOPS_OPA_WEBHOOK_TOKEN) as a bearer token through its admission kubeconfig
#   (--admission-control-config-file). The query token is refused here.
#
# On either:
# - GET /health (and /health/live, /health/ready, ?bundles, ?plugins): open, for the kubelet's probes.
# - Decision queries (GET/POST /v1/data/greenops/<package>/... for the packages in
#   `query_packages`), on "decisions" only: the query token (Placement's OpaClient,
#   greenops:opaToken) or the admin token.
# - GET /metrics (OPA's Prometheus metrics): the metrics token (GREENOPS_OPA_METRICS_TOKEN, the
#   scraper's), which may do nothing else, or the admin token. A metrics token equal to another
#   token is ignored: it never stands for that token's caller.
# - Everything else, including every write to /v1/policies and /v1/data: the admin token only
#   (kube-mgmt's, greenops:opaAdminToken; it writes the namespaces into the webhook's process).
#   Bundle-owned roots (greenops, system) stay read-only for everyone: OPA refuses writes under a
#   bundle's roots.
#
# The tokens are never in the bundle: OPA reads them from its environment (Kubernetes Secrets
# through secretKeyRef in a cluster). An unset or empty variable matches no caller, and two of the
# admin, query and webhook tokens being equal grants neither.
# METADATA
# title: OPA's own API authorization
# description: >-
#   Who may query and who may write: the query token reads greenops decisions, kube-mgmt's
#   admin token writes.
package system.authz

import rego.v1

# The packages a query-token holder may evaluate. greenops.scheduler and greenops.admission are
# left out: evaluating them calls the scheduler (which books), and the scheduler package holds the
# scheduler's own bearer token. greenops.visibility is left out too: it reads every tenant's
# reservations with OPA's own (every-tenant) credential, and the query token, shared by every
# stack, names no tenant, so OPA cannot tell what its holder may read. Tenants read their own
# reservations from the scheduler with their own token (greenops placements, GET /reservations);
# visibility through OPA is the platform's, with the admin token.
query_packages := {"placement", "quota", "workload"}

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

_misconfigured if _token("GREENOPS_OPA_WEBHOOK_TOKEN") == _token("GREENOPS_OPA_QUERY_TOKEN")

_misconfigured if _token("GREENOPS_OPA_WEBHOOK_TOKEN") == _token("GREENOPS_OPA_ADMIN_TOKEN")

# What this process serves: "webhook" only when said so; anything else serves decisions.
default serves := "decisions"

serves := "webhook" if opa.runtime().env.GREENOPS_OPA_SERVES == "webhook"

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
} else := "webhook" if {
	not _misconfigured
	_presents("GREENOPS_OPA_WEBHOOK_TOKEN")
} else := "metrics" if {
	not _shared_metrics_token
	_presents("GREENOPS_OPA_METRICS_TOKEN")
}

_shared_metrics_token if _token("GREENOPS_OPA_METRICS_TOKEN") == _token("GREENOPS_OPA_ADMIN_TOKEN")

_shared_metrics_token if _token("GREENOPS_OPA_METRICS_TOKEN") == _token("GREENOPS_OPA_QUERY_TOKEN")

_shared_metrics_token if _token("GREENOPS_OPA_METRICS_TOKEN") == _token("GREENOPS_OPA_WEBHOOK_TOKEN")

# -- what each caller may do ---------------------------------------------------------------------
_permitted if {
	input.method in {"GET", "HEAD"}
	input.path[0] == "health"
}

_permitted if {
	serves == "webhook"
	caller == "webhook"
	_review
}

_permitted if {
	serves == "decisions"
	caller == "query"
	input.method in {"GET", "POST"}
	_decision_query(input.path)
}

_permitted if {
	caller == "metrics"
	input.method == "GET"
	input.path == ["metrics"]
}

# The admin token may do anything but send a review to the decisions' process: nobody may.
_permitted if {
	caller == "admin"
	not _refused_review
}

_review if {
	input.method == "POST"
	input.path == [""]
}

_refused_review if {
	serves == "decisions"
	_review
}

_decision_query(path) if {
	array.slice(path, 0, 3) == ["v1", "data", "greenops"]
	path[3] in query_packages
}

# -- why not -------------------------------------------------------------------------------------
_request := sprintf("%v /%v", [input.method, concat("/", input.path)])

_reason := "OPA is misconfigured: two of its admin, query and webhook tokens are the same, so neither is accepted" if {
	_misconfigured
} else := sprintf(
	"%v: admission reviews are served only by the webhook's own OPA listener, not the decisions'",
	[_request],
) if {
	_refused_review
} else := sprintf("%v needs a bearer token (Authorization: Bearer ...)", [_request]) if {
	not input.identity
} else := sprintf("%v: the bearer token was refused", [_request]) if {
	not caller
} else := sprintf(
	"%v: the query token may only read greenops decisions, on the decisions' listener; %v",
	[_request, "writes need kube-mgmt's admin token"],
) if {
	caller == "query"
} else := sprintf(
	"%v: the webhook token may only send admission reviews (POST /) to the webhook's listener",
	[_request],
) if {
	caller == "webhook"
} else := sprintf("%v: the metrics token may only read GET /metrics", [_request]) if {
	caller == "metrics"
} else := sprintf("%v is not allowed", [_request])
