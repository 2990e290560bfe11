"""Placement policy as code: Rego packages, their bundle and their settings."""

# OPA's API tokens, read by system.authz (rego/authz.rego) from OPA's environment: the query token
# (greenops:opaToken, Placement's) and the admin token (greenops:opaAdminToken, kube-mgmt's).
QUERY_TOKEN_VARIABLE = "GREENOPS_OPA_QUERY_TOKEN"
ADMIN_TOKEN_VARIABLE = "GREENOPS_OPA_ADMIN_TOKEN"
