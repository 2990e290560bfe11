# Where a workload may run: the placement decision document.
#
# Query:  POST /v1/data/greenops/placement/decision
#         {"input": {"workload": {...}, "zone": "FR"?}}
# Answer: eligible regions per provider, the Electricity Maps zones to send to the scheduler,
#         `errors` (empty when allowed), when `zone` is given the `selection` that zone maps back
#         to, each zone's provider/region and the tenant's vCPU quota (the scheduler enforces it).
#         /v1/data/greenops/placement/candidates ranks every eligible region.
#
# Those two rules read input and data; everything else is a function of its arguments: the request
# (the query's input), the bundle's catalog (data.greenops.catalog), the platform's config
# (data.greenops.config) and the workload contract (workload.bundle_rules: data.greenops's
# workload_contract and string_rules). The admission policy calls decision_for for a VmTemplate's workload, and
# the tests call it with a small catalog. Why a region is not eligible (the constraint chain and the
# errors that name it): constraints.rego.
#
# OPA memoizes a function's result by its arguments for the rest of the query, so helpers are
# called again instead of being threaded through. Keying on the catalog is cheap when OPA keeps
# its data as AST (opa run --optimize-store-for-read-speed, as the platform and the local servers
# run it); otherwise each query first converts the whole catalog (a few milliseconds).
#
# The widest decision has a budget of 1 ms (benchmarks/policy_latency.py). Every step OPA evaluates
# counts, a function call (a few microseconds) most: what the bundle can derive from the catalog
# ahead of time it does (bundle.py), a constraint that narrows nothing for any provider is one call,
# and per region there are lookups only. tests/policies/test_decision_corpus.py checks that such a
# rewrite changes no answer (some 5000 requests).
# METADATA
# title: Placement policy
# description: >-
#   Where a workload may run: eligible regions and zones, the zone's mapping back to a region
#   and size, and why.
package greenops.placement

import rego.v1

import data.greenops.constraints
import data.greenops.quota
import data.greenops.tenant_rules
import data.greenops.workload

# METADATA
# entrypoint: true
decision := decision_for(input, data.greenops.catalog, data.greenops.config, workload.bundle_rules)

candidates := candidates_for(input, data.greenops.catalog, data.greenops.config, workload.bundle_rules)

# --- The document -----------------------------------------------------------------------------
# decision_for(request, catalog, config, rules): the decision document for request, shaped as the
# query's input ({"workload": {...}, "zone": "FR"?}), the workload checked against the contract
# rules (workload.bundle_rules). Undefined when the workload has no name.
decision_for(request, catalog, config, rules) := _refused(request.workload, problems) if {
	problems := workload.problems(request.workload, catalog, rules)
	count(problems) > 0
} else := _decided(spec, object.get(request, "zone", null), catalog, config) if {
	spec := workload.normalize(request.workload, catalog, config, rules)
}

# A malformed workload: what is wrong with it, and nothing eligible (nor any chain to explain).
_refused(w, problems) := {
	"workload": workload.name_of(w),
	"allowed": false,
	"errors": sort({_labelled(workload.name_of(w), msg) | some msg in problems}),
	"eligible": {},
	"zones": [],
	"selection": null,
	"zoneRegions": {},
	"tenantQuotaVcpu": null,
	"explanation": {"constraintChain": [], "zones": {}},
}

# A well-formed workload (spec: its normal form), and the zone the scheduler chose, or null (a zone
# that is not an eligible one selects nothing).
_decided(spec, zone, catalog, config) := {
	"workload": spec.name,
	"allowed": count(errors) == 0,
	"errors": errors,
	"eligible": eligible(spec, catalog, config),
	"zones": [m.zone | some m in best],
	"selection": object.get(matches, zone, null),
	"zoneRegions": {z: concat("/", [m.provider, m.region]) | some z, m in matches},
	"tenantQuotaVcpu": _tenant_quota(spec.tenant, config),
	"explanation": {"constraintChain": constraints.chain(spec, allowed, narrowed), "zones": matches},
} if {
	allowed := eligible_providers(spec, config)
	narrowed := narrowing(spec, catalog, config)
	best := zone_best(spec, catalog, config)
	matches := {m.zone: m | some m in best}
	refused := constraints.errors(spec, allowed, narrowed, catalog, config) | tenant_rules.errors(spec, config)
	errors := sort({_labelled(spec.name, msg) | some msg in refused})
}

# Errors are ordered by their text; every message of one decision starts with the same label.
_labelled(name, msg) := sprintf("workload %q: %v", [name, msg])

# The tenant's vCPU quota: the scheduler enforces it over the active reservations of both paths.
_tenant_quota(tenant, config) := q if {
	q := quota.cap(tenant, config)
} else := null

# --- Eligible providers: the workload's wish intersected with the platform's default --------
# (and with the tenant's rule, when it has one)
eligible_providers(spec, config) := tenant_rules.allowed_providers(spec.tenant, config, {p |
	some p in spec.eligibleProviders
	p in config.default_providers
})

# --- Eligible regions ----------------------------------------------------------------------
# narrowing(spec, catalog, config): for each eligible provider, how the constraints narrow its
# regions, in constraints.order: `left` maps each constraint to the regions it and the ones before
# it leave (every region, the placeable ones, EU ones when required, those within latency of the
# origin, the explicitly requested one, those with a fitting size), and `sizes` is the size each
# ladder would use (see _sizes; a ladder without one fits nothing). The regions left are objects
# keyed by region, as the bundle ships region sets (from the placeable ones on, each region's value
# is its zone and size ladder), and a constraint that keeps every region leaves the very object
# before it: the widest workloads copy nothing, and only a constraint that does narrow iterates
# the regions still left. Each constraint is applied to every provider at once ({provider:
# regions}), so that one that narrows nothing costs one call, not one per provider.
narrowing(spec, catalog, config) := {p: {
	"left": {
		"provider": catalog.regions[p],
		"placeable": catalog.placeable[p],
		"residency": resident[p],
		"latency": near[p],
		"request": requested[p],
		"size": regions,
	},
	"sizes": sizes[p],
} |
	# The placeable regions are regions of the provider, and the bundle ships the placeable ones
	# each dataResidency allows: the first three steps are lookups.
	resident := {q: catalog.resident[spec.dataResidency][q] | some q in eligible_providers(spec, config)}
	near := _near(spec, catalog, resident)
	requested := tenant_rules.allowed_regions(spec.tenant, config, _requested(spec, catalog, near))
	sizes := _sizes(spec, catalog, requested)
	some p, regions in _sized(catalog, requested, sizes)
}

# eligible(spec, catalog, config): per eligible provider, the regions every constraint allows, sorted.
eligible(spec, catalog, config) := {p: sort(object.keys(n.left.size)) |
	some p, n in narrowing(spec, catalog, config)
}

# Of each provider's regions, those within maxLatency of the origin (all of them without a
# constraint). The bundle gives every region a row of its provider's latency matrix, with the
# region itself at 0 ms, and the region latency is measured from (see bundle.py's latency_origin).
_near(spec, catalog, regions) := regions if {
	spec.maxLatency >= workload.no_latency_constraint
} else := {p: {r: facts | some r, facts in provider_regions; row[r] <= spec.maxLatency} |
	some p, provider_regions in regions
	row := catalog.latency[p][catalog.latency_origin[spec.originRegion][p]]
}

# Of each provider's regions, the explicitly requested one, or none when another provider or region
# is requested.
_requested(spec, catalog, regions) := regions if {
	spec.region == null
	spec.provider == null
} else := {p: _requested_of(spec, catalog, p, provider_regions) | some p, provider_regions in regions}

_requested_of(spec, catalog, p, regions) := regions if {
	spec.region == null
	spec.provider in {null, p}
} else := object.filter(regions, [spec.region]) if {
	spec.provider in {null, p}
	catalog.region_provider[spec.region] == p
} else := {}

# Of each provider's regions, those whose size ladder has a fitting size: all of them when every
# ladder of every provider has one, else those outside the ladders without one.
_sized(catalog, regions, sizes) := regions if {
	count([p | some p, fitting in sizes; count(fitting) < count(catalog.size_tables[p])]) == 0
} else := {p: object.remove(provider_regions, unfit) |
	some p, provider_regions in regions
	unfit := {r |
		some id, members in catalog.ladder_regions[p]
		object.get(sizes[p], id, null) == null
		some r, _ in members
	}
}

# The size a region would use: the first fit in its preference order (cheapest, else smallest),
# read from a table indexed by the catalog's vCPU and memory levels at or above the request (see
# bundle.py). Regions with the same preference order share a table (a ladder); _sizes(spec,
# catalog, regions) is each provider's fitting size per ladder (none above the largest levels).
_sizes(spec, catalog, regions) := {p: {id: size |
	some id, table in tables
	size := table[cpu_level][memory_level]
	size != null
} |
	[cpu_level, memory_level] := _levels(spec, catalog)
	some p, _ in regions
	tables := catalog.size_tables[p]
}

# The request's row and column in every size table ([null, null]: above the largest levels). The
# bundle tabulates the level of every whole vCPU and GB count up to the largest; any other request
# is searched for.
_levels(spec, catalog) := [cpu_level, memory_level] if {
	cpu_level := catalog.cpu_level_of[spec.cpu]
	memory_level := catalog.memory_level_of[spec.memory]
} else := [cpu_level, memory_level] if {
	cpu_level := _level(catalog.cpu_levels, spec.cpu)
	memory_level := _level(catalog.memory_levels, spec.memory)
} else := [null, null]

# The index of the first of levels at or above x; undefined above the largest.
_level(levels, x) := min({i | some i, level in levels; level >= x})

# --- Ranking: lowest latency, then cheapest size (unknown latencies and prices after known ones),
# then provider order, then region name. The decision needs each zone's best region only; the
# candidates rule ranks them all.
#
# _keyed(spec, catalog, narrowing): each eligible region (narrowing as narrowing(...) gives it) as
# [zone, latency, price, provider rank, provider, region, size], its sort key after its zone. An
# unknown latency or price (the provider's matrix or price list has none) is "": a string sorts
# after every number, so it ranks after every known one (latencies and prices are numbers). What
# depends on the provider only is found once per provider (its latencies from the origin: none
# known without one), and each region is then plain lookups (a function call costs more).
_keyed(spec, catalog, narrowing) := [[facts.zone, ms, usd, rank, p, r, size] |
	some p, n in narrowing
	row := object.get(catalog.latency, [p, object.get(catalog.latency_origin, [spec.originRegion, p], null)], {})
	prices := catalog.prices[p]
	rank := catalog.provider_rank[p]
	some r, facts in n.left.size
	size := n.sizes[facts.ladder]
	ms := object.get(row, r, "")
	usd := object.get(prices[r], size, "")
]

# The candidate a key (as _keyed builds it) stands for: "" is an unknown latency or price, null.
_candidate([zone, ms, usd, _, p, r, size]) := {
	"provider": p, "region": r, "zone": zone,
	"latencyMs": object.get({"": null}, ms, ms), "vmSize": size, "hourlyUsd": object.get({"": null}, usd, usd),
}

# zone_best(spec, catalog, config): each eligible zone's best candidate, in zone order. Sorted by
# zone first, each zone's regions follow each other best first, so a zone's best is the one whose
# predecessor is in another zone (the same as ranking all regions and keeping each zone's first:
# the order is total). The decision hands the scheduler each zone's "provider/region" (zoneRegions:
# it records the one it chooses with the reservation, so the record answers "what runs in region
# X" for both paths) and keeps the mapping with the explanation. (The candidate is _candidate(k),
# written out: a call per zone costs more.)
zone_best(spec, catalog, config) := [{
	"provider": p, "region": r, "zone": zone,
	"latencyMs": object.get({"": null}, ms, ms), "vmSize": size, "hourlyUsd": object.get({"": null}, usd, usd),
} |
	keyed := sort(_keyed(spec, catalog, narrowing(spec, catalog, config)))
	before := array.concat([[null]], keyed) # each key's predecessor, at the key's index
	some i, [zone, ms, usd, _, p, r, size] in keyed
	before[i][0] != zone
]

# ranked(spec, catalog, narrowing): every eligible region's candidate, best first (each sorted by
# its key without the zone, then the zone's key itself: provider and region make every key unique,
# so the last element is never compared).
ranked(spec, catalog, narrowing) := [_candidate(k[5]) |
	some k in sort([array.concat(array.slice(z, 1, 6), [z]) | some z in _keyed(spec, catalog, narrowing)])
]

# candidates_for(request, catalog, config, rules): every eligible region of the request's workload,
# ranked; [] for a malformed workload.
candidates_for(request, catalog, config, rules) := ranked(spec, catalog, narrowing(spec, catalog, config)) if {
	spec := workload.normalize(request.workload, catalog, config, rules)
} else := []
