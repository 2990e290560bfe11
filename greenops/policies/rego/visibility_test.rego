package greenops.visibility_test

import rego.v1

import data.greenops.testdata
import data.greenops.visibility

replicated := {
	"team-a": {
		"a": {"spec": {"vmName": "a", "tenant": "x", "provider": "azure", "schedulingLocation": "francecentral", "schedulingTime": "2030-01-01T00:00:00Z"}},
		"b": {"spec": {"vmName": "b", "provider": "aws", "schedulingLocation": "us-east-1"}},
	},
	"team-b": {
		"c": {"spec": {"vmName": "c", "provider": "gcp", "schedulingLocation": "europe-west9"}},
		"pending": {"spec": {"vmName": "pending"}},
	},
}

test_placed_in_eu if {
	names := {w.name | some w in visibility.placed_in_eu} with data.kubernetes.vmtemplates as replicated
		with data.greenops.catalog as testdata.catalog
	names == {"a", "c"}
}

test_affected_by_losing_a_region if {
	affected := visibility.affected with input as {"region": "us-east-1"}
		with data.kubernetes.vmtemplates as replicated
		with data.greenops.catalog as testdata.catalog
	affected == [{"namespace": "team-a", "name": "b", "tenant": "default", "provider": "aws", "region": "us-east-1", "schedulingTime": null, "eu": false}]
}

test_nothing_replicated_means_nothing_placed if {
	visibility.placed == [] with data.greenops.catalog as testdata.catalog
}
