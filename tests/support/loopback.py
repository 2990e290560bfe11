"""The real scheduler and OPA on loopback, each caller with its own credential, as a platform team
sets them up: OPA's principal at the scheduler (every tenant, the cluster path only), a Pulumi-path
token per tenant of a stack, OPA's query token for decisions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from tests.support.common import require_tool


@contextlib.contextmanager
def servers(
    scheduler: dict[str, Any] | None = None, opa: dict[str, Any] | None = None
) -> Iterator[tuple[SchedulerServer, OpaServer]]:
    """``with servers() as (scheduler, opa)``: settings for each in ``scheduler`` and ``opa``."""
    require_tool("opa")
    with SchedulerServer(**(scheduler or {})) as sched:
        opa_token = sched.issue("opa", None, paths=["cluster"])
        with OpaServer(scheduler_url=sched.url, scheduler_token=opa_token, **(opa or {})) as policy:
            yield sched, policy


def tenant_tokens(scheduler: SchedulerServer, tenants: Iterable[str], prefix: str = "stack") -> dict[str, str]:
    """A Pulumi-path write token per tenant, as ``greenops token issue --tenant t --path pulumi``."""
    return {t: scheduler.issue(f"{prefix}-{t}", [t], paths=["pulumi"]) for t in sorted(set(tenants))}


def stack_secrets(scheduler: SchedulerServer, opa: OpaServer, tenants: Iterable[str]) -> dict[str, str]:
    """The secret ``greenops:*`` config of a stack on these servers whose workloads name ``tenants``:
    greenops:schedulerTokens (tenant -> its token) and greenops:opaToken."""
    return {"schedulerTokens": json.dumps(tenant_tokens(scheduler, tenants)), "opaToken": opa.query_token}


def set_secrets(stack: Any, secrets: dict[str, str]) -> None:
    """Set ``secrets`` (stack_secrets) as secret ``greenops:*`` config of an Automation API stack."""
    from pulumi import automation as auto

    stack.set_all_config({f"greenops:{k}": auto.ConfigValue(v, secret=True) for k, v in secrets.items()})


def tenants_of(workloads: Iterable[dict[str, Any]]) -> set[str]:
    """The tenants declared workloads name (the workload model's default tenant when none)."""
    from greenops.models.workload import DEFAULT_TENANT

    return {w.get("tenant") or DEFAULT_TENANT for w in workloads}
