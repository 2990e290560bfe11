package greenops.placement_test

import rego.v1

import data.greenops.placement
import data.greenops.testdata

decide(fields) := placement.decision_for(
	{"workload": testdata.with_fields(fields)},
	testdata.catalog, testdata.config, testdata.rules,
)

# The decision under a platform config that allows only `providers`.
decide_allowing(fields, allowed) := placement.decision_for(
	{"workload": testdata.with_fields(fields)},
	testdata.catalog,
	object.union(testdata.config, {"default_providers": allowed}),
	testdata.rules,
)

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
	d.eligible == {
		"azure": ["francecentral", "italynorth"],
		"gcp": ["europe-west8", "europe-west9"],
		"aws": ["eu-south-1"],
	}
}

test_eligible_providers_intersect_the_platform_default if {
	d := decide_allowing({"eligibleProviders": ["gcp", "aws"]}, ["azure", "gcp"])
	object.keys(d.eligible) == {"gcp"}
}

test_disjoint_provider_sets_are_a_conflict if {
	d := decide_allowing({"eligibleProviders": ["aws"]}, ["azure"])
	not d.allowed
	d.errors == [concat("", [
		`workload "w1": eligibleProviders ["aws"] and the platform's allowed providers ["azure"] `,
		"have nothing in common",
	])]
}

# The origin is an Azure region: GCP and AWS latency is measured from their nearest regions.
test_cross_provider_origin_uses_the_nearest_region if {
	d := decide({"eligibleProviders": ["gcp", "aws"], "maxLatency": 30})
	d.eligible == {"gcp": ["europe-west8", "europe-west9"], "aws": ["eu-south-1"]}
}

test_conflict_names_the_constraints_that_emptied_the_set if {
	d := decide({"originRegion": "westus", "dataResidency": "eu", "maxLatency": 10, "eligibleProviders": ["azure"]})
	not d.allowed
	d.errors == [concat(", then ", [
		`workload "w1": no eligible region: providers azure leaves 5`,
		"regions with carbon data, image and zone leaves 4",
		"dataResidency eu leaves 2",
		"maxLatency 10 ms from westus leaves 0",
	])]
	d.zones == []
}

test_no_fitting_size_is_explained if {
	d := decide({"cpu": 64, "memory": 512})
	not d.allowed
	contains(d.errors[0], "a VM size with 64 vCPU and 512 GB leaves 0")
}

test_forbidden_requested_provider_is_named if {
	d := decide_allowing({"provider": "aws"}, ["azure", "gcp"])
	d.errors == [`workload "w1": requested provider aws is not allowed by policy (eligible: ["azure", "gcp"])`]
}

test_forbidden_requested_region_is_named_with_the_reason if {
	d := decide({"region": "westus", "dataResidency": "eu"})
	d.errors == [concat("", [
		`workload "w1": requested region westus is not allowed by policy: `,
		"it is outside the EU and dataResidency is eu",
	])]
}

test_requested_region_too_far_is_named if {
	d := decide({"region": "japaneast", "maxLatency": 100})
	d.errors == [concat("", [
		`workload "w1": requested region japaneast is not allowed by policy: `,
		"it is more than 100 ms from italynorth",
	])]
}

test_allowed_requested_region_narrows_the_set if {
	d := decide({"region": "francecentral"})
	d.allowed
	d.eligible == {"azure": ["francecentral"], "gcp": [], "aws": []}
	d.zones == ["FR"]
}

candidates(fields) := placement.candidates_for(
	{"workload": testdata.with_fields(fields)},
	testdata.catalog, testdata.config, testdata.rules,
)

test_size_is_the_first_fitting_in_preference_order if {
	in_italynorth := {"eligibleProviders": ["azure"], "region": "italynorth"}
	candidates(object.union(in_italynorth, {"cpu": 2, "memory": 16}))[0].vmSize == "Standard_E2as_v4"
	candidates(object.union(in_italynorth, {"cpu": 4, "memory": 8}))[0].vmSize == "Standard_F4s_v2"
}

test_candidates_are_ranked_by_latency_then_price_then_provider if {
	c := candidates({"dataResidency": "eu", "maxLatency": 30})
	[[x.provider, x.region] | some x in c] == [
		["aws", "eu-south-1"], ["gcp", "europe-west8"], ["azure", "italynorth"],
		["gcp", "europe-west9"], ["azure", "francecentral"],
	]
}

# The selection a scheduler-chosen zone maps back to, in the decision for that zone.
selection(fields, zone, catalog) := placement.decision_for(
	{"workload": testdata.with_fields(fields), "zone": zone},
	catalog, testdata.config, testdata.rules,
).selection

# Mapping a zone back: lowest latency first.
test_zone_maps_back_to_the_lowest_latency_region if {
	s := selection({"dataResidency": "eu"}, "FR", testdata.catalog)
	s.provider == "gcp"
	s.region == "europe-west9"
	s.latencyMs == 20
}

# Equal latency (both the origin's twin on their provider): the cheaper size wins.
test_zone_tie_broken_by_price if {
	s := selection({"eligibleProviders": ["gcp", "aws"]}, "IT-NO", testdata.catalog)
	s.provider == "aws"
	s.vmSize == "c6a.xlarge"
}

# Equal latency and equal price: provider order decides.
test_zone_tie_broken_by_provider_order if {
	cat := json.patch(testdata.catalog, [{
		"op": "replace", "path": "/prices/gcp/europe-west8/e2-standard-4",
		"value": 0.15,
	}])
	selection({"eligibleProviders": ["aws", "gcp"]}, "IT-NO", cat).provider == "gcp"
}

test_zone_outside_the_eligible_set_selects_nothing if {
	selection({"dataResidency": "eu"}, "US-CAL-CISO", testdata.catalog) == null
}

test_invalid_workload_reports_only_input_problems if {
	d := decide({"cpu": -1, "originRegion": "atlantis"})
	d.errors == [
		`workload "w1": cpu: -1 is not valid: a whole number of vCPUs from 1 to 100000`,
		`workload "w1": originRegion: unknown region "atlantis"`,
	]
	d.eligible == {}
}

# The explanation's chain counts (set intersections of the per-provider region sets) agree with
# the same constraints applied region by region to the catalog's facts, for a workload with every
# constraint and for one that empties the set.
test_the_explanation_chain_matches_the_stages if {
	every fields in [
		{"dataResidency": "eu", "maxLatency": 100},
		{"eligibleProviders": ["azure"]},
		{"dataResidency": "eu", "maxLatency": 1, "originRegion": "westus"},
	] {
		chain := decide(fields).explanation.constraintChain
		[c.remaining | some c in chain] == region_by_region(testdata.with_fields(fields))
		count(chain) == 6
	}
}

# The chain's counts the slow way: each constraint checked for every [provider, region] pair of
# the test catalog (no provider or region is requested in these workloads).
region_by_region(w) := [count(stage) | some stage in [every_region, placeable, resident, near, near, sized]] if {
	cat := testdata.catalog
	every_region := {[p, r] | some p in object.get(w, "eligibleProviders", cat.providers); some r, _ in cat.regions[p]}
	placeable := {[p, r] | some [p, r] in every_region; cat.regions[p][r].placeable}
	resident := {[p, r] | some [p, r] in placeable; _resident(cat.regions[p][r], w)}
	near := {[p, r] |
		some [p, r] in resident
		_near(cat.latency[p], cat.latency_origin[w.originRegion][p], r, w.maxLatency)
	}
	sized := {[p, r] | some [p, r] in near; _fits(cat.size_tables[p][cat.placeable[p][r].ladder], w)}
}

_resident(_, w) if object.get(w, "dataResidency", "none") != "eu"

_resident(region, _) if region.eu

_near(_, _, _, max_ms) if max_ms >= 2000 # no latency constraint

_near(_, origin, r, _) if origin == r

_near(latency, origin, r, max_ms) if latency[origin][r] <= max_ms

_fits(table, w) if {
	cpu_level := min({i | some i, c in testdata.catalog.cpu_levels; c >= w.cpu})
	memory_level := min({i | some i, m in testdata.catalog.memory_levels; m >= w.memory})
	table[cpu_level][memory_level] != null
}

# --- decision_for: the decision as a function of its arguments ----------------------------------
test_the_decision_rule_is_decision_for_of_input_and_data if {
	request := {"workload": testdata.with_fields({"dataResidency": "eu"}), "zone": "FR"}
	d := placement.decision with input as request
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.greenops.workload_contract as testdata.workload_contract
		with data.greenops.string_rules as testdata.string_rules
	d == placement.decision_for(request, testdata.catalog, testdata.config, testdata.rules)
	c := placement.candidates with input as request
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with data.greenops.workload_contract as testdata.workload_contract
		with data.greenops.string_rules as testdata.string_rules
	c == placement.candidates_for(request, testdata.catalog, testdata.config, testdata.rules)
}

# Nothing is read from the bundle's data: the catalog, config and contract given are the only ones.
test_decision_for_reads_only_its_arguments if {
	fields := {"eligibleProviders": ["azure"], "maxLatency": 100, "tenant": "small"}
	request := {"workload": testdata.with_fields(fields)}
	d := placement.decision_for(request, testdata.catalog, testdata.config, testdata.rules)
		with data.greenops.catalog as {"providers": [], "regions": {}}
		with data.greenops.config as {"default_providers": [], "tenant_vcpu_quota": {}}
		with data.greenops.workload_contract as {}
		with data.greenops.string_rules as {}
	d.eligible == {"azure": ["francecentral", "italynorth"]}
	d.tenantQuotaVcpu == 8
	d.zoneRegions == {"FR": "azure/francecentral", "IT-NO": "azure/italynorth"}
}

# errors is built as a set; the decision lists it ordered by text.
test_several_errors_are_ordered_by_text if {
	d := decide({"eligibleProviders": ["azure"], "provider": "aws", "region": "francecentral"})
	d.errors == [
		`workload "w1": requested provider aws is not allowed by policy (eligible: ["azure"])`,
		`workload "w1": requested region francecentral is not allowed by policy: provider aws was requested`,
	]
	disjoint := decide_allowing({"eligibleProviders": ["aws"], "provider": "aws"}, ["azure"])
	disjoint.errors == [
		concat("", [
			`workload "w1": eligibleProviders ["aws"] and the platform's allowed providers ["azure"] `,
			"have nothing in common",
		]),
		`workload "w1": requested provider aws is not allowed by policy (eligible: [])`,
	]
}

# A malformed workload: its problems, nothing eligible and an empty chain (its explanation is
# {"constraintChain": [], "zones": {}}, not null).
test_a_malformed_workload_has_an_empty_decision if {
	d := decide({"cpu": -1})
	d.workload == "w1"
	not d.allowed
	d.errors == [`workload "w1": cpu: -1 is not valid: a whole number of vCPUs from 1 to 100000`]
	[d.eligible, d.zones, d.selection, d.zoneRegions, d.tenantQuotaVcpu] == [{}, [], null, {}, null]
	d.explanation == {"constraintChain": [], "zones": {}}
	candidates({"cpu": -1}) == []
}
