# The cluster path's reservation: its key, dry runs, and a denial after booking giving it back.
package greenops.reservation_test

import rego.v1

import data.greenops.admission
import data.greenops.admission_test as t
import data.greenops.testdata

# What the scheduler was sent (the "echo" mode fails the call and reports it).
sent(rev) := json.unmarshal(substring(msg, indexof(msg, "{"), -1)) if {
	msg := t.answer(rev, "echo").response.status.message
}

with_request(rev, field, value) := json.patch(rev, [{
	"op": "add", "path": sprintf("/request/%v", [field]),
	"value": value,
}])

test_create_is_keyed_by_namespace_name_and_the_requests_uid if {
	# The API server assigns metadata.uid after admission: the request's uid stands in for it.
	sent(t.review("CREATE", t.vm(t.spec), null)).key == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
	other := "0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a52"
	created := with_request(t.review("CREATE", t.vm(t.spec), null), "uid", other)
	sent(created).key == concat("/", ["greenops/vm-1", other])
}

test_a_generate_name_object_is_keyed_by_its_prefix if {
	obj := {"metadata": {"generateName": "train-", "namespace": "greenops"}, "spec": t.spec}
	rev := json.patch(t.review("CREATE", obj, null), [{"op": "remove", "path": "/request/name"}])
	sent(rev).key == "greenops/train-/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
}

test_create_ignores_a_copied_reservation_annotation if {
	# A restored or copied manifest brings another object's key: never reused.
	obj := json.patch(t.vm(t.spec), [{
		"op": "add", "path": "/metadata/annotations",
		"value": {"greenops.io/reservation": "greenops/other/u-9"},
	}])
	sent(t.review("CREATE", obj, null)).key == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
}

test_update_keeps_the_key_recorded_on_the_stored_object if {
	# A later request has another uid, and the user's copy may carry any annotation: the stored
	# object's record wins, so a changed spec replaces the same reservation.
	tampered := json.patch(t.placed_with({"cpu": 4, "memory": 8}), [{
		"op": "replace", "path": "/metadata/annotations/greenops.io~1reservation", "value": "greenops/other/u-9",
	}])
	rev := with_request(t.review("UPDATE", tampered, t.placed), "uid", "0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a57")
	sent(rev).key == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
	r := t.answer(rev, "it")
	stored := t.patched(rev, r)
	stored.metadata.annotations["greenops.io/reservation"] == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
}

test_update_of_an_object_admitted_before_the_record_is_keyed_by_its_uid if {
	legacy := json.patch(t.vm(t.decided), [{"op": "add", "path": "/metadata/uid", "value": t.legacy_uid}])
	rev := t.review("UPDATE", json.patch(legacy, [{"op": "replace", "path": "/spec/cpu", "value": 4}]), legacy)
	sent(rev).key == "greenops/vm-1/6f1e0d2c-3b4a-4958-8776-655443322110"
}

test_dry_run_books_nothing_and_records_no_key if {
	rev := with_request(t.review("CREATE", t.vm(t.spec), null), "dryRun", true)
	sent(rev).dry_run == true
	r := t.answer(rev, "fr")
	r.response.allowed
	stored := t.patched(rev, r)
	stored.spec.schedulingLocation == "francecentral"
	object.keys(stored.metadata.annotations) == {"greenops.io/decision"}
}

test_a_denial_after_booking_releases_it if {
	r := t.answer(t.review("CREATE", t.vm(t.spec), null), "us")
	r.response.status.message == concat("", [
		"VmTemplate greenops/vm-1: not placed, failing closed: the scheduler chose zone US-CAL-CISO, ",
		`which is not among the eligible zones ["FR", "IT-NO"]; its reservation `,
		"greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51 was released",
	])
}

test_a_failed_release_after_a_denial_is_reported if {
	r := t.answer(t.review("CREATE", t.vm(t.spec), null), "us, then down")
	endswith(r.response.status.message, concat("", [
		"; releasing its reservation greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51 failed too ",
		"(scheduler at http://127.0.0.1:9 unreachable: connection refused); it ends with its window",
	]))
}

test_a_dry_run_denial_has_nothing_to_release if {
	r := t.answer(with_request(t.review("CREATE", t.vm(t.spec), null), "dryRun", true), "us, then down")
	endswith(r.response.status.message, "; nothing was booked (dry run)")
}

test_an_object_being_deleted_is_neither_blocked_nor_placed_again if {
	# Its finalizers are removed by UPDATEs after the DELETE released its reservation.
	going := json.patch(t.placed_with({"cpu": 4}), [{
		"op": "add", "path": "/metadata/deletionTimestamp",
		"value": "2029-12-30T00:00:00Z",
	}])
	t.answer(t.review("UPDATE", going, t.placed), "echo").response == {"uid": t.request_uid, "allowed": true}
}

test_recorded_reservation_ignores_what_the_scheduler_would_refuse if {
	not admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": "has space"}}})
	not admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": 7}}})
	not admission.recorded_reservation({"metadata": {"annotations": "x"}})
	admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": "ns/a/u"}}}) == "ns/a/u"
}

# --- Only the cluster path's keys of the review's own namespace are booked or released --------
# The stored object as a forged (or tampered) one would record it: key k on the annotation.
recording(k) := json.patch(t.placed, [{
	"op": "replace", "path": "/metadata/annotations/greenops.io~1reservation",
	"value": k,
}])

# A CREATE's key must be new: the scheduler never lets it change a reservation already made.
test_a_create_asks_the_scheduler_for_a_new_key if {
	sent(t.review("CREATE", t.vm(t.spec), null)).new_key == true
	sent(t.review("UPDATE", t.vm(object.union(t.spec, {"cpu": 4})), t.placed)).new_key == false
}

# A DELETE releases nothing, whatever key the stored object records (the controller releases on
# the deletion it observes): allowed, and no warning, since nothing was tried.
test_a_delete_releases_nothing_whatever_key_it_names if {
	every k in [
		"dev/etl/3f2a9c1e7b4d", "greenops/etl/3f2a9c1e7b4d", "stack/workload",
		concat("/", ["team-b/vm-1", t.request_uid]), concat("/", ["greenops/vm-1", t.request_uid]),
		"greenops/vm 1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51", 7,
	] {
		t.answer(t.review("DELETE", null, recording(k)), "echo").response == {"uid": t.request_uid, "allowed": true}
	}
}

test_an_update_ignores_a_refused_record_and_books_under_the_uid_key if {
	foreign := recording(concat("/", ["team-b/vm-1", t.request_uid]))
	forged := json.patch(foreign, [{"op": "add", "path": "/metadata/uid", "value": t.legacy_uid}])
	changed := json.patch(forged, [{"op": "replace", "path": "/spec/cpu", "value": 4}])
	rev := t.review("UPDATE", changed, forged)
	sent(rev).key == "greenops/vm-1/6f1e0d2c-3b4a-4958-8776-655443322110"
	stored := t.patched(rev, t.answer(rev, "it"))
	stored.metadata.annotations["greenops.io/reservation"] == "greenops/vm-1/6f1e0d2c-3b4a-4958-8776-655443322110"
}

test_an_update_without_a_usable_key_books_under_none if {
	# No acceptable record and no uid: the scheduler makes a key up, nothing of another namespace.
	changed := json.patch(recording("stack/workload"), [{"op": "replace", "path": "/spec/cpu", "value": 4}])
	body := sent(t.review("UPDATE", changed, recording("stack/workload")))
	body.path == "cluster"
	not "key" in object.keys(body)
}

test_cluster_key_problem_accepts_the_namespaces_own_keys if {
	not admission.cluster_key_problem("greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51", "greenops", "greenops")

	# generateName's prefix, and a uid in capitals
	not admission.cluster_key_problem("greenops/train-/9D2C1B0A-8F7E-4D6C-B5A4-938271605F4E", "greenops", "greenops")
}

# The scheduler at SCHEDULER_URL receives the thesis' body, and books it as the object's reservation.
test_scheduler_receives_the_thesis_body if {
	r := admission.main with input as t.review("CREATE", t.vm(t.spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.greenops.string_rules as testdata.string_rules
		with data.greenops.workload_contract as testdata.workload_contract
		with data.kubernetes.namespaces as t.namespaces
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://sched:8080/"}}
		with http.send as echo_request

	# the mock fails the call on purpose, reporting what it was sent
	contains(t.message(r), `"eligible_regions":["FR","IT-NO"]`)
	contains(t.message(r), `"duration":3`)
	contains(t.message(r), `"number_of_jobs":1`)
	contains(t.message(r), `"origin_zone":"IT-NO"`)
	contains(t.message(r), "http://sched:8080/scheduling")

	# ...and books it as the object's reservation: its key, the namespace's tenant and its quota
	# (t1 has none here), the cluster path, the zones' regions and the workload policy saw
	contains(t.message(r), `"key":"greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"`)
	contains(t.message(r), `"tenant":"t1"`)
	contains(t.message(r), `"tenant_quota_vcpu":null`)
	contains(t.message(r), `"path":"cluster"`)
	contains(t.message(r), `"regions":{"FR":"azure/francecentral","IT-NO":"azure/italynorth"}`)
	contains(t.message(r), `"workload":{"cpu":2,`)
	contains(t.message(r), `"dry_run":false`)
}

echo_request(req) := {"status_code": 418, "body": {"detail": sprintf("%v %v", [req.url, json.marshal(req.body)])}}
