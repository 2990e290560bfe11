"""Typed stack configuration, validated once when the program starts."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from greenops.errors import GreenOpsError
from greenops.models import Workload
from greenops.renderers import RenderSettings


class StackConfigError(GreenOpsError):
    """Bad stack configuration; the message names the key and the reason."""


class StackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workloads: tuple[Workload, ...] = ()
    render: RenderSettings = Field(default_factory=RenderSettings)


def _describe(exc: ValidationError, where: str) -> str:
    lines = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{where}{'.' + field if field else ''}: {msg}")
    return "; ".join(lines)


def parse_stack_config(raw: dict[str, Any], now: datetime | None = None) -> StackConfig:
    """Validate ``greenops:*`` keys; raise StackConfigError naming each bad key."""
    workloads_raw = raw.get("workloads") or []
    if not isinstance(workloads_raw, list):
        raise StackConfigError("greenops:workloads: must be a list of workloads")
    names = [w.get("name") for w in workloads_raw if isinstance(w, dict)]
    dupes = sorted({n for n in names if n and names.count(n) > 1})
    if dupes:
        raise StackConfigError(f"greenops:workloads: duplicate workload names {dupes}")
    # Structure only: whether a deadline still leaves time is checked when a workload is placed
    # (GreenVm.check), so a placed workload whose deadline has passed stays a valid declaration.
    ctx = {"check_deadline": False, **({"now": now} if now else {})}
    workloads = []
    errors = []
    for idx, item in enumerate(workloads_raw):
        try:
            workloads.append(Workload.model_validate(item, context=ctx))
        except ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            errors.append(_describe(exc, f"greenops:workloads[{idx}]" + (f" ({name})" if name else "")))
    try:
        render = RenderSettings.model_validate(raw.get("render") or {})
    except ValidationError as exc:
        errors.append(_describe(exc, "greenops:render"))
    if errors:
        raise StackConfigError("; ".join(errors))
    return StackConfig(workloads=tuple(workloads), render=render)
