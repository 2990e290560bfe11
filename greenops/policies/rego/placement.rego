# Where a workload may run: the placement decision document.
#
# Query:  POST /v1/data/greenops/placement/decision
#         {"input": {"workload": {...}, "placed": [{"name", "tenant", "cpu"}], "zone": "FR"?}}
# Answer: eligible regions per provider, the Electricity Maps zones to send to the scheduler,
#         ranked candidates, `errors` (empty when allowed) and, when `zone` is given, the
#         candidate that zone maps back to.
package greenops.placement

import rego.v1

import data.greenops.quota
import data.greenops.workload

catalog := data.greenops.catalog

config := data.greenops.config

provider_rank := {p: i | some i, p in catalog.providers}

input_problems := workload.problems(input.workload)

spec := workload.normalize(input.workload)

# --- Eligible providers: the workload's wish intersected with the platform's default --------
providers := {p | some p in spec.eligibleProviders; p in config.default_providers}

# --- Regions, filtered one constraint at a time so a conflict can say which one emptied it ---
stage_provider := {[p, r] | some p in providers; some r, _ in catalog.regions[p]}

stage_placeable := {[p, r] | some [p, r] in stage_provider; catalog.regions[p][r].placeable}

stage_residency := {[p, r] | some [p, r] in stage_placeable; residency_ok(p, r)}

stage_latency := {[p, r] | some [p, r] in stage_residency; latency_ok(p, r)}

stage_request := {[p, r] | some [p, r] in stage_latency; request_ok(p, r)}

# The size each remaining region would use: picked once per distinct ladder, per query.
size_by_ladder := {[p, id]: n | some p in providers; some id, ladder in catalog.size_ladders[p]; n := first_fit(ladder)}

chosen_size := {pair: n | some pair in stage_request; n := size_by_ladder[[pair[0], catalog.ladder_of[pair[0]][pair[1]]]]}

stage_size := {pair | some pair, _ in chosen_size}

residency_ok(_, _) if spec.dataResidency != "eu"

residency_ok(p, r) if {
	spec.dataResidency == "eu"
	catalog.regions[p][r].eu
}

# The origin may belong to another provider: latency is then measured from that provider's
# region nearest to the origin (by great circle, precomputed in the bundle data).
origin_for(p) := spec.originRegion if catalog.region_provider[spec.originRegion] == p

else := catalog.nearest[spec.originRegion][p]

latency_ms(p, r) := 0 if origin_for(p) == r

else := catalog.latency[p][origin_for(p)][r]

latency_ok(_, _) if spec.maxLatency >= workload.no_latency_constraint

latency_ok(p, r) if latency_ms(p, r) <= spec.maxLatency

request_ok(p, r) if {
	_provider_requested(p)
	_region_requested(r)
}

_provider_requested(_) if spec.provider == null

_provider_requested(p) if spec.provider == p

_region_requested(_) if spec.region == null

_region_requested(r) if spec.region == r

# First size in a region's preference order (cheapest, else smallest) that fits. A ladder is
# [vcpu, memory, name] in that order, pruned of sizes that can never be first (see bundle.py).
first_fit(ladder) := fitting[0] if {
	fitting := [s[2] | some s in ladder; s[0] >= spec.cpu; s[1] >= spec.memory]
	count(fitting) > 0
}

eligible_pairs := stage_size

default eligible := {}

eligible := {p: sort([r | some [q, r] in eligible_pairs; q == p]) | some p in providers}

default zones := []

zones := sort({catalog.regions[p][r].zone | some [p, r] in eligible_pairs})

# Candidates ranked for mapping a zone back: lowest latency, then cheapest size (unknown prices
# after known ones), then provider order, then region name.
default candidates := []

candidates := [c |
	some key in sort([_rank_key(p, r) | some [p, r] in eligible_pairs])
	p := key[3]
	r := key[4]
	c := {
		"provider": p, "region": r, "zone": catalog.regions[p][r].zone,
		"latencyMs": _latency_or(p, r, null),
		"vmSize": chosen_size[[p, r]],
		"hourlyUsd": object.get(catalog.prices[p][r], chosen_size[[p, r]], null),
	}
]

_latency_or(p, r, d) := v if {
	v := latency_ms(p, r)
} else := d

_unknown := 1000000

_rank_key(p, r) := [
	_latency_or(p, r, _unknown),
	object.get(catalog.prices[p][r], chosen_size[[p, r]], _unknown),
	provider_rank[p], p, r,
]

# The candidate a scheduler-chosen zone maps back to.
default selection := null

selection := matches[0] if {
	is_string(input.zone)
	matches := [c | some c in candidates; c.zone == input.zone]
	count(matches) > 0
}

# --- Errors -----------------------------------------------------------------------------------
errors := [sprintf("workload %v: %v", [_label, msg]) | some msg in input_problems] if count(input_problems) > 0

else := [sprintf("workload %v: %v", [_label, msg]) | some msg in policy_errors]

_label := sprintf("%q", [workload.name_of(input.workload)]) if workload.name_of(input.workload)

else := "(unnamed)"

policy_errors := array.concat(array.concat(provider_errors, request_errors), array.concat(conflict_errors, quota_errors))

provider_errors := [msg |
	count(providers) == 0
	msg := sprintf("eligibleProviders %v and the platform's allowed providers %v have nothing in common",
		[spec.eligibleProviders, config.default_providers])
]

request_errors := array.concat(_provider_request_errors, _region_request_errors)

_provider_request_errors := [msg |
	spec.provider != null
	not spec.provider in providers
	msg := sprintf("requested provider %v is not allowed by policy (eligible: %v)", [spec.provider, sort(providers)])
]

_region_request_errors := [msg |
	spec.region != null
	count(stage_latency) > 0
	not _region_survives(spec.region)
	msg := sprintf("requested region %v is not allowed by policy: %v", [spec.region, _region_reason(spec.region)])
]

_region_survives(r) if {
	some pair in stage_size
	pair[1] == r
}

_region_reason(r) := "its provider is not eligible" if not catalog.region_provider[r] in providers

else := sprintf("it cannot host workloads here (%v)", [concat(", ", catalog.regions[p][r].gaps)]) if {
	p := catalog.region_provider[r]
	not catalog.regions[p][r].placeable
}

else := "it is outside the EU and dataResidency is eu" if {
	p := catalog.region_provider[r]
	not residency_ok(p, r)
}

else := sprintf("it is more than %v ms from %v", [spec.maxLatency, spec.originRegion]) if {
	p := catalog.region_provider[r]
	not latency_ok(p, r)
}

else := "no VM size there fits the requested vCPU and memory" if {
	p := catalog.region_provider[r]
	not chosen_size[[p, r]]
}

else := sprintf("provider %v was requested", [spec.provider])

# An empty set caused by conflicting intent: report the chain of constraints that emptied it.
conflict_errors := [msg |
	count(providers) > 0
	count(eligible_pairs) == 0
	count(request_errors) == 0
	msg := sprintf("no eligible region: %v", [concat(", then ", _chain)])
]

_stages := [
	[sprintf("providers %v", [concat("/", sort(providers))]), count(stage_provider)],
	["regions with carbon data, image and zone", count(stage_placeable)],
	[sprintf("dataResidency %v", [spec.dataResidency]), count(stage_residency)],
	[sprintf("maxLatency %v ms from %v", [spec.maxLatency, spec.originRegion]), count(stage_latency)],
	["requested provider/region", count(stage_request)],
	[sprintf("a VM size with %v vCPU and %v GB", [spec.cpu, spec.memory]), count(stage_size)],
]

_chain := [sprintf("%v leaves %v", [s[0], s[1]]) |
	some i, s in _stages
	i <= _first_empty
]

_first_empty := min({i | some i, s in _stages; s[1] == 0})

quota_errors := quota.errors(spec, object.get(input, "placed", null))

# --- The document -----------------------------------------------------------------------------
decision := {
	"workload": object.get({"name": workload.name_of(input.workload)}, "name", null),
	"allowed": count(errors) == 0,
	"errors": errors,
	"eligible": eligible,
	"zones": zones,
	"candidates": candidates,
	"selection": selection,
}
