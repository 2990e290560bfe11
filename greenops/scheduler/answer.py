"""The answer a decision gives, in the contract's shape (greenops.scheduler.contract), and the
error body every refusal of a field shares."""

from __future__ import annotations

import functools
from typing import Any

from fastapi.responses import JSONResponse

from greenops.common.clock import stamp
from greenops.intensity.series import ceil_second
from greenops.scheduler.booking import Outcome
from greenops.scheduler.contract import Considered, PlacementOut, SchedulingResponse
from greenops.search.algorithm import Assignment, Rule


@functools.lru_cache(maxsize=4096)
def rfc3339(epoch: float) -> str:
    # an answer writes some twenty instants, most of them the same hours as the answers before it
    # (each zone's best window starts on a data point)
    return stamp(ceil_second(epoch))


def field_error(field: str, message: str, code: int = 422) -> JSONResponse:
    return JSONResponse(
        status_code=code,
        content={"detail": f"{field}: {message}", "errors": [{"loc": ["body", field], "msg": message}]},
    )


def response(
    placements: list[Assignment],
    baseline: float,
    what: str,
    key: str | None,
    source: str,
    begin: float,
    considered: list[tuple[Assignment, float]],
    rule: Rule = "point",
    preemptible: bool = False,
) -> dict[str, Any]:
    first = placements[0]
    mean_expected = sum(p.mean_intensity for p in placements) / len(placements)
    saving = 100 * (1 - mean_expected / baseline) if baseline > 0 else None
    return SchedulingResponse(
        key=key,
        **placed(first),
        baseline_intensity=round(baseline, 2),
        baseline=what,
        saving_percent=None if saving is None else round(saving, 2),
        source=source,
        placements=[PlacementOut(**placed(p)) for p in placements],
        searched_from=rfc3339(begin),
        rule=rule,
        considered=[Considered(**placed(p), run_now_intensity=round(now, 2)) for p, now in considered],
        preemptible=preemptible,
    ).model_dump(mode="json")


def placed(p: Assignment) -> dict[str, Any]:
    """A placement as every answer writes one (PlacementOut's fields)."""
    return {
        "scheduling_location": p.zone,
        "scheduling_time": rfc3339(p.start),
        "expected_intensity": round(p.mean_intensity, 2),
    }


def answered(done: Outcome) -> JSONResponse:
    # A replay is the very answer first given; the header only says nothing new was booked.
    return JSONResponse(done.answer, headers={"Idempotent-Replayed": "true"} if done.replayed else None)
