"""Pulumi entry point: all logic lives in the greenops package."""

from greenops.stack.program import run

run()
