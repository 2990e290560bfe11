# Multi-tenancy: a per-tenant cap on vCPUs.
#
# The cap is policy; the counting is the scheduler's. It sums the tenant's active reservations of
# both paths (its record) under the tenant's row lock when it books, and answers 409 for one over
# the cap, so the Pulumi path and VmTemplates share one quota and a finished run stops counting.
# The placement decision hands the cap over as tenantQuotaVcpu.
# METADATA
# title: Tenant quotas
# description: >-
#   Each tenant's vCPU cap, which the scheduler enforces over the active reservations of both
#   paths.
package greenops.quota

import rego.v1

# cap(tenant, config): the tenant's cap under the platform's config (data.greenops.config).
cap(tenant, config) := limit if {
	limit := config.tenant_vcpu_quota[tenant]
} else := config.default_tenant_vcpu_quota
