# The VmTemplate spec's strings, checked before anything is booked: every one the chart writes into
# an object, a label or a cloud request must keep its rule (pattern, length, names the cloud
# refuses). The rules are the bundle's data.greenops.string_rules, generated from the same module as
# the chart's schema and the CRD (greenops/models/strings.py). The API server checks them again
# against the CRD, but only after this mutating webhook has booked a reservation, and Krateo writes
# the CRD from the schema by its own rules: admission refuses first, with the field and the reason.
# METADATA
# title: VmTemplate spec strings
# description: >-
#   Which of a VmTemplate spec's strings break their rule, and a namespace that is not the object's.
package greenops.spec_fields

import rego.v1

# problems(spec, rules): one message per spec field that breaks its rule, in field order; rules
# maps a spec field to {pattern, max_length, expected, reserved, reserved_by}.
problems(spec, rules) := [sprintf("spec.%v: %v", [field, msg]) |
	some field in sort(object.keys(rules))
	field in object.keys(spec)
	msg := problem(spec[field], rules[field])
]

# problem(value, rule): why value breaks rule; undefined when it keeps it.
problem(value, rule) := sprintf("must be a string (%v)", [rule.expected]) if not is_string(value)

else := sprintf(
	"is %v characters long, more than %v (%v)",
	[count(value), rule.max_length, rule.expected],
) if {
	count(value) > rule.max_length
}

else := sprintf("%v is reserved by %v; choose another name", [shown(value), rule.reserved_by]) if {
	value in rule.reserved
}

else := sprintf("%v is not valid: %v", [shown(value), rule.expected]) if {
	not regex.match(rule.pattern, value)
}

# shown(value): the value quoted with its control characters escaped, cut when long.
shown(value) := json.marshal(value) if count(value) <= 80

else := json.marshal(sprintf("%v...", [substring(value, 0, 77)]))

# namespace_problem(spec, ns): a spec.namespace that is not ns, the object's own namespace. The
# chart puts every object into the VmTemplate's namespace whatever the spec says, and refuses a
# namespace value that differs: the same refusal here comes before a reservation is booked.
namespace_problem(spec, ns) := sprintf(
	concat("", [
		"spec.namespace: %v is not this VmTemplate's namespace %v: its objects are always created in ",
		"its own namespace (remove spec.namespace or set it to %v)",
	]),
	[json.marshal(spec.namespace), json.marshal(ns), json.marshal(ns)],
) if {
	"namespace" in object.keys(spec)
	spec.namespace != ns
}
