"""The Pulumi program behind ``__main__.py``.

So far it validates the stack's workloads and exports them; placement (the GreenVm dynamic
provider) and the platform components are wired in by later modules.
"""
from __future__ import annotations

import pulumi

from greenops.stack_config import StackConfigError, parse_stack_config


def _raw_config() -> dict:
    cfg = pulumi.Config("greenops")
    return {key: cfg.get_object(key) for key in ("workloads", "render") if cfg.get(key) is not None}


def run() -> None:
    try:
        config = parse_stack_config(_raw_config())
    except StackConfigError as exc:
        # A clean, named error instead of a Python traceback in the preview output.
        raise pulumi.RunError(str(exc)) from None
    pulumi.export("workloads", [w.spec() for w in config.workloads])
