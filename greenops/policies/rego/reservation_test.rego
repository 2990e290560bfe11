# The cluster path's reservation: its key, dry runs, and a denial after booking giving it back.
package greenops.reservation_test

import rego.v1

import data.greenops.admission
import data.greenops.admission_test as t

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
	sent(t.review("CREATE", t.vm(t.spec), null)).key == "greenops/vm-1/uid-1"
	sent(with_request(t.review("CREATE", t.vm(t.spec), null), "uid", "uid-2")).key == "greenops/vm-1/uid-2"
}

test_a_generate_name_object_is_keyed_by_its_prefix if {
	obj := {"metadata": {"generateName": "train-", "namespace": "greenops"}, "spec": t.spec}
	rev := json.patch(t.review("CREATE", obj, null), [{"op": "remove", "path": "/request/name"}])
	sent(rev).key == "greenops/train-/uid-1"
}

test_create_ignores_a_copied_reservation_annotation if {
	# A restored or copied manifest brings another object's key: never reused.
	obj := json.patch(t.vm(t.spec), [{
		"op": "add", "path": "/metadata/annotations",
		"value": {"greenops.io/reservation": "greenops/other/u-9"},
	}])
	sent(t.review("CREATE", obj, null)).key == "greenops/vm-1/uid-1"
}

test_update_keeps_the_key_recorded_on_the_stored_object if {
	# A later request has another uid, and the user's copy may carry any annotation: the stored
	# object's record wins, so a changed spec replaces the same reservation.
	tampered := json.patch(t.placed_with({"cpu": 4, "memory": 8}), [{
		"op": "replace", "path": "/metadata/annotations/greenops.io~1reservation", "value": "greenops/other/u-9",
	}])
	rev := with_request(t.review("UPDATE", tampered, t.placed), "uid", "uid-7")
	sent(rev).key == "greenops/vm-1/uid-1"
	r := t.answer(rev, "it")
	stored := t.patched(rev, r)
	stored.metadata.annotations["greenops.io/reservation"] == "greenops/vm-1/uid-1"
}

test_update_of_an_object_admitted_before_the_record_is_keyed_by_its_uid if {
	legacy := json.patch(t.vm(t.decided), [{"op": "add", "path": "/metadata/uid", "value": "6f1e"}])
	rev := t.review("UPDATE", json.patch(legacy, [{"op": "replace", "path": "/spec/cpu", "value": 4}]), legacy)
	sent(rev).key == "greenops/vm-1/6f1e"
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
		`which is not among the eligible zones ["FR", "IT-NO"]; its reservation greenops/vm-1/uid-1 was released`,
	])
}

test_a_failed_release_after_a_denial_is_reported if {
	r := t.answer(t.review("CREATE", t.vm(t.spec), null), "us, then down")
	endswith(r.response.status.message, concat("", [
		"; releasing its reservation greenops/vm-1/uid-1 failed too ",
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
	t.answer(t.review("UPDATE", going, t.placed), "echo").response == {"uid": "uid-1", "allowed": true}
}

test_recorded_reservation_ignores_what_the_scheduler_would_refuse if {
	not admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": "has space"}}})
	not admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": 7}}})
	not admission.recorded_reservation({"metadata": {"annotations": "x"}})
	admission.recorded_reservation({"metadata": {"annotations": {"greenops.io/reservation": "ns/a/u"}}}) == "ns/a/u"
}
