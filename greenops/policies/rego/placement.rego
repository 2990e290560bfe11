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
# called freely instead of being threaded through. Keying on the catalog is cheap when OPA keeps
# its data as AST (opa run --optimize-store-for-read-speed, as the platform and the local servers
# run it); otherwise each query first converts the whole catalog (a few milliseconds).
# METADATA
# title: Placement policy
# description: >-
#   Where a workload may run: eligible regions and zones, the zone's mapping back to a region
#   and size, and why.
package greenops.placement

import rego.v1

import data.greenops.constraints
import data.greenops.quota
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

# A well-formed workload (spec: its normal form), and the zone the scheduler chose, or null.
_decided(spec, zone, catalog, config) := {
	"workload": spec.name,
	"allowed": count(errors) == 0,
	"errors": errors,
	"eligible": eligible(spec, catalog, config),
	"zones": zones(spec, catalog, config),
	"selection": selection(spec, catalog, config, zone),
	"zoneRegions": {z: sprintf("%v/%v", [m.provider, m.region]) | some z, m in matches},
	"tenantQuotaVcpu": _tenant_quota(spec.tenant, config),
	"explanation": {"constraintChain": _chain(spec, catalog, config), "zones": matches},
} if {
	matches := zone_matches(spec, catalog, config)
	errors := sort({_labelled(spec.name, msg) | some msg in _errors(spec, catalog, config)})
}

# Why policy refuses the workload (a set), and how each constraint narrowed the eligible set: see
# constraints.rego.
_errors(spec, catalog, config) := constraints.errors(
	spec, eligible_providers(spec, config), region_sets(spec, catalog, config),
	catalog, config,
)

_chain(spec, catalog, config) := constraints.chain(
	spec, eligible_providers(spec, config),
	region_sets(spec, catalog, config),
)

# Errors are ordered by their text; every message of one decision starts with the same label.
_labelled(name, msg) := sprintf("workload %q: %v", [name, msg])

# The tenant's vCPU quota: the scheduler enforces it over the active reservations of both paths.
_tenant_quota(tenant, config) := q if {
	q := quota.cap(tenant, config)
} else := null

# --- Eligible providers: the workload's wish intersected with the platform's default --------
eligible_providers(spec, config) := {p | some p in spec.eligibleProviders; p in config.default_providers}

# --- Eligible regions ----------------------------------------------------------------------
# region_sets(spec, catalog, config): for each eligible provider, the regions each constraint allows
# ({provider: {constraint: regions}}, constraints as in constraints.order): every region, the
# placeable ones, EU ones when required, those within latency of the origin, the explicitly
# requested one, those with a fitting size.
region_sets(spec, catalog, config) := {p: _region_sets_of(spec, catalog, p) |
	some p in eligible_providers(spec, config)
}

_region_sets_of(spec, catalog, p) := {
	"provider": object.keys(catalog.regions[p]),
	"placeable": object.keys(catalog.placeable[p]),
	"residency": _residency(spec, catalog, p),
	"latency": _within_latency(spec, catalog, p),
	"request": _requested(spec, catalog, p),
	"size": _sized(spec, catalog, p),
}

# eligible(spec, catalog, config): per eligible provider, the regions every constraint allows, sorted.
eligible(spec, catalog, config) := {p: sort(intersection({rs | some rs in sets})) |
	some p, sets in region_sets(spec, catalog, config)
}

# eligible_pairs(spec, catalog, config): the same, as a set of [provider, region].
eligible_pairs(spec, catalog, config) := {[p, r] |
	some p, regions in eligible(spec, catalog, config)
	some r in regions
}

# zones(spec, catalog, config): the eligible regions' Electricity Maps zones, for the scheduler.
zones(spec, catalog, config) := sort({catalog.region_zone[r] | some [_, r] in eligible_pairs(spec, catalog, config)})

_residency(spec, catalog, p) := object.keys(catalog.eu[p]) if spec.dataResidency == "eu"

else := object.keys(catalog.regions[p])

# Regions whose size table has a fitting size.
_sized(spec, catalog, p) := union({object.keys(catalog.ladder_regions[p][id]) | some id, _ in _sizes(spec, catalog, p)})

# Regions within maxLatency of the origin (all regions without a constraint).
_within_latency(spec, catalog, p) := object.keys(catalog.regions[p]) if {
	spec.maxLatency >= workload.no_latency_constraint
} else := _within(catalog.latency[p], _origin(spec, catalog, p), spec.maxLatency)

# The regions at most max_ms from origin in a provider's latency matrix, the origin included.
_within(latency, origin, max_ms) := {r | some r, ms in latency[origin]; ms <= max_ms} | {origin}

# Every region of the provider, narrowed to an explicitly requested region or provider.
_requested(spec, catalog, p) := object.keys(catalog.regions[p]) if {
	spec.region == null
	_provider_requested(spec, p)
} else := {spec.region} if {
	_provider_requested(spec, p)
	catalog.region_provider[spec.region] == p
} else := set()

_provider_requested(spec, _) if spec.provider == null

_provider_requested(spec, p) if spec.provider == p

# The origin may belong to another provider: latency is then measured from that provider's
# region nearest to the origin (by great circle, precomputed in the bundle data).
_origin(spec, catalog, p) := spec.originRegion if catalog.region_provider[spec.originRegion] == p

else := catalog.nearest[spec.originRegion][p]

# The provider's latencies from the workload's origin (its own region at 0 ms); {} without an origin.
_latencies(spec, catalog, p) := object.union(object.get(catalog.latency[p], origin, {}), {origin: 0}) if {
	origin := _origin(spec, catalog, p)
} else := {}

# The size a region would use: the first fit in its preference order (cheapest, else smallest),
# read from a table indexed by the catalog's vCPU and memory levels at or above the request (see
# bundle.py). Regions with the same preference order share a table (a ladder); _sizes(spec,
# catalog, p) is the provider's fitting size per ladder.
_sizes(spec, catalog, p) := {id: size |
	[cpu_level, memory_level] := _levels(spec, catalog)
	some id, table in catalog.size_tables[p]
	size := table[cpu_level][memory_level]
	size != null
}

# The request's row and column in every size table: the same for each provider, found once.
_levels(spec, catalog) := [
	min({i | some i, c in catalog.cpu_levels; c >= spec.cpu}),
	min({j | some j, m in catalog.memory_levels; m >= spec.memory}),
]

# --- Ranking: lowest latency, then cheapest size (unknown latencies and prices after known ones),
# then provider order, then region name. Computed once for every eligible region, whose best per
# zone is the zone's match, or on demand (`candidates`, not part of the decision document).
candidate(spec, catalog, p, r) := _keyed(catalog, p, r, _provider_facts(spec, catalog, p))[7]

# ranked(spec, catalog, pairs): the candidates of the [provider, region] pairs, best first (each
# sorted by its key, which ends with the candidate itself). What depends on the provider only is
# found once per provider; each candidate is then plain lookups (a function call costs more).
ranked(spec, catalog, pairs) := [keyed[7] |
	facts := {p: _provider_facts(spec, catalog, p) | some [p, _] in pairs}
	some keyed in sort([_keyed(catalog, p, r, facts[p]) | some [p, r] in pairs])
]

_provider_facts(spec, catalog, p) := {
	"sizes": _sizes(spec, catalog, p),
	"latencies": _latencies(spec, catalog, p),
	"rank": _provider_rank(catalog, p),
}

# The sort key: is_null sorts false before true, so an unknown latency or price ranks after every
# known one.
_keyed(catalog, p, r, facts) := [is_null(ms), ms, is_null(usd), usd, facts.rank, p, r, c] if {
	size := facts.sizes[catalog.ladder_of[p][r]]
	ms := object.get(facts.latencies, r, null)
	usd := object.get(catalog.prices[p][r], size, null)
	c := {
		"provider": p, "region": r, "zone": catalog.regions[p][r].zone,
		"latencyMs": ms, "vmSize": size, "hourlyUsd": usd,
	}
}

_provider_rank(catalog, p) := i if {
	some i, q in catalog.providers
	q == p
}

# candidates_for(request, catalog, config, rules): every eligible region of the request's workload,
# ranked; [] for a malformed workload.
candidates_for(request, catalog, config, rules) := ranked(spec, catalog, eligible_pairs(spec, catalog, config)) if {
	spec := workload.normalize(request.workload, catalog, config, rules)
} else := []

# selection(spec, catalog, config, zone): the candidate a scheduler-chosen zone maps back to; null
# when no zone is given or it is not an eligible one.
selection(spec, catalog, config, zone) := m if {
	is_string(zone)
	m := zone_match(spec, catalog, config, zone)
} else := null

# zone_match(spec, catalog, config, z): the best-ranked eligible region in zone z.
zone_match(spec, catalog, config, z) := zone_matches(spec, catalog, config)[z]

# zone_matches(spec, catalog, config): what each eligible zone maps back to. The decision hands the
# scheduler each zone's "provider/region" (zoneRegions: it records the one it chooses with the
# reservation, so the record answers "what runs in region X" for both paths) and keeps the mapping
# with the explanation. Every eligible region is ranked once; a zone's match is its first candidate
# in that order (the same as ranking the zone's own regions: the order is total and per candidate).
zone_matches(spec, catalog, config) := {z: in_zone[0] |
	best_first := ranked(spec, catalog, eligible_pairs(spec, catalog, config))
	some z in zones(spec, catalog, config)
	in_zone := [c | some c in best_first; c.zone == z]
}
