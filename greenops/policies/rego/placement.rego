# Where a workload may run: the placement decision document.
#
# Query:  POST /v1/data/greenops/placement/decision
#         {"input": {"workload": {...}, "zone": "FR"?}}
# Answer: eligible regions per provider, the Electricity Maps zones to send to the scheduler,
#         `errors` (empty when allowed), when `zone` is given the `selection` that zone maps back
#         to, each zone's provider/region and the tenant's vCPU quota (the scheduler enforces it).
#         /v1/data/greenops/placement/candidates ranks every eligible region.
# METADATA
# title: Placement policy
# description: >-
#   Where a workload may run: eligible regions and zones, the zone's mapping back to a region
#   and size, and why.
package greenops.placement

import rego.v1

import data.greenops.catalog
import data.greenops.config
import data.greenops.quota
import data.greenops.workload

provider_rank := {p: i | some i, p in catalog.providers}

input_problems := workload.problems(input.workload)

spec := workload.normalize(input.workload)

# --- Eligible providers: the workload's wish intersected with the platform's default --------
providers := {p | some p in spec.eligibleProviders; p in config.default_providers}

# --- Eligible regions ----------------------------------------------------------------------
# Per provider, an intersection of region sets: placeable, EU when required, within latency of
# the origin, explicitly requested, and with a fitting size.
default eligible := {}

eligible := {p: sort(rs) | some p in providers; rs := _eligible_set(p)}

_eligible_set(p) := ((object.keys(catalog.placeable[p]) & residency_set[p]) & reachable[p]) & sized[p]

eligible_pairs := {[p, r] | some p, regions in eligible; some r in regions}

default zones := []

zones := sort({catalog.region_zone[r] | some regions in eligible; some r in regions})

residency_set := {p: rs | some p in providers; rs := _residency(p)}

_residency(p) := object.keys(catalog.eu[p]) if spec.dataResidency == "eu"

else := object.keys(catalog.regions[p])

# Regions whose size table has a fitting size.
sized := {p: rs | some p in providers; rs := union(_sized_sets(p))}

_sized_sets(p) := {object.keys(catalog.ladder_regions[p][id]) | some [q, id], _ in size_by_ladder; q == p}

# Regions within maxLatency of the origin (all regions without a constraint), narrowed to an
# explicitly requested region or provider.
reachable := {p: rs | some p in providers; rs := within_latency[p] & requested_regions[p]}

within_latency := {p: _within_latency(p) | some p in providers}

_within_latency(p) := object.keys(catalog.regions[p]) if spec.maxLatency >= workload.no_latency_constraint

else := {r | some r, ms in catalog.latency[p][origin[p]]; ms <= spec.maxLatency} | {origin[p]}

requested_regions := {p: rs | some p in providers; rs := _requested(p)}

_requested(p) := object.keys(catalog.regions[p]) if {
	spec.region == null
	_provider_requested(p)
} else := {spec.region} if {
	_provider_requested(p)
	catalog.region_provider[spec.region] == p
} else := set()

residency_ok(p, r) if r in residency_set[p]

# The origin may belong to another provider: latency is then measured from that provider's
# region nearest to the origin (by great circle, precomputed in the bundle data).
origin := {p: o | some p in providers; o := _origin_for(p)}

_origin_for(p) := spec.originRegion if catalog.region_provider[spec.originRegion] == p

else := catalog.nearest[spec.originRegion][p]

latency_ms(p, r) := 0 if origin[p] == r

else := catalog.latency[p][origin[p]][r]

latency_ok(p, r) if r in within_latency[p]

request_ok(p, r) if r in requested_regions[p]

_provider_requested(_) if spec.provider == null

_provider_requested(p) if spec.provider == p

# The size a region would use: the first fit in its preference order (cheapest, else
# smallest), read from a table indexed by the catalog's vCPU and memory levels at or above the
# request (see bundle.py). Regions with the same preference order share a table.
cpu_level := min({i | some i, c in catalog.cpu_levels; c >= spec.cpu})

memory_level := min({j | some j, m in catalog.memory_levels; m >= spec.memory})

size_by_ladder := {[p, id]: n |
	some p in providers
	some id, table in catalog.size_tables[p]
	n := table[cpu_level][memory_level]
	n != null
}

size_in(p, r) := size_by_ladder[[p, catalog.ladder_of[p][r]]]

# --- Ranking: lowest latency, then cheapest size (unknown prices after known ones), then ---
# provider order, then region name. Computed for the zone being mapped back, or on demand for
# every eligible region (`candidates`, not part of the decision document).
candidate(p, r) := {
	"provider": p, "region": r, "zone": catalog.regions[p][r].zone,
	"latencyMs": _latency_or(p, r, null),
	"vmSize": size_in(p, r),
	"hourlyUsd": object.get(catalog.prices[p][r], size_in(p, r), null),
}

ranked(pairs) := [candidate(key[3], key[4]) | some key in sort([_rank_key(p, r) | some [p, r] in pairs])]

_latency_or(p, r, d) := v if {
	v := latency_ms(p, r)
} else := d

_unknown := 1000000

_rank_key(p, r) := [
	_latency_or(p, r, _unknown),
	object.get(catalog.prices[p][r], size_in(p, r), _unknown),
	provider_rank[p], p, r,
]

default candidates := []

candidates := ranked(eligible_pairs)

# The candidate a scheduler-chosen zone maps back to.
default selection := null

selection := zone_match(input.zone) if is_string(input.zone)

zone_match(z) := matches[0] if {
	matches := ranked({[p, r] | some [p, r] in eligible_pairs; catalog.regions[p][r].zone == z})
	count(matches) > 0
}

# Every eligible zone and the "provider/region" it maps back to: the scheduler records the one it
# chooses with the reservation, so the record answers "what runs in region X" for both paths.
zone_regions := {z: sprintf("%v/%v", [m.provider, m.region]) | some z, m in zone_matches}

# What each eligible zone maps back to (shared by zone_regions and the explanation).
zone_matches := {z: m | some z in zones; m := zone_match(z)}

# --- Errors -----------------------------------------------------------------------------------
errors := [sprintf("workload %v: %v", [_label, msg]) | some msg in input_problems] if count(input_problems) > 0

else := [sprintf("workload %v: %v", [_label, msg]) | some msg in policy_errors]

_label := sprintf("%q", [workload.name_of(input.workload)]) if workload.name_of(input.workload)

else := "(unnamed)"

policy_errors := array.concat(array.concat(provider_errors, request_errors), conflict_errors)

provider_errors := [msg |
	count(providers) == 0
	msg := sprintf(
		"eligibleProviders %v and the platform's allowed providers %v have nothing in common",
		[spec.eligibleProviders, config.default_providers],
	)
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
	not size_in(p, r)
}

else := sprintf("provider %v was requested", [spec.provider])

# The chain of constraints, each stage narrowing the one before: reported when conflicting intent
# empties it, and recorded with every booking (`explanation`) so `greenops explain` shows how the
# eligible set was shaped.
stage_provider := {[p, r] | some p in providers; some r, _ in catalog.regions[p]}

stage_placeable := {[p, r] | some [p, r] in stage_provider; catalog.regions[p][r].placeable}

stage_residency := {[p, r] | some [p, r] in stage_placeable; residency_ok(p, r)}

stage_latency := {[p, r] | some [p, r] in stage_residency; latency_ok(p, r)}

stage_request := {[p, r] | some [p, r] in stage_latency; request_ok(p, r)}

stage_size := {[p, r] | some [p, r] in stage_request; size_in(p, r)}

conflict_errors := [msg |
	count(providers) > 0
	count(eligible_pairs) == 0
	count(request_errors) == 0
	msg := sprintf("no eligible region: %v", [concat(", then ", _chain)])
]

_stage_names := [
	sprintf("providers %v", [concat("/", sort(providers))]),
	"regions with carbon data, image and zone",
	sprintf("dataResidency %v", [spec.dataResidency]),
	sprintf("maxLatency %v ms from %v", [spec.maxLatency, spec.originRegion]),
	"requested provider/region",
	sprintf("a VM size with %v vCPU and %v GB", [spec.cpu, spec.memory]),
]

_stage_counts := [
	count(stage_provider), count(stage_placeable), count(stage_residency),
	count(stage_latency), count(stage_request), count(stage_size),
]

_stages := [[name, _stage_counts[i]] | some i, name in _stage_names]

# Why the eligible set is what it is, kept with the booking: each constraint in turn with how many
# provider regions it leaves, and the candidate each eligible zone maps back to (region, size,
# latency, price), so the mapping is stored as decided rather than recomputed later. Null when the
# workload itself is malformed (its errors say why).
default explanation := null

explanation := {
	"constraintChain": [{"constraint": name, "remaining": _chain_counts[i]} | some i, name in _stage_names],
	"zones": zone_matches,
}

# The same counts as the stages above, from the per-provider sets the eligible set is made of:
# set intersections, so a decision pays little for its explanation (placement_test checks that
# both agree).
_chain_sets := {p: _chain_of(p, object.keys(catalog.placeable[p])) | some p in providers}

_chain_of(p, placeable) := [
	object.keys(catalog.regions[p]),
	placeable,
	placeable & residency_set[p],
	(placeable & residency_set[p]) & within_latency[p],
	((placeable & residency_set[p]) & within_latency[p]) & requested_regions[p],
	_eligible_set(p),
]

_chain_counts := [sum([count(sets[i]) | some sets in _chain_sets]) | some i in numbers.range(0, 5)]

_chain := [sprintf("%v leaves %v", [s[0], s[1]]) |
	some i, s in _stages
	i <= _first_empty
]

_first_empty := min({i | some i, s in _stages; s[1] == 0})

# The tenant's vCPU quota: the scheduler enforces it over the active reservations of both paths.
default tenant_quota := null

tenant_quota := quota.cap(spec.tenant)

# --- The document -----------------------------------------------------------------------------
# METADATA
# entrypoint: true
decision := {
	"workload": object.get({"name": workload.name_of(input.workload)}, "name", null),
	"allowed": count(errors) == 0,
	"errors": errors,
	"eligible": eligible,
	"zones": zones,
	"selection": selection,
	"zoneRegions": zone_regions,
	"tenantQuotaVcpu": tenant_quota,
	"explanation": explanation,
}
