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

import data.greenops.spec_fields

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
	"deadline": _utc(deadline_ns(spec.deadline)),
	"maxLatency": object.get(spec, "maxLatency", _contract.maxLatency.default),
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

# problem(spec, field, catalog): what is wrong with one field; undefined when nothing is. How each
# field is written, and its bounds, are the workload contract's (data.greenops.workload_contract and
# data.greenops.string_rules, generated from greenops/models/contract.py and strings.py, which the
# Pulumi path's model and the VmTemplate CRD read too): the same form is refused on both paths, for
# the same reason. They are data, not arguments: one contract, never varied by a caller.
problem(spec, "name", _) := "name: missing (set name or vmName)" if not name_of(spec)

else := sprintf("name: %v", [msg]) if {
	msg := spec_fields.problem(name_of(spec), data.greenops.string_rules.vmName)
}

problem(spec, "cpu", _) := "cpu: missing" if not "cpu" in object.keys(spec)

else := sprintf("cpu: %v is not valid: a whole number of vCPUs from %v to %v", [
	_shown(spec.cpu),
	_contract.cpu.minimum, _contract.cpu.maximum,
]) if {
	not _whole_within(spec.cpu, _contract.cpu)
}

problem(spec, "memory", _) := "memory: missing" if not "memory" in object.keys(spec)

else := sprintf("memory: %v is not valid: a number of GB from %v to %v", [
	_shown(spec.memory),
	_contract.memory.minimum, _contract.memory.maximum,
]) if {
	not _within(spec.memory, _contract.memory)
}

problem(spec, "duration", _) := "duration: missing" if not "duration" in object.keys(spec)

else := sprintf("duration: %v is not a duration: %v", [_shown(spec.duration), _contract.duration.expected]) if {
	not _duration_form(spec.duration)
}

else := sprintf("duration: %v is not a positive duration: %v", [
	_shown(spec.duration),
	_contract.duration.expected,
]) if {
	not duration_hours(spec.duration) > 0
}

else := sprintf(
	"duration: %v is longer than %v h (%v days), the longest run the scheduler places",
	[_shown(spec.duration), _contract.duration.max_hours, _contract.duration.max_hours / 24],
) if {
	duration_hours(spec.duration) > _contract.duration.max_hours
}

problem(spec, "deadline", _) := "deadline: missing" if not "deadline" in object.keys(spec)

else := sprintf("deadline: %v is not valid: %v", [_shown(spec.deadline), _contract.deadline.expected]) if {
	not deadline_ns(spec.deadline)
}

problem(spec, "maxLatency", _) := sprintf("maxLatency: %v is not valid: a whole number of milliseconds from %v to %v", [
	_shown(spec.maxLatency),
	_contract.maxLatency.minimum, _contract.maxLatency.maximum,
]) if {
	"maxLatency" in object.keys(spec)
	not _whole_within(spec.maxLatency, _contract.maxLatency)
}

problem(spec, "originRegion", catalog) := "originRegion: missing" if not "originRegion" in object.keys(spec)

else := sprintf("originRegion: unknown region %v", [_shown(spec.originRegion)]) if {
	not catalog.region_provider[spec.originRegion]
}

problem(spec, "eligibleProviders", catalog) := sprintf("eligibleProviders: %v is not valid: %v", [
	_shown(spec.eligibleProviders),
	_contract.eligibleProviders.expected,
]) if {
	"eligibleProviders" in object.keys(spec)
	not is_array(spec.eligibleProviders)
}

else := sprintf("eligibleProviders: unknown provider(s) %v: choose from %v (lowercase)", [
	concat(", ", unknown),
	concat(", ", catalog.providers),
]) if {
	unknown := [sprintf("%v", [p]) | some p in spec.eligibleProviders; not p in catalog.providers]
	count(unknown) > 0
}

else := sprintf("eligibleProviders: %v listed more than once: %v", [
	concat(", ", sort(repeated)),
	_contract.eligibleProviders.expected,
]) if {
	repeated := {p | some i, p in spec.eligibleProviders; some j, q in spec.eligibleProviders; i < j; p == q}
	count(repeated) > 0
}

problem(spec, "dataResidency", _) := sprintf(
	"dataResidency: %v is not one of eu, none",
	[_shown(spec.dataResidency)],
) if {
	"dataResidency" in object.keys(spec)
	not spec.dataResidency in {"eu", "none"}
}

problem(spec, "tenant", _) := sprintf("tenant: %v", [msg]) if {
	"tenant" in object.keys(spec)
	msg := spec_fields.problem(spec.tenant, data.greenops.string_rules.tenant)
}

problem(spec, "provider", catalog) := sprintf("provider: unknown provider %v: choose from %v (lowercase)", [
	_shown(spec.provider),
	concat(", ", catalog.providers),
]) if {
	spec.provider != null
	not spec.provider in catalog.providers
}

problem(spec, "region", catalog) := sprintf("region: unknown region %v", [_shown(r)]) if {
	r := requested_region(spec)
	r != null
	not catalog.region_provider[r]
}

# room_problem(spec, now_ns): the deadline leaves no room for the run from now_ns; undefined when
# it does (or when the spec is malformed, which problems names). Worded as the Pulumi path's model.
room_problem(spec, now_ns) := sprintf(
	"deadline: %v is earlier than now plus the duration (%v): the workload cannot finish in time",
	[_utc(deadline_ns(spec.deadline)), _utc(end)],
) if {
	end := now_ns + (round(duration_hours(spec.duration) * 3600) * 1000000000)
	deadline_ns(spec.deadline) < end
}

_contract := data.greenops.workload_contract

# The maxLatency that means "no constraint" (and the default).
no_latency_constraint := _contract.maxLatency.default

# duration_hours(d): the hours of a duration in the contract's form (whole hours as a number, or a
# string "6", "1.5", "6h", "90m", "1h30m"); undefined when malformed. Not bounded: problems is.
duration_hours(d) := d if {
	is_number(d)
	_duration_form(d)
} else := to_number(d) if {
	is_string(d)
	regex.match(`^[0-9]+(\.[0-9]+)?$`, d)
} else := sum([_part_hours(p) | some p in regex.find_all_string_submatch_n(`([0-9.]+)([hm])`, d, -1)]) if {
	_duration_form(d)
}

_duration_form(d) if {
	is_number(d)
	d == floor(d)
}

_duration_form(d) if {
	is_string(d)
	d != ""
	count(d) <= _contract.duration.max_length
	regex.match(_contract.duration.pattern, d)
}

_part_hours([_, n, "h"]) := to_number(n)

_part_hours([_, n, "m"]) := to_number(n) / 60

# deadline_ns(d): the deadline written in the contract's form, in ns since the epoch.
deadline_ns(d) := ns if {
	is_string(d)
	regex.match(_contract.deadline.pattern, d)
	ns := time.parse_rfc3339_ns(d)
}

# An instant as the platform writes it (RFC 3339, UTC, whole seconds), as the model stores it.
_utc(ns) := time.format([ns, "UTC", "2006-01-02T15:04:05Z07:00"])

# A value as errors show it on both paths: a string as JSON, anything else as it is.
_shown(x) := spec_fields.shown(x) if is_string(x)

else := json.marshal(x)

_within(x, bounds) if {
	is_number(x)
	x >= bounds.minimum
	x <= bounds.maximum
}

_whole_within(x, bounds) if {
	_within(x, bounds)
	x == floor(x)
}
