# The mutating admission policy for VmTemplate (thesis §3.5, §3.6.9, §3.6.11).
#
# For CREATE and UPDATE of a VmTemplate: evaluate the placement decision, ask the scheduler
# (http.send), map its zone back to a provider region and answer with a base64 JSONPatch adding
# provider, schedulingLocation (cloud region), schedulingTime and vmSize, and recording the
# values it chose itself under the annotation greenops.io/decision (see "Whose fields" below and
# the README). Conflicts, quota, malformed specs and scheduler failures are denied with a reason
# (fail closed). Any other kind or operation passes unchanged. Served as system.main (see
# system.rego).
package greenops.admission

import rego.v1

import data.greenops.placement
import data.greenops.scheduler
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

else := {"allowed": true} if not _targets_vmtemplate

else := _deny(sprintf("%v: spec must be an object", [_subject])) if not is_object(_field(_field(request, "object"), "spec"))

else := _patch(_existing_decision) if _keep_existing

else := _deny(sprintf("%v: %v", [_subject, concat("; ", _decision.errors)])) if count(_decision.errors) > 0

else := _deny(sprintf("%v: not placed, failing closed: %v", [_subject, _schedule.error])) if not _schedule.ok

else := _deny(sprintf("%v: not placed, failing closed: the scheduler chose zone %v, which is not among the eligible zones %v", [_subject, _schedule.answer.scheduling_location, _decision.zones])) if not _selection

else := _patch({
	"provider": _selection.provider,
	"schedulingLocation": _selection.region,
	"schedulingTime": _schedule.answer.scheduling_time,
	"vmSize": _selection.vmSize,
})

_deny(msg) := {"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": msg}}

_patch(d) := {
	"allowed": true,
	"patchType": "JSONPatch",
	"patch": base64.encode(json.marshal(array.concat(
		[{"op": "add", "path": sprintf("/spec/%v", [k]), "value": d[k]} |
			some k in decision_fields
			d[k] != null
		],
		[_annotation_op(json.marshal(_own_choices(d)))],
	))),
}

# JSONPatch "add" on a missing parent fails, and replacing the whole map would drop the user's
# other annotations: add the one key when the map exists, else the map, else the metadata.
_annotation_op(value) := {"op": "add", "path": sprintf("/metadata/annotations/%v", [_pointer_escape(decision_annotation)]), "value": value} if {
	is_object(_field(_metadata, "annotations"))
}

else := {"op": "add", "path": "/metadata/annotations", "value": {decision_annotation: value}} if {
	is_object(_field(_field(request, "object"), "metadata"))
}

else := {"op": "add", "path": "/metadata", "value": {"annotations": {decision_annotation: value}}}

# RFC 6901: "~" and "/" in a key are written "~0" and "~1".
_pointer_escape(key) := replace(replace(key, "~", "~0"), "/", "~1")

# --- shape checks: a malformed review gets a clean answer, never an evaluation error -----------
# (A builtin called on an undefined value is undefined even under `not`, so every field is read
# through _field, which turns "absent" and "wrong type" into null.)
_obj(x) := x if is_object(x)

else := {}

_field(x, key) := object.get(_obj(x), key, null)

_malformed := "malformed AdmissionReview: body must be an object" if not is_object(input)

else := "malformed AdmissionReview: request missing" if not is_object(_field(input, "request"))

else := "malformed AdmissionReview: request.uid must be a string" if not is_string(_field(request, "uid"))

else := "malformed AdmissionReview: request.kind.kind must be a string" if {
	not is_string(_field(_field(request, "kind"), "kind"))
}

else := "malformed AdmissionReview: request.operation must be a string" if not is_string(_field(request, "operation"))

_targets_vmtemplate if {
	request.kind.kind == "VmTemplate"
	request.operation in {"CREATE", "UPDATE"}
}

_metadata := _obj(_field(_field(request, "object"), "metadata"))

_subject := sprintf("VmTemplate %v/%v", [
	object.get(_metadata, "namespace", object.get(request, "namespace", "")),
	object.get(_metadata, "name", object.get(request, "name", "")),
])

# The workload as the placement policy reads it: the user's intent (the spec without the
# webhook's own values, see below); vmName (or the object's name) names it.
_workload := object.union({"name": object.get(_intent, "vmName", object.get(_metadata, "name", ""))}, _intent)

_decision := d if {
	d := placement.decision with input as {"workload": _workload}
}

_schedule := scheduler.call(scheduler.request_body(workload.normalize(_workload), _decision.zones))

_selection := s if {
	s := placement.selection with input as {"workload": _workload, "zone": _schedule.answer.scheduling_location}
	s != null
}

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
_existing_decision := {k: _old[k] | some k in decision_fields; _old[k]}

# A change to any placement field, or to an explicit provider/region request, places the
# workload again; otherwise the stored decision is re-asserted (the user's copy may lack it).
_keep_existing if {
	request.operation == "UPDATE"
	is_string(_old.provider)
	is_string(_old.schedulingLocation)
	is_string(_old.schedulingTime)
	old_intent := intent(_old, _recorded)
	every field in workload.placement_fields {
		object.get(old_intent, field, null) == object.get(_intent, field, null)
	}
}
