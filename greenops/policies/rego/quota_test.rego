package greenops.quota_test

import rego.v1

import data.greenops.placement
import data.greenops.quota
import data.greenops.testdata

decide(fields) := placement.decision_for(
	{"workload": testdata.with_fields(fields)},
	testdata.catalog, testdata.config, testdata.rules,
)

test_the_decision_hands_the_tenants_cap_to_the_scheduler if {
	decide({"tenant": "small", "cpu": 4}).tenantQuotaVcpu == 8
	decide({"tenant": "big", "cpu": 4}).tenantQuotaVcpu == null # unlisted, and no default cap
}

test_unlisted_tenants_get_the_default_cap if {
	quota.cap("big", object.union(testdata.config, {"default_tenant_vcpu_quota": 512})) == 512
	quota.cap("small", testdata.config) == 8
}

test_policy_no_longer_counts_what_is_placed if {
	# The scheduler's record counts (both paths); a `placed` list or replicated VmTemplates
	# over the cap no longer deny in policy.
	request := {
		"workload": testdata.with_fields({"tenant": "small", "cpu": 4}),
		"placed": [{"name": "a", "tenant": "small", "cpu": 100}],
	}
	replicated := {"team": {"big": {"spec": {"vmName": "big", "tenant": "small", "cpu": 64, "provider": "azure"}}}}
	d := placement.decision_for(request, testdata.catalog, testdata.config, testdata.rules)
		with data.kubernetes.vmtemplates as replicated
	d.allowed
	d.tenantQuotaVcpu == 8
}
