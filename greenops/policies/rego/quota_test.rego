package greenops.quota_test

import rego.v1

import data.greenops.placement
import data.greenops.testdata

decide(fields, placed) := d if {
	d := placement.decision with input as {"workload": testdata.with_fields(fields), "placed": placed}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
}

test_within_quota_is_allowed if {
	decide({"tenant": "small", "cpu": 2}, [{"name": "a", "tenant": "small", "cpu": 6}]).allowed
}

test_over_quota_is_denied_with_the_numbers if {
	d := decide({"tenant": "small", "cpu": 4}, [{"name": "a", "tenant": "small", "cpu": 6}])
	d.errors == [`workload "w1": tenant small would use 10 vCPU, above its quota of 8 (6 placed + 4 requested)`]
}

test_other_tenants_and_the_same_workload_do_not_count if {
	decide({"tenant": "small", "cpu": 4}, [
		{"name": "b", "tenant": "other", "cpu": 100},
		{"name": "w1", "tenant": "small", "cpu": 8},
	]).allowed
}

test_unlisted_tenant_without_default_is_unlimited if {
	decide({"tenant": "big", "cpu": 4}, [{"name": "a", "tenant": "big", "cpu": 1000}]).allowed
}

test_replicated_vmtemplates_count_when_no_list_is_sent if {
	d := placement.decision with input as {"workload": testdata.with_fields({"tenant": "small", "cpu": 4})}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.kubernetes.vmtemplates as {"team": {
			"placed": {"spec": {"vmName": "placed", "tenant": "small", "cpu": 6, "provider": "azure"}},
			"pending": {"spec": {"vmName": "pending", "tenant": "small", "cpu": 6}},
		}}
	d.errors == [`workload "w1": tenant small would use 10 vCPU, above its quota of 8 (6 placed + 4 requested)`]
}
