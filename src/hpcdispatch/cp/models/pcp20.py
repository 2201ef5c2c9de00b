"""PCP'20: the allocation model whose size does not depend on the system size (PCP'20 sec. 3).

All resources of a type form an ordered list of *positions* following the node order (node
``n`` owns positions ``[off_{n,r}, off_{n,r} + cap_{n,r})`` of type ``r``). Each unit ``k`` of a
job and each requested type ``r`` is a box: time ``[s_i, s_i + d_i)`` x positions
``[y_{i,k,r}, y_{i,k,r} + req_{i,r}/rn_i)``; boxes of one type may not overlap
(NoOverlap2D, CP-SAT's *diffn*). Implied constraints: the positions of a job's units are all
different; a cumulative over time (pooled capacity) and one over positions (capacity: the
horizon). Running jobs are fixed boxes on their nodes (on each node stacked by remaining
time, longest at the bottom, so that space frees contiguously).

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hpcdispatch._util import LazyModule
from hpcdispatch.cp.instance import QueuedJob
from hpcdispatch.cp.models.common import (
    BuiltModel,
    CPModel,
    ModelInput,
    Schedule,
    requested_resources,
)
from hpcdispatch.cp.models.pcp19 import usable_nodes
from hpcdispatch.system.allocation import Allocation

if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)


@dataclass(frozen=True)
class NodeSegment:
    """A run of allowed nodes (in node order) on which one type's positions are affine: node
    ``n`` of the run owns positions ``[off + slope n, off + slope n + cap)``."""

    first: int
    last: int
    off: int
    slope: int
    cap: int


def node_segments(offsets: np.ndarray, capacity: np.ndarray, nodes: list[int]) -> list[NodeSegment]:
    """``nodes`` (ascending) cut, from the first on, into maximal runs on which the offsets are
    affine in the node index and the capacity is constant: one run on a homogeneous system
    (or on any node subset of one), one per node type on KIT ForHLR II (thin, then fat
    nodes), never more runs than nodes."""
    out: list[NodeSegment] = []
    first = prev = -1
    slope: int | None = None

    def close() -> None:
        b = slope or 0
        out.append(
            NodeSegment(first, prev, int(offsets[first]) - b * first, b, int(capacity[first]))
        )

    for n in nodes:
        if first >= 0 and capacity[n] == capacity[first]:
            step, gap = int(offsets[n]) - int(offsets[prev]), n - prev
            if (slope is None and step % gap == 0) or (slope is not None and step == slope * gap):
                slope, prev = step // gap, n
                continue
        if first >= 0:
            close()
        first = prev = n
        slope = None
    if first >= 0:
        close()
    return out


def run_literals(
    m: cp_model.CpModel, node: cp_model.IntVar, runs: list[NodeSegment], name: str
) -> list:
    """One literal per run (``[None]`` for a single run): exactly one holds, and it bounds
    ``node`` to its run's first and last node."""
    if len(runs) == 1:
        return [None]
    lits = [m.new_bool_var(f"{name}[{g.first}]") for g in runs]
    m.add_exactly_one(lits)
    for g, lit in zip(runs, lits):
        m.add_linear_constraint(node, g.first, g.last).only_enforce_if(lit)
    return lits


def tie_positions_to_node(
    m: cp_model.CpModel,
    node: cp_model.IntVar,
    y: cp_model.IntVar,
    q: int,
    runs: list[NodeSegment],
    lits: list,
) -> None:
    """``y``'s ``q`` positions lie inside ``node``: ``off + slope n <= y <= off + slope n + cap - q``
    on the run whose literal holds (:func:`run_literals`)."""
    for g, lit in zip(runs, lits):
        low = m.add(y >= g.off + g.slope * node)
        high = m.add(y <= g.off + g.slope * node + g.cap - q)
        if lit is not None:
            low.only_enforce_if(lit)
            high.only_enforce_if(lit)


def _pack_hints(inst, policy, jobs, rule, running_boxes, offsets, resources):
    """Positions for the rule schedule: job index -> [(node, {r: position})] per unit, or
    ``None`` when some unit of the job cannot be packed contiguously.

    Greedy packing can fragment a node (a block in the middle leaves two gaps too small for a
    later unit), so it is done from the lowest free position up and, when that leaves jobs
    out, from the highest down; the packing that lays out more jobs wins (lowest on a tie).
    Fuzzed on small multi-core, two-resource systems, the share of rule schedules pcp20
    could not lay out fell from 2.1 % to 0.3 % (a smallest-gap rule added nothing more)."""
    best: tuple[int, dict] | None = None
    for gap_rule in GAP_RULES:
        hints = _pack(inst, policy, jobs, rule, running_boxes, offsets, resources, gap_rule)
        missing = sum(1 for h in hints.values() if h is None)
        if best is None or missing < best[0]:
            best = (missing, hints)
        if missing == 0:
            break
    assert best is not None  # (GAP_RULES is not empty)
    return best[1]


def _pack(inst, policy, jobs, rule, running_boxes, offsets, resources, gap_rule):
    placed: dict[
        tuple[int, int], list[tuple[int, int, int, int]]
    ] = {}  # (node, r) -> [(t0, t1, y0, y1)]
    for (n, r), boxes in running_boxes.items():
        placed[(n, r)] = list(boxes)
    hints: dict[int, list[tuple[int, dict[int, int]]] | None] = {}
    for j in sorted(jobs, key=lambda j: (rule.starts[j.index], j.index)):
        alloc = rule.allocations.get(j.index)
        if alloc is None:
            hints[j.index] = None
            continue
        t0 = rule.starts[j.index]
        t1 = t0 + policy.duration_units(j)
        units: list[tuple[int, dict[int, int]]] = []
        ok = True
        for n, count in alloc.pairs():
            for _ in range(count):
                pos = {}
                for r in resources:
                    q = j.unit_request[r]
                    if q == 0:
                        continue
                    lo, cap = int(offsets[r][n]), int(inst.capacity[n, r])
                    busy = sorted(
                        (y0, y1) for (a, b, y0, y1) in placed.get((n, r), []) if a < t1 and t0 < b
                    )
                    y = GAP_RULES[gap_rule](busy, lo, lo + cap, q)
                    if y is None:
                        ok = False
                        break
                    pos[r] = y
                if not ok:
                    break
                for r, y in pos.items():
                    placed.setdefault((n, r), []).append((t0, t1, y, y + j.unit_request[r]))
                units.append((n, pos))
            if not ok:
                break
        # a job's units are interchangeable; the model orders them by their first position
        # (unit symmetry), so hand them out in that order (top-down packing reverses it)
        units.sort(key=lambda u: u[1][min(u[1])] if u[1] else 0)
        hints[j.index] = units if ok else None
    return hints


def _lowest_gap(busy: list[tuple[int, int]], lo: int, hi: int, q: int) -> int | None:
    """Lowest start of ``q`` adjacent free positions in ``[lo, hi)`` around the sorted ``busy``
    blocks (``None``: no room)."""
    y = lo
    for y0, y1 in busy:
        if y + q <= y0:
            break
        y = max(y, y1)
    return y if y + q <= hi else None


def _highest_gap(busy: list[tuple[int, int]], lo: int, hi: int, q: int) -> int | None:
    """Highest start of ``q`` adjacent free positions in ``[lo, hi)`` (see :func:`_lowest_gap`)."""
    top = hi
    for y0, y1 in sorted(busy, key=lambda b: -b[1]):
        if y1 + q <= top:
            break
        top = min(top, y0)
    return top - q if top - q >= lo else None


GAP_RULES = {"lowest": _lowest_gap, "highest": _highest_gap}


def build(x: ModelInput) -> BuiltModel:
    inst, policy, jobs, horizon, rule, settings = (
        x.inst,
        x.policy,
        x.jobs,
        x.horizon,
        x.rule,
        x.settings,
    )
    sched = Schedule(x)
    m = sched.model
    resources = requested_resources(jobs)
    cap = inst.capacity
    offsets = {r: np.concatenate(([0], np.cumsum(cap[:, r])[:-1])) for r in range(cap.shape[1])}
    totals = cap.sum(axis=0)
    nodes_ok = usable_nodes(inst, jobs, settings.model.symmetry, rule)

    # running jobs: fixed boxes, stacked per node by remaining time (longest at the bottom)
    running_boxes: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}
    fixed_x: dict[int, list[cp_model.IntervalVar]] = {r: [] for r in resources}
    fixed_y: dict[int, list[cp_model.IntervalVar]] = {r: [] for r in resources}
    fixed_len: dict[int, list[int]] = {r: [] for r in resources}
    fixed_amount: dict[int, list[int]] = {r: [] for r in resources}
    cursor = {(n, r): int(offsets[r][n]) for n in range(inst.n_nodes) for r in resources}
    for entry, left, x_iv in sorted(sched.running, key=lambda e: -e[1]):
        for n, units in zip(entry.nodes, entry.units):
            for r in resources:
                a = units * entry.unit_request[r]
                if a == 0:
                    continue
                y0 = cursor[(n, r)]
                cursor[(n, r)] = y0 + a
                fixed_x[r].append(x_iv)
                fixed_y[r].append(m.new_fixed_size_interval_var(y0, a, f"ry[{entry.id},{n},{r}]"))
                fixed_len[r].append(left)
                fixed_amount[r].append(a)
                running_boxes.setdefault((n, r), []).append((0, left, y0, y0 + a))

    hints = _pack_hints(inst, policy, jobs, rule, running_boxes, offsets, resources)
    box_x: dict[int, list[cp_model.IntervalVar]] = {r: [] for r in resources}
    box_y: dict[int, list[cp_model.IntervalVar]] = {r: [] for r in resources}
    box_len: dict[int, list[int]] = {r: [] for r in resources}
    box_amount: dict[int, list[int]] = {r: [] for r in resources}
    node_vars: dict[
        int, list[cp_model.IntVar]
    ] = {}  # per unit: its node, or its position (position_only)
    position_of: dict[
        int, np.ndarray
    ] = {}  # position_only jobs: position -> node via these offsets
    alloc_vars: list[cp_model.IntVar] = []
    segment_links = 0  # units whose node is tied to their positions through node-type literals

    def add_box(
        j: QueuedJob, k: int, r: int, y: cp_model.IntVar, job_ys: dict[int, list[cp_model.IntVar]]
    ) -> None:
        """Unit ``k`` of job ``j`` on type ``r``: the box (time x positions from ``y``)."""
        q = j.unit_request[r]
        box_x[r].append(sched.intervals[j.index])
        box_y[r].append(m.new_fixed_size_interval_var(y, q, f"yb[{j.id},{k},{r}]"))
        box_len[r].append(sched.durations[j.index])
        box_amount[r].append(q)
        job_ys[r].append(y)
        alloc_vars.append(y)

    for j in jobs:
        allowed = [n for n in nodes_ok if all(cap[n, r] >= j.unit_request[r] for r in resources)]
        if not allowed:  # cannot happen for a job that fits now; keep the model consistent
            allowed = [
                n
                for n in range(inst.n_nodes)
                if all(cap[n, r] >= j.unit_request[r] for r in resources)
            ]
        domain = cp_model.Domain.from_values(allowed)
        unit_hints = hints.get(j.index)
        node_vars[j.index] = []
        ys_first: list[cp_model.IntVar] = []
        job_ys: dict[int, list[cp_model.IntVar]] = {r: [] for r in resources}
        job_res = [r for r in resources if j.unit_request[r] > 0]
        # one requested type and no units-per-node limit: the node map is the domain of y
        # itself (the union over allowed nodes of [off_n, off_n + cap_n - q]), no node variable
        position_only = len(job_res) == 1 and j.max_units_per_node == 0
        if position_only:
            r0 = job_res[0]
            q0 = j.unit_request[r0]
            y_domain = cp_model.Domain.from_intervals(
                [[int(offsets[r0][n]), int(offsets[r0][n] + cap[n, r0] - q0)] for n in allowed]
            )
        else:  # a node variable per unit, tied to its positions run by run (see the docstring)
            segments = {r: node_segments(offsets[r], cap[:, r], allowed) for r in job_res}
        for k in range(j.units):
            hinted_node, hinted_pos = unit_hints[k] if unit_hints is not None else (None, {})
            if position_only:
                y = m.new_int_var_from_domain(y_domain, f"y[{j.id},{k},{r0}]")
                if hinted_node is not None:
                    m.add_hint(y, hinted_pos[r0])
                node_vars[j.index].append(y)
                add_box(j, k, r0, y, job_ys)
                ys_first.append(y)
                continue
            nd = m.new_int_var_from_domain(domain, f"n[{j.id},{k}]")
            node_vars[j.index].append(nd)
            if hinted_node is not None:
                m.add_hint(nd, hinted_node)
            chosen: dict[tuple[tuple[int, int], ...], list] = {}  # runs -> one literal per run
            for r in resources:
                q = j.unit_request[r]
                if q == 0:
                    continue
                y = m.new_int_var(0, int(totals[r]) - q, f"y[{j.id},{k},{r}]")
                runs = segments[r]
                key = tuple((g.first, g.last) for g in runs)
                if key not in chosen:
                    chosen[key] = run_literals(m, nd, runs, f"run[{j.id},{k}]")
                    if len(runs) > 1:
                        segment_links += 1
                        if hinted_node is not None:
                            for g, lit in zip(runs, chosen[key]):
                                m.add_hint(lit, int(g.first <= hinted_node <= g.last))
                tie_positions_to_node(m, nd, y, q, runs, chosen[key])
                if hinted_node is not None:
                    m.add_hint(y, hinted_pos[r])
                add_box(j, k, r, y, job_ys)
            if resources and job_ys[resources[0]]:
                ys_first.append(job_ys[resources[0]][-1])
        for r in resources:
            if len(job_ys[r]) > 1:
                m.add_all_different(job_ys[r])
        if position_only:
            position_of[j.index] = offsets[r0]
        if settings.model.symmetry:
            for lower, upper in zip(ys_first, ys_first[1:]):
                m.add(lower < upper)
        if j.max_units_per_node == 1 and j.units > 1:
            m.add_all_different(node_vars[j.index])
    for r in resources:
        m.add_no_overlap_2d(box_x[r] + fixed_x[r], box_y[r] + fixed_y[r])
        # implied: pooled capacity over time, and over positions (capacity: the horizon)
        m.add_cumulative(box_x[r] + fixed_x[r], box_amount[r] + fixed_amount[r], int(totals[r]))
        m.add_cumulative(
            box_y[r] + fixed_y[r], box_len[r] + fixed_len[r], horizon + max(fixed_len[r], default=0)
        )
    m.add_decision_strategy(alloc_vars, cp_model.CHOOSE_MIN_DOMAIN_SIZE, cp_model.SELECT_MAX_VALUE)

    def decode_now(solver):
        out = {}
        for j in jobs:
            if solver.value(sched.starts[j.index]) != 0:
                continue
            counts: dict[int, int] = {}
            for nd in node_vars[j.index]:
                v = int(solver.value(nd))
                n = (
                    v
                    if j.index not in position_of
                    else int(np.searchsorted(position_of[j.index], v, "right")) - 1
                )
                counts[n] = counts.get(n, 0) + 1
            out[j.index] = Allocation.from_pairs(sorted(counts.items()))
        return out

    notes = {
        "segment_links": segment_links,
        "unhinted_jobs": sum(1 for j in jobs if hints.get(j.index) is None),
    }
    return BuiltModel(
        "pcp20", m, jobs, sched.starts, decode_now, sched.elapsed(), {**sched.notes, **notes}
    )


MODEL = CPModel("pcp20", node_level=True, flavour="pcp", build=build)
