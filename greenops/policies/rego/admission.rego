# The mutating admission policy for VmTemplate (thesis §3.5, §3.6.9, §3.6.11).
#
# For CREATE and UPDATE of a VmTemplate: evaluate the placement decision, ask the scheduler
# (http.send) to book it as the object's reservation, map its zone back to a provider region and
# answer with a base64 JSONPatch adding provider, schedulingLocation (cloud region), schedulingTime
# and vmSize, the namespace's tenant when the spec has none, and recording the values it chose
# itself under the annotation greenops.io/decision (see "Whose fields" below and the README) and the
# reservation's key under greenops.io/reservation. Conflicts, a tenant that is not the namespace's,
# malformed specs, strings that break their rule (spec_fields.rego), a spec.namespace other than the
# object's own and scheduler failures (quota included: the scheduler counts both paths) are denied
# with a reason (fail closed). A workload with no room now that could run before its deadline once
# room frees is admitted Pending (queued in the scheduler, no decision yet). A dry run books
# nothing. A CREATE books only a key that is new (or replays the same review): it never changes a
# reservation already made. A DELETE is allowed and
# releases nothing: a review is not proof that the object is gone, so the cluster path's controller
# releases the reservation once it observes the deletion on the API server. Any other kind or
# operation passes unchanged. Served as system.main (see system.rego), by the webhook's own OPA
# process, which only the API server can call (system.authz).
# METADATA
# title: VmTemplate admission
# description: >-
#   The mutating webhook's decision for VmTemplate CREATE, UPDATE and DELETE: place, book,
#   patch or deny.
package greenops.admission

import rego.v1

import data.greenops.catalog
import data.greenops.config
import data.greenops.placement
import data.greenops.scheduler
import data.greenops.spec_fields
import data.greenops.tenancy
import data.greenops.workload

request := input.request

default uid := ""

uid := request.uid if is_string(request.uid)

main := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": object.union({"uid": uid}, response),
}

# --- the response, first match wins ----------------------------------------------------------
response := _deny(_malformed) if _malformed

else := {"allowed": true} if {
	not _targets_vmtemplate
}

else := {"allowed": true} if {
	_never_placed
}

else := _deny(sprintf("%v: spec must be an object", [_subject])) if {
	not is_object(_field(_field(request, "object"), "spec"))
}

else := _deny(sprintf("%v: %v", [_subject, concat("; ", _spec_refusals)])) if count(_spec_refusals) > 0

else := _patch(_existing_decision, object.get(_old, "tenant", null)) if _keep_existing

else := _placed

# A CREATE, or an UPDATE whose intent changed: checked, placed by the scheduler and patched.
_placed := _deny(sprintf("%v: %v", [_subject, _tenant_problem])) if _tenant_problem

else := _deny(sprintf("%v: %v", [_subject, _room_problem])) if _room_problem

else := _deny(sprintf("%v: %v", [_subject, concat("; ", _decision.errors)])) if count(_decision.errors) > 0

else := _deny(sprintf("%v: not placed, failing closed: %v", [_subject, _schedule.error])) if not _schedule.ok

else := object.union(_patch({}, _tenant), {"warnings": [_waiting(_schedule.pending)]}) if _schedule.pending

else := _deny(sprintf(
	"%v: not placed, failing closed: the scheduler chose zone %v, which is not among the eligible zones %v; %v",
	[_subject, _schedule.answer.scheduling_location, _decision.zones, _given_back],
)) if {
	not _selection
}

else := _patch(
	{
		"provider": _selection.provider,
		"schedulingLocation": _selection.region,
		"schedulingTime": _schedule.answer.scheduling_time,
		"vmSize": _selection.vmSize,
	},
	_tenant,
)

# Queued: admitted without a decision, its key recorded; the controller asks again once the
# scheduler's queue has placed it (a touch of the object: an UPDATE that replays the booking), and
# shows its place meanwhile on its VmPlacement. kubectl prints the warning at the CREATE.
_waiting(p) := substring(
	sprintf(
		"%v waits in the scheduler's queue at position %v (priority class %v), placed when room frees before %v: %v",
		[
			_subject, object.get(p, "position", "?"), object.get(p, "priority_class", "?"),
			object.get(p, "deadline", "?"), object.get(p, "reason", ""),
		],
	),
	0, 480,
)

_deny(msg) := {"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": msg}}

# The answer adding decision d's fields, the tenant when the spec has none, and the annotations.
_patch(d, tenant) := {
	"allowed": true,
	"patchType": "JSONPatch",
	"patch": base64.encode(json.marshal(array.flatten([
		[{"op": "add", "path": sprintf("/spec/%v", [k]), "value": d[k]} |
			some k in decision_fields
			d[k] != null
		],
		_tenant_ops(tenant),
		_annotation_ops(_annotations(d)),
	]))),
}

_tenant_ops(tenant) := [{"op": "add", "path": "/spec/tenant", "value": tenant} |
	tenant != null
	not is_string(_field(_spec, "tenant"))
]

# The annotations the patch writes: the webhook's own choices in d, and the reservation's key.
_annotations(d) := object.union({decision_annotation: json.marshal(_own_choices(d))}, _reservation_record)

# JSONPatch "add" on a missing parent fails, and replacing the whole map would drop the user's
# other annotations: add each key when the map exists, else the map, else the metadata.
_annotation_ops(values) := [op |
	some k, v in values
	op := {"op": "add", "path": sprintf("/metadata/annotations/%v", [_pointer_escape(k)]), "value": v}
] if {
	is_object(_field(_metadata, "annotations"))
} else := [{"op": "add", "path": "/metadata/annotations", "value": values}] if {
	is_object(_field(_field(request, "object"), "metadata"))
} else := [{"op": "add", "path": "/metadata", "value": {"annotations": values}}]

# RFC 6901: "~" and "/" in a key are written "~0" and "~1".
_pointer_escape(key) := replace(replace(key, "~", "~0"), "/", "~1")

# --- shape checks: a malformed review gets a clean answer, never an evaluation error -----------
# (A builtin called on an undefined value is undefined even under `not`, so every field is read
# through _field, which turns "absent" and "wrong type" into null.)
_obj(x) := x if is_object(x)

else := {}

_field(x, key) := object.get(_obj(x), key, null)

_malformed := "malformed AdmissionReview: body must be an object" if not is_object(input)

else := "malformed AdmissionReview: request missing" if {
	not is_object(_field(input, "request"))
}

else := "malformed AdmissionReview: request.uid must be a string" if {
	not is_string(_field(request, "uid"))
}

else := "malformed AdmissionReview: request.kind.kind must be a string" if {
	not is_string(_field(_field(request, "kind"), "kind"))
}

else := "malformed AdmissionReview: request.operation must be a string" if {
	not is_string(_field(request, "operation"))
}

_targets_vmtemplate if {
	request.kind.kind == "VmTemplate"
	request.operation in {"CREATE", "UPDATE", "DELETE"}
}

_metadata := _obj(_field(_field(request, "object"), "metadata"))

_old_metadata := _obj(_field(_field(request, "oldObject"), "metadata"))

# The namespace the API server reviews the object in (the request's; the object's own for a
# review that lacks it).
_namespace := ns if {
	ns := _field(request, "namespace")
	is_string(ns)
	ns != ""
} else := object.get(_metadata, "namespace", object.get(_old_metadata, "namespace", ""))

_subject := sprintf("VmTemplate %v/%v", [_namespace, object.get(_metadata, "name", object.get(request, "name", ""))])

# Passed unchanged, never blocked: a DELETE (the controller releases the reservation once it sees
# the object gone), and an object being deleted (deletionTimestamp set; finalizers still to run),
# which is never placed again.
_never_placed if request.operation == "DELETE"

_never_placed if _terminating

# An object being deleted.
_terminating if {
	request.operation == "UPDATE"
	_field(_metadata, "deletionTimestamp") != null
}

# The workload as the placement policy reads it: the user's intent (the spec without the
# webhook's own values, see below) under the namespace's tenant; vmName (or the object's name)
# names it.
_workload := object.union(
	{"name": object.get(_intent, "vmName", object.get(_metadata, "name", "")), "tenant": _tenant},
	_intent,
)

# A deadline that leaves no room for the run from now: refused as the Pulumi path's model refuses it
# (placement.decision leaves it out: a recorded workload is re-evaluated after its deadline passed).
# Only a spec without other problems is timed; those are named first, as the model names them.
_room_problem := sprintf("workload %q: %v", [workload.name_of(_workload), p]) if {
	count(_decision.errors) == 0
	p := workload.room_problem(_workload, time.now_ns(), workload.bundle_rules)
}

_decision := placement.decision_for({"workload": _workload}, catalog, config, workload.bundle_rules)

_normalized := workload.normalize(_workload, catalog, config, workload.bundle_rules)

_schedule := scheduler.call(object.union(scheduler.request_body(_normalized, _decision.zones, catalog), _booking))

# The eligible region the scheduler's zone maps back to (the same decision, for that zone).
_selection := s if {
	s := placement.decision_for(
		{"workload": _workload, "zone": _schedule.answer.scheduling_location},
		catalog, config, workload.bundle_rules,
	).selection
	s != null
}

# --- The spec's strings and namespace (see spec_fields.rego) -------------------------------------
# Without the bundle's string rules or workload contract nothing could be checked: fail closed.
default _string_rules := null

_string_rules := data.greenops.string_rules

_spec_refusals := ["the policy bundle has no data.greenops.string_rules, so the spec's strings cannot be checked"] if {
	not is_object(_string_rules)
} else := ["the policy bundle has no data.greenops.workload_contract, so the workload cannot be checked"] if {
	not is_object(workload.bundle_rules.contract)
} else := array.concat(_namespace_refusal, spec_fields.problems(_spec, _string_rules))

default _namespace_refusal := []

_namespace_refusal := [p] if {
	p := spec_fields.namespace_problem(_spec, _namespace)
}

# --- Tenant: the namespace's (see tenancy.rego) -----------------------------------------------
# The namespaces kube-mgmt replicates; none before its first sync (or without kube-mgmt).
default _namespaces := {}

_namespaces := data.kubernetes.namespaces

_tenancy := tenancy.of_namespace(_namespace, _namespaces, config)

_tenant := _tenancy.tenant

_tenant_problem := e if {
	e := _tenancy.error
} else := tenancy.mismatch(_namespace, _spec.tenant, _tenant, _namespaces) if {
	is_string(_spec.tenant)
	_spec.tenant != _tenant
}

# --- The reservation: the scheduler books the placement under the object's key ----------------
# On CREATE the object has no uid yet (the API server assigns uid and creationTimestamp after
# admission; checked on kube-apiserver 1.36, and generateName objects have no name yet either), so
# the key is "<namespace>/<name or generateName>/<the admission request's uid>": the same in every
# http.send attempt and every re-send of this webhook call (same AdmissionReview), new for a
# re-created object. The annotation greenops.io/reservation records it, and UPDATE and DELETE read
# it from the stored object (oldObject), never from the user's copy; an object admitted before the
# annotation existed is keyed "<namespace>/<name>/<metadata.uid>". A DELETE reads none: the
# controller releases on the deletion it observes. Why, and what it costs: the
# README, "The cluster path's reservations and tenants".
#
# A review books only keys of the cluster form with its own namespace first and a Kubernetes uid
# (a UUID: the API server's request and object uids are UUIDs) last: a recorded key that is not one
# (a Pulumi-path key "<stack>/<workload>/<spec digest>", even of a stack named like the namespace,
# another namespace's, a forged review's) is never used. An UPDATE then falls back to the uid key
# and records it.
reservation_annotation := "greenops.io/reservation"

_old_name := object.get(_old_metadata, "name", object.get(request, "name", ""))

reservation_key := sprintf("%v/%v/%v", [_namespace, _created_name, request.uid]) if {
	request.operation == "CREATE"
} else := _recorded_key if {
	request.operation == "UPDATE"
	not _recorded_key_problem
} else := sprintf("%v/%v/%v", [_namespace, _old_name, uid]) if {
	request.operation == "UPDATE"
	uid := _field(_old_metadata, "uid")
	is_string(uid)
	uid != ""
}

# The key on the stored object's annotation (null without one).
_recorded_key := _field(_field(_old_metadata, "annotations"), reservation_annotation)

_recorded_key_problem := "there is none" if _recorded_key == null

else := cluster_key_problem(_recorded_key, _namespace, object.get(_old_metadata, "namespace", _namespace))

# cluster_key_problem(key, ns, stored_ns): why key is not a cluster-path key "<ns>/<name>/<uid>"
# of namespace ns, the review's, for an object stored in stored_ns; undefined when it is one.
cluster_key_problem(key, ns, stored_ns) := "it is not a string" if not is_string(key)

else := "it is not a key the scheduler accepts (1-512 printable ASCII characters, no spaces)" if {
	not recorded_reservation({"metadata": {"annotations": {reservation_annotation: key}}})
}

else := sprintf("the object is stored in namespace %v, not the review's %v", [stored_ns, ns]) if {
	stored_ns != ns
}

else := _segments_problem(split(key, "/"), ns)

# _segments_problem(parts, ns): why a key's "/"-separated parts are not [ns, name, uid].
_segments_problem(parts, ns) := sprintf(
	"it has %v segment(s), not the cluster form <namespace>/<name>/<uid>",
	[count(parts)],
) if {
	count(parts) != 3
}

else := sprintf("it belongs to namespace %v, not this object's %v", [parts[0], ns]) if {
	parts[0] != ns
}

else := "it has an empty name segment" if parts[1] == ""

else := sprintf(
	"its last segment %v is not a Kubernetes uid (a UUID; a Pulumi-path key ends in its spec's digest)",
	[parts[2]],
) if {
	not regex.match(`^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$`, parts[2])
}

_created_name := n if {
	n := object.get(_metadata, "name", "")
	is_string(n)
	n != ""
} else := object.get(_metadata, "generateName", object.get(request, "name", ""))

# recorded_reservation(obj): the key in obj's annotation, when it is one the scheduler accepts.
recorded_reservation(obj) := key if {
	key := _field(_field(_field(obj, "metadata"), "annotations"), reservation_annotation)
	is_string(key)
	regex.match(`^[\x21-\x7e]{1,512}$`, key)
}

default dry_run := false

dry_run if request.dryRun == true

# What the scheduler records with the booking, beyond the thesis body: the key, whose quota it
# counts against (the scheduler sums the tenant's active reservations of both paths), the zones'
# provider/region, the workload as policy saw it; a dry run decides and books nothing. A CREATE's
# key must be new: the scheduler refuses (409) to change a reservation under it, so a review that
# reuses another object's request uid cannot rebook that object's reservation.
_booking := object.union(_key_field, {
	"new_key": request.operation == "CREATE",
	"queue": true,
	"tenant": _tenant,
	"path": "cluster",
	"tenant_quota_vcpu": _decision.tenantQuotaVcpu,
	"regions": _decision.zoneRegions,
	"workload": _normalized,
	"explanation": _decision.explanation,
	"dry_run": dry_run,
})

# Every review from an API server yields a key; a hand-made one without any is still answered
# (booked under a key the scheduler makes up).
default _key_field := {}

_key_field := {"key": reservation_key} if reservation_key

# The annotation recording the key: not on a dry-run CREATE, which booked nothing.
default _reservation_record := {}

_reservation_record := {reservation_annotation: reservation_key} if {
	reservation_key
	not _dry_run_create
}

_dry_run_create if {
	dry_run
	request.operation == "CREATE"
}

# A denial after the scheduler booked gives the booking back. (On UPDATE the booking replaced the
# object's previous one under the same key, so the object is left without a reservation until it
# is placed again: a denial here means the scheduler answered outside what it was asked.)
_given_back := "nothing was booked (dry run)" if dry_run

else := "the booking has no key to release it by" if {
	not reservation_key
}

else := sprintf("its reservation %v was released", [reservation_key]) if _release_denied.ok

else := sprintf(
	"releasing its reservation %v failed too (%v); it ends with its window",
	[reservation_key, _release_denied.error],
)

_release_denied := _release("admission denied: the scheduler's zone is not eligible")

# A booking just made is its tenant's in the scheduler's record: the namespace's.
_release(reason) := scheduler.release(object.get(_tenancy, "tenant", null), reservation_key, reason)

# --- Whose fields: the user's requests or the webhook's own decision -------------------------
# The decision is written into the same spec fields a user may set to pin a placement, and
# `kubectl apply`/`edit` send them back (a 3-way merge keeps fields the user's file never had).
# So the patch also records the values the webhook chose itself in an annotation; a spec field
# equal to its recorded value is the webhook's and is dropped before the policy reads the spec.
# A field that differs, or has no recorded value, is the user's request and is checked.
decision_fields := ["provider", "schedulingLocation", "schedulingTime", "vmSize"]

decision_annotation := "greenops.io/decision"

_spec := _obj(_field(_field(request, "object"), "spec"))

_old := _obj(_field(_field(request, "oldObject"), "spec"))

# On UPDATE the stored object's record counts (the user's copy may carry a stale one); on CREATE
# the object's own (a restore from backup brings back its old decision, which is not a request).
_recorded := recorded_decision(_field(request, "oldObject")) if request.operation == "UPDATE"

else := recorded_decision(_field(request, "object"))

# recorded_decision(obj): the string values of the annotation's decision fields; {} when the
# annotation is absent or not a JSON object (never an evaluation error).
recorded_decision(obj) := {k: v |
	raw := _field(_field(_field(obj, "metadata"), "annotations"), decision_annotation)
	is_string(raw)
	json.is_valid(raw)
	doc := json.unmarshal(raw)
	some k in decision_fields
	v := _field(doc, k)
	is_string(v)
}

# intent(spec, recorded): the spec without the fields whose value is the recorded one.
intent(spec, recorded) := object.remove(spec, {k | some k in decision_fields; spec[k] == recorded[k]})

_intent := intent(_spec, _recorded)

# The decision fields the policy reads as requests (workload.normalize): schedulingTime and
# vmSize are always the webhook's choice.
requestable_fields := {"provider", "schedulingLocation"}

# What the annotation records: the decision without the values the user requested, so that a
# pin stays the user's on every later UPDATE even though the decision equals it.
_own_choices(d) := {k: d[k] |
	some k in decision_fields
	d[k] != null
	not _requested(k)
}

_requested(k) if {
	k in requestable_fields
	k in object.keys(_intent)
}

# --- UPDATE keeps a decision unless the intent that drove it changed -------------------------
# The decision fields the stored spec has (a false one counts as absent).
_existing_decision[k] := _old[k] if {
	some k in decision_fields
	_old[k] != false
}

# A change to any placement field, or to an explicit provider/region request, places the
# workload again; otherwise the stored decision is re-asserted (the user's copy may lack it). A
# spec without a tenant means the namespace's, so dropping the patched-in tenant changes nothing.
_keep_existing if {
	request.operation == "UPDATE"
	is_string(_old.provider)
	is_string(_old.schedulingLocation)
	is_string(_old.schedulingTime)
	old_intent := intent(_old, _recorded)
	every field in workload.placement_fields {
		_placement_value(old_intent, field) == _placement_value(_intent, field)
	}
}

_placement_value(spec, "tenant") := object.get(spec, "tenant", object.get(_tenancy, "tenant", null))

_placement_value(spec, field) := object.get(spec, field, null) if field != "tenant"
