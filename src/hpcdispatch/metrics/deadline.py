"""Deadline metrics (Linnert, De Rose, Heiss 2024, sec. 5.1; design note §3.6), for runs of a
workload with deadlines: submitted, accepted, rejected (by stage), cancelled and on-time jobs
and their rates (``acceptance_rate``, ``cancel_rate``, ``success_rate``), the same per
behaviour type (``type{b}_...``), the compactness of each deadline job's allocation against
the best possible on the empty grid (:func:`best_pairwise_sum`), and the free nodes'
fragmentation. On a system without a 2-D grid, compactness and fragmentation are NaN.

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.system.grid import Grid
from hpcdispatch.system.partition import manhattan_grow
from hpcdispatch.vocabulary import CancelReason, JobStatus

BEHAVIOUR_TYPES = (0, 1, 2, 3)
#: a cancellation's kind in the counts: 1 waiting at the deadline, 2 running at it, 3 other
_CANCEL_KIND = {CancelReason.DEADLINE_WAITING: 1, CancelReason.DEADLINE_RUNNING: 2}


def pairwise_hops(grid: Grid, nodes: np.ndarray) -> float:
    """Sum of the Manhattan distances over all pairs of ``nodes``."""
    nodes = np.asarray(nodes, dtype=np.int64)
    d = grid.distance(nodes[:, None], nodes[None, :])
    return float(np.asarray(d).sum()) / 2.0


def _quasi_rectangle(lines: int, length_cap: int, k: int) -> list[tuple[int, int]] | None:
    """``(line, position)`` pairs of ``k`` nodes: ``q`` full lines of ``lines`` nodes side by
    side and a last line of ``r`` nodes centred on the lines' axis; None when it needs more
    than ``length_cap`` lines."""
    q, r = divmod(k, lines)
    if q + (r > 0) > length_cap:
        return None
    cells = [(pos, line) for line in range(q) for pos in range(lines)]
    first = (lines - r) // 2
    cells += [(pos, q) for pos in range(first, first + r)]
    return cells


@lru_cache(maxsize=64)
def _shrink_order(grid: Grid) -> np.ndarray:
    """The nodes of ``grid`` in the order a greedy shrink removes them from the full grid:
    each time the node with the largest sum of distances to the nodes left (ties: lowest id)."""
    d = np.asarray(grid.distance_matrix, dtype=np.int64)
    cost = d.sum(axis=1)
    left = np.ones(grid.n_nodes, dtype=bool)
    order = []
    for _ in range(grid.n_nodes):
        node = int(np.argmax(np.where(left, cost, -1)))
        order.append(node)
        left[node] = False
        cost -= d[node]
    return np.asarray(order, dtype=np.int64)


@lru_cache(maxsize=4096)
def best_pairwise_sum(grid: Grid, k: int) -> float:
    """The least pairwise Manhattan sum of ``k`` nodes on the empty ``grid`` found by the
    constructions of the module docstring ("What 'best' is"); 0 for ``k`` <= 1."""
    if k <= 1:
        return 0.0
    centre = (grid.rows // 2) * grid.cols + grid.cols // 2
    greedy = manhattan_grow(np.ones(grid.n_nodes, dtype=bool), grid, centre, k)
    assert greedy is not None
    best = pairwise_hops(grid, greedy)
    if grid.n_nodes <= 1024:  # the shrink reads the distance matrix
        best = min(best, pairwise_hops(grid, _shrink_order(grid)[grid.n_nodes - k :]))
    for lines in range(1, max(grid.rows, grid.cols) + 1):
        # lines along the rows' axis (a column of `lines` rows per line) and the other way round
        for along_rows in (True, False):
            height, width = (grid.rows, grid.cols) if along_rows else (grid.cols, grid.rows)
            if lines > height:
                continue
            cells = _quasi_rectangle(lines, width, k)
            if cells is None:
                continue
            nodes = [
                p * grid.cols + line if along_rows else line * grid.cols + p for p, line in cells
            ]
            best = min(best, pairwise_hops(grid, np.asarray(nodes)))
    return best


def _counts(
    status: np.ndarray, on_time: np.ndarray, cancel_kind: np.ndarray, prefix: str
) -> dict[str, Any]:
    submitted = len(status)
    accepted = int((status != JobStatus.REJECTED).sum())
    cancelled = int((status == JobStatus.CANCELLED).sum())
    n_on_time = int(on_time.sum())
    return {
        f"{prefix}submitted": submitted,
        f"{prefix}accepted": accepted,
        f"{prefix}rejected": submitted - accepted,
        f"{prefix}cancelled": cancelled,
        f"{prefix}cancelled_waiting": int((cancel_kind == 1).sum()),
        f"{prefix}cancelled_running": int((cancel_kind == 2).sum()),
        f"{prefix}on_time": n_on_time,
        f"{prefix}acceptance_rate": accepted / submitted if submitted else float("nan"),
        f"{prefix}cancel_rate": cancelled / accepted if accepted else float("nan"),
        f"{prefix}success_rate": n_on_time / submitted if submitted else float("nan"),
    }


def deadline_summary(result: SimulationResult) -> dict[str, Any]:
    """The deadline metrics of ``result`` (see the module docstring)."""
    w = result.workload
    status = np.asarray(result.status)
    deadline = np.array(
        [np.inf if j.deadline is None else j.deadline for j in w.jobs], dtype=np.float64
    )
    on_time = (status == JobStatus.COMPLETED) & (np.asarray(result.end) <= deadline + 1e-9)
    cancel_kind = np.zeros(len(status), dtype=np.int8)
    for idx, why in result.cancel_reason.items():
        cancel_kind[int(idx)] = _CANCEL_KIND.get(why, 3)
    reasons = Counter(str(r).split(":", 1)[0].strip() for r in result.reject_reason.values())
    out = _counts(status, on_time, cancel_kind, "")
    del out["rejected"]  # summarize() has it already (every run's rejection count)
    out["reject_reasons"] = dict(sorted(reasons.items()))
    out["line0_passed"] = out["accepted"] + int(reasons.get("shape", 0))
    behaviour = np.array([-1 if j.app is None else j.app.behaviour for j in w.jobs], dtype=np.int64)
    for b in BEHAVIOUR_TYPES:
        sel = behaviour == b
        if sel.any():
            out.update(_counts(status[sel], on_time[sel], cancel_kind[sel], f"type{b}_"))
    out["compactness_mean"], out["compactness_norm"] = compactness(result)
    out["free_fragmentation"] = free_fragmentation(result)
    submit = np.asarray(w.submit, dtype=np.float64) if len(w) else np.zeros(0)
    end = np.asarray(result.end, dtype=np.float64)
    ended = end[np.isfinite(end)]
    out["span_days"] = (
        float((ended.max() - submit.min()) / 86400.0)
        if len(ended) and len(submit)
        else float("nan")
    )
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
        norms.append(total / best_pairwise_sum(grid, k))
    if not means:
        return float("nan"), float("nan")
    return float(np.mean(means)), float(np.mean(norms))


def free_fragmentation_of(
    grid: Grid, node: np.ndarray, t_from: np.ndarray, t_to: np.ndarray
) -> float:
    """Time-weighted mean of ``1 - largest free 4-connected component / free nodes`` while
    nodes are held by the rows ``(node, t_from, t_to)`` (a node is busy while any row holds
    it, over ``[t_from, t_to)``), from the first ``t_from`` to the last ``t_to``. Instants with
    no free node have no free space to fragment and are left out of the mean (weight 0); NaN
    when every instant is such, or there are no rows.

    All intervals are labelled at once: one graph whose vertices are (interval, free node)
    and whose edges join free 4-neighbours of the same interval."""
    node = np.asarray(node, dtype=np.int64)
    t_from, t_to = np.asarray(t_from, dtype=np.float64), np.asarray(t_to, dtype=np.float64)
    keep = t_to > t_from
    node, t_from, t_to = node[keep], t_from[keep], t_to[keep]
    if len(node) == 0:
        return float("nan")
    n = grid.n_nodes
    times = np.unique(np.concatenate([t_from, t_to]))
    m = len(times) - 1
    if m < 1:
        return float("nan")
    diff = np.zeros((m + 1, n), dtype=np.int32)
    np.add.at(diff, (np.searchsorted(times, t_from), node), 1)
    np.add.at(diff, (np.searchsorted(times, t_to), node), -1)
    free = np.cumsum(diff, axis=0)[:m] == 0  # (interval, node)
    dt = np.diff(times)
    n_free = free.sum(axis=1)
    indptr, indices = grid.neighbour_csr
    src = np.repeat(np.arange(n), np.diff(indptr))
    both = free[:, src] & free[:, indices]  # (interval, directed edge)
    iv, e = np.nonzero(both)
    vid = np.full((m, n), -1, dtype=np.int64)
    vid[free] = np.arange(int(free.sum()))
    n_v = int(free.sum())
    if n_v == 0:
        return float("nan")
    adj = csr_matrix(
        (np.ones(len(iv), dtype=np.int8), (vid[iv, src[e]], vid[iv, indices[e]])), shape=(n_v, n_v)
    )
    _, label = connected_components(adj, directed=False)
    sizes = np.bincount(label)
    per_node = np.zeros((m, n), dtype=np.int64)
    per_node[free] = sizes[label]
    largest = per_node.max(axis=1)
    some = n_free > 0
    weight = dt[some]
    if weight.sum() <= 0:
        return float("nan")
    frag = 1.0 - largest[some] / n_free[some]
    return float((frag * weight).sum() / weight.sum())


def free_fragmentation(result: SimulationResult) -> float:
    """:func:`free_fragmentation_of` the run's allocation rows; NaN without a 2-D grid."""
    topo = result.system.topology
    if not topo.is_grid:
        return float("nan")
    rows = result.allocation_rows()
    return free_fragmentation_of(topo.grid, rows.node, rows.t_from, rows.t_to)
