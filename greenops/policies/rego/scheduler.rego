# The GreenOps scheduler as OPA's external data source (thesis §3.6.3, §3.6.9).
#
# Its URL comes from the environment variable SCHEDULER_URL, as in the thesis, and its bearer token,
# when the scheduler requires one, from GREENOPS_SCHEDULER_TOKEN (a Secret in a cluster). Calls never
# raise: a failed or malformed answer becomes `error`; the admission policy fails closed on it and the
# visibility queries report it.
# METADATA
# title: The scheduler as an external data source
# description: >-
#   Calls to the carbon-aware scheduler: book, release and list reservations, never raising.
package greenops.scheduler

import rego.v1

import data.greenops.config.scheduler as settings

url := trim_suffix(opa.runtime().env.SCHEDULER_URL, "/")

# A function, not a rule: a rule's value would be readable through the Data API
# (GET /v1/data/greenops/scheduler), token included.
_auth(env) := {"Authorization": sprintf("Bearer %v", [env.GREENOPS_SCHEDULER_TOKEN])} if {
	env.GREENOPS_SCHEDULER_TOKEN != ""
} else := {}

# request_body(spec, zones, catalog): the thesis request body, plus the origin's zone (for the
# scheduler's baseline) when the origin region has carbon data in the catalog.
request_body(spec, zones, catalog) := object.union(_thesis_body(spec, zones), _origin(spec, catalog))

_thesis_body(spec, zones) := {
	"number_of_jobs": 1,
	"eligible_regions": zones,
	"deadline": spec.deadline,
	"duration": spec.durationHours,
	"cpu": spec.cpu,
	"memory": spec.memory,
	"req_timeout": settings.req_timeout,
}

_origin(spec, catalog) := {"origin_zone": region.zone} if {
	region := catalog.regions[catalog.region_provider[spec.originRegion]][spec.originRegion]
	region.placeable
} else := {}

# One attempt; the attempt number keeps OPA's per-query cache from answering a retry with the
# failure it is retrying.
_send(body, attempt) := http.send({
	"method": "POST",
	"url": sprintf("%v/scheduling", [url]),
	"headers": object.union(
		{"Content-Type": "application/json", "X-GreenOps-Attempt": sprintf("%v", [attempt])},
		_auth(opa.runtime().env),
	),
	"body": body,
	"timeout": sprintf("%vs", [settings.timeout_seconds]),
	"raise_error": false,
	"force_json_decode": true,
})

_answered(resp) if {
	resp.status_code == 200
	is_string(resp.body.scheduling_location)
	is_string(resp.body.scheduling_time)
}

# A request that asked to wait (`queue`) and was recorded Pending in the scheduler's queue (202).
_queued(resp) if {
	resp.status_code == 202
	resp.body.phase == "Pending"
}

_accepted(resp) if _answered(resp)

_accepted(resp) if _queued(resp)

_outcome(resp) := {"ok": true, "answer": resp.body} if _answered(resp)

else := {"ok": true, "pending": resp.body}

# call(body) is {"ok": true, "answer": {...}}, {"ok": true, "pending": {...}} (queued: its key,
# position and reason) or {"ok": false, "error": "..."}; at most `settings.attempts` requests are
# made.
call(body) := result if {
	not url
	result := {"ok": false, "error": "SCHEDULER_URL is not set in OPA's environment"}
} else := result if {
	r := _send(body, 1)
	_accepted(r)
	result := _outcome(r)
} else := result if {
	settings.attempts >= 2
	r := _send(body, 2)
	_accepted(r)
	result := _outcome(r)
} else := result if {
	settings.attempts >= 3
	r := _send(body, 3)
	_accepted(r)
	result := _outcome(r)
} else := result if {
	r := _send(body, settings.attempts)
	result := {"ok": false, "error": _failure(r)}
}

# release(tenant, key, reason) gives tenant `tenant`'s reservation `key` back (DELETE
# /reservations/{key}?tenant=): a booking whose admission was denied, or a deleted VmTemplate's. A
# key is its tenant's, and OPA's credential spans every tenant, so the tenant is named (null: the
# one tenant's that holds the key). A key the record does not know counts as released. {"ok": true}
# or {"ok": false, "error": "..."}; a DELETE is safe to repeat, so it gets the same attempts as a
# booking.
release(tenant, key, reason) := {"ok": true} if {
	_released(_delete(tenant, key, reason, 1))
} else := {"ok": true} if {
	settings.attempts >= 2
	_released(_delete(tenant, key, reason, 2))
} else := {"ok": false, "error": "SCHEDULER_URL is not set in OPA's environment"} if {
	not url
} else := {"ok": false, "error": _failure(_delete(tenant, key, reason, settings.attempts))}

_released(resp) if resp.status_code in {200, 404}

# A key's segments, each URL-encoded, joined by "/" again (the route takes the key as a path).
_path_of(key) := concat("/", [urlquery.encode(s) | some s in split(key, "/")])

# The release's query: its reason, and the tenant when it is known.
_release_query(tenant, reason) := urlquery.encode_object({"reason": reason}) if tenant == null

else := urlquery.encode_object({"reason": reason, "tenant": tenant})

_delete(tenant, key, reason, attempt) := http.send({
	"method": "DELETE",
	"url": sprintf("%v/reservations/%v?%v", [url, _path_of(key), _release_query(tenant, reason)]),
	"headers": object.union({"X-GreenOps-Attempt": sprintf("%v", [attempt])}, _auth(opa.runtime().env)),
	"timeout": sprintf("%vs", [settings.timeout_seconds]),
	"raise_error": false,
	"force_json_decode": true,
})

# reservations(filters) reads the record of placements (GET /reservations, `filters` as its query:
# tenant, region, provider, zone, path; {} for all): the active reservations of both paths, as
# {"ok": true, "reservations": [...]} or {"ok": false, "error": "..."}. One attempt: a failed read
# is reported to its caller, who may ask again; nothing is booked or denied on it.
reservations(filters) := {"ok": false, "error": "SCHEDULER_URL is not set in OPA's environment"} if {
	not url
} else := {"ok": true, "reservations": r.body.reservations} if {
	r := _list(filters)
	r.status_code == 200
	is_array(r.body.reservations)
} else := {"ok": false, "error": _list_failure(_list(filters))}

# Same request, same answer: OPA's per-query cache sends it once however many rules read it.
_list(filters) := http.send({
	"method": "GET",
	"url": sprintf("%v/reservations%v", [url, _query(filters)]),
	"headers": _auth(opa.runtime().env),
	"timeout": sprintf("%vs", [settings.timeout_seconds]),
	"raise_error": false,
	"force_json_decode": true,
})

_query(filters) := "" if count(filters) == 0

else := sprintf("?%v", [urlquery.encode_object(filters)])

_list_failure(r) := sprintf("scheduler at %v answered HTTP 200 without a reservations list", [url]) if {
	r.status_code == 200
}

else := _failure(r)

_failure(r) := sprintf("scheduler at %v unreachable: %v", [url, r.error.message]) if r.status_code == 0

else := sprintf("scheduler at %v answered HTTP %v: %v", [url, r.status_code, _detail(r)]) if r.status_code != 200

else := sprintf("scheduler at %v answered without scheduling_location/scheduling_time", [url])

_detail(r) := sprintf("%v", [r.body.detail]) if r.body.detail

else := sprintf("%v", [object.get(r, "raw_body", "")])
