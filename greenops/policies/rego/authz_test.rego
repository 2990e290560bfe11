package system.authz_test

import rego.v1

import data.system.authz

env := {"env": {
	"GREENOPS_OPA_QUERY_TOKEN": "q-token",
	"GREENOPS_OPA_ADMIN_TOKEN": "a-token",
	"GREENOPS_OPA_METRICS_TOKEN": "m-token",
}}

request(method, path, identity) := {"method": method, "path": split(trim_prefix(path, "/"), "/"), "identity": identity}

anonymous(method, path) := {"method": method, "path": split(trim_prefix(path, "/"), "/")}

allowed(req) if {
	authz.allow.allowed with input as req with opa.runtime as env
}

reason(req) := r if {
	r := authz.allow.reason with input as req with opa.runtime as env
}

decision := "/v1/data/greenops/placement/decision"

test_probes_are_open if {
	allowed(anonymous("GET", "/health"))
	allowed(anonymous("GET", "/health/live"))
	allowed(anonymous("GET", "/health/ready"))
	allowed(object.union(anonymous("GET", "/health"), {"params": {"bundles": [""]}}))
	not allowed(anonymous("POST", "/health"))
}

webhook_env := {"env": object.union(env.env, {
	"GREENOPS_OPA_SERVES": "webhook",
	"GREENOPS_OPA_WEBHOOK_TOKEN": "w-token",
})}

on_webhook(req) if {
	authz.allow.allowed with input as req with opa.runtime as webhook_env
}

on_webhook_reason(req) := r if {
	r := authz.allow.reason with input as req with opa.runtime as webhook_env
}

test_the_decisions_listener_serves_no_review if {
	not allowed(anonymous("POST", "/"))
	not allowed(request("POST", "/", "anything"))
	not allowed(request("POST", "/", "q-token"))
	not allowed(request("POST", "/", "a-token"))
	contains(reason(anonymous("POST", "/")), "served only by the webhook's own OPA listener")

	# a webhook token in the decisions' environment is no key to it either
	not authz.allow.allowed with input as request("POST", "/", "w-token")
		with opa.runtime as {"env": object.union(env.env, {"GREENOPS_OPA_WEBHOOK_TOKEN": "w-token"})}
}

test_the_webhook_listener_needs_the_api_servers_token if {
	on_webhook(request("POST", "/", "w-token"))
	not on_webhook(anonymous("POST", "/"))
	not on_webhook(request("POST", "/", "guess"))
	not on_webhook(request("POST", "/", "q-token"))
	not on_webhook(request("GET", "/", "w-token"))
	contains(on_webhook_reason(anonymous("POST", "/")), "needs a bearer token")
	on_webhook_reason(request("POST", "/", "guess")) == "POST /: the bearer token was refused"
}

test_the_webhook_listener_serves_nothing_else if {
	not on_webhook(request("POST", decision, "q-token"))
	not on_webhook(request("POST", decision, "w-token"))
	not on_webhook(request("GET", "/v1/data", "w-token"))
	not on_webhook(request("PUT", "/v1/data/kubernetes/namespaces", "w-token"))
	contains(on_webhook_reason(request("POST", decision, "w-token")), "may only send admission reviews")
	contains(on_webhook_reason(request("POST", decision, "q-token")), "on the decisions' listener")

	# its probes, its scraper and kube-mgmt's writes (the namespaces) stay
	on_webhook(anonymous("GET", "/health"))
	on_webhook(request("GET", "/metrics", "m-token"))
	on_webhook(request("PUT", "/v1/data/kubernetes/namespaces", "a-token"))
}

test_a_webhook_token_equal_to_another_grants_nothing if {
	same := {"env": {
		"GREENOPS_OPA_SERVES": "webhook",
		"GREENOPS_OPA_QUERY_TOKEN": "q-token",
		"GREENOPS_OPA_ADMIN_TOKEN": "same",
		"GREENOPS_OPA_WEBHOOK_TOKEN": "same",
	}}
	not authz.allow.allowed with input as request("POST", "/", "same") with opa.runtime as same
	not authz.allow.allowed with input as request("PUT", "/v1/data/x", "same") with opa.runtime as same
}

test_the_data_api_needs_a_token if {
	not allowed(anonymous("POST", decision))
	not allowed(anonymous("GET", "/v1/data"))
	contains(reason(anonymous("POST", decision)), "needs a bearer token")
}

test_a_wrong_token_is_refused if {
	not allowed(request("POST", decision, "guess"))
	not allowed(request("POST", decision, ""))
	not allowed(request("PUT", "/v1/policies/x", "guess"))
	reason(request("POST", decision, "guess")) == sprintf("POST %v: the bearer token was refused", [decision])
}

test_the_query_token_reads_decisions if {
	allowed(request("POST", decision, "q-token"))
	allowed(request("GET", "/v1/data/greenops/placement/eligible", "q-token"))
	allowed(request("POST", "/v1/data/greenops/quota", "q-token"))
	allowed(request("POST", "/v1/data/greenops/workload/errors", "q-token"))
}

test_the_query_token_reads_nothing_else if {
	# visibility reads every tenant's reservations with OPA's credential: the platform's, not a tenant's
	not allowed(request("POST", "/v1/data/greenops/visibility/affected", "q-token"))
	not allowed(request("POST", "/v1/data/greenops/visibility", "q-token"))
	allowed(request("POST", "/v1/data/greenops/visibility", "a-token"))

	# the scheduler package holds the scheduler's token; admission calls the scheduler
	not allowed(request("GET", "/v1/data/greenops/scheduler", "q-token"))
	not allowed(request("POST", "/v1/data/greenops/admission/main", "q-token"))
	not allowed(request("POST", "/v1/data/greenops", "q-token"))
	not allowed(request("GET", "/v1/data", "q-token"))
	not allowed(request("GET", "/v1/data/system/authz", "q-token"))
	not allowed(request("GET", "/v1/data/kubernetes/vmtemplates", "q-token"))
	not allowed(request("GET", "/v1/policies", "q-token"))
	not allowed(request("POST", "/v1/query", "q-token"))
	not allowed(request("GET", "/v1/config", "q-token"))
}

test_the_query_token_cannot_write if {
	not allowed(request("PUT", "/v1/policies/x", "q-token"))
	not allowed(request("DELETE", "/v1/policies/x", "q-token"))
	not allowed(request("PUT", "/v1/data/x", "q-token"))
	not allowed(request("PATCH", "/v1/data/greenops/placement", "q-token"))
	not allowed(request("PUT", "/v1/data/greenops/placement/decision", "q-token"))
	contains(reason(request("PUT", "/v1/data/x", "q-token")), "writes need kube-mgmt's admin token")
}

test_the_admin_token_writes_and_reads if {
	allowed(request("PUT", "/v1/data/kubernetes/vmtemplates/ns/vm-1", "a-token"))
	allowed(request("PATCH", "/v1/data/kubernetes/vmtemplates", "a-token"))
	allowed(request("DELETE", "/v1/data/kubernetes/vmtemplates", "a-token"))
	allowed(request("PUT", "/v1/policies/x", "a-token"))
	allowed(request("POST", decision, "a-token"))
}

test_unset_tokens_match_nobody if {
	not authz.allow.allowed with input as request("POST", decision, "") with opa.runtime as {"env": {}}
	not authz.allow.allowed with input as request("PUT", "/v1/data/x", "") with opa.runtime as {"env": {}}
	not authz.allow.allowed with input as request("POST", decision, "")
		with opa.runtime as {"env": {"GREENOPS_OPA_QUERY_TOKEN": "", "GREENOPS_OPA_ADMIN_TOKEN": ""}}
	not authz.allow.allowed with input as anonymous("POST", decision) with opa.runtime as {"env": {}}
	authz.allow.allowed with input as anonymous("GET", "/health") with opa.runtime as {"env": {}}
	not authz.allow.allowed with input as anonymous("POST", "/") with opa.runtime as {"env": {}}
	not authz.allow.allowed with input as anonymous("POST", "/")
		with opa.runtime as {"env": {"GREENOPS_OPA_SERVES": "webhook"}}
}

test_one_token_unset_leaves_the_other_working if {
	authz.allow.allowed with input as request("POST", decision, "q-token")
		with opa.runtime as {"env": {"GREENOPS_OPA_QUERY_TOKEN": "q-token"}}
	not authz.allow.allowed with input as request("PUT", "/v1/data/x", "q-token")
		with opa.runtime as {"env": {"GREENOPS_OPA_QUERY_TOKEN": "q-token"}}
}

test_equal_tokens_grant_nothing if {
	same := {"env": {"GREENOPS_OPA_QUERY_TOKEN": "same", "GREENOPS_OPA_ADMIN_TOKEN": "same"}}
	not authz.allow.allowed with input as request("PUT", "/v1/data/x", "same") with opa.runtime as same
	not authz.allow.allowed with input as request("POST", decision, "same") with opa.runtime as same
	r := authz.allow.reason with input as request("POST", decision, "same") with opa.runtime as same
	contains(r, "the same")
}

test_a_non_string_identity_is_refused if {
	not allowed(request("POST", decision, ["q-token"]))
}

test_the_metrics_token_reads_the_metrics_and_nothing_else if {
	allowed(request("GET", "/metrics", "m-token"))
	not allowed(request("POST", "/metrics", "m-token"))
	not allowed(request("POST", decision, "m-token"))
	not allowed(request("GET", "/v1/data", "m-token"))
	not allowed(request("GET", "/v1/config", "m-token"))
	not allowed(request("PUT", "/v1/policies/x", "m-token"))
	reason(request("POST", decision, "m-token")) == sprintf(
		"POST %v: the metrics token may only read GET /metrics",
		[decision],
	)
}

test_the_metrics_need_the_metrics_or_the_admin_token if {
	not allowed(anonymous("GET", "/metrics"))
	not allowed(request("GET", "/metrics", "q-token"))
	not allowed(request("GET", "/metrics", "guess"))
	allowed(request("GET", "/metrics", "a-token"))
	contains(reason(anonymous("GET", "/metrics")), "needs a bearer token")
}

test_a_metrics_token_equal_to_another_is_ignored if {
	shared := {"env": {
		"GREENOPS_OPA_QUERY_TOKEN": "same",
		"GREENOPS_OPA_ADMIN_TOKEN": "same",
		"GREENOPS_OPA_METRICS_TOKEN": "same",
	}}
	not authz.allow.allowed with input as request("GET", "/metrics", "same") with opa.runtime as shared
	as_query := {"env": {
		"GREENOPS_OPA_QUERY_TOKEN": "q-token",
		"GREENOPS_OPA_ADMIN_TOKEN": "a-token",
		"GREENOPS_OPA_METRICS_TOKEN": "q-token",
	}}
	authz.caller == "query" with input as request("GET", "/metrics", "q-token") with opa.runtime as as_query
	not authz.allow.allowed with input as request("GET", "/metrics", "q-token") with opa.runtime as as_query
}

test_an_unset_metrics_token_matches_nobody if {
	no_metrics := {"env": {"GREENOPS_OPA_QUERY_TOKEN": "q-token", "GREENOPS_OPA_ADMIN_TOKEN": "a-token"}}
	not authz.allow.allowed with input as request("GET", "/metrics", "") with opa.runtime as no_metrics
	authz.allow.allowed with input as request("GET", "/metrics", "a-token") with opa.runtime as no_metrics
}
