package system.log_test

import rego.v1

import data.system.log

placement := {"workload": {"name": "etl", "cpu": 4, "tenant": "data"}, "zone": "FR"}

masked(event) := erased if {
	erased := log.mask with input as event
}

test_the_results_of_the_bundles_own_decisions_are_not_walked if {
	result := {"allowed": true, "selection": {"token": "not a credential, and never walked"}}
	masked({"path": "greenops/placement/decision", "input": placement, "result": result}) == {"/nd_builtin_cache"}
	masked({"path": "system/main", "result": {"response": {"token": "t"}}}) == {"/nd_builtin_cache"}
	masked({"path": "scratch/x", "result": {"token": "t"}}) == {"/nd_builtin_cache", "/result/token"}
}

test_a_decision_without_credentials_is_left_whole if {
	masked({"input": placement, "result": {"allowed": true, "eligible": [{"zone": "FR"}]}}) == {"/nd_builtin_cache"}
}

test_credential_fields_are_erased_at_any_depth if {
	event := {
		"path": "admin/read",
		"input": {
			"workload": {"name": "etl", "apiKey": "k"},
			"headers": {"Authorization": "Bearer t"},
			"items": [{"token": "t"}, {"name": "x"}],
		},
		"result": {
			"env": {"GREENOPS_OPA_ADMIN_TOKEN": "a", "SCHEDULER_URL": "http://s", "AWS_SECRET_ACCESS_KEY": "s"},
			"password": "p",
			"private_key": "k",
		},
	}
	masked(event) == {
		"/nd_builtin_cache",
		"/input/workload/apiKey",
		"/input/headers/Authorization",
		"/input/items/0/token",
		"/result/env/GREENOPS_OPA_ADMIN_TOKEN",
		"/result/env/AWS_SECRET_ACCESS_KEY",
		"/result/password",
		"/result/private_key",
	}
}

test_a_key_a_pointer_cannot_name_erases_what_holds_it if {
	event := {"input": {"request": {"userInfo": {"extra": {"example.com/session token": ["t"]}}}}}
	masked(event) == {"/nd_builtin_cache", "/input/request/userInfo/extra"}
	masked({"input": {"a b": {"token": "t"}}}) == {"/nd_builtin_cache", "/input"}
}

test_an_admission_review_keeps_the_object_and_the_user if {
	review := {
		"kind": "AdmissionReview",
		"request": {
			"uid": "u",
			"operation": "CREATE",
			"userInfo": {"username": "alice", "groups": ["team-a"]},
			"object": {"metadata": {"name": "vm", "namespace": "team-a"}, "spec": {"cpu": 2, "memory": 4}},
		},
	}
	masked({"input": review, "result": {"response": {"allowed": true}}}) == {"/nd_builtin_cache"}
}

test_an_ad_hoc_querys_result_with_a_credential_is_erased_whole if {
	event := {"query": "x := opa.runtime().env", "result": [{"x": {"PULUMI_CONFIG_PASSPHRASE": "p", "PATH": "/bin"}}]}
	masked(event) == {"/nd_builtin_cache", "/result"}
	masked({"query": "x := 1", "result": [{"x": 1}]}) == {"/nd_builtin_cache"}
}
