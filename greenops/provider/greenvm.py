"""GreenVm: a Pulumi dynamic provider that turns one generic workload into a provider-specific VM.

create:  OPA's decision -> the scheduler -> zone mapped back to region and size -> image -> the
         manifests, which stay empty until the start time (the time gate).
diff:    replace when the workload spec changes; update when the time gate opens or the run has
         completed (retire), or when settings change; otherwise nothing, and no scheduler call.
update:  keeps the decision; recomputes status and manifests.

This module is imported by the dynamic-provider process (``python -m pulumi.dynamic``), so the
provider holds no clients or clocks in its state: the clock is ``GREENOPS_NOW`` (RFC 3339) when
set, else the system clock.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)
from pydantic import ValidationError

from greenops.catalog import load_catalog
from greenops.clock import system_clock
from greenops.errors import GreenOpsError
from greenops.models import Decision, Workload
from greenops.placement import SchedulerClient, place, status_at
from greenops.policies.client import OpaClient
from greenops.renderers import RenderSettings, render

# Credentials for OPA and the scheduler: kept as secrets in the state.
SECRET_INPUTS = ["opaToken", "schedulerToken"]
SETTINGS_KEYS = ("opaUrl", "schedulerUrl", "timeoutSeconds", "attempts", "render", "placed", "opaToken",
                 "schedulerToken", "leadSeconds")


def _workload(props: dict, now: datetime, check_deadline: bool = True) -> Workload:
    return Workload.model_validate(props["workload"], context={"now": now, "check_deadline": check_deadline})


def _lead(props: dict) -> timedelta:
    return timedelta(seconds=float(props.get("leadSeconds") or 0))


def _name(props: dict) -> str:
    w = props.get("workload") or {}
    return str(w.get("name", "?")) if isinstance(w, dict) else "?"


class GreenVmProvider(ResourceProvider):
    def __init__(self, clock: Callable[[], datetime] | None = None):
        super().__init__()
        # Only direct tests inject a clock; the engine path uses system_clock (GREENOPS_NOW).
        self._clock = clock

    def now(self) -> datetime:
        return (self._clock or system_clock)()

    # -- check --------------------------------------------------------------------------------
    def check(self, _olds: dict, news: dict) -> CheckResult:
        failures = []
        name = _name(news)
        # An unchanged, already placed workload is not re-checked against its deadline.
        placed_before = bool(_olds) and _olds.get("workload") == news.get("workload")
        try:
            _workload(news, self.now(), check_deadline=not placed_before)
        except ValidationError as exc:
            for e in exc.errors():
                loc = ".".join(str(p) for p in e["loc"])
                failures.append(CheckFailure(f"workload.{loc}" if loc else "workload",
                                             f"workload {name!r}: {e['msg'].removeprefix('Value error, ')}"))
        try:
            RenderSettings.model_validate(news.get("render") or {})
        except ValidationError as exc:
            for e in exc.errors():
                failures.append(CheckFailure(f"render.{'.'.join(str(p) for p in e['loc'])}", f"workload {name!r}: {e['msg']}"))
        for key in ("opaUrl", "schedulerUrl"):
            if not str(news.get(key, "")).startswith(("http://", "https://")):
                failures.append(CheckFailure(key, f"workload {name!r}: {key} must be an http(s) URL"))
        return CheckResult(news, failures)

    # -- create -------------------------------------------------------------------------------
    def create(self, props: dict) -> CreateResult:
        now = self.now()
        workload = _workload(props, now)
        timeout = float(props.get("timeoutSeconds") or 10)
        attempts = int(props.get("attempts") or 3)
        opa = OpaClient(props["opaUrl"], timeout=timeout, attempts=attempts, token=props.get("opaToken"))
        scheduler = SchedulerClient(props["schedulerUrl"], timeout=timeout, attempts=attempts,
                                    token=props.get("schedulerToken"))
        try:
            decision = place(workload, opa, scheduler, placed=props.get("placed"))
        except GreenOpsError as exc:
            raise GreenOpsError(f"workload {workload.name!r} was not placed: {exc}") from None
        finally:
            opa.close()
            scheduler.close()
        return CreateResult(id_=f"greenvm-{workload.name}", outs=self._outputs(props, workload, decision, now))

    # -- diff / update ------------------------------------------------------------------------
    def diff(self, _id: str, olds: dict, news: dict) -> DiffResult:
        if olds.get("workload") != news.get("workload"):
            return DiffResult(changes=True, replaces=["workload"], delete_before_replace=False)
        settings_changed = any(olds.get(k) != news.get(k) for k in SETTINGS_KEYS)
        decision = olds.get("decision")
        if not decision:
            return DiffResult(changes=True, replaces=["workload"])
        workload = _workload(news, self.now(), check_deadline=False)
        due = status_at(self.now(), Decision.from_document(decision).scheduling_time, workload.duration, _lead(news))
        return DiffResult(changes=settings_changed or due.value != olds.get("status"), replaces=[],
                          stables=["decision"])

    def update(self, _id: str, olds: dict, news: dict) -> UpdateResult:
        now = self.now()
        workload = _workload(news, now, check_deadline=False)
        decision = Decision.from_document(olds["decision"])
        return UpdateResult(outs=self._outputs(news, workload, decision, now))

    def read(self, id_: str, props: dict) -> ReadResult:
        now = self.now()
        if not props.get("decision"):
            return ReadResult(id_, props)
        workload = _workload(props, now, check_deadline=False)
        return ReadResult(id_, self._outputs(props, workload, Decision.from_document(props["decision"]), now))

    def delete(self, _id: str, _props: dict) -> None:
        # The VM's objects belong to the workload's ConfigGroup, which deletes them.
        return None

    # -- outputs ------------------------------------------------------------------------------
    @staticmethod
    def _outputs(props: dict, workload: Workload, decision: Decision, now: datetime) -> dict[str, Any]:
        status = status_at(now, decision.scheduling_time, workload.duration, _lead(props))
        manifests = []
        if status.materialised:
            settings = RenderSettings.model_validate(props.get("render") or {})
            manifests = render(workload, decision, settings, load_catalog())
        return {**props, "decision": decision.document(), "status": status.value, "manifests": manifests}


class GreenVm(Resource):
    """A generic workload placed by policy and the scheduler (see GreenVmProvider)."""

    decision: pulumi.Output[dict]
    status: pulumi.Output[str]
    manifests: pulumi.Output[list]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None = None):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_INPUTS))
        super().__init__(GreenVmProvider(), name, {**props, "decision": None, "status": None, "manifests": None}, opts)

