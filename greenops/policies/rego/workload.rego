# Generic workload documents: validation and normalisation.
#
# Accepts the Pulumi path's workload spec (`name`, `region`) and the VmTemplate spec (`vmName`,
# `schedulingLocation`), and applies the same defaults as the Python model. Every function takes what
# it reads as arguments: the spec, the bundle's catalog (data.greenops.catalog: known regions and
# providers) and the platform's config (data.greenops.config: default providers and tenant).
# METADATA
# title: Workload normal form
# description: >-
#   Validation and normalisation of a generic workload, shared by both paths.
package greenops.workload

import rego.v1

no_latency_constraint := 2000

# Fields that drive placement, explicit provider/region requests included: when none of them
# changes, an existing decision is kept.
placement_fields := [
	"cpu", "memory", "duration", "deadline", "maxLatency", "originRegion",
	"eligibleProviders", "dataResidency", "tenant", "provider", "region", "schedulingLocation",
]

# normalize(spec, catalog, config) is the spec with defaults applied; undefined when
# problems(spec, catalog) is not empty.
normalize(spec, catalog, config) := {
	"name": name_of(spec),
	"cpu": spec.cpu,
	"memory": spec.memory,
	"durationHours": duration_hours(spec.duration),
	"deadline": spec.deadline,
	"maxLatency": object.get(spec, "maxLatency", no_latency_constraint),
	"originRegion": spec.originRegion,
	"eligibleProviders": providers_of(spec, config),
	"dataResidency": object.get(spec, "dataResidency", "none"),
	"tenant": object.get(spec, "tenant", config.default_tenant),
	"provider": object.get(spec, "provider", null),
	"region": requested_region(spec),
} if {
	count(problems(spec, catalog)) == 0
}

# problems(spec, catalog) lists every invalid field, each message naming the field and the reason,
# sorted; regions and providers are checked against the catalog.
problems(spec, _) := ["workload spec must be an object"] if not is_object(spec)

problems(spec, catalog) := sort([msg |
	some field in [
		"name", "cpu", "memory", "duration", "deadline", "maxLatency", "originRegion",
		"eligibleProviders", "dataResidency", "tenant", "provider", "region",
	]
	msg := problem(spec, field, catalog)
]) if {
	is_object(spec)
}

# name_of(spec): the workload's name (`name`, else the VmTemplate's `vmName`); undefined without one.
name_of(spec) := spec.name if is_string(spec.name)

else := spec.vmName if is_string(spec.vmName)

# requested_region(spec): the region the workload asks for (`region`, else `schedulingLocation`),
# or null.
requested_region(spec) := spec.region if is_string(spec.region)

else := spec.schedulingLocation if is_string(spec.schedulingLocation)

else := null

# providers_of(spec, config): the providers the workload names, else the platform's default ones.
providers_of(spec, config) := spec.eligibleProviders if {
	is_array(spec.eligibleProviders)
	count(spec.eligibleProviders) > 0
} else := config.default_providers

# problem(spec, field, catalog): what is wrong with one field; undefined when nothing is.
problem(spec, "name", _) := "name: missing (set name or vmName)" if not name_of(spec)

problem(spec, "name", _) := "name: must be a non-empty string" if name_of(spec) == ""

problem(spec, "cpu", _) := "cpu: missing" if not "cpu" in object.keys(spec)

else := "cpu: must be a whole number of vCPUs greater than 0" if {
	not _positive_integer(spec.cpu)
}

problem(spec, "memory", _) := "memory: missing" if not "memory" in object.keys(spec)

else := "memory: must be a number of GB greater than 0" if {
	not _positive_number(spec.memory)
}

problem(spec, "duration", _) := "duration: missing" if not "duration" in object.keys(spec)

else := sprintf(`duration: malformed %v: use hours (6, "6h") or minutes ("90m"), e.g. "1h30m"`, [spec.duration]) if {
	not duration_hours(spec.duration)
}

problem(spec, "deadline", _) := "deadline: missing" if not "deadline" in object.keys(spec)

else := sprintf("deadline: %v is not an RFC 3339 time with an offset", [spec.deadline]) if {
	not deadline_ns(spec.deadline)
}

problem(spec, "maxLatency", _) := "maxLatency: must be a number of milliseconds greater than 0" if {
	"maxLatency" in object.keys(spec)
	not _positive_number(spec.maxLatency)
}

problem(spec, "originRegion", catalog) := "originRegion: missing" if not "originRegion" in object.keys(spec)

else := sprintf("originRegion: unknown region %v", [spec.originRegion]) if {
	not catalog.region_provider[spec.originRegion]
}

problem(spec, "eligibleProviders", catalog) := "eligibleProviders: must be a list of provider names" if {
	"eligibleProviders" in object.keys(spec)
	not is_array(spec.eligibleProviders)
}

else := sprintf("eligibleProviders: unknown provider(s) %v", [concat(", ", unknown)]) if {
	unknown := [sprintf("%v", [p]) | some p in spec.eligibleProviders; not p in catalog.providers]
	count(unknown) > 0
}

problem(spec, "dataResidency", _) := sprintf("dataResidency: %v is not one of eu, none", [spec.dataResidency]) if {
	"dataResidency" in object.keys(spec)
	not spec.dataResidency in {"eu", "none"}
}

problem(spec, "tenant", _) := "tenant: must be a non-empty string" if {
	"tenant" in object.keys(spec)
	not _non_empty_string(spec.tenant)
}

problem(spec, "provider", catalog) := sprintf("provider: unknown provider %v", [spec.provider]) if {
	spec.provider != null
	not spec.provider in catalog.providers
}

problem(spec, "region", catalog) := sprintf("region: unknown region %v", [r]) if {
	r := requested_region(spec)
	r != null
	not catalog.region_provider[r]
}

# duration_hours(d): a number of hours, "6", "6h", "90m" or "1h30m"; undefined when malformed.
duration_hours(d) := d if {
	is_number(d)
	d > 0
}

duration_hours(d) := h if {
	is_string(d)
	regex.match(`^[0-9]+(\.[0-9]+)?$`, d)
	h := to_number(d)
	h > 0
}

duration_hours(d) := h if {
	is_string(d)
	d != ""
	parts := regex.find_all_string_submatch_n(`^(?:([0-9]+(?:\.[0-9]+)?)h)?(?:([0-9]+(?:\.[0-9]+)?)m)?$`, d, 1)
	count(parts) == 1
	h := _num(parts[0][1]) + (_num(parts[0][2]) / 60)
	h > 0
}

deadline_ns(d) := ns if {
	is_string(d)
	regex.match(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`, d)
	ns := time.parse_rfc3339_ns(d)
}

_num("") := 0

_num(s) := to_number(s) if s != ""

_positive_number(x) if {
	is_number(x)
	x > 0
}

_positive_integer(x) if {
	_positive_number(x)
	x == floor(x)
}

_non_empty_string(x) if {
	is_string(x)
	x != ""
}
