package greenops.tenant_rules_test

import rego.v1

import data.greenops.placement
import data.greenops.testdata

rules := {
	"eu-azure": {"providers": ["azure"], "residency": "eu", "max_cpu": 8, "max_memory_gb": 16, "regions": null},
	"two-regions": {"regions": ["azure/francecentral", "gcp/europe-west9"]},
}

config := object.union(testdata.config, {"tenant_rules": rules})

decide(fields) := placement.decision_for(
	{"workload": testdata.with_fields(fields)},
	testdata.catalog, config, testdata.rules,
)

test_a_tenant_without_rules_is_decided_as_before if {
	d := decide({"tenant": "other", "dataResidency": "none"})
	d.allowed
	object.keys(d.eligible) == {"azure", "gcp", "aws"}
	d == placement.decision_for(
		{"workload": testdata.with_fields({"tenant": "other", "dataResidency": "none"})},
		testdata.catalog, testdata.config, testdata.rules,
	)
}

test_the_rules_narrow_providers_and_regions if {
	d := decide({"tenant": "eu-azure", "dataResidency": "eu", "cpu": 4, "memory": 8})
	d.allowed
	object.keys(d.eligible) == {"azure"}
	r := decide({"tenant": "two-regions", "dataResidency": "none"})
	r.allowed
	r.eligible == {"azure": ["francecentral"], "gcp": ["europe-west9"], "aws": []}
}

test_asking_for_more_is_refused_naming_the_rule if {
	big := decide({"tenant": "eu-azure", "dataResidency": "eu", "cpu": 16, "memory": 8})
	not big.allowed
	`workload "w1": tenant eu-azure's rule max_cpu 8: the workload asks for 16 vCPU per VM` in big.errors
	memory := decide({"tenant": "eu-azure", "dataResidency": "eu", "cpu": 2, "memory": 32})
	too_much := "the workload asks for 32 GB of memory per VM"
	sprintf(`workload "w1": tenant eu-azure's rule max_memory_gb 16: %v`, [too_much]) in memory.errors
	anywhere := decide({"tenant": "eu-azure", "dataResidency": "none"})
	outside := "dataResidency none would place the workload outside the EU"
	sprintf(`workload "w1": tenant eu-azure's rule residency eu: %v`, [outside]) in anywhere.errors
	gcp := decide({"tenant": "eu-azure", "dataResidency": "eu", "provider": "gcp", "region": "europe-west8"})
	not gcp.allowed
	`workload "w1": tenant eu-azure's rule providers ["azure"] does not allow provider gcp` in gcp.errors
	aws_only := decide({"tenant": "eu-azure", "dataResidency": "eu", "eligibleProviders": ["aws"]})
	none_of := `allows none of eligibleProviders ["aws"]`
	sprintf(`workload "w1": tenant eu-azure's rule providers ["azure"] %v`, [none_of]) in aws_only.errors
	region := decide({"tenant": "two-regions", "dataResidency": "none", "provider": "azure", "region": "italynorth"})
	not region.allowed
	allowed := `["azure/francecentral", "gcp/europe-west9"]`
	refusal := `workload "w1": tenant two-regions's rule regions %v does not allow region italynorth`
	sprintf(refusal, [allowed]) in region.errors
}

test_an_allowed_explicit_region_is_placed if {
	d := decide({"tenant": "two-regions", "dataResidency": "none", "provider": "gcp", "region": "europe-west9"})
	d.allowed
	d.eligible.gcp == ["europe-west9"]
}
