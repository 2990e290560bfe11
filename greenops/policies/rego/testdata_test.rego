# A small catalog for the policy unit tests: the thesis' 4-region Azure latency example
# (listing 3.17) plus two regions each on GCP and AWS.
package greenops.testdata

import rego.v1

region(zone, eu) := {"zone": zone, "eu": eu, "country": "XX", "placeable": true, "gaps": []}

catalog := {
	"providers": ["azure", "gcp", "aws"],
	"provider_rank": {"azure": 0, "gcp": 1, "aws": 2},
	"regions": regions,
	# as bundle.py derives them: each placeable region's zone and size ladder (every one's is L0)
	"placeable": placeable,
	"resident": {
		"eu": placeable_in_the_eu,
		"none": placeable,
	},
	"region_provider": {
		"italynorth": "azure", "francecentral": "azure", "japaneast": "azure", "westus": "azure",
		"norwayeast": "azure", "europe-west8": "gcp", "europe-west9": "gcp", "eu-south-1": "aws",
		"us-east-1": "aws",
	},
	"latency_origin": {
		"italynorth": {"azure": "italynorth", "gcp": "europe-west8", "aws": "eu-south-1"},
		"westus": {"azure": "westus", "gcp": "europe-west9", "aws": "us-east-1"},
		"europe-west8": {"azure": "italynorth", "gcp": "europe-west8", "aws": "eu-south-1"},
	},
	"latency": {
		"azure": {
			"italynorth": {"italynorth": 0, "japaneast": 249, "francecentral": 24, "westus": 165},
			"japaneast": {"italynorth": 252, "japaneast": 0, "francecentral": 252, "westus": 108},
			"francecentral": {"italynorth": 25, "japaneast": 251, "francecentral": 0, "westus": 150},
			"westus": {"italynorth": 165, "japaneast": 108, "francecentral": 150, "westus": 0},
			"norwayeast": {"norwayeast": 0},
		},
		"gcp": {
			"europe-west8": {"europe-west8": 0, "europe-west9": 20},
			"europe-west9": {"europe-west8": 20, "europe-west9": 0},
		},
		"aws": {
			"eu-south-1": {"eu-south-1": 0, "us-east-1": 100},
			"us-east-1": {"eu-south-1": 100, "us-east-1": 0},
		},
	},
	# sizes: azure Standard_E2as_v4 (2, 16), Standard_F4s_v2 (4, 8); gcp e2-standard-4 (4, 16);
	# aws c6a.xlarge (4, 8). Tables are indexed [cpu level][memory level].
	"cpu_levels": [2, 4],
	"memory_levels": [8, 16],
	"cpu_level_of": [0, 0, 0, 1, 1],
	"memory_level_of": [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
	"size_tables": {
		"azure": {"L0": [["Standard_E2as_v4", "Standard_E2as_v4"], ["Standard_F4s_v2", null]]},
		"gcp": {"L0": [["e2-standard-4", "e2-standard-4"], ["e2-standard-4", "e2-standard-4"]]},
		"aws": {"L0": [["c6a.xlarge", null], ["c6a.xlarge", null]]},
	},
	"ladder_regions": {p: {"L0": {r: true | some r, _ in provider_regions}} | some p, provider_regions in regions},
	"prices": {
		"azure": {r: {} | some r in ["italynorth", "francecentral", "japaneast", "westus", "norwayeast"]},
		"gcp": {"europe-west8": {"e2-standard-4": 0.16}, "europe-west9": {"e2-standard-4": 0.15}},
		"aws": {"eu-south-1": {"c6a.xlarge": 0.15}, "us-east-1": {"c6a.xlarge": 0.15}},
	},
}

# The catalog's regions; norwayeast cannot host workloads.
regions := {
	"azure": {
		"italynorth": region("IT-NO", true),
		"francecentral": region("FR", true),
		"japaneast": region("JP-TK", false),
		"westus": region("US-CAL-CISO", false),
		"norwayeast": {
			"zone": "NO-NO1", "eu": false, "country": "NO", "placeable": false,
			"gaps": ["no carbon data for zone NO-NO1"],
		},
	},
	"gcp": {"europe-west8": region("IT-NO", true), "europe-west9": region("FR", true)},
	"aws": {"eu-south-1": region("IT-NO", true), "us-east-1": region("US-MIDA-PJM", false)},
}

placeable[p] := {r: {"zone": doc.zone, "ladder": "L0"} |
	some r, doc in provider_regions
	doc.placeable
} if {
	some p, provider_regions in regions
}

placeable_in_the_eu[p] := {r: facts |
	some r, facts in provider_placeable
	regions[p][r].eu
} if {
	some p, provider_placeable in placeable
}

config := {
	"default_providers": ["azure", "gcp", "aws"],
	"tenant_vcpu_quota": {"small": 8},
	"default_tenant_vcpu_quota": null,
	"default_tenant": "default",
	"scheduler": {"timeout_seconds": 1, "attempts": 2, "req_timeout": 3},
}

workload := {
	"name": "w1", "cpu": 2, "memory": 4, "duration": "6h", "deadline": "2030-01-01T00:00:00Z",
	"originRegion": "italynorth", "maxLatency": 2000,
}

with_fields(fields) := object.union(workload, fields)

# A few string rules in the bundle's shape (the real ones are generated from
# greenops/models/strings.py and checked against a real OPA by tests/policies): enough to show each
# way a value can break one.
string_rules := {
	"vmName": rule(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`, 40, "a short DNS label"),
	"namespace": rule(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`, 63, "a DNS-1123 label"),
	"adminUsername": object.union(rule(`^[a-z_][a-z0-9_-]{0,31}$`, 32, "a Linux user name"), {
		"reserved": ["admin", "root"], "reserved_by": "Azure for a VM's administrator",
	}),
	"sshPublicKey": rule(`^ssh-ed25519 [A-Za-z0-9+/]+={0,3}( [^\x00-\x1f\x7f]*)?$`, 8192, "one OpenSSH key line"),
	"tenant": rule(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`, 63, "a Kubernetes label value"),
}

rule(pattern, max_length, expected) := {
	"pattern": pattern, "max_length": max_length, "expected": expected,
	"reserved": [], "reserved_by": "",
}

# The workload contract in the bundle's shape for this catalog's providers: a copy of
# greenops.models.contract.bundle_document(["azure", "gcp", "aws"], the catalog's images), which
# tests/policies/test_opa_integration.py checks it equals.
workload_contract := {
	"cpu": {"minimum": 1, "maximum": 100000},
	"memory": {"minimum": 0.001, "maximum": 1000000},
	"maxLatency": {"minimum": 1, "maximum": 1000000, "default": 2000},
	"duration": {
		"pattern": `^(?:[0-9]+(?:\.[0-9]+)?|(?:[0-9]+(?:\.[0-9]+)?h)?(?:[0-9]+(?:\.[0-9]+)?m)?)$`,
		"max_length": 32,
		"max_hours": 744,
		"expected": concat("", [
			"whole hours as a number (6), or a string of hours and/or minutes in that order, lowercase, ",
			`without spaces: "6", "1.5", "6h", "90m", "1h30m"`,
		]),
	},
	"deadline": {
		"pattern": `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`,
		"expected": "an RFC 3339 time with an offset, e.g. 2030-01-01T00:00:00Z",
	},
	"eligibleProviders": {"expected": concat("", [
		"a list of distinct provider names, each one of azure, gcp, aws (lowercase), ",
		"e.g. [azure, gcp]",
	])},
	"run": {
		"script_max_length": 10000,
		"env_max_items": 32,
		"env_name_pattern": `^[A-Z_][A-Z0-9_]{0,63}$`,
		"secret_key_pattern": `^[-._a-zA-Z0-9]{1,253}$`,
		"expected": concat("", [
			"an object with script (a shell script of 1 to 10000 characters) and, optionally, env: ",
			"at most 32 of {name: an environment variable name (A-Z, 0-9, _), secret: the key of its value}",
		]),
	},
	"image": {
		"names": ["ubuntu-22.04", "debian-12", "ubuntu-24.04"],
		"expected": "one of the catalog's images: ubuntu-22.04, debian-12, ubuntu-24.04",
	},
}

# What workload.rego's functions take as their `rules` argument (workload.bundle_rules in the bundle).
rules := {"contract": workload_contract, "strings": string_rules}
