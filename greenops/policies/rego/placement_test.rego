package greenops.placement_test

import rego.v1

import data.greenops.placement
import data.greenops.testdata

decide(fields) := d if {
	d := placement.decision with input as {"workload": testdata.with_fields(fields)}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
}

# thesis §3.6.7: from italynorth with maxLatency 100, Azure offers italynorth and francecentral.
test_thesis_latency_example if {
	d := decide({"eligibleProviders": ["azure"], "maxLatency": 100})
	d.allowed
	d.eligible == {"azure": ["francecentral", "italynorth"]}
	d.zones == ["FR", "IT-NO"]
}

test_no_latency_constraint_keeps_every_placeable_region if {
	d := decide({"eligibleProviders": ["azure"]})
	d.eligible.azure == ["francecentral", "italynorth", "japaneast", "westus"]
}

test_unknown_zone_regions_are_skipped if {
	d := decide({"eligibleProviders": ["azure"]})
	not "norwayeast" in d.eligible.azure
}

test_eu_residency_keeps_eu_regions_only if {
	d := decide({"dataResidency": "eu"})
	d.eligible == {"azure": ["francecentral", "italynorth"], "gcp": ["europe-west8", "europe-west9"], "aws": ["eu-south-1"]}
}

test_eligible_providers_intersect_the_platform_default if {
	d := placement.decision with input as {"workload": testdata.with_fields({"eligibleProviders": ["gcp", "aws"]})}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as object.union(testdata.config, {"default_providers": ["azure", "gcp"]})
	object.keys(d.eligible) == {"gcp"}
}

test_disjoint_provider_sets_are_a_conflict if {
	d := placement.decision with input as {"workload": testdata.with_fields({"eligibleProviders": ["aws"]})}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as object.union(testdata.config, {"default_providers": ["azure"]})
	not d.allowed
	d.errors == [`workload "w1": eligibleProviders ["aws"] and the platform's allowed providers ["azure"] have nothing in common`]
}

# The origin is an Azure region: GCP and AWS latency is measured from their nearest regions.
test_cross_provider_origin_uses_the_nearest_region if {
	d := decide({"eligibleProviders": ["gcp", "aws"], "maxLatency": 30})
	d.eligible == {"gcp": ["europe-west8", "europe-west9"], "aws": ["eu-south-1"]}
}

test_conflict_names_the_constraints_that_emptied_the_set if {
	d := decide({"originRegion": "westus", "dataResidency": "eu", "maxLatency": 10, "eligibleProviders": ["azure"]})
	not d.allowed
	d.errors == [`workload "w1": no eligible region: providers azure leaves 5, then regions with carbon data, image and zone leaves 4, then dataResidency eu leaves 2, then maxLatency 10 ms from westus leaves 0`]
	d.zones == []
}

test_no_fitting_size_is_explained if {
	d := decide({"cpu": 64, "memory": 512})
	not d.allowed
	contains(d.errors[0], "a VM size with 64 vCPU and 512 GB leaves 0")
}

test_forbidden_requested_provider_is_named if {
	d := placement.decision with input as {"workload": testdata.with_fields({"provider": "aws"})}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as object.union(testdata.config, {"default_providers": ["azure", "gcp"]})
	d.errors == [`workload "w1": requested provider aws is not allowed by policy (eligible: ["azure", "gcp"])`]
}

test_forbidden_requested_region_is_named_with_the_reason if {
	d := decide({"region": "westus", "dataResidency": "eu"})
	d.errors == [`workload "w1": requested region westus is not allowed by policy: it is outside the EU and dataResidency is eu`]
}

test_requested_region_too_far_is_named if {
	d := decide({"region": "japaneast", "maxLatency": 100})
	d.errors == [`workload "w1": requested region japaneast is not allowed by policy: it is more than 100 ms from italynorth`]
}

test_allowed_requested_region_narrows_the_set if {
	d := decide({"region": "francecentral"})
	d.allowed
	d.eligible == {"azure": ["francecentral"], "gcp": [], "aws": []}
	d.zones == ["FR"]
}

candidates(fields) := c if {
	c := placement.candidates with input as {"workload": testdata.with_fields(fields)}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
}

test_size_is_the_first_fitting_in_preference_order if {
	candidates({"eligibleProviders": ["azure"], "cpu": 2, "memory": 16, "region": "italynorth"})[0].vmSize == "Standard_E2as_v4"
	candidates({"eligibleProviders": ["azure"], "cpu": 4, "memory": 8, "region": "italynorth"})[0].vmSize == "Standard_F4s_v2"
}

test_candidates_are_ranked_by_latency_then_price_then_provider if {
	c := candidates({"dataResidency": "eu", "maxLatency": 30})
	[[x.provider, x.region] | some x in c] == [
		["aws", "eu-south-1"], ["gcp", "europe-west8"], ["azure", "italynorth"],
		["gcp", "europe-west9"], ["azure", "francecentral"],
	]
}

# Mapping a zone back: lowest latency first.
test_zone_maps_back_to_the_lowest_latency_region if {
	s := placement.selection with input as {"workload": testdata.with_fields({"dataResidency": "eu"}), "zone": "FR"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
	s.provider == "gcp"
	s.region == "europe-west9"
	s.latencyMs == 20
}

# Equal latency (both the origin's twin on their provider): the cheaper size wins.
test_zone_tie_broken_by_price if {
	s := placement.selection with input as {"workload": testdata.with_fields({"eligibleProviders": ["gcp", "aws"]}), "zone": "IT-NO"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
	s.provider == "aws"
	s.vmSize == "c6a.xlarge"
}

# Equal latency and equal price: provider order decides.
test_zone_tie_broken_by_provider_order if {
	cat := json.patch(testdata.catalog, [{"op": "replace", "path": "/prices/gcp/europe-west8/e2-standard-4", "value": 0.15}])
	s := placement.selection with input as {"workload": testdata.with_fields({"eligibleProviders": ["aws", "gcp"]}), "zone": "IT-NO"}
		with data.greenops.catalog as cat
		with data.greenops.config as testdata.config
	s.provider == "gcp"
}

test_zone_outside_the_eligible_set_selects_nothing if {
	s := placement.selection with input as {"workload": testdata.with_fields({"dataResidency": "eu"}), "zone": "US-CAL-CISO"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
	s == null
}

test_invalid_workload_reports_only_input_problems if {
	d := decide({"cpu": -1, "originRegion": "atlantis"})
	d.errors == [`workload "w1": cpu: must be a whole number of vCPUs greater than 0`, `workload "w1": originRegion: unknown region atlantis`]
	d.eligible == {}
}

# The explanation's chain counts (set intersections) agree with the error path's stages, for a
# workload with every constraint and for one that empties the set.
test_the_explanation_chain_matches_the_stages if {
	every fields in [
		{"dataResidency": "eu", "maxLatency": 100},
		{"eligibleProviders": ["azure"]},
		{"dataResidency": "eu", "maxLatency": 1, "originRegion": "westus"},
	] {
		w := testdata.with_fields(fields)
		chain := placement.explanation with input as {"workload": w}
			with data.greenops.catalog as testdata.catalog
			with data.greenops.config as testdata.config
		stages := placement._stages with input as {"workload": w}
			with data.greenops.catalog as testdata.catalog
			with data.greenops.config as testdata.config
		[c.remaining | some c in chain.constraintChain] == [s[1] | some s in stages]
		count(chain.constraintChain) == 6
	}
}
