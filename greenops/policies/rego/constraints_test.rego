package greenops.constraints_test

import rego.v1

import data.greenops.constraints
import data.greenops.testdata

# One provider's narrowing, by hand (as placement.narrowing gives it): what each constraint leaves
# of a, b and c, each narrowing the one before; b is the only region every constraint allows, and
# its size ladder L0 has a fitting size.
narrowed := {
	"left": {
		"provider": {"a", "b", "c"}, "placeable": {"a", "b"}, "residency": {"a", "b"},
		"latency": {"b"}, "request": {"b"}, "size": {"b"},
	},
	"sizes": {"L0": "Standard_E2as_v4"},
}

spec := {
	"eligibleProviders": ["azure"], "dataResidency": "eu", "maxLatency": 30, "originRegion": "a",
	"cpu": 2, "memory": 4, "provider": null, "region": null,
}

test_remaining_counts_what_each_constraint_leaves if {
	constraints.remaining({"azure": narrowed}) == [3, 2, 2, 1, 1, 1]
	constraints.remaining({"azure": narrowed, "gcp": narrowed}) == [6, 4, 4, 2, 2, 2]
	constraints.remaining({}) == [0, 0, 0, 0, 0, 0]
}

test_the_chain_names_each_constraint_with_what_it_leaves if {
	constraints.chain(spec, {"azure"}, {"azure": narrowed}) == [
		{"constraint": "providers azure", "remaining": 3},
		{"constraint": "regions with carbon data, image and zone", "remaining": 2},
		{"constraint": "dataResidency eu", "remaining": 2},
		{"constraint": "maxLatency 30 ms from a", "remaining": 1},
		{"constraint": "requested provider/region", "remaining": 1},
		{"constraint": "a VM size with 2 vCPU and 4 GB", "remaining": 1},
	]
}

test_nothing_to_say_when_a_region_is_eligible if {
	constraints.errors(spec, {"azure"}, {"azure": narrowed}, testdata.catalog, testdata.config) == set()
}

test_an_empty_chain_is_named_up_to_the_constraint_that_emptied_it if {
	no_size := object.union(narrowed, {"left": {"size": set()}})
	constraints.errors(spec, {"azure"}, {"azure": no_size}, testdata.catalog, testdata.config) == {concat(", then ", [
		"no eligible region: providers azure leaves 3",
		"regions with carbon data, image and zone leaves 2",
		"dataResidency eu leaves 2",
		"maxLatency 30 ms from a leaves 1",
		"requested provider/region leaves 1",
		"a VM size with 2 vCPU and 4 GB leaves 0",
	])}
}

# Every kind of error is its own set: here two at once, and no chain (the requests explain it).
test_errors_are_the_union_of_each_kind if {
	config := object.union(testdata.config, {"default_providers": ["gcp"]})
	requesting := object.union(spec, {"provider": "aws", "eligibleProviders": ["aws"]})
	constraints.errors(requesting, set(), {}, testdata.catalog, config) == {
		`eligibleProviders ["aws"] and the platform's allowed providers ["gcp"] have nothing in common`,
		"requested provider aws is not allowed by policy (eligible: [])",
	}
}

# A requested region is refused with the first constraint that drops it, looked up in the
# catalog (its provider, whether it is placeable, its size ladder) and in its provider's narrowing.
test_a_refused_region_names_the_constraint_that_drops_it if {
	asking := object.union(spec, {"region": "westus"})
	why(asking, {"azure"}, {"azure": narrowed_to({"westus", "italynorth"}, {"italynorth"}, {"L0": "x"})}) == {
		"requested region westus is not allowed by policy: it is more than 30 ms from a",
	}
	why(asking, {"azure"}, {"azure": narrowed_to({"italynorth"}, {"italynorth"}, {"L0": "x"})}) == {
		"requested region westus is not allowed by policy: it is outside the EU and dataResidency is eu",
	}
	why(asking, {"azure"}, {"azure": narrowed_to({"westus"}, {"westus"}, {})}) == {
		"requested region westus is not allowed by policy: no VM size there fits the requested vCPU and memory",
	}
	why(object.union(asking, {"provider": "azure"}), {"azure", "gcp"}, {
		"azure": narrowed_to({"westus"}, {"westus"}, {"L0": "x"}),
		"gcp": narrowed_to(set(), set(), {}),
	}) == {
		"requested region westus is not allowed by policy: provider azure was requested",
	}
	why(asking, {"gcp"}, {"gcp": narrowed}) == {
		"requested region westus is not allowed by policy: its provider is not eligible",
	}
	why(object.union(spec, {"region": "norwayeast"}), {"azure"}, {"azure": narrowed}) == {concat("", [
		"requested region norwayeast is not allowed by policy: ",
		"it cannot host workloads here (no carbon data for zone NO-NO1)",
	])}
}

why(asking, eligible, narrowing) := constraints.errors(asking, eligible, narrowing, testdata.catalog, testdata.config)

# Azure's narrowing for a workload asking for westus: residency and latency leave what is given,
# the request and the size steps nothing, and sizes gives each ladder's fitting size.
narrowed_to(residency, latency, sizes) := {
	"left": {
		"provider": {"westus", "italynorth"}, "placeable": {"westus", "italynorth"}, "residency": residency,
		"latency": latency, "request": set(), "size": set(),
	},
	"sizes": sizes,
}
