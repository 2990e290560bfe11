package greenops.constraints_test

import rego.v1

import data.greenops.constraints
import data.greenops.testdata

# One provider's region sets, by hand: a, b and c; b is the only one every constraint allows.
sets := {
	"provider": {"a", "b", "c"}, "placeable": {"a", "b"}, "residency": {"a", "b", "c"},
	"latency": {"b", "c"}, "request": {"a", "b", "c"}, "size": {"b"},
}

spec := {
	"eligibleProviders": ["azure"], "dataResidency": "eu", "maxLatency": 30, "originRegion": "a",
	"cpu": 2, "memory": 4, "provider": null, "region": null,
}

test_remaining_narrows_in_order if {
	constraints.remaining({"azure": sets}) == [3, 2, 2, 1, 1, 1]
	constraints.remaining({"azure": sets, "gcp": sets}) == [6, 4, 4, 2, 2, 2]
	constraints.remaining({}) == [0, 0, 0, 0, 0, 0]
}

# The running intersection takes the constraints in `order`, one step each: a region only one
# constraint refuses is left up to that step and gone from it on.
test_each_step_of_the_running_intersection_is_its_constraint_in_order if {
	every i, refusing in constraints.order {
		one_refuses := object.union({k: {"kept", "x"} | some k in constraints.order}, {refusing: {"kept"}})
		constraints.remaining({"p": one_refuses}) == [_left_before(j, i) | some j, _ in constraints.order]
	}
}

_left_before(j, i) := 2 if j < i

else := 1

test_the_chain_names_each_constraint_with_what_it_leaves if {
	constraints.chain(spec, {"azure"}, {"azure": sets}) == [
		{"constraint": "providers azure", "remaining": 3},
		{"constraint": "regions with carbon data, image and zone", "remaining": 2},
		{"constraint": "dataResidency eu", "remaining": 2},
		{"constraint": "maxLatency 30 ms from a", "remaining": 1},
		{"constraint": "requested provider/region", "remaining": 1},
		{"constraint": "a VM size with 2 vCPU and 4 GB", "remaining": 1},
	]
}

test_nothing_to_say_when_a_region_is_eligible if {
	constraints.errors(spec, {"azure"}, {"azure": sets}, testdata.catalog, testdata.config) == set()
}

test_an_empty_chain_is_named_up_to_the_constraint_that_emptied_it if {
	no_size := object.union(sets, {"size": set()})
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
# catalog (its provider) and in its provider's region sets.
test_a_refused_region_names_the_constraint_that_drops_it if {
	far := object.union(sets, {"provider": {"westus", "italynorth"}, "placeable": {"westus", "italynorth"}})
	near_only := object.union(far, {"residency": {"westus", "italynorth"}, "latency": {"italynorth"}})
	asking := object.union(spec, {"region": "westus"})
	constraints.errors(asking, {"azure"}, {"azure": near_only}, testdata.catalog, testdata.config) == {
		"requested region westus is not allowed by policy: it is more than 30 ms from a",
	}
	constraints.errors(asking, {"gcp"}, {"gcp": sets}, testdata.catalog, testdata.config) == {
		"requested region westus is not allowed by policy: its provider is not eligible",
	}
}
