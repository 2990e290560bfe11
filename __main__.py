"""Pulumi entry point: all logic lives in the greenops package."""

from greenops.program import run

run()
