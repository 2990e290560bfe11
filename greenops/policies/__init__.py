"""Placement policy as code: Rego packages, their bundle and their settings."""
