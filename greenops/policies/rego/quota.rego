# Multi-tenancy: a per-tenant cap on the vCPUs of placed workloads.
#
# Placed workloads come from the query (`placed`, as the Pulumi path sends them) or, in a
# cluster, from the VmTemplates kube-mgmt replicates into data.kubernetes.vmtemplates.
package greenops.quota

import rego.v1

cap(tenant) := limit if {
	limit := data.greenops.config.tenant_vcpu_quota[tenant]
} else := data.greenops.config.default_tenant_vcpu_quota

placed_workloads(placed) := placed if is_array(placed)

else := replicated

# VmTemplates that carry a decision (a provider) are placed.
replicated := [w |
	some ns, name
	obj := data.kubernetes.vmtemplates[ns][name]
	is_string(obj.spec.provider)
	w := {
		"name": object.get(obj.spec, "vmName", name),
		"namespace": ns,
		"tenant": object.get(obj.spec, "tenant", "default"),
		"cpu": obj.spec.cpu,
	}
]

used(spec, placed) := sum([w.cpu |
	some w in placed_workloads(placed)
	object.get(w, "tenant", "default") == spec.tenant
	w.name != spec.name
	is_number(w.cpu)
])

errors(spec, placed) := [msg |
	limit := cap(spec.tenant)
	is_number(limit)
	already := used(spec, placed)
	already + spec.cpu > limit
	msg := sprintf("tenant %v would use %v vCPU, above its quota of %v (%v placed + %v requested)",
		[spec.tenant, already + spec.cpu, limit, already, spec.cpu])
]
