package greenops.admission_test

import rego.v1

import data.greenops.admission
import data.greenops.testdata

spec := {
	"vmName": "vm-1", "cpu": 2, "memory": 4, "duration": "3h", "deadline": "2030-01-01T00:00:00Z",
	"maxLatency": 100, "originRegion": "italynorth", "eligibleProviders": ["azure"], "tenant": "t1",
}

# The API server's uids are UUIDs: the request's (the key of a created object) and an object's.
request_uid := "0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"

legacy_uid := "6f1e0d2c-3b4a-4958-8776-655443322110"

review(op, obj, old) := {
	"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
	"request": {
		"uid": request_uid,
		"kind": {"group": "composition.krateo.io", "version": "v1-2-0", "kind": "VmTemplate"},
		"operation": op, "namespace": "greenops", "name": "vm-1", "object": obj, "oldObject": old,
	},
}

vm(s) := {
	"apiVersion": "composition.krateo.io/v1-2-0", "kind": "VmTemplate",
	"metadata": {"name": "vm-1", "namespace": "greenops"}, "spec": s,
}

# The scheduler (http.send mocks): answers FR, starting at 02:00.
mock_fr(_) := answered("FR", "2029-12-30T02:00:00Z")

mock_down(_) := {"status_code": 0, "error": {"code": "eval_http_send_network_error", "message": "connection refused"}}

mock_us(_) := answered("US-CAL-CISO", "2029-12-30T02:00:00Z")

mock_400(_) := {"status_code": 400, "body": {"detail": "eligible_regions: unknown zone XX"}}

mock_it(_) := answered("IT-NO", "2029-12-30T04:00:00Z")

answered(zone, start) := {"status_code": 200, "body": {"scheduling_location": zone, "scheduling_time": start}}

# Fails on the first attempt, answers on the second.
mock_flaky(req) := mock_down(req) if req.headers["X-GreenOps-Attempt"] == "1"

else := mock_fr(req)

# Functions cannot be passed around, so one mock dispatches on a mode set per test. (One
# definition per mode, not an else chain: opa fmt v1.22.0 duplicates the branches of a
# one-line else chain of three or more.)
mock(req) := mock_fr(req) if data.test.scheduler == "fr"

mock(req) := mock_down(req) if data.test.scheduler == "down"

mock(req) := mock_us(req) if data.test.scheduler == "us"

mock(req) := mock_400(req) if data.test.scheduler == "400"

mock(req) := mock_flaky(req) if data.test.scheduler == "flaky"

mock(req) := mock_it(req) if data.test.scheduler == "it"

mock(req) := echo_any(req) if data.test.scheduler == "echo"

mock(req) := mock_queued(req) if data.test.scheduler == "queued"

# The scheduler answers a zone it was not asked for, and is gone when its booking is released.
mock(req) := mock_us(req) if {
	data.test.scheduler == "us, then down"
	req.method == "POST"
}

mock(req) := mock_down(req) if {
	data.test.scheduler == "us, then down"
	req.method == "DELETE"
}

# The scheduler answers a zone it was not asked for, and reports the release it is then sent.
mock(req) := mock_us(req) if {
	data.test.scheduler == "us, then echo"
	req.method == "POST"
}

mock(req) := echo_any(req) if {
	data.test.scheduler == "us, then echo"
	req.method == "DELETE"
}

# The scheduler's queue took the request: no room now, room before its deadline once some frees.
mock_queued(req) := {"status_code": 202, "body": {
	"phase": "Pending", "key": req.body.key, "position": 3, "priority_class": "standard",
	"deadline": "2030-01-02T00:00:00Z", "reason": "no window with room for 2 vCPU before the deadline",
}}

# Fails every call on purpose, reporting what it was sent.
echo_any(req) := {"status_code": 418, "body": {"detail": sprintf(
	"%v %v %v",
	[req.method, req.url, json.marshal(object.get(req, "body", null))],
)}}

answer(rev, mode) := answer_in(rev, mode, namespaces)

# The namespaces as kube-mgmt replicates them: greenops belongs to tenant t1 (the spec's).
namespaces := {"greenops": namespace("greenops", {"greenops.io/tenant": "t1"})}

namespace(name, labels) := {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}

answer_in(rev, mode, replicated) := r if {
	r := admission.main with input as rev
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.greenops.string_rules as testdata.string_rules
		with data.greenops.workload_contract as testdata.workload_contract
		with data.kubernetes.namespaces as replicated
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://127.0.0.1:9/"}}
		with http.send as mock
		with data.test.scheduler as mode
}

patch_of(r) := json.unmarshal(base64.decode(r.response.patch))

# The reviewed object with the answer's patch applied, as the API server would store it
# (undefined when the patch does not apply, e.g. a wrongly escaped path).
patched(rev, r) := json.patch(rev.request.object, patch_of(r))

recorded(obj) := json.unmarshal(obj.metadata.annotations["greenops.io/decision"])

decision_fr := {
	"provider": "azure", "schedulingLocation": "francecentral",
	"schedulingTime": "2029-12-30T02:00:00Z", "vmSize": "Standard_E2as_v4",
}

# A failed admission's message.
message(r) := r.response.status.message

test_create_is_patched_with_the_scheduler_decision if {
	r := answer(review("CREATE", vm(spec), null), "fr")
	r.response.uid == "0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
	r.response.allowed
	r.response.patchType == "JSONPatch"
	patch_of(r) == [
		{"op": "add", "path": "/spec/provider", "value": "azure"},
		{"op": "add", "path": "/spec/schedulingLocation", "value": "francecentral"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2029-12-30T02:00:00Z"},
		{"op": "add", "path": "/spec/vmSize", "value": "Standard_E2as_v4"},
		# no annotations map yet: the whole map is added, the decision is compact JSON, the
		# reservation's key is namespace/name/the request's uid
		{"op": "add", "path": "/metadata/annotations", "value": {
			"greenops.io/decision": concat("", [
				`{"provider":"azure","schedulingLocation":"francecentral",`,
				`"schedulingTime":"2029-12-30T02:00:00Z","vmSize":"Standard_E2as_v4"}`,
			]),
			"greenops.io/reservation": "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51",
		}},
	]
}

test_create_records_the_decision_next_to_existing_annotations if {
	obj := json.patch(vm(spec), [{"op": "add", "path": "/metadata/annotations", "value": {"team": "ml"}}])
	rev := review("CREATE", obj, null)
	r := answer(rev, "fr")
	stored := patched(rev, r)
	stored.metadata.annotations.team == "ml"
	recorded(stored) == decision_fr
	"/metadata/annotations/greenops.io~1decision" in {op.path | some op in patch_of(r)} # RFC 6901 escaping of "/"
}

test_create_without_metadata_still_gets_an_applicable_patch if {
	rev := review("CREATE", {"spec": spec}, null)
	r := answer(rev, "fr")
	recorded(patched(rev, r)) == decision_fr
}

test_pointer_escape if {
	admission._pointer_escape("a~b/c/d") == "a~0b~1c~1d"
}

test_conflict_is_denied_with_the_reason if {
	conflicting := object.union(spec, {"dataResidency": "eu", "originRegion": "westus", "maxLatency": 10})
	r := answer(review("CREATE", vm(conflicting), null), "fr")
	not r.response.allowed
	startswith(message(r), `VmTemplate greenops/vm-1: workload "vm-1": no eligible region:`)
}

test_scheduler_down_fails_closed if {
	r := answer(review("CREATE", vm(spec), null), "down")
	not r.response.allowed
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: ",
		"scheduler at http://127.0.0.1:9 unreachable: connection refused",
	])
}

test_scheduler_error_is_reported if {
	r := answer(review("CREATE", vm(spec), null), "400")
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: ",
		"scheduler at http://127.0.0.1:9 answered HTTP 400: eligible_regions: unknown zone XX",
	])
}

test_a_retry_recovers_from_one_failure if {
	r := answer(review("CREATE", vm(spec), null), "flaky")
	r.response.allowed
}

test_zone_outside_the_eligible_set_fails_closed if {
	r := answer(review("CREATE", vm(spec), null), "us")
	not r.response.allowed
	contains(message(r), "the scheduler chose zone US-CAL-CISO, which is not among the eligible zones")
}

test_missing_scheduler_url_fails_closed if {
	r := admission.main with input as review("CREATE", vm(spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.greenops.string_rules as testdata.string_rules
		with data.greenops.workload_contract as testdata.workload_contract
		with data.kubernetes.namespaces as namespaces
		with opa.runtime as {"env": {}}
		with http.send as mock_fr
	message(r) == "VmTemplate greenops/vm-1: not placed, failing closed: SCHEDULER_URL is not set in OPA's environment"
}

decided := object.union(spec, {
	"provider": "azure", "schedulingLocation": "italynorth",
	"schedulingTime": "2029-12-29T00:00:00Z", "vmSize": "Standard_E2as_v4",
})

# A VmTemplate as the API server stores it after the CREATE: spec fields and annotation patched
# in (decision_fr).
placed := patched(review("CREATE", vm(spec), null), answer(review("CREATE", vm(spec), null), "fr"))

# The user's next copy of it: `kubectl apply`/`edit` keep the patched fields and the annotation.
placed_with(fields) := json.patch(placed, [{"op": "add", "path": sprintf("/spec/%v", [k]), "value": v} |
	some k, v in fields
])

test_update_with_unchanged_spec_keeps_the_decision_without_asking if {
	# A copy without the decision fields (e.g. `kubectl replace` of the original file): put back.
	r := answer(review("UPDATE", vm(spec), placed), "down")
	r.response.allowed
	patch_of(r) == [
		{"op": "add", "path": "/spec/provider", "value": "azure"},
		{"op": "add", "path": "/spec/schedulingLocation", "value": "francecentral"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2029-12-30T02:00:00Z"},
		{"op": "add", "path": "/spec/vmSize", "value": "Standard_E2as_v4"},
		# the key recorded on the stored object, re-asserted
		{"op": "add", "path": "/metadata/annotations", "value": {
			"greenops.io/decision": json.marshal(decision_fr),
			"greenops.io/reservation": "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51",
		}},
	]
}

test_reapplied_unchanged_object_keeps_the_decision_without_asking if {
	# `kubectl apply` of the same file: patched fields and annotation still there. The scheduler
	# is down, so an answer proves it was not asked.
	rev := review("UPDATE", placed, placed)
	r := answer(rev, "down")
	r.response.allowed
	patched(rev, r) == placed
}

test_reapplied_object_with_more_cpu_is_placed_again_freely if {
	# The bug: the patched provider/schedulingLocation read as a request pinned the new placement
	# to the old region. Now they are the webhook's own and the scheduler chooses again (IT-NO).
	rev := review("UPDATE", placed_with({"cpu": 4, "memory": 8}), placed)
	r := answer(rev, "it")
	r.response.allowed
	stored := patched(rev, r)
	stored.spec.schedulingLocation == "italynorth"
	stored.spec.vmSize == "Standard_F4s_v2"
	recorded(stored) == {
		"provider": "azure", "schedulingLocation": "italynorth",
		"schedulingTime": "2029-12-30T04:00:00Z", "vmSize": "Standard_F4s_v2",
	}
}

test_reapplied_object_whose_old_region_left_the_policy_is_placed_again if {
	# Lowering maxLatency rules out francecentral (24 ms): this was denied with "requested region
	# francecentral is not allowed by policy"; now it is placed in italynorth.
	rev := review("UPDATE", placed_with({"maxLatency": 10}), placed)
	r := answer(rev, "it")
	r.response.allowed
	patched(rev, r).spec.schedulingLocation == "italynorth"
}

test_moving_the_deadline_asks_the_scheduler_again if {
	r := answer(review("UPDATE", placed_with({"deadline": "2030-02-01T00:00:00Z"}), placed), "down")
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: ",
		"scheduler at http://127.0.0.1:9 unreachable: connection refused",
	])
}

test_a_pin_that_differs_from_the_decision_is_a_checked_request if {
	rev := review("UPDATE", placed_with({"schedulingLocation": "italynorth"}), placed)
	r := answer(rev, "it")
	r.response.allowed
	stored := patched(rev, r)
	stored.spec.schedulingLocation == "italynorth"

	# the pinned region is the user's: not recorded as the webhook's choice
	recorded(stored) == {"provider": "azure", "schedulingTime": "2029-12-30T04:00:00Z", "vmSize": "Standard_E2as_v4"}
}

test_a_forbidden_pin_is_denied_with_the_reason if {
	r := answer(review("UPDATE", placed_with({"schedulingLocation": "japaneast"}), placed), "fr")
	not r.response.allowed
	message(r) == concat("", [
		`VmTemplate greenops/vm-1: workload "vm-1": requested region japaneast is not allowed by policy: `,
		"it is more than 100 ms from italynorth",
	])
}

test_a_pin_stays_a_pin_on_later_updates if {
	pin := review("UPDATE", placed_with({"schedulingLocation": "italynorth"}), placed)
	pinned := patched(pin, answer(pin, "it"))

	# more cpu later: only the pinned region's zone is offered, so the scheduler's FR is refused
	more_cpu := json.patch(pinned, [{"op": "replace", "path": "/spec/cpu", "value": 4}])
	r := answer(review("UPDATE", more_cpu, pinned), "fr")
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: the scheduler chose zone FR, ",
		`which is not among the eligible zones ["IT-NO"]; its reservation `,
		"greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51 was released",
	])
}

test_removing_a_pin_places_the_workload_again_freely if {
	pin := review("UPDATE", placed_with({"schedulingLocation": "italynorth"}), placed)
	pinned := patched(pin, answer(pin, "it"))
	unpin := review("UPDATE", json.patch(pinned, [{"op": "remove", "path": "/spec/schedulingLocation"}]), pinned)
	r := answer(unpin, "fr")
	r.response.allowed
	recorded(patched(unpin, r)) == decision_fr
}

test_a_pin_on_create_is_checked_and_not_recorded if {
	rev := review("CREATE", vm(object.union(spec, {"schedulingLocation": "italynorth"})), null)
	r := answer(rev, "it")
	r.response.allowed
	recorded(patched(rev, r)) == {
		"provider": "azure",
		"schedulingTime": "2029-12-30T04:00:00Z", "vmSize": "Standard_E2as_v4",
	}
	denied := answer(review("CREATE", vm(object.union(spec, {"provider": "gcp"})), null), "fr")
	message(denied) == concat("", [
		`VmTemplate greenops/vm-1: workload "vm-1": requested provider gcp is not allowed by policy `,
		`(eligible: ["azure"])`,
	])
}

test_restored_object_is_placed_again_freely if {
	# A CREATE from a backup carries the old decision and its annotation: not a request.
	rev := review("CREATE", placed, null)
	r := answer(rev, "it")
	r.response.allowed
	patched(rev, r).spec.schedulingLocation == "italynorth"
}

test_without_a_record_the_fields_are_requests if {
	# Placed before the annotation existed: its decision fields cannot be told from a pin.
	legacy := vm(decided)
	kept := answer(review("UPDATE", legacy, legacy), "down")
	kept.response.allowed
	recorded(patched(review("UPDATE", legacy, legacy), kept)) == {
		"schedulingTime": "2029-12-29T00:00:00Z",
		"vmSize": "Standard_E2as_v4",
	}
	r := answer(review("UPDATE", vm(object.union(decided, {"cpu": 4, "memory": 8})), legacy), "fr")
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: the scheduler chose zone FR, ",
		`which is not among the eligible zones ["IT-NO"]; the booking has no key to release it by`,
	])
}

test_a_malformed_record_is_ignored_cleanly if {
	every bad in ["{", "[1]", "null", `{"provider": 3, "schedulingLocation": ["francecentral"]}`] {
		old := json.patch(placed, [{
			"op": "replace", "path": "/metadata/annotations",
			"value": {"greenops.io/decision": bad},
		}])
		r := answer(review("UPDATE", json.patch(old, [{"op": "replace", "path": "/spec/cpu", "value": 4}]), old), "fr")
		r.response.allowed # francecentral is now a request, and allowed
		patch_of(r)[1] == {"op": "add", "path": "/spec/schedulingLocation", "value": "francecentral"}
	}
	not_a_map := json.patch(placed, [{"op": "replace", "path": "/metadata/annotations", "value": "x"}])
	r := answer(review("UPDATE", not_a_map, not_a_map), "down")
	r.response.allowed
	"/metadata/annotations" in {op.path | some op in patch_of(r)}
}

test_update_that_changes_the_spec_is_placed_again if {
	r := answer(review("UPDATE", vm(object.union(spec, {"cpu": 4, "memory": 8})), placed), "fr")
	r.response.allowed
	{"op": "add", "path": "/spec/vmSize", "value": "Standard_F4s_v2"} in patch_of(r)
}

test_other_kinds_pass_unchanged if {
	rev := json.patch(review("CREATE", vm(spec), null), [{
		"op": "replace", "path": "/request/kind/kind",
		"value": "ConfigMap",
	}])
	r := answer(rev, "down")
	r.response == {"uid": "0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51", "allowed": true}
}

# A key is its tenant's in the record: a release names the tenant the object was booked under.
test_a_denied_booking_is_released_under_the_namespaces_tenant if {
	r := answer(review("CREATE", vm(spec), null), "us, then echo")
	not r.response.allowed
	contains(r.response.status.message, "?reason=admission+denied%3A+the+scheduler%27s+zone+is+not+eligible&tenant=t1 ")
}

# --- DELETE is never blocked and releases nothing: the controller releases on the deletion it sees
test_a_delete_is_allowed_and_calls_no_scheduler if {
	legacy := json.patch(vm(spec), [{"op": "add", "path": "/metadata/uid", "value": legacy_uid}])
	every stored in [placed, legacy, vm(spec)] {
		# "echo" answers every call with an error, "down" cannot be reached: neither shows
		answer(review("DELETE", null, stored), "echo").response == {"uid": request_uid, "allowed": true}
		answer(review("DELETE", null, stored), "down").response == {"uid": request_uid, "allowed": true}
	}
	rev := json.patch(review("DELETE", null, placed), [{"op": "add", "path": "/request/dryRun", "value": true}])
	answer(rev, "echo").response == {"uid": request_uid, "allowed": true}
}

test_malformed_reviews_get_a_clean_denial if {
	cases := [
		["not an object", "malformed AdmissionReview: body must be an object"],
		[{}, "malformed AdmissionReview: request missing"],
		[{"request": {"uid": 7}}, "malformed AdmissionReview: request.uid must be a string"],
		[
			{"request": {"uid": "u", "kind": "VmTemplate"}},
			"malformed AdmissionReview: request.kind.kind must be a string",
		],
		[
			{"request": {"uid": "u", "kind": {"kind": "VmTemplate"}, "operation": 1}},
			"malformed AdmissionReview: request.operation must be a string",
		],
	]
	every c in cases {
		r := answer(c[0], "fr")
		r.apiVersion == "admission.k8s.io/v1"
		r.response.allowed == false
		message(r) == c[1]
	}
}

test_vmtemplate_without_spec_is_denied if {
	r := answer(review("CREATE", {"metadata": {"name": "vm-1", "namespace": "greenops"}}, null), "fr")
	message(r) == "VmTemplate greenops/vm-1: spec must be an object"
}

test_invalid_spec_fields_are_named if {
	r := answer(review("CREATE", vm(object.union(spec, {"cpu": "four", "duration": "3 hours"})), null), "fr")
	message(r) == concat("; ", [
		`VmTemplate greenops/vm-1: workload "vm-1": cpu: "four" is not valid: a whole number of vCPUs from 1 to 100000`,
		concat("", [
			`workload "vm-1": duration: "3 hours" is not a duration: whole hours as a number (6), or a string of `,
			`hours and/or minutes in that order, lowercase, without spaces: "6", "1.5", "6h", "90m", "1h30m"`,
		]),
	])
}

test_system_main_is_the_admission_answer if {
	r := data.system.main with input as review("DELETE", null, null)
	r.response.allowed
}
