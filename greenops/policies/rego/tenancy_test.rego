# The cluster path's tenant is its namespace's (label greenops.io/tenant), never the spec's choice.
package greenops.tenancy_test

import rego.v1

import data.greenops.admission_test as t
import data.greenops.tenancy
import data.greenops.testdata

labelled(tenant) := {"greenops": t.namespace("greenops", {"greenops.io/tenant": tenant, "team": "ml"})}

unlabelled := {"greenops": t.namespace("greenops", {"team": "ml"})}

without_tenant := object.remove(t.spec, {"tenant"})

message(r) := r.response.status.message

test_a_spec_tenant_other_than_the_namespaces_is_denied_naming_both if {
	r := t.answer_in(t.review("CREATE", t.vm(t.spec), null), "fr", labelled("research"))
	message(r) == concat("", [
		`VmTemplate greenops/vm-1: spec.tenant "t1" disagrees with namespace greenops's label `,
		`greenops.io/tenant "research": the tenant is the namespace's (remove spec.tenant or set it to "research")`,
	])
}

test_without_a_spec_tenant_the_namespaces_is_booked_and_patched_in if {
	rev := t.review("CREATE", t.vm(without_tenant), null)
	r := t.answer_in(rev, "fr", labelled("research"))
	r.response.allowed
	t.patched(rev, r).spec.tenant == "research"
	{"op": "add", "path": "/spec/tenant", "value": "research"} in t.patch_of(r)
	r2 := t.answer_in(rev, "echo", labelled("research"))
	contains(message(r2), `"tenant":"research"`)
}

test_an_agreeing_spec_tenant_is_not_patched_again if {
	r := t.answer(t.review("CREATE", t.vm(t.spec), null), "fr")
	every op in t.patch_of(r) {
		op.path != "/spec/tenant"
	}
}

test_the_tenants_quota_goes_with_the_booking if {
	# testdata.config caps tenant "small" at 8 vCPU: the scheduler enforces it over its record.
	r := t.answer_in(t.review("CREATE", t.vm(without_tenant), null), "echo", labelled("small"))
	contains(message(r), `"tenant_quota_vcpu":8`)
}

test_an_unlabelled_namespace_is_the_default_tenant if {
	rev := t.review("CREATE", t.vm(without_tenant), null)
	t.patched(rev, t.answer_in(rev, "fr", unlabelled)).spec.tenant == "default"
	r := t.answer_in(t.review("CREATE", t.vm(t.spec), null), "fr", unlabelled)
	message(r) == concat("", [
		`VmTemplate greenops/vm-1: spec.tenant "t1" disagrees with namespace greenops, which has no label `,
		`greenops.io/tenant and so belongs to tenant "default" (remove spec.tenant, or label the namespace)`,
	])
}

test_a_namespace_opa_has_not_seen_fails_closed if {
	r := t.answer_in(t.review("CREATE", t.vm(without_tenant), null), "fr", {})
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: namespace greenops is not known to OPA (kube-mgmt replicates namespaces ",
		"into data.kubernetes.namespaces), so its tenant cannot be told; retry once it is replicated",
	])
}

test_an_empty_label_is_denied if {
	r := t.answer_in(t.review("CREATE", t.vm(without_tenant), null), "fr", labelled(""))
	message(r) == concat("", [
		"VmTemplate greenops/vm-1: namespace greenops: its label greenops.io/tenant is empty; ",
		"set it to the tenant's name or remove it",
	])
}

test_dropping_the_patched_tenant_keeps_the_decision if {
	# `kubectl replace` of the original file (no tenant): the namespace's is meant, nothing changed.
	r := t.answer(t.review("UPDATE", t.vm(without_tenant), t.placed), "down")
	r.response.allowed
	{"op": "add", "path": "/spec/tenant", "value": "t1"} in t.patch_of(r)
}

test_an_unchanged_object_is_kept_even_if_the_namespace_was_relabelled if {
	# Metadata-only updates (finalizers, labels) are never blocked; the new tenant applies at
	# the next placement, where a disagreeing spec is denied.
	t.answer_in(t.review("UPDATE", t.placed, t.placed), "down", labelled("research")).response.allowed
	r := t.answer_in(t.review("UPDATE", t.placed_with({"cpu": 4}), t.placed), "down", labelled("research"))
	contains(message(r), `spec.tenant "t1" disagrees with namespace greenops's label greenops.io/tenant "research"`)
}

test_of_namespace if {
	tenancy.of_namespace("greenops", labelled("x"), testdata.config) == {"tenant": "x"}
	tenancy.of_namespace("greenops", unlabelled, testdata.config) == {"tenant": "default"}
	tenancy.of_namespace("greenops", unlabelled, {"default_tenant": "other"}) == {"tenant": "other"}
	tenancy.of_namespace("other", unlabelled, testdata.config).error
	tenancy.of_namespace("greenops", {}, testdata.config).error
}

test_mismatch_names_the_label_or_its_absence if {
	contains(tenancy.mismatch("greenops", "t1", "x", labelled("x")), `greenops's label greenops.io/tenant "x"`)
	contains(tenancy.mismatch("greenops", "t1", "default", unlabelled), "which has no label greenops.io/tenant")
}
