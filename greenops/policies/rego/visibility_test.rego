package greenops.visibility_test

import rego.v1

import data.greenops.testdata
import data.greenops.visibility

reservation(key, path, provider, region, zone) := {
	"key": key, "tenant": "data", "path": path, "phase": "Scheduled", "reason": null, "zone": zone,
	"provider": provider, "region": region, "start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z",
	"cpu": 2, "jobs": 1, "revision": 1, "workload": null, "updated_at": "2029-12-31T00:00:00Z",
}

# The record as GET /reservations answers it: one placement of each path, and one without a region.
record := [
	reservation("dev/etl/3f2a", "pulumi", "azure", "francecentral", "FR"),
	reservation("team-a/b/9c1d", "cluster", "aws", "us-east-1", "US-MIDA-PJM"),
	reservation("team-b/c/77e0", "cluster", "gcp", "europe-west9", "FR"),
	reservation("api/0b1e", "api", null, null, "FR"),
]

# The scheduler (http.send mocks) answers the record only to the request scheduler.rego builds (a GET of
# /reservations with the token from the environment and the configured timeout); anything else
# is a 418 naming what was sent, so a wrong request fails the test visibly.
mock_up(req) := {"status_code": 200, "body": {"reservations": record}} if {
	req.method == "GET"
	req.url == "http://sched:8080/reservations"
	req.headers == {"Authorization": "Bearer s3cret"}
	req.timeout == "1s"
	req.raise_error == false
} else := {"status_code": 418, "body": {"detail": sprintf("%v", [req])}}

mock_empty(_) := {"status_code": 200, "body": {"reservations": []}}

mock_down(_) := {
	"status_code": 0,
	"error": {"code": "eval_http_send_network_error", "message": "connection refused"},
}

mock_401(_) := {"status_code": 401, "body": {"detail": "a bearer token is required"}}

mock_garbled(_) := {"status_code": 200, "body": {"items": []}}

env := {"env": {"SCHEDULER_URL": "http://sched:8080/", "GREENOPS_SCHEDULER_TOKEN": "s3cret"}}

test_both_paths_are_listed if {
	placed := visibility.placed with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_up
	{[w.key, w.path] | some w in placed} == {
		["dev/etl/3f2a", "pulumi"], ["team-a/b/9c1d", "cluster"],
		["team-b/c/77e0", "cluster"], ["api/0b1e", "api"],
	}
	placed[0] == {
		"key": "dev/etl/3f2a", "tenant": "data", "path": "pulumi", "provider": "azure",
		"region": "francecentral", "zone": "FR", "schedulingTime": "2030-01-01T02:00:00Z", "eu": true,
	}
	not visibility.error with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_up
}

test_placed_in_eu if {
	keys := {w.key | some w in visibility.placed_in_eu} with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_up

	# us-east-1 is not in the EU; a booking without a region is not known to be
	keys == {"dev/etl/3f2a", "team-b/c/77e0"}
}

test_affected_by_losing_a_region if {
	affected := visibility.affected with input as {"region": "us-east-1"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_up
	affected == [{
		"key": "team-a/b/9c1d", "tenant": "data", "path": "cluster", "provider": "aws", "region": "us-east-1",
		"zone": "US-MIDA-PJM", "schedulingTime": "2030-01-01T02:00:00Z", "eu": false,
	}]
	missed := visibility.affected with input as {"region": "westus"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_up
	missed == []
}

test_an_empty_record_is_an_empty_list_not_an_error if {
	doc := visibility with input as {"region": "us-east-1"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_empty
	doc == {"placed": [], "placed_in_eu": [], "affected": []}
}

# Functions cannot be passed around, so one mock dispatches on a mode set per test (one definition
# per mode, as in admission_test.rego).
mock(req) := mock_down(req) if data.test.scheduler == "down"

mock(req) := mock_401(req) if data.test.scheduler == "401"

mock(req) := mock_garbled(req) if data.test.scheduler == "garbled"

mock(req) := mock_up(req) if data.test.scheduler == "up"

# The package document when the record cannot be read: only the error, naming URL and status.
unread(mode, runtime) := doc if {
	doc := visibility with input as {"region": "us-east-1"}
		with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as runtime
		with http.send as mock
		with data.test.scheduler as mode
}

test_scheduler_down_is_an_error_not_an_empty_list if {
	unread("down", env) == {"error": "scheduler at http://sched:8080 unreachable: connection refused"}
	not visibility.placed_in_eu with data.greenops.catalog as testdata.catalog
		with data.greenops.config as testdata.config
		with opa.runtime as env
		with http.send as mock_down
}

test_a_refused_request_names_the_status if {
	unread("401", env) == {"error": "scheduler at http://sched:8080 answered HTTP 401: a bearer token is required"}
}

test_an_answer_without_a_list_is_an_error if {
	unread("garbled", env) == {"error": "scheduler at http://sched:8080 answered HTTP 200 without a reservations list"}
}

test_no_scheduler_url_is_an_error if {
	unread("up", {"env": {}}) == {"error": "SCHEDULER_URL is not set in OPA's environment"}
}
