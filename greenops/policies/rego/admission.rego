# The mutating admission policy for VmTemplate (thesis §3.5, §3.6.9, §3.6.11).
#
# For CREATE and UPDATE of a VmTemplate: evaluate the placement decision, ask the scheduler
# (http.send), map its zone back to a provider region and answer with a base64 JSONPatch adding
# provider, schedulingLocation (cloud region), schedulingTime and vmSize. Conflicts, quota,
# malformed specs and scheduler failures are denied with a reason (fail closed). Any other kind
# or operation passes unchanged. Served as system.main (see system.rego).
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
	"patch": base64.encode(json.marshal([{"op": "add", "path": sprintf("/spec/%v", [k]), "value": d[k]} |
		some k in ["provider", "schedulingLocation", "schedulingTime", "vmSize"]
		d[k] != null
	])),
}

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

# The workload as the placement policy reads it: vmName (or the object's name) names it.
_workload := object.union({"name": object.get(request.object.spec, "vmName", object.get(_metadata, "name", ""))}, request.object.spec)

_decision := d if {
	d := placement.decision with input as {"workload": _workload}
}

_schedule := scheduler.call(scheduler.request_body(workload.normalize(_workload), _decision.zones))

_selection := s if {
	s := placement.selection with input as {"workload": _workload, "zone": _schedule.answer.scheduling_location}
	s != null
}

# --- UPDATE keeps a decision unless the spec that drove it changed ----------------------------
_old := _obj(_field(_field(request, "oldObject"), "spec"))

_existing_decision := {k: _old[k] | some k in ["provider", "schedulingLocation", "schedulingTime", "vmSize"]; _old[k]}

_keep_existing if {
	request.operation == "UPDATE"
	is_string(_old.provider)
	is_string(_old.schedulingLocation)
	is_string(_old.schedulingTime)
	every field in workload.placement_fields {
		object.get(_old, field, null) == object.get(request.object.spec, field, null)
	}
}
