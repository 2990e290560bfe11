# The cluster path's queue: a workload the scheduler queued is admitted Pending, without a decision.
package greenops.queue_test

import rego.v1

import data.greenops.admission_test as t
import data.greenops.reservation_test as r

test_every_booking_asks_to_wait_rather_than_be_refused if {
	r.sent(t.review("CREATE", t.vm(t.spec), null)).queue == true
}

test_a_queued_create_is_admitted_without_a_decision_and_with_its_key if {
	rev := t.review("CREATE", t.vm(t.spec), null)
	a := t.answer(rev, "queued")
	a.response.allowed
	stored := t.patched(rev, a)
	not stored.spec.provider
	not stored.spec.schedulingLocation
	not stored.spec.schedulingTime
	stored.metadata.annotations["greenops.io/reservation"] == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
	t.recorded(stored) == {}
}

test_the_create_warns_with_the_place_in_the_queue_and_why if {
	a := t.answer(t.review("CREATE", t.vm(t.spec), null), "queued")
	[w] := a.response.warnings
	contains(w, "VmTemplate greenops/vm-1 waits in the scheduler's queue at position 3 (priority class standard)")
	contains(w, "no window with room for 2 vCPU")
}

test_an_update_of_a_waiting_object_asks_again_under_its_recorded_key if {
	rev := t.review("CREATE", t.vm(t.spec), null)
	waiting := t.patched(rev, t.answer(rev, "queued"))
	touched := json.patch(waiting, [{"op": "add", "path": "/metadata/annotations/greenops.io~1admitted", "value": "x"}])
	update := t.review("UPDATE", touched, waiting)
	r.sent(update).key == "greenops/vm-1/0f8e7b1c-5a2d-4e61-9b3a-7c1d2e3f4a51"
	placed := t.patched(update, t.answer(update, "fr"))
	placed.spec.schedulingLocation == "francecentral"
	placed.spec.schedulingTime == "2029-12-30T02:00:00Z"
}
