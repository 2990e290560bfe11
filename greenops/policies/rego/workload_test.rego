package greenops.workload_test

import rego.v1

import data.greenops.testdata
import data.greenops.workload

test_duration_forms if {
	workload.duration_hours(6, testdata.workload_contract) == 6
	workload.duration_hours("6", testdata.workload_contract) == 6
	workload.duration_hours("6h", testdata.workload_contract) == 6
	workload.duration_hours("90m", testdata.workload_contract) == 1.5
	workload.duration_hours("1h30m", testdata.workload_contract) == 1.5
	workload.duration_hours("0.5h", testdata.workload_contract) == 0.5
}

# A leading zero is the same number, and the scheduler's request body is JSON all the same (a
# literal 01 would make http.send refuse it).
test_leading_zeros_are_sent_as_json_numbers if {
	every d in ["01", "01h", "060m", "0h060m"] {
		json.marshal(workload.duration_hours(d, testdata.workload_contract)) == "1"
	}
}

# The contract's one written form: no case folding, no spaces, hours before minutes, whole hours
# as a number (the CRD types the field integer-or-string).
test_malformed_durations_are_undefined if {
	every d in ["", "h", "6 hours", "6d", "-1h", "2H", " 2h", "30m1h", 1.5, true, null, [6]] {
		not workload.duration_hours(d, testdata.workload_contract)
	}
}

test_non_positive_and_overlong_durations_are_problems if {
	named := [d |
		some d in [0, -2, "0h", "0", "745h", 745]
		some p in workload.problems(object.union(testdata.workload, {"duration": d}), testdata.catalog, testdata.rules)
		startswith(p, "duration: ")
	]
	count(named) == 6
}

test_defaults_applied if {
	spec := workload.normalize(testdata.workload, testdata.catalog, testdata.config, testdata.rules)
	spec.maxLatency == 2000
	spec.dataResidency == "none"
	spec.tenant == "default"
	spec.eligibleProviders == ["azure", "gcp", "aws"]
	spec.durationHours == 6
	spec.region == null
}

test_vmtemplate_names_and_requested_region if {
	spec := workload.normalize(
		{
			"vmName": "vm", "cpu": 1, "memory": 2, "duration": "3h",
			"deadline": "2030-01-01T00:00:00Z", "originRegion": "italynorth", "schedulingLocation": "francecentral",
		},
		testdata.catalog, testdata.config, testdata.rules,
	)
	spec.name == "vm"
	spec.region == "francecentral"
}

# problems' shortcut (a spec in the usual form has none) finds what asking every field finds: for
# the test workload with each field left out or set to values each field refuses or accepts, and
# the shortcut is taken for the valid ones.
test_the_shortcut_finds_what_every_field_finds if {
	every spec in variants {
		workload.problems(spec, testdata.catalog, testdata.rules) == field_problems(spec)
	}
	shortcut := [spec | some spec in variants; workload._well_formed(spec, testdata.catalog, testdata.rules)]
	count(shortcut) > 25
	every spec in shortcut {
		field_problems(spec) == []
	}
}

field_problems(spec) := workload.field_problems(spec, testdata.catalog, testdata.rules)

variants := array.concat(
	[object.remove(testdata.workload, [field]) | some field, _ in testdata.workload],
	[object.union(testdata.workload, {field: value}) | some field, values in _values; some value in values],
)

_values := {
	"name": [5, null, "Bad_Name", "-x", concat("", [_long, "x"]), "ok-name"],
	"vmName": ["vm-1", 5],
	"cpu": [0, 2.5, "2", 100001, null, 1, 100000],
	"memory": ["4", 0, 1000001, null, 0.5, 0.001],
	"duration": ["", "6 hours", 0, "0h", "745h", 745, 744, 6, "1h30m", "90m", "1.5", true, _long_digits],
	"deadline": ["tomorrow", 5, "2030-01-01T00:00:00+02:00"],
	"maxLatency": [0, 1.5, "100", 1000001, null, 1, 1000000],
	"originRegion": ["atlantis", 5, null, "westus"],
	"eligibleProviders": ["azure", ["azure", "oracle"], ["gcp", "gcp"], [], ["aws"], null, [5]],
	"dataResidency": ["mars", null, "eu", "none"],
	"tenant": ["", "bad tenant", 5, null, "ok-tenant", concat("", [_long, _long])],
	"provider": ["ibm", null, "azure", 5],
	"region": ["atlantis", "westus", null, 5],
	"schedulingLocation": ["francecentral", "atlantis", 5],
	"run": [
		{"script": "#!/bin/sh\necho done\n"}, {"script": ""}, {"script": 5}, {}, "echo", null,
		{"script": "x", "env": {}}, {"script": concat("", [_long | some _ in numbers.range(1, 250)])},
		{"script": concat("", [_long | some _ in numbers.range(1, 251)])},
		{"script": "x", "env": [{"name": "DB_PASSWORD", "secret": "db-password"}]},
		{"script": "x", "env": [{"name": "db", "secret": "k"}]}, {"script": "x", "env": "DB=k"},
	],
	"image": ["ubuntu-24.04", "debian-12", "ubuntu-22.04", "windows", "Ubuntu-24.04", "", 5, null],
}

_long := "abcdefghijklmnopqrstuvwxyz0123456789abcd" # 40 characters

_long_digits := "123456789012345678901234567890123" # 33 digits, longer than a duration may be

test_each_bad_field_is_named if {
	bad := {
		"cpu": 0, "memory": "lots", "duration": "6 hours", "deadline": "tomorrow", "maxLatency": -1,
		"originRegion": "atlantis", "eligibleProviders": ["azure", "oracle"], "dataResidency": "mars",
		"tenant": "", "provider": "ibm",
	}
	problems := workload.problems(testdata.with_fields(bad), testdata.catalog, testdata.rules)
	count(problems) == 10
	every field, _ in bad {
		some p in problems
		startswith(p, sprintf("%v:", [field]))
	}
}

test_a_run_is_checked_and_kept_out_of_the_normal_form if {
	ok := object.union(testdata.workload, {"run": {"script": "#!/bin/sh\necho done\n"}})
	workload.problems(ok, testdata.catalog, testdata.rules) == []
	not "run" in object.keys(workload.normalize(ok, testdata.catalog, testdata.config, testdata.rules))
	long := concat("", [_long | some _ in numbers.range(1, 251)]) # 10 040 characters
	runs := [
		{"script": long}, {"script": ""}, {"script": 5}, {}, "echo", {"script": "x", "env": {}},
		{"script": "x", "token": "t"}, {"script": "x", "env": [{"name": "db", "secret": "k"}]},
		{"script": "x", "env": [{"name": "DB", "secret": "a b"}]}, {"script": "x", "env": [{"name": "DB"}]},
		{"script": "x", "env": [{"name": "DB", "secret": "k", "value": "hunter2"}]},
		{"script": "x", "env": [{"name": "DB", "secret": "k"}, {"name": "DB", "secret": "j"}]},
		{"script": "x", "env": [{"name": "DB", "secret": "k"} | some _ in numbers.range(1, 33)]},
	]
	found := [p | some run in runs; some p in workload.problems(_with_run(run), testdata.catalog, testdata.rules)]
	count(found) == count(runs)
	every p in found {
		startswith(p, "run: ")
		endswith(p, testdata.workload_contract.run.expected)
		count(p) < 400 # never the script itself
		not contains(p, "hunter2") # nor a value
	}
	with_env := object.union(ok, {"run": {"script": "x", "env": [{"name": "DB_PASSWORD", "secret": "db.password"}]}})
	workload.problems(with_env, testdata.catalog, testdata.rules) == []
}

_with_run(run) := object.union(testdata.workload, {"run": run})

test_an_image_is_one_of_the_catalogs_and_decides_nothing if {
	ok := object.union(testdata.workload, {"image": "debian-12"})
	workload.problems(ok, testdata.catalog, testdata.rules) == []
	not "image" in object.keys(workload.normalize(ok, testdata.catalog, testdata.config, testdata.rules))
	bad := [i | some i in ["windows", "Debian-12", "", 5, null]]
	found := [p |
		some image in bad
		some p in workload.problems(object.union(testdata.workload, {"image": image}), testdata.catalog, testdata.rules)
	]
	count(found) == count(bad)
	every p in found {
		startswith(p, "image: ")
		endswith(p, " is not one of the catalog's images: ubuntu-22.04, debian-12, ubuntu-24.04")
	}
}

test_missing_fields_are_named if {
	problems := workload.problems({"name": "x"}, testdata.catalog, testdata.rules)
	problems == ["cpu: missing", "deadline: missing", "duration: missing", "memory: missing", "originRegion: missing"]
}

test_fractional_cpu_is_refused if {
	"cpu: 2.5 is not valid: a whole number of vCPUs from 1 to 100000" in workload.problems(
		testdata.with_fields({"cpu": 2.5}),
		testdata.catalog,
		testdata.rules,
	)
}

test_non_object_spec if {
	workload.problems("nope", testdata.catalog, testdata.rules) == ["workload spec must be an object"]
}

# The workload's own providers, else the platform's (the config's), never the bundle's data.
test_providers_come_from_the_spec_or_the_given_config if {
	config := object.union(testdata.config, {"default_providers": ["gcp"]})
	workload.providers_of({}, config) == ["gcp"]
	workload.providers_of({"eligibleProviders": []}, config) == ["gcp"]
	workload.providers_of({"eligibleProviders": ["aws"]}, config) == ["aws"]
	workload.normalize(testdata.workload, testdata.catalog, config, testdata.rules).eligibleProviders == ["gcp"]
	workload.normalize(testdata.workload, testdata.catalog, config, testdata.rules).tenant == "default"
}

# Regions and providers are known by the catalog given, not the bundle's.
test_problems_read_the_given_catalog if {
	workload.problems(testdata.with_fields({"originRegion": "westus"}), testdata.catalog, testdata.rules) == []
	without_westus := json.patch(testdata.catalog, [{"op": "remove", "path": "/region_provider/westus"}])
	workload.problems(testdata.with_fields({"originRegion": "westus"}), without_westus, testdata.rules) == [
		`originRegion: unknown region "westus"`,
	]
}

# The maxLatency meaning "no constraint" is the contract's default (the bundle's is checked against
# the model's by tests/policies/test_opa_integration.py).
test_no_latency_constraint_is_the_contracts_default if {
	workload.no_latency_constraint == testdata.workload_contract.maxLatency.default
}

# The bundle's rules are its data, read by the entry points only.
test_bundle_rules_are_the_bundles_contract_and_string_rules if {
	r := workload.bundle_rules with data.greenops.workload_contract as testdata.workload_contract
		with data.greenops.string_rules as testdata.string_rules
	r == testdata.rules
}
