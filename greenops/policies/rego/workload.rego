# Generic workload documents: validation and normalisation.
#
# Accepts the Pulumi path's workload spec (`name`, `region`) and the VmTemplate spec (`vmName`,
# `schedulingLocation`), and applies the same defaults as the Python model. Every function takes what
# it reads as arguments: the spec, the bundle's catalog (data.greenops.catalog: known regions and
# providers), the platform's config (data.greenops.config: default providers and tenant) and the
# workload contract (`rules`, see bundle_rules below: data.greenops.workload_contract and data.greenops.string_rules).
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

# The workload contract as the bundle ships it, generated from greenops/models/contract.py and
# strings.py (which the Pulumi path's model and the VmTemplate CRD read too), so that the same form is
# refused on both paths for the same reason: `contract` holds each field's form and bounds
# (data.greenops.workload_contract), `strings` the string rules (data.greenops.string_rules: name
# and tenant here). Only the entry points read it (placement.decision, the admission policy); every
# function below takes it as its `rules` argument, as it takes the catalog and the config.
bundle_rules := {"contract": data.greenops.workload_contract, "strings": data.greenops.string_rules}

# The maxLatency that means "no constraint" (and the default): the contract's maxLatency.default
# (NO_LATENCY_CONSTRAINT_MS in greenops/models/contract.py; workload_test checks they agree).
no_latency_constraint := 2000

# normalize(spec, catalog, config, rules) is the spec with defaults applied; undefined when
# problems(spec, catalog, rules) is not empty.
normalize(spec, catalog, config, rules) := {
	"name": name_of(spec),
	"cpu": spec.cpu,
	"memory": spec.memory,
	"durationHours": duration_hours(spec.duration, rules.contract),
	"deadline": _utc(deadline_ns(spec.deadline, rules.contract)),
	"maxLatency": object.get(spec, "maxLatency", rules.contract.maxLatency.default),
	"originRegion": spec.originRegion,
	"eligibleProviders": providers_of(spec, config),
	"dataResidency": object.get(spec, "dataResidency", "none"),
	"tenant": object.get(spec, "tenant", config.default_tenant),
	"provider": object.get(spec, "provider", null),
	"region": requested_region(spec),
} if {
	count(problems(spec, catalog, rules)) == 0
}

# problems(spec, catalog, rules) lists every invalid field, each message naming the field and the
# reason, sorted; regions and providers are checked against the catalog, forms and bounds against the
# contract (rules). A spec in the usual form (_well_formed) has none, found without asking every
# field its problem.
problems(spec, catalog, rules) := [] if {
	_well_formed(spec, catalog, rules)
} else := field_problems(spec, catalog, rules)

# field_problems(spec, catalog, rules): the same list, from every field's problem(...).
field_problems(spec, _, _) := ["workload spec must be an object"] if not is_object(spec)

field_problems(spec, catalog, rules) := sort([msg |
	some field in [
		"name", "cpu", "memory", "duration", "deadline", "maxLatency", "originRegion",
		"eligibleProviders", "dataResidency", "tenant", "provider", "region", "run", "image",
	]
	msg := problem(spec, field, catalog, rules)
]) if {
	is_object(spec)
}

# _well_formed(spec, catalog, rules): the spec has a `name` and every field in the form its
# problem(spec, field, ...) below accepts. Only a shortcut, a few bodies instead of a call per
# field (a function call is the dearest step of a decision): it implies that no field has a
# problem, and a spec it does not hold for (a VmTemplate's vmName, any problem) is checked field by
# field, so problems is the same either way. workload_test checks the implication on every
# field's refusals.
_well_formed(spec, catalog, rules) if {
	is_object(spec)
	is_string(spec.name)
	not spec_fields.problem(spec.name, rules.strings.vmName)
	_in_contract(spec, rules.contract)
	_known_and_kept(spec, catalog, rules)
	not _run_problem(spec, rules.contract)
	not _image_problem(spec, rules.contract)
}

# cpu, memory, duration, deadline and maxLatency (when given) in the contract's forms and bounds.
_in_contract(spec, contract) if {
	is_number(spec.cpu)
	spec.cpu >= contract.cpu.minimum
	spec.cpu <= contract.cpu.maximum
	spec.cpu == floor(spec.cpu)
	is_number(spec.memory)
	spec.memory >= contract.memory.minimum
	spec.memory <= contract.memory.maximum
	_duration_form(spec.duration, contract)
	hours := duration_hours(spec.duration, contract)
	hours > 0
	hours <= contract.duration.max_hours
	deadline_ns(spec.deadline, contract)
	max_latency := object.get(spec, "maxLatency", contract.maxLatency.default)
	is_number(max_latency)
	max_latency >= contract.maxLatency.minimum
	max_latency <= contract.maxLatency.maximum
	max_latency == floor(max_latency)
}

# A known origin, known providers listed once each (when given), dataResidency eu or none, a tenant
# that keeps its rule, and no provider or region requested or known ones.
_known_and_kept(spec, catalog, rules) if {
	catalog.region_provider[spec.originRegion]
	listed := object.get(spec, "eligibleProviders", [])
	is_array(listed)
	count({p | some p in listed; p in catalog.providers}) == count(listed)
	object.get(spec, "dataResidency", "none") in {"eu", "none"}
	[msg | msg := spec_fields.problem(spec.tenant, rules.strings.tenant)] == [] # none given, or kept
	object.get(spec, "provider", null) in array.concat([null], catalog.providers)

	# null (no region requested) is not a key: its default is true; an unknown region's is false
	object.get(catalog.region_provider, requested_region(spec), requested_region(spec) == null) != false
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

# problem(spec, field, catalog, rules): what is wrong with one field; undefined when nothing is. How
# each field is written, and its bounds, are the workload contract's (rules, see above): the same
# form is refused on both paths, for the same reason.
problem(spec, "name", _, rules) := "name: missing (set name or vmName)" if not name_of(spec)

else := sprintf("name: %v", [msg]) if {
	msg := spec_fields.problem(name_of(spec), rules.strings.vmName)
}

problem(spec, "cpu", _, rules) := "cpu: missing" if not "cpu" in object.keys(spec)

else := sprintf("cpu: %v is not valid: a whole number of vCPUs from %v to %v", [
	_shown(spec.cpu),
	rules.contract.cpu.minimum, rules.contract.cpu.maximum,
]) if {
	not _whole_within(spec.cpu, rules.contract.cpu)
}

problem(spec, "memory", _, rules) := "memory: missing" if not "memory" in object.keys(spec)

else := sprintf("memory: %v is not valid: a number of GB from %v to %v", [
	_shown(spec.memory),
	rules.contract.memory.minimum, rules.contract.memory.maximum,
]) if {
	not _within(spec.memory, rules.contract.memory)
}

problem(spec, "duration", _, rules) := "duration: missing" if not "duration" in object.keys(spec)

else := sprintf("duration: %v is not a duration: %v", [_shown(spec.duration), rules.contract.duration.expected]) if {
	not _duration_form(spec.duration, rules.contract)
}

else := sprintf("duration: %v is not a positive duration: %v", [
	_shown(spec.duration),
	rules.contract.duration.expected,
]) if {
	not duration_hours(spec.duration, rules.contract) > 0
}

else := sprintf(
	"duration: %v is longer than %v h (%v days), the longest run the scheduler places",
	[_shown(spec.duration), rules.contract.duration.max_hours, rules.contract.duration.max_hours / 24],
) if {
	duration_hours(spec.duration, rules.contract) > rules.contract.duration.max_hours
}

problem(spec, "deadline", _, rules) := "deadline: missing" if not "deadline" in object.keys(spec)

else := sprintf("deadline: %v is not valid: %v", [_shown(spec.deadline), rules.contract.deadline.expected]) if {
	not deadline_ns(spec.deadline, rules.contract)
}

problem(spec, "maxLatency", _, rules) := sprintf(
	"maxLatency: %v is not valid: a whole number of milliseconds from %v to %v",
	[_shown(spec.maxLatency), rules.contract.maxLatency.minimum, rules.contract.maxLatency.maximum],
) if {
	"maxLatency" in object.keys(spec)
	not _whole_within(spec.maxLatency, rules.contract.maxLatency)
}

problem(spec, "originRegion", catalog, _) := "originRegion: missing" if not "originRegion" in object.keys(spec)

else := sprintf("originRegion: unknown region %v", [_shown(spec.originRegion)]) if {
	not catalog.region_provider[spec.originRegion]
}

problem(spec, "eligibleProviders", catalog, rules) := sprintf("eligibleProviders: %v is not valid: %v", [
	_shown(spec.eligibleProviders),
	rules.contract.eligibleProviders.expected,
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
	rules.contract.eligibleProviders.expected,
]) if {
	repeated := {p | some i, p in spec.eligibleProviders; some j, q in spec.eligibleProviders; i < j; p == q}
	count(repeated) > 0
}

problem(spec, "dataResidency", _, _) := sprintf(
	"dataResidency: %v is not one of eu, none",
	[_shown(spec.dataResidency)],
) if {
	"dataResidency" in object.keys(spec)
	not spec.dataResidency in {"eu", "none"}
}

problem(spec, "tenant", _, rules) := sprintf("tenant: %v", [msg]) if {
	"tenant" in object.keys(spec)
	msg := spec_fields.problem(spec.tenant, rules.strings.tenant)
}

problem(spec, "provider", catalog, _) := sprintf("provider: unknown provider %v: choose from %v (lowercase)", [
	_shown(spec.provider),
	concat(", ", catalog.providers),
]) if {
	spec.provider != null
	not spec.provider in catalog.providers
}

problem(spec, "region", catalog, _) := sprintf("region: unknown region %v", [_shown(r)]) if {
	r := requested_region(spec)
	r != null
	not catalog.region_provider[r]
}

# run (when given): what the VM runs, {"script": a shell script}, and nothing else; the contract's
# run.expected names the form. The script is not part of the normal form: it decides nothing.
problem(spec, "run", _, rules) := _run_problem(spec, rules.contract)

# image (when given): one of the catalog's named images (data/images.json), which the contract's
# image.names lists; how each maps per provider and region is the renderers' and the chart's.
problem(spec, "image", _, rules) := _image_problem(spec, rules.contract)

_run_problem(spec, contract) := sprintf("run: %v: %v", [why, contract.run.expected]) if {
	"run" in object.keys(spec)
	why := _run_fault(spec.run, contract)
}

# Why a run is not in its form (never its script: a message stays short); undefined when it is.
_run_fault(run, contract) := "not an object" if {
	not is_object(run)
} else := sprintf("unknown field(s) %v", [concat(", ", sort(extra))]) if {
	extra := [k | some k, _ in run; not k in {"script", "env"}]
	count(extra) > 0
} else := "script is missing or not a string" if {
	not is_string(object.get(run, "script", null))
} else := "script is empty" if {
	count(run.script) == 0
} else := sprintf("script has %v characters", [count(run.script)]) if {
	count(run.script) > contract.run.script_max_length
} else := why if {
	why := _env_fault(object.get(run, "env", []), contract)
}

# Why a run's env is not a list of {name, secret} (never a value: there is none here).
_env_fault(env, contract) := "env is not a list" if {
	not is_array(env)
} else := sprintf("env has %v items", [count(env)]) if {
	count(env) > contract.run.env_max_items
} else := sprintf("env[%v] is not an object with name and secret", [i]) if {
	some i, e in env
	not _env_item_shape(e)
} else := sprintf("env[%v].name %v is not an environment variable name", [i, _shown(e.name)]) if {
	some i, e in env
	not regex.match(contract.run.env_name_pattern, e.name)
} else := sprintf("env[%v].secret %v is not a key of a secret", [i, _shown(e.secret)]) if {
	some i, e in env
	not regex.match(contract.run.secret_key_pattern, e.secret)
} else := sprintf("env names %v more than once", [concat(", ", sort(repeated))]) if {
	repeated := {a.name | some i, a in env; some j, b in env; i < j; a.name == b.name}
	count(repeated) > 0
}

_env_item_shape(e) if {
	is_object(e)
	count(object.keys(e)) == 2
	is_string(e.name)
	is_string(e.secret)
}

# room_problem(spec, now_ns, rules): the deadline leaves no room for the run from now_ns; undefined
# when it does (or when the spec is malformed, which problems names). Worded as the Pulumi path's
# model.
room_problem(spec, now_ns, rules) := sprintf(
	"deadline: %v is earlier than now plus the duration (%v): the workload cannot finish in time",
	[_utc(deadline_ns(spec.deadline, rules.contract)), _utc(end)],
) if {
	end := now_ns + (round(duration_hours(spec.duration, rules.contract) * 3600) * 1000000000)
	deadline_ns(spec.deadline, rules.contract) < end
}

# duration_hours(d, contract): the hours of a duration in the contract's form (whole hours as a
# number, or a string "6", "1.5", "6h", "90m", "1h30m"); undefined when malformed. Not bounded:
# problems is. contract: the workload contract (bundle_rules.contract).
duration_hours(d, contract) := d if {
	is_number(d)
	_duration_form(d, contract)
} else := _number(d) if {
	is_string(d)
	regex.match(`^[0-9]+(\.[0-9]+)?$`, d)
} else := sum([_part_hours(p) | some p in regex.find_all_string_submatch_n(`([0-9.]+)([hm])`, d, -1)]) if {
	_duration_form(d, contract)
}

_duration_form(d, _) if {
	is_number(d)
	d == floor(d)
}

_duration_form(d, contract) if {
	is_string(d)
	d != ""
	count(d) <= contract.duration.max_length
	regex.match(contract.duration.pattern, d)
}

_part_hours([_, n, "h"]) := _number(n)

_part_hours([_, n, "m"]) := _number(n) / 60

# to_number keeps the string's literal: "01" would be sent to the scheduler as the JSON number 01,
# which is no JSON (http.send refuses the body). Arithmetic gives the number its canonical form.
_number(s) := to_number(s) + 0

# deadline_ns(d, contract): the deadline written in the contract's form, in ns since the epoch.
deadline_ns(d, contract) := ns if {
	is_string(d)
	regex.match(contract.deadline.pattern, d)
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

# Why an image is not one of the catalog's; undefined when it is.
_image_problem(spec, contract) := sprintf("image: %v is not %v", [_shown(spec.image), contract.image.expected]) if {
	"image" in object.keys(spec)
	not spec.image in {n | some n in contract.image.names}
}
