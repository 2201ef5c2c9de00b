"""Deadline metrics (Linnert, De Rose, Heiss 2024, sec. 5.1; design note §3.6), for runs of a
workload with deadlines:

- ``submitted``, ``accepted`` (not rejected at submission), ``rejected`` and
  ``reject_reasons`` (by the stage named first in the reason: ``count``, ``shape``,
  ``deadline``), ``cancelled`` (``cancelled_waiting`` / ``cancelled_running``), ``on_time``
  (completed, ending by the deadline);
- ``acceptance_rate`` = accepted / submitted, ``cancel_rate`` = cancelled / accepted (the
  paper's "share of cancelled"), ``success_rate`` = on time / submitted;
- compactness of each started deadline job's nodes (2 or more): ``compactness_mean`` = mean
  over jobs of the mean pairwise Manhattan hops between its nodes; ``compactness_norm`` = mean
  over jobs of (sum of pairwise hops) / (the same sum for the reference partition of that size:
  the greedy least-Manhattan-increase growth from the grid's centre node on the empty grid,
  which equals the brute-force optimum for k <= 8 except k = 4, 9 instead of 8: design note U3).
  On a system without a 2-D grid, compactness is not computed (NaN).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.system.grid import Grid
from hpcdispatch.system.partition import manhattan_grow

COMPLETED, REJECTED, CANCELLED = 3, 4, 5


def pairwise_hops(grid: Grid, nodes: np.ndarray) -> float:
    """Sum of the Manhattan distances over all pairs of ``nodes``."""
    nodes = np.asarray(nodes, dtype=np.int64)
    d = grid.distance(nodes[:, None], nodes[None, :])
    return float(np.asarray(d).sum()) / 2.0


@lru_cache(maxsize=4096)
def _reference_sum(grid: Grid, k: int) -> float:
    centre = (grid.rows // 2) * grid.cols + grid.cols // 2
    nodes = manhattan_grow(np.ones(grid.n_nodes, dtype=bool), grid, centre, k)
    assert nodes is not None
    return pairwise_hops(grid, nodes)


def deadline_summary(result: SimulationResult) -> dict[str, Any]:
    """The deadline metrics of ``result`` (see the module docstring)."""
    w = result.workload
    status = np.asarray(result.status)
    deadline = np.array([np.inf if j.deadline is None else j.deadline for j in w.jobs], dtype=np.float64)
    submitted = len(w)
    accepted = int((status != REJECTED).sum())
    cancelled = int((status == CANCELLED).sum())
    on_time = int(((status == COMPLETED) & (result.end <= deadline + 1e-9)).sum())
    reasons = Counter(str(r).split(":", 1)[0].strip() for r in result.reject_reason.values())
    cancel_reasons = Counter(result.cancel_reason.values())
    out: dict[str, Any] = {
        "submitted": submitted,
        "accepted": accepted,
        "cancelled": cancelled,
        "cancelled_waiting": int(cancel_reasons.get("deadline-waiting", 0)),
        "cancelled_running": int(cancel_reasons.get("deadline-running", 0)),
        "on_time": on_time,
        "reject_reasons": dict(sorted(reasons.items())),
        "acceptance_rate": accepted / submitted if submitted else float("nan"),
        "cancel_rate": cancelled / accepted if accepted else float("nan"),
        "success_rate": on_time / submitted if submitted else float("nan"),
    }
    out["compactness_mean"], out["compactness_norm"] = compactness(result)
    return out


def compactness(result: SimulationResult) -> tuple[float, float]:
    """``(mean pairwise hops, normalised sum)`` averaged over started deadline jobs with at
    least two nodes (their first allocation segment); NaN without a grid or such jobs."""
    topo = result.system.topology
    if not topo.is_grid:
        return float("nan"), float("nan")
    grid = topo.grid
    rows = result.allocation_rows()
    first = rows.segment == 0
    jobs, nodes = rows.job[first], rows.node[first]
    order = np.argsort(jobs, kind="stable")
    jobs, nodes = jobs[order], nodes[order]
    cuts = np.flatnonzero(np.diff(jobs)) + 1
    means, norms = [], []
    for idx, group in zip(np.split(jobs, cuts), np.split(nodes, cuts)):
        if len(group) < 2 or result.workload.jobs[int(idx[0])].app is None:
            continue
        k = len(group)
        total = pairwise_hops(grid, group)
        means.append(total / (k * (k - 1) / 2))
        norms.append(total / _reference_sum(grid, k))
    if not means:
        return float("nan"), float("nan")
    return float(np.mean(means)), float(np.mean(norms))
