# Whose workload it is, on the cluster path: the tenant comes from the VmTemplate's namespace,
# never from a free-form spec field (a new name in the spec would otherwise get a fresh quota).
#
# The tenant is the Namespace's label greenops.io/tenant, read from the copy kube-mgmt replicates
# (--replicate-cluster=v1/namespaces) into data.kubernetes.namespaces[name], which the admission
# policy hands to these functions as `namespaces`. Only cluster admins label namespaces, so a tenant
# cannot name itself into someone else's quota.
# METADATA
# title: Tenancy
# description: >-
#   Whose workload it is on the cluster path: the namespace's greenops.io/tenant label.
package greenops.tenancy

import rego.v1

label := "greenops.io/tenant"

# of_namespace(ns, namespaces, config) is {"tenant": t} or {"error": reason}. A namespace without
# the label belongs to config.default_tenant: the same default the Pulumi path and the scheduler
# use, with the default quota (default_tenant_vcpu_quota). A namespace OPA has no copy of is an
# error, not the default tenant: kube-mgmt may be catching up on a namespace just created, and a
# booking made under the wrong tenant would stay with it until the workload is placed again.
of_namespace(ns, namespaces, config) := _of_label(ns, value, config) if {
	is_object(namespaces[ns])
	value := object.get(namespaces[ns], ["metadata", "labels", label], null)
} else := {"error": sprintf(
	concat("", [
		"namespace %v is not known to OPA (kube-mgmt replicates namespaces into data.kubernetes.namespaces), ",
		"so its tenant cannot be told; retry once it is replicated",
	]),
	[ns],
)}

# The tenant of a known namespace ns whose label is `value` (null without one).
_of_label(ns, value, config) := {"tenant": value} if {
	is_string(value)
	value != ""
} else := {"error": sprintf(
	"namespace %v: its label %v is empty; set it to the tenant's name or remove it",
	[ns, label],
)} if {
	value == ""
} else := {"tenant": config.default_tenant}

# mismatch(ns, spec_tenant, tenant, namespaces): why a spec's tenant that differs from its
# namespace's is refused.
mismatch(ns, spec_tenant, tenant, namespaces) := sprintf(
	concat("", [
		"spec.tenant %q disagrees with namespace %v's label %v %q: the tenant is the namespace's ",
		"(remove spec.tenant or set it to %q)",
	]),
	[spec_tenant, ns, label, tenant, tenant],
) if {
	namespaces[ns].metadata.labels[label] == tenant
} else := sprintf(
	concat("", [
		"spec.tenant %q disagrees with namespace %v, which has no label %v and so belongs to tenant %q ",
		"(remove spec.tenant, or label the namespace)",
	]),
	[spec_tenant, ns, label, tenant],
)

# booked(request, tenancy): the tenant whose reservation admission request `request` gives back (a
# key is its tenant's in the scheduler's record). A deleted object's was booked under the tenant
# admission wrote into its spec (the namespace's then: the label may have changed since); a denied
# booking, just made, under the namespace's (`tenancy`, of_namespace's answer). null when neither is
# known: the scheduler then takes the one tenant's that holds the key.
booked(request, tenancy) := t if {
	request.operation == "DELETE"
	t := object.get(request, ["oldObject", "spec", "tenant"], null)
	is_string(t)
} else := object.get(tenancy, "tenant", null)
