"""Pulumi dynamic providers."""
