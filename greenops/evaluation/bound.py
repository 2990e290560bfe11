"""The offline bound of the capacity scenario: a linear program that knows every request and the
actual trace in advance (scipy's HiGHS).

Variables ``x[r, zone, start]`` in [0, 1]: the share of request r run in ``zone`` from hour ``start``,
over every start from its arrival to its latest start, and, only when that plan is infeasible, on
to ``late_hours`` later at a penalty (a missed deadline). Each request is run once in all (its shares sum to 1);
in every zone-hour the vCPUs of the runs that cover it stay within the capacity. The objective is
lexicographic through the penalty: fewest missed deadlines first, then the least carbon. Shares make
it a relaxation of the whole-VM plan, so its carbon is a lower bound on any plan's, online or not
(at the same missed deadlines), and its missed count a lower bound on theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_array

from greenops.evaluation.capacity import ZONES, Request, Traces


@dataclass(frozen=True)
class Bound:
    grams: float
    missed: float  # fractional: a lower bound on the whole-VM plans' missed deadlines
    status: str


def offline_bound(requests: list[Request], traces: Traces, capacity: float, late_hours: int = 48) -> Bound:
    """The LP's optimum; unbounded capacity needs no LP (each request's cleanest window). The late
    columns are added only when the plan without them is infeasible (they double the LP)."""
    if np.isinf(capacity):
        grams = sum(min(_window_grams(traces, z, r)[: r.slack + 1].min() for z in ZONES) for r in requests)
        return Bound(float(grams), 0.0, "optimal (no capacity: each request's cleanest window)")
    bound = _solve(requests, traces, capacity, 0)
    return bound if bound.status == "optimal" else _solve(requests, traces, capacity, late_hours)


def _solve(requests: list[Request], traces: Traces, capacity: float, late: int) -> Bound:
    cost, rows, cols, vals, eq_rows, is_late = [], [], [], [], [], []
    column = 0
    hours = max(r.latest_start for r in requests) + late + 13
    # more than any run's grams anywhere: one missed deadline outweighs every carbon difference
    penalty = 10 * max(float(np.max(v)) for v in traces.hourly.values()) * max(r.cpu * r.duration for r in requests)
    for j, r in enumerate(requests):
        for zi, zone in enumerate(ZONES):
            for k, g in enumerate(_window_grams(traces, zone, r, late)):
                start = r.arrival + k
                cost.append(g + (penalty if k > r.slack else 0.0))
                is_late.append(k > r.slack)
                eq_rows.append(j)
                for h in range(start, start + r.duration):  # the capacity rows: zone-major, then hour
                    rows.append(zi * hours + h)
                    cols.append(column)
                    vals.append(float(r.cpu))
                column += 1
    a_ub = coo_array((vals, (rows, cols)), shape=(len(ZONES) * hours, column)).tocsr()
    a_eq = coo_array((np.ones(column), (eq_rows, np.arange(column))), shape=(len(requests), column)).tocsr()
    result = linprog(
        np.array(cost),
        A_ub=a_ub,
        b_ub=np.full(len(ZONES) * hours, capacity),
        A_eq=a_eq,
        b_eq=np.ones(len(requests)),
        bounds=(0, 1),
        method="highs",
    )
    if result.status != 0:
        return Bound(float("nan"), float("nan"), result.message)
    late_share = float(result.x[np.array(is_late)].sum())
    grams = float(result.fun - penalty * late_share)
    return Bound(grams, late_share, "optimal")


def _window_grams(traces: Traces, zone: str, r: Request, late: int = 0) -> np.ndarray:
    """The run's grams from each start, from its arrival to ``late`` hours past its latest start."""
    ci = traces.hourly[zone]
    summed = np.concatenate(([0.0], np.cumsum(ci)))
    starts = np.arange(r.arrival, r.latest_start + late + 1)
    return np.asarray((summed[starts + r.duration] - summed[starts]) * r.cpu)
