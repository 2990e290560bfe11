# The spec's strings and namespace are refused before anything is booked: the "echo" scheduler
# mock fails every call with what it was sent, so a refusal that names only the field proves that
# the scheduler was not asked.
package greenops.spec_fields_test

import rego.v1

import data.greenops.admission
import data.greenops.admission_test as t
import data.greenops.spec_fields
import data.greenops.testdata

create_with(fields) := t.answer(t.review("CREATE", t.vm(object.union(t.spec, fields)), null), "echo")

refused(fields, why) if {
	r := create_with(fields)
	r.response.allowed == false
	r.response.status.code == 403
	t.message(r) == sprintf("VmTemplate greenops/vm-1: %v", [why])
}

test_a_line_break_in_a_string_is_refused if {
	refused(
		{"adminUsername": "ops\nkind: Secret"},
		`spec.adminUsername: "ops\nkind: Secret" is not valid: a Linux user name`,
	)
	refused({"sshPublicKey": "ssh-ed25519 AAAA\n---\nkind: Secret"}, concat("", [
		`spec.sshPublicKey: "ssh-ed25519 AAAA\n---\nkind: Secret" is not valid: `,
		"one OpenSSH key line",
	]))
}

test_quotes_templates_and_extra_keys_are_refused if {
	refused({"vmName": `vm"x`}, `spec.vmName: "vm\"x" is not valid: a short DNS label`)
	refused({"vmName": "{{ .Release }}"}, `spec.vmName: "{{ .Release }}" is not valid: a short DNS label`)
	refused({"adminUsername": "ops: x"}, `spec.adminUsername: "ops: x" is not valid: a Linux user name`)
}

test_a_reserved_name_is_refused_with_who_reserves_it if {
	refused(
		{"adminUsername": "root"},
		`spec.adminUsername: "root" is reserved by Azure for a VM's administrator; choose another name`,
	)
}

test_a_long_or_non_string_value_is_refused if {
	long := concat("", ["a" | some _ in numbers.range(1, 33)])
	refused({"adminUsername": long}, "spec.adminUsername: is 33 characters long, more than 32 (a Linux user name)")
	refused({"adminUsername": 7}, "spec.adminUsername: must be a string (a Linux user name)")
}

test_every_problem_is_named_in_field_order if {
	refused({"adminUsername": "root", "vmName": "Vm"}, concat("; ", [
		`spec.adminUsername: "root" is reserved by Azure for a VM's administrator; choose another name`,
		`spec.vmName: "Vm" is not valid: a short DNS label`,
	]))
}

test_a_long_value_is_cut_in_the_message if {
	a100 := concat("", ["A" | some _ in numbers.range(1, 100)])
	msg := spec_fields.problem(a100, testdata.string_rules.sshPublicKey)
	msg == sprintf(`"%v..." is not valid: one OpenSSH key line`, [substring(a100, 0, 77)])
}

test_another_namespace_is_refused if {
	refused({"namespace": "team-b"}, concat("", [
		`spec.namespace: "team-b" is not this VmTemplate's namespace "greenops": its objects are always `,
		`created in its own namespace (remove spec.namespace or set it to "greenops")`,
	]))
}

test_its_own_namespace_is_accepted if {
	r := t.answer(t.review("CREATE", t.vm(object.union(t.spec, {"namespace": "greenops"})), null), "fr")
	r.response.allowed
}

test_an_update_keeping_its_decision_is_checked_too if {
	# No scheduler call is needed to keep a decision, but the strings still reach the chart.
	r := t.answer(t.review("UPDATE", t.placed_with({"adminUsername": "admin"}), t.placed), "echo")
	t.message(r) == concat("", [
		"VmTemplate greenops/vm-1: ",
		`spec.adminUsername: "admin" is reserved by Azure for a VM's administrator; choose another name`,
	])
}

test_without_the_bundles_rules_admission_fails_closed if {
	r := admission.main with input as t.review("CREATE", t.vm(t.spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.kubernetes.namespaces as t.namespaces
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://127.0.0.1:9/"}}
		with http.send as t.mock_fr
		with data.greenops.string_rules as null # absent (the shipped bundle's data.json is loaded too)
	t.message(r) == concat("", [
		"VmTemplate greenops/vm-1: the policy bundle has no data.greenops.string_rules, ",
		"so the spec's strings cannot be checked",
	])
}

test_without_the_bundles_workload_contract_admission_fails_closed if {
	r := admission.main with input as t.review("CREATE", t.vm(t.spec), null)
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.kubernetes.namespaces as t.namespaces
		with opa.runtime as {"env": {"SCHEDULER_URL": "http://127.0.0.1:9/"}}
		with http.send as t.mock_fr
		with data.greenops.string_rules as testdata.string_rules
		with data.greenops.workload_contract as null # absent (the shipped bundle's data.json is loaded too)
	t.message(r) == concat("", [
		"VmTemplate greenops/vm-1: the policy bundle has no data.greenops.workload_contract, ",
		"so the workload cannot be checked",
	])
}
