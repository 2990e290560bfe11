# Whose workload it is, on the cluster path: the tenant comes from the VmTemplate's namespace,
# never from a free-form spec field (a new name in the spec would otherwise get a fresh quota).
#
# The tenant is the Namespace's label greenops.io/tenant, read from the copy kube-mgmt replicates
# (--replicate-cluster=v1/namespaces) into data.kubernetes.namespaces[name]. Only cluster admins
# label namespaces, so a tenant cannot name itself into someone else's quota.
# METADATA
# title: Tenancy
# description: >-
#   Whose workload it is on the cluster path: the namespace's greenops.io/tenant label.
package greenops.tenancy

import rego.v1

import data.greenops.config

label := "greenops.io/tenant"

# The tenant of a namespace without the label: the same default the Pulumi path and the scheduler
# use, with the default quota (data.greenops.config.default_tenant_vcpu_quota).
unlabelled := config.default_tenant

# of_namespace(ns) is {"tenant": t} or {"error": reason}. A namespace OPA has no copy of is an
# error, not the default tenant: kube-mgmt may be catching up on a namespace just created, and a
# booking made under the wrong tenant would stay with it until the workload is placed again.
of_namespace(ns) := {"tenant": t} if {
	t := data.kubernetes.namespaces[ns].metadata.labels[label]
	is_string(t)
	t != ""
} else := {"error": sprintf(
	"namespace %v: its label %v is empty; set it to the tenant's name or remove it",
	[ns, label],
)} if {
	data.kubernetes.namespaces[ns].metadata.labels[label] == ""
} else := {"tenant": unlabelled} if {
	is_object(data.kubernetes.namespaces[ns])
} else := {"error": sprintf(
	concat("", [
		"namespace %v is not known to OPA (kube-mgmt replicates namespaces into data.kubernetes.namespaces), ",
		"so its tenant cannot be told; retry once it is replicated",
	]),
	[ns],
)}

# mismatch(ns, spec_tenant, tenant): why a spec's tenant that differs from its namespace's is refused.
mismatch(ns, spec_tenant, tenant) := sprintf(
	concat("", [
		"spec.tenant %q disagrees with namespace %v's label %v %q: the tenant is the namespace's ",
		"(remove spec.tenant or set it to %q)",
	]),
	[spec_tenant, ns, label, tenant, tenant],
) if {
	data.kubernetes.namespaces[ns].metadata.labels[label] == tenant
} else := sprintf(
	concat("", [
		"spec.tenant %q disagrees with namespace %v, which has no label %v and so belongs to tenant %q ",
		"(remove spec.tenant, or label the namespace)",
	]),
	[spec_tenant, ns, label, tenant],
)
