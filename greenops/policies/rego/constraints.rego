# Why a region is not eligible: the chain of placement constraints and the errors that name it.
#
# placement.rego narrows each of the workload's eligible providers' regions by the constraints in
# `order` below, each one narrowing what the ones before it left; the last step leaves the
# provider's eligible regions. That narrowing ({provider: {"left": {constraint: regions}, "sizes":
# {ladder: size}}}, see placement.narrowing) is what this package reads:
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

# remaining(narrowing): how many provider regions are left after each constraint in turn, summed
# over every eligible provider's narrowing (see above).
remaining(narrowing) := [sum([count(n.left[c]) | some n in narrowing]) | some c in order]

_remaining_after(narrowing, constraint) := remaining(narrowing)[_step[constraint]]

_step[c] := i if some i, c in order

# chain(spec, eligible, narrowing): each constraint with how many provider regions it leaves,
# as the decision's explanation records it.
chain(spec, eligible, narrowing) := [{"constraint": name, "remaining": left[i]} |
	left := remaining(narrowing)
	some i, name in names(spec, eligible)
]

# errors(spec, eligible, narrowing, catalog, config): why policy refuses the workload (spec, in
# normal form) as a set of messages, empty when it does not. `eligible` are its eligible providers
# (its eligibleProviders that the platform's default_providers allow), `narrowing` theirs.
errors(spec, eligible, narrowing, catalog, config) := set() if {
	# The usual case, found in one body: none of the four kinds below can apply.
	count(eligible) > 0
	spec.provider == null
	spec.region == null
	_remaining_after(narrowing, "size") > 0
} else := union({
	_no_common_provider(spec, eligible, config),
	_provider_refused(spec, eligible),
	_region_refused(spec, eligible, narrowing, catalog),
	_empty_chain(spec, eligible, narrowing, catalog),
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

# A requested region that no eligible provider keeps, named with the first constraint that drops it.
# (When not even maxLatency leaves a region, the chain says more: _empty_chain reports it.)
_region_refused(spec, eligible, narrowing, catalog) := {msg |
	spec.region != null
	_remaining_after(narrowing, "latency") > 0
	not _eligible_anywhere(spec.region, narrowing)
	reason := _why_not(spec.region, spec, eligible, narrowing, catalog)
	msg := sprintf("requested region %v is not allowed by policy: %v", [spec.region, reason])
}

_eligible_anywhere(r, narrowing) if {
	some n in narrowing
	n.left.size[r]
}

# Each step leaves what its constraint keeps of what the steps before it left: once the region is
# known to pass the constraints before one, that step drops it exactly when its constraint does.
# The size is checked on its own, as the request (the step before it) may have dropped the region.
_why_not(r, spec, eligible, narrowing, catalog) := "its provider is not eligible" if {
	not catalog.region_provider[r] in eligible
} else := sprintf("it cannot host workloads here (%v)", [concat(", ", gaps)]) if {
	region := catalog.regions[catalog.region_provider[r]][r]
	not region.placeable
	gaps := region.gaps
} else := "it is outside the EU and dataResidency is eu" if {
	not narrowing[catalog.region_provider[r]].left.residency[r]
} else := sprintf("it is more than %v ms from %v", [spec.maxLatency, spec.originRegion]) if {
	not narrowing[catalog.region_provider[r]].left.latency[r]
} else := "no VM size there fits the requested vCPU and memory" if {
	p := catalog.region_provider[r]
	not narrowing[p].sizes[catalog.placeable[p][r].ladder]
} else := sprintf("provider %v was requested", [spec.provider])

# Conflicting intent: no region at all, and no refused request to blame it on.
_empty_chain(spec, eligible, narrowing, catalog) := {msg |
	count(eligible) > 0
	_remaining_after(narrowing, "size") == 0
	count(_provider_refused(spec, eligible)) == 0
	count(_region_refused(spec, eligible, narrowing, catalog)) == 0
	msg := sprintf("no eligible region: %v", [concat(", then ", _steps(spec, eligible, narrowing))])
}

# "<constraint> leaves <n>" for each step of the chain, up to the first that leaves nothing.
_steps(spec, eligible, narrowing) := [sprintf("%v leaves %v", [name, left[i]]) |
	left := remaining(narrowing)
	first_empty := min({i | some i, n in left; n == 0})
	some i, name in names(spec, eligible)
	i <= first_empty
]
