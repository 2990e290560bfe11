# Why a region is not eligible: the chain of placement constraints and the errors that name it.
#
# placement.rego computes, for each of the workload's eligible providers, the regions each constraint
# allows (its region sets, keyed by `order` below); the provider's eligible regions are their
# intersection. Read in `order`, the sets are a chain, each constraint narrowing the one before:
# - chain(...) is how many provider regions each step leaves. Every booking records it (the
#   decision's `explanation`), so `greenops explain` shows how the eligible set was shaped.
# - errors(...) is why policy refuses the workload: its providers have nothing in common with the
#   platform's, it requests a provider or region that policy rules out (saying why), or the chain
#   ends empty (naming each step up to the one that left nothing).
# Every function takes what it reads as arguments. errors(...) is a set, the union of one set per
# kind of error; the decision orders it.
# METADATA
# title: Constraint chain
# description: >-
#   Why a region is not eligible: the chain of placement constraints, what each leaves, and the
#   errors that name it.
package greenops.constraints

import rego.v1

# The constraints in the order the chain applies them: every region of the provider, the placeable
# ones, dataResidency, maxLatency, the explicit provider/region request, a fitting VM size.
order := ["provider", "placeable", "residency", "latency", "request", "size"]

# names(spec, eligible): each constraint of the chain as the explanation and the errors name it;
# `eligible` is the set of the workload's eligible providers.
names(spec, eligible) := [
	sprintf("providers %v", [concat("/", sort(eligible))]),
	"regions with carbon data, image and zone",
	sprintf("dataResidency %v", [spec.dataResidency]),
	sprintf("maxLatency %v ms from %v", [spec.maxLatency, spec.originRegion]),
	"requested provider/region",
	sprintf("a VM size with %v vCPU and %v GB", [spec.cpu, spec.memory]),
]

# remaining(region_sets): how many provider regions are left after each constraint in turn, from
# the region sets of every eligible provider ({provider: {constraint: regions}}).
remaining(region_sets) := [sum([count(run[i]) | some run in runs]) | some i, _ in order] if {
	runs := [_running(sets) | some sets in region_sets]
}

# The regions of one provider that the constraints up to the i-th (in `order`) all allow.
_left(sets, i) := _running(sets)[i]

# The running intersection of one provider's sets in `order`: each step narrows the one before,
# so the chain costs one intersection per constraint (a set of the sets, as intersection() takes,
# would hash every set of regions first).
_running(sets) := [provider, placeable, residency, latency, request, size] if {
	provider := sets.provider
	placeable := provider & sets.placeable
	residency := placeable & sets.residency
	latency := residency & sets.latency
	request := latency & sets.request
	size := request & sets.size
}

_remaining_after(region_sets, constraint) := remaining(region_sets)[i] if {
	some i, c in order
	c == constraint
}

# chain(spec, eligible, region_sets): each constraint with how many provider regions it leaves,
# as the decision's explanation records it.
chain(spec, eligible, region_sets) := [{"constraint": name, "remaining": left[i]} |
	left := remaining(region_sets)
	some i, name in names(spec, eligible)
]

# errors(spec, eligible, region_sets, catalog, config): why policy refuses the workload (spec, in
# normal form) as a set of messages, empty when it does not. `eligible` are its eligible providers
# (its eligibleProviders that the platform's default_providers allow), `region_sets` theirs.
errors(spec, eligible, region_sets, catalog, config) := union({
	_no_common_provider(spec, eligible, config),
	_provider_refused(spec, eligible),
	_region_refused(spec, eligible, region_sets, catalog),
	_empty_chain(spec, eligible, region_sets, catalog),
})

_no_common_provider(spec, eligible, config) := {msg |
	count(eligible) == 0
	msg := sprintf(
		"eligibleProviders %v and the platform's allowed providers %v have nothing in common",
		[spec.eligibleProviders, config.default_providers],
	)
}

_provider_refused(spec, eligible) := {msg |
	spec.provider != null
	not spec.provider in eligible
	msg := sprintf("requested provider %v is not allowed by policy (eligible: %v)", [spec.provider, sort(eligible)])
}

# A requested region that no eligible set keeps, named with the first constraint that drops it.
# (When not even maxLatency leaves a region, the chain says more: _empty_chain reports it.)
_region_refused(spec, eligible, region_sets, catalog) := {msg |
	spec.region != null
	_remaining_after(region_sets, "latency") > 0
	not _eligible_anywhere(spec.region, region_sets)
	reason := _why_not(spec.region, spec, eligible, region_sets, catalog)
	msg := sprintf("requested region %v is not allowed by policy: %v", [spec.region, reason])
}

_eligible_anywhere(r, region_sets) if {
	some sets in region_sets
	r in _left(sets, count(order) - 1)
}

_why_not(r, spec, eligible, region_sets, catalog) := "its provider is not eligible" if {
	not catalog.region_provider[r] in eligible
} else := sprintf("it cannot host workloads here (%v)", [concat(", ", gaps)]) if {
	region := catalog.regions[catalog.region_provider[r]][r]
	not region.placeable
	gaps := region.gaps
} else := "it is outside the EU and dataResidency is eu" if {
	not r in region_sets[catalog.region_provider[r]].residency
} else := sprintf("it is more than %v ms from %v", [spec.maxLatency, spec.originRegion]) if {
	not r in region_sets[catalog.region_provider[r]].latency
} else := "no VM size there fits the requested vCPU and memory" if {
	not r in region_sets[catalog.region_provider[r]].size
} else := sprintf("provider %v was requested", [spec.provider])

# Conflicting intent: no region at all, and no refused request to blame it on.
_empty_chain(spec, eligible, region_sets, catalog) := {msg |
	count(eligible) > 0
	_remaining_after(region_sets, "size") == 0
	count(_provider_refused(spec, eligible)) == 0
	count(_region_refused(spec, eligible, region_sets, catalog)) == 0
	msg := sprintf("no eligible region: %v", [concat(", then ", _steps(spec, eligible, region_sets))])
}

# "<constraint> leaves <n>" for each step of the chain, up to the first that leaves nothing.
_steps(spec, eligible, region_sets) := [sprintf("%v leaves %v", [name, left[i]]) |
	left := remaining(region_sets)
	first_empty := min({i | some i, n in left; n == 0})
	some i, name in names(spec, eligible)
	i <= first_empty
]
