# Visibility queries over the scheduler's record of placements, for the platform: only OPA's admin
# token may ask them (system.authz), since they read every tenant's reservations with OPA's own
# credential; a tenant reads its own from the scheduler with its own token (GET $SCHEDULER_URL/reservations,
# through greenops.scheduler: its URL and bearer token). Every placement of either path, Pulumi
# (Placement) and cluster (admission webhook), is a reservation there, so these see both; the VmTemplates
# kube-mgmt replicates would miss the Pulumi path's.
#
#   POST /v1/data/greenops/visibility/placed_in_eu
#   POST /v1/data/greenops/visibility/affected  {"input": {"region": "westeurope"}}
#   POST /v1/data/greenops/visibility           {"input": {"region": "westeurope"}}   all, or the error
#
# Each entry: {key, tenant, path, provider, region, zone, schedulingTime (the reservation's start),
# eu}. provider and region are null for a booking made without them (a bare `POST /scheduling`);
# such a booking is never counted as in the EU.
#
# "Nothing placed" and "could not ask" differ: when the record cannot be read (SCHEDULER_URL unset,
# the scheduler unreachable or answering non-200, e.g. 401 for a missing token), `placed`,
# `placed_in_eu` and `affected` are undefined (the Data API answers without "result", never with
# an empty list) and `error` says why, naming the scheduler's URL and the status. Ask the package
# document to get either the lists or {"error": "..."} in one answer. An empty list means the
# scheduler answered and nothing (matching) is placed.
# METADATA
# title: Visibility queries
# description: >-
#   What runs where, and who is affected if a region goes, from the scheduler's record.
package greenops.visibility

import rego.v1

import data.greenops.catalog
import data.greenops.scheduler

# Undefined when the record was read.
error := answer.error if {
	answer := scheduler.reservations({})
	not answer.ok
}

# The active reservations of both paths. Undefined (not []) when the record could not be read.
placed := [_summary(r) | some r in answer.reservations] if {
	answer := scheduler.reservations({})
	answer.ok
}

_summary(r) := {
	"key": r.key,
	"tenant": r.tenant,
	"path": r.path,
	"provider": object.get(r, "provider", null),
	"region": object.get(r, "region", null),
	"zone": r.zone,
	"schedulingTime": r.start,
	"eu": object.get(catalog.regions, [object.get(r, "provider", null), object.get(r, "region", null), "eu"], false),
}

# Which workloads are placed in the EU. (A comprehension over an undefined `placed` would be [],
# hence the guard, here and below.)
placed_in_eu := [w | some w in placed; w.eu] if is_array(placed)

# Which workloads would be affected if input.region became ineligible: those placed there.
affected := [w | some w in placed; w.region == input.region] if is_array(placed)
