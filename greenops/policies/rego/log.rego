# What OPA's decision logs leave out. OPA runs with decision logs on the console
# (--set=decision_logs.console=true: greenops.policies.DECISION_LOG_FLAGS) and, before writing each
# event, evaluates data.system.log.mask (its default mask_decision) with the event as input: every
# JSON pointer in `mask` is erased from it, and the event lists what was erased.
#
# What the decisions carry: the placement, quota, visibility and workload queries' input is a
# workload (or a region), the webhook's an AdmissionReview (the VmTemplate, the user's name and
# groups); none holds a credential. OPA's API tokens arrive in the request's Authorization header,
# which is system.authz's input, never a decision's; the scheduler's token is only in http.send's
# request, which reaches the logs only through the non-deterministic builtin cache. So this is a
# guard, not a clean-up: any key named like a credential, at any depth of a decision's input or of
# a result the bundle's policy did not compute (an admin's ad-hoc query of opa.runtime() would
# return every token), is erased, and so is the builtin cache.
# METADATA
# title: Decision log masking
# description: >-
#   Erases every credential-like field from decision log events before OPA writes them.
package system.log

import rego.v1

# Erased whole: http.send's requests, with the scheduler's bearer token, were it ever logged.
mask contains "/nd_builtin_cache"

mask contains _pointer("input", path) if {
	walk(input.input, [path, _])
	_credential(path)
}

# The results of the bundle's own decisions are the policy's documents, which hold no credential
# (the scheduler's token is never a rule's value: scheduler.rego), and the largest events: they
# are not walked. Every other document an admin reads is.
mask contains _pointer("result", path) if {
	not input.query
	not _own_decision(input.path)
	walk(input.result, [path, _])
	_credential(path)
}

# An ad-hoc query's result (POST /v1/query: its event has `query`, not `path`) is a typed list that
# OPA's masking cannot step into, so a pointer into it erases nothing: the result is erased whole.
mask contains "/result" if {
	input.query
	walk(input.result, [path, _])
	_credential(path)
}

_own_decision(path) if startswith(path, "greenops/")

_own_decision("system/main")

_credential(path) if {
	count(path) > 0
	key := path[count(path) - 1]
	is_string(key)
	regex.match(`(?i)(token|secret|passw(or)?d|passphrase|authorization|cookie|(api|access|private)[-_]?key)`, key)
}

# OPA's pointers split on "/" and look keys up as written: a key with other characters than these
# cannot be named, so the object holding it is erased instead (the whole input or result at worst).
_pointer(root, path) := concat("/", array.concat(["", root], [sprintf("%v", [p]) |
	some p in array.slice(path, 0, _nameable(path))
]))

_nameable(path) := min({i | some i, p in path; not _plain(p)} | {count(path)})

_plain(p) if is_number(p)

_plain(p) if {
	is_string(p)
	regex.match(`^[A-Za-z0-9_.~-]+$`, p)
}
