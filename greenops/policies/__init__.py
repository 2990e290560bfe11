"""Placement policy as code: Rego packages, their bundle and their settings."""

# OPA's API tokens, read by system.authz (rego/authz.rego) from OPA's environment: the query token
# (greenops:opaToken, Placement's) and the admin token (greenops:opaAdminToken, kube-mgmt's).
QUERY_TOKEN_VARIABLE = "GREENOPS_OPA_QUERY_TOKEN"
ADMIN_TOKEN_VARIABLE = "GREENOPS_OPA_ADMIN_TOKEN"

# The packages a query-token holder may evaluate: system.authz's query_packages (rego/authz.rego; a
# test holds the two equal), and the only OPA paths the external Ingress routes.
QUERY_PACKAGES = ("placement", "quota", "visibility", "workload")
DECISION_API_PATHS = tuple(f"/v1/data/greenops/{package}" for package in QUERY_PACKAGES)
