package greenops.quota_test

import rego.v1

import data.greenops.placement
import data.greenops.quota
import data.greenops.testdata

decide(fields) := d if {
	d := placement.decision with input as {"workload": testdata.with_fields(fields)}
		with data.greenops.config as testdata.config
		with data.greenops.catalog as testdata.catalog
}

test_the_decision_hands_the_tenants_cap_to_the_scheduler if {
	decide({"tenant": "small", "cpu": 4}).tenantQuotaVcpu == 8
	decide({"tenant": "big", "cpu": 4}).tenantQuotaVcpu == null # unlisted, and no default cap
}

test_unlisted_tenants_get_the_default_cap if {
	quota.cap("big") == 512 with data.greenops.config as object.union(testdata.config, {"default_tenant_vcpu_quota": 512})
	quota.cap("small") == 8 with data.greenops.config as testdata.config
}

test_policy_no_longer_counts_what_is_placed if {
	# The scheduler's record counts (both paths); a `placed` list or replicated VmTemplates
	# over the cap no longer deny in policy.
	d := placement.decision with input as {"workload": testdata.with_fields({"tenant": "small", "cpu": 4}), "placed": [{"name": "a", "tenant": "small", "cpu": 100}]}
		with data.greenops.config as testdata.config
		with data.greenops.catalog as testdata.catalog
		with data.kubernetes.vmtemplates as {"team": {"big": {"spec": {"vmName": "big", "tenant": "small", "cpu": 64, "provider": "azure"}}}}
	d.allowed
	d.tenantQuotaVcpu == 8
}
