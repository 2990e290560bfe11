package greenops.admission_test

import rego.v1

import data.greenops.admission
import data.greenops.testdata

spec := {
	"vmName": "vm-1", "cpu": 2, "memory": 4, "duration": "3h", "deadline": "2030-01-01T00:00:00Z",
	"maxLatency": 100, "originRegion": "italynorth", "eligibleProviders": ["azure"], "tenant": "t1",
}

review(op, object, old) := {
	"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
	"request": {
		"uid": "uid-1", "kind": {"group": "composition.krateo.io", "version": "v1-2-0", "kind": "VmTemplate"},
		"operation": op, "namespace": "greenops", "name": "vm-1", "object": object, "oldObject": old,
	},
}

vm(s) := {"apiVersion": "composition.krateo.io/v1-2-0", "kind": "VmTemplate",
	"metadata": {"name": "vm-1", "namespace": "greenops"}, "spec": s}

# The scheduler: answers FR, starting at 02:00.
scheduler_fr(req) := {"status_code": 200, "body": {"scheduling_location": "FR", "scheduling_time": "2029-12-30T02:00:00Z"}}

scheduler_down(req) := {"status_code": 0, "error": {"code": "eval_http_send_network_error", "message": "connection refused"}}

scheduler_us(req) := {"status_code": 200, "body": {"scheduling_location": "US-CAL-CISO", "scheduling_time": "2029-12-30T02:00:00Z"}}

scheduler_400(req) := {"status_code": 400, "body": {"detail": "eligible_regions: unknown zone XX"}}

# Fails on the first attempt, answers on the second.
scheduler_flaky(req) := scheduler_down(req) if req.headers["X-GreenOps-Attempt"] == "1"

else := scheduler_fr(req)

# Functions cannot be passed around, so one mock dispatches on a mode set per test.
mock(req) := scheduler_fr(req) if data.test.scheduler == "fr"

else := scheduler_down(req) if data.test.scheduler == "down"

else := scheduler_us(req) if data.test.scheduler == "us"

else := scheduler_400(req) if data.test.scheduler == "400"

else := scheduler_flaky(req) if data.test.scheduler == "flaky"

answer(rev, mode) := r if {
	r := admission.main with input as rev
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://127.0.0.1:9/"}}
		with http.send as mock
		with data.test.scheduler as mode
}

patch_of(r) := json.unmarshal(base64.decode(r.response.patch))

test_create_is_patched_with_the_scheduler_decision if {
	r := answer(review("CREATE", vm(spec), null), "fr")
	r.response.uid == "uid-1"
	r.response.allowed
	r.response.patchType == "JSONPatch"
	patch_of(r) == [
		{"op": "add", "path": "/spec/provider", "value": "azure"},
		{"op": "add", "path": "/spec/schedulingLocation", "value": "francecentral"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2029-12-30T02:00:00Z"},
		{"op": "add", "path": "/spec/vmSize", "value": "Standard_E2as_v4"},
	]
}

test_scheduler_receives_the_thesis_body if {
	r := admission.main with input as review("CREATE", vm(spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://sched:8080/"}}
		with http.send as echo_request
	# the mock fails the call on purpose, reporting what it was sent
	contains(r.response.status.message, `"eligible_regions":["FR","IT-NO"]`)
	contains(r.response.status.message, `"duration":3`)
	contains(r.response.status.message, `"number_of_jobs":1`)
	contains(r.response.status.message, `"origin_zone":"IT-NO"`)
	contains(r.response.status.message, "http://sched:8080/scheduling")
}

echo_request(req) := {"status_code": 418, "body": {"detail": sprintf("%v %v", [req.url, json.marshal(req.body)])}}

test_conflict_is_denied_with_the_reason if {
	r := answer(review("CREATE", vm(object.union(spec, {"dataResidency": "eu", "originRegion": "westus", "maxLatency": 10})), null), "fr")
	not r.response.allowed
	startswith(r.response.status.message, `VmTemplate greenops/vm-1: workload "vm-1": no eligible region:`)
}

test_scheduler_down_fails_closed if {
	r := answer(review("CREATE", vm(spec), null), "down")
	not r.response.allowed
	r.response.status.message == "VmTemplate greenops/vm-1: not placed, failing closed: scheduler at http://127.0.0.1:9 unreachable: connection refused"
}

test_scheduler_error_is_reported if {
	r := answer(review("CREATE", vm(spec), null), "400")
	r.response.status.message == "VmTemplate greenops/vm-1: not placed, failing closed: scheduler at http://127.0.0.1:9 answered HTTP 400: eligible_regions: unknown zone XX"
}

test_a_retry_recovers_from_one_failure if {
	r := answer(review("CREATE", vm(spec), null), "flaky")
	r.response.allowed
}

test_zone_outside_the_eligible_set_fails_closed if {
	r := answer(review("CREATE", vm(spec), null), "us")
	not r.response.allowed
	contains(r.response.status.message, "the scheduler chose zone US-CAL-CISO, which is not among the eligible zones")
}

test_missing_scheduler_url_fails_closed if {
	r := admission.main with input as review("CREATE", vm(spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as {"env": {}}
		with http.send as scheduler_fr
	r.response.status.message == "VmTemplate greenops/vm-1: not placed, failing closed: SCHEDULER_URL is not set in OPA's environment"
}

decided := object.union(spec, {"provider": "azure", "schedulingLocation": "italynorth",
	"schedulingTime": "2029-12-29T00:00:00Z", "vmSize": "Standard_E2as_v4"})

test_update_with_unchanged_spec_keeps_the_decision_without_asking if {
	# A label edit re-submits the object without the decision fields: they are put back.
	r := answer(review("UPDATE", vm(spec), vm(decided)), "down")
	r.response.allowed
	patch_of(r) == [
		{"op": "add", "path": "/spec/provider", "value": "azure"},
		{"op": "add", "path": "/spec/schedulingLocation", "value": "italynorth"},
		{"op": "add", "path": "/spec/schedulingTime", "value": "2029-12-29T00:00:00Z"},
		{"op": "add", "path": "/spec/vmSize", "value": "Standard_E2as_v4"},
	]
}

test_update_that_changes_the_spec_is_placed_again if {
	r := answer(review("UPDATE", vm(object.union(spec, {"cpu": 4, "memory": 8})), vm(decided)), "fr")
	r.response.allowed
	some op in patch_of(r)
	op == {"op": "add", "path": "/spec/vmSize", "value": "Standard_F4s_v2"}
}

test_other_kinds_pass_unchanged if {
	rev := json.patch(review("CREATE", vm(spec), null), [{"op": "replace", "path": "/request/kind/kind", "value": "ConfigMap"}])
	r := answer(rev, "down")
	r.response == {"uid": "uid-1", "allowed": true}
}

test_delete_passes if {
	r := answer(review("DELETE", null, vm(decided)), "down")
	r.response == {"uid": "uid-1", "allowed": true}
}

test_malformed_reviews_get_a_clean_denial if {
	cases := [
		["not an object", "malformed AdmissionReview: body must be an object"],
		[{}, "malformed AdmissionReview: request missing"],
		[{"request": {"uid": 7}}, "malformed AdmissionReview: request.uid must be a string"],
		[{"request": {"uid": "u", "kind": "VmTemplate"}}, "malformed AdmissionReview: request.kind.kind must be a string"],
		[{"request": {"uid": "u", "kind": {"kind": "VmTemplate"}, "operation": 1}}, "malformed AdmissionReview: request.operation must be a string"],
	]
	every c in cases {
		r := answer(c[0], "fr")
		r.apiVersion == "admission.k8s.io/v1"
		r.response.allowed == false
		r.response.status.message == c[1]
	}
}

test_vmtemplate_without_spec_is_denied if {
	r := answer(review("CREATE", {"metadata": {"name": "vm-1", "namespace": "greenops"}}, null), "fr")
	r.response.status.message == "VmTemplate greenops/vm-1: spec must be an object"
}

test_invalid_spec_fields_are_named if {
	r := answer(review("CREATE", vm(object.union(spec, {"cpu": "four", "duration": "3 hours"})), null), "fr")
	r.response.status.message == `VmTemplate greenops/vm-1: workload "vm-1": cpu: must be a whole number of vCPUs greater than 0; workload "vm-1": duration: malformed 3 hours: use hours (6, "6h") or minutes ("90m"), e.g. "1h30m"`
}

test_system_main_is_the_admission_answer if {
	r := data.system.main with input as review("DELETE", null, null)
	r.response.allowed
}
