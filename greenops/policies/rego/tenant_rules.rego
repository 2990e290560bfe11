# Per-tenant rules that the platform team sets and a developer cannot override
# (data.greenops.config.tenant_rules[tenant], from the policy settings the bundle ships).
#
# A rule narrows where the tenant's workloads may run: its providers narrow the eligible providers,
# its regions ("provider/region") the regions the explicit request step leaves. A workload that asks
# for more than its tenant's rules allow is refused, naming the rule: a provider or region outside
# them, dataResidency none when the rule says eu, more vCPU or memory per VM than the rule's maximum.
# The scheduler checks the same rules again on every booking (greenops/scheduler/tenant_rules.py).
# METADATA
# title: Tenant rules
# description: >-
#   Allowed providers and regions, residency and maximum size per tenant, set by the platform team:
#   what they narrow, and the errors that name them.
package greenops.tenant_rules

import rego.v1

# rules(tenant, config): the tenant's rules, {} when it has none.
rules(tenant, config) := r if {
	r := config.tenant_rules[tenant]
} else := {}

_set(r, name) := v if {
	v := object.get(r, name, null)
	v != null
}

# allowed_providers(tenant, config, wanted): those of `wanted` the tenant's rule allows.
allowed_providers(tenant, config, wanted) := wanted if {
	not _set(rules(tenant, config), "providers")
} else := {p | some p in wanted; p in rules(tenant, config).providers}

# allowed_regions(tenant, config, left): of {provider: {region: facts}}, those the tenant's rule allows.
allowed_regions(tenant, config, left) := left if {
	not _set(rules(tenant, config), "regions")
} else := {p: object.filter(rs, {r | some r, _ in rs; sprintf("%v/%v", [p, r]) in allowed}) |
	some p, rs in left
	allowed := {x | some x in rules(tenant, config).regions}
}

# errors(spec, config): why the tenant's rules refuse the workload (spec in normal form).
errors(spec, config) := union({
	_too_big(spec, rules(spec.tenant, config), "max_cpu", spec.cpu, "vCPU"),
	_too_big(spec, rules(spec.tenant, config), "max_memory_gb", spec.memory, "GB of memory"),
	_residency(spec, rules(spec.tenant, config)),
	_provider(spec, rules(spec.tenant, config)),
	_region(spec, rules(spec.tenant, config)),
})

_too_big(spec, r, name, asked, unit) := {msg |
	limit := _set(r, name)
	asked > limit
	msg := sprintf(
		"tenant %v's rule %v %v: the workload asks for %v %v per VM",
		[spec.tenant, name, limit, asked, unit],
	)
}

_residency(spec, r) := {msg |
	_set(r, "residency") == "eu"
	spec.dataResidency != "eu"
	msg := sprintf(
		"tenant %v's rule residency eu: dataResidency %v would place the workload outside the EU",
		[spec.tenant, spec.dataResidency],
	)
}

_provider(spec, r) := {msg |
	allowed := _set(r, "providers")
	spec.provider != null
	not spec.provider in allowed
	msg := sprintf(
		"tenant %v's rule providers %v does not allow provider %v",
		[spec.tenant, sort(allowed), spec.provider],
	)
} | {msg |
	allowed := _set(r, "providers")
	spec.provider == null
	count({p | some p in spec.eligibleProviders; p in allowed}) == 0
	msg := sprintf(
		"tenant %v's rule providers %v allows none of eligibleProviders %v",
		[spec.tenant, sort(allowed), spec.eligibleProviders],
	)
}

_region(spec, r) := {msg |
	allowed := _set(r, "regions")
	spec.region != null
	not _region_allowed(spec, allowed)
	msg := sprintf("tenant %v's rule regions %v does not allow region %v", [spec.tenant, sort(allowed), spec.region])
}

_region_allowed(spec, allowed) if {
	some x in allowed
	[p, region] := split(x, "/")
	region == spec.region
	spec.provider in {null, p}
}
