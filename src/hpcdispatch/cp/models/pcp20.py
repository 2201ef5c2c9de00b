"""PCP'20: the allocation model whose size does not depend on the system size (PCP'20 sec. 3).

All resources of a type form an ordered list of *positions* following the node order (node
``n`` owns positions ``[off_{n,r}, off_{n,r} + cap_{n,r})`` of type ``r``). Each unit ``k`` of a
job and each requested type ``r`` is a box: time ``[s_i, s_i + d_i)`` x positions
``[y_{i,k,r}, y_{i,k,r} + req_{i,r}/rn_i)``; boxes of one type may not overlap
(NoOverlap2D, CP-SAT's *diffn*). Implied constraints: the positions of a job's units are all
different; a cumulative over time (pooled capacity) and one over positions (capacity: the
horizon). Running jobs are fixed boxes on their nodes (on each node stacked by remaining
time, longest at the bottom, so that space frees contiguously).

The node map (a unit's types, and all positions it covers, in one node): PCP'20 posts
``element(map_r, y)`` constraints over the position->node tables. CP-SAT expands such
tables position by position in presolve (seconds even on Eurora), so each unit gets a node
variable ``n_{i,k}`` instead and ``off_r(n) <= y_{i,k,r} <= off_r(n) + cap_r(n) - req``:
the same semantics. ``off_r`` and ``cap_r`` are linear in the node index wherever the
capacity is constant (homogeneous systems, and the GPU/MIC halves of Eurora), which makes
these two linear constraints; an ``element`` over the *node* table (plus an offset
variable) is used otherwise. A job that requests one resource type only (every SWF trace)
and has no units-per-node limit needs no node variable at all: the domain of ``y`` is the
union over the allowed nodes of ``[off_n, off_n + cap_n - q]``, so a unit can only lie
inside one node, and the node is read back from the position. Variables: ``|Q| + sum_i
rn_i |R_i|`` (the paper's count) for such jobs, ``rn_i (1 + |R_i|)`` for the others --
whatever the number of nodes.

Search (the paper's): the job of highest priority that can start first, at its earliest
start, then its allocation variable with the smallest domain at its maximum value (best
fit) -- CP-SAT decision strategies, plus the priority rule's schedule as hint (node
positions packed greedily on each node; a unit that cannot be packed is left unhinted).

Symmetry (``symmetry=True``): a job's units are interchangeable, so their positions are
ordered; idle nodes of identical capacity are interchangeable, so node variables only range
over the first ``min(size, total units)`` nodes of each such group.
"""

from __future__ import annotations

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

cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)


def _affine(values: np.ndarray, nodes: list[int]) -> tuple[int, int] | None:
    """``(a, b)`` with ``values[n] == a + b n`` for every ``n`` in ``nodes``, or ``None``."""
    if len(nodes) == 1:
        return int(values[nodes[0]]), 0
    n0, n1 = nodes[0], nodes[1]
    b = (int(values[n1]) - int(values[n0])) // (n1 - n0) if n1 != n0 else 0
    a = int(values[n0]) - b * n0
    idx = np.asarray(nodes)
    return (a, b) if np.array_equal(values[idx], a + b * idx) else None


def _pack_hints(inst, policy, jobs, rule, running_boxes, offsets, resources):
    """Positions for the rule schedule: job index -> [(node, {r: position})] per unit, or
    ``None`` when some unit of the job cannot be packed contiguously.

    Greedy packing can fragment a node (a block in the middle leaves two gaps too small for a
    later unit), so it is done from the lowest free position up and, when that leaves jobs
    out, from the highest down; the packing that lays out more jobs wins (lowest on a tie).
    Fuzzed on small multi-core, two-resource systems, the share of rule schedules pcp20
    could not lay out fell from 2.1 % to 0.3 % (a smallest-gap rule added nothing more)."""
    best = None
    for gap_rule in GAP_RULES:
        hints = _pack(inst, policy, jobs, rule, running_boxes, offsets, resources, gap_rule)
        missing = sum(1 for h in hints.values() if h is None)
        if best is None or missing < best[0]:
            best = (missing, hints)
        if missing == 0:
            break
    return best[1]


def _pack(inst, policy, jobs, rule, running_boxes, offsets, resources, gap_rule):
    placed: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}  # (node, r) -> [(t0, t1, y0, y1)]
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
                    busy = sorted((y0, y1) for (a, b, y0, y1) in placed.get((n, r), []) if a < t1 and t0 < b)
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
    inst, policy, jobs, horizon, rule, settings = x.inst, x.policy, x.jobs, x.horizon, x.rule, x.settings
    sched = Schedule(x)
    m = sched.model
    resources = requested_resources(jobs)
    cap = inst.capacity
    offsets = {r: np.concatenate(([0], np.cumsum(cap[:, r])[:-1])) for r in range(cap.shape[1])}
    totals = cap.sum(axis=0)
    nodes_ok = usable_nodes(inst, jobs, settings.symmetry, rule)

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
    node_vars: dict[int, list[cp_model.IntVar]] = {}  # per unit: its node, or its position (position_only)
    position_of: dict[int, np.ndarray] = {}  # position_only jobs: position -> node via these offsets
    alloc_vars: list[cp_model.IntVar] = []
    elements = 0

    def add_box(j: QueuedJob, k: int, r: int, y: cp_model.IntVar, job_ys: dict[int, list[cp_model.IntVar]]) -> None:
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
            allowed = [n for n in range(inst.n_nodes) if all(cap[n, r] >= j.unit_request[r] for r in resources)]
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
                [[int(offsets[r0][n]), int(offsets[r0][n] + cap[n, r0] - q0)] for n in allowed])
        for k in range(j.units):
            hinted_node, hinted_pos = (unit_hints[k] if unit_hints is not None else (None, {}))
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
            for r in resources:
                q = j.unit_request[r]
                if q == 0:
                    continue
                y = m.new_int_var(0, int(totals[r]) - q, f"y[{j.id},{k},{r}]")
                aff_off = _affine(offsets[r], allowed)
                aff_cap = _affine(cap[:, r], allowed)
                affine = aff_off is not None and aff_cap is not None and aff_cap[1] == 0
                if affine:
                    # off_r and cap_r linear on the allowed nodes: a + b n <= y <= a + b n + cap - q
                    m.add(y >= aff_off[0] + aff_off[1] * nd)
                    m.add(y <= aff_off[0] + aff_off[1] * nd + aff_cap[0] - q)
                else:
                    elements += 1
                    off_v = m.new_int_var(0, int(totals[r]), f"off[{j.id},{k},{r}]")
                    cap_v = m.new_int_var(0, int(cap[:, r].max()), f"cap[{j.id},{k},{r}]")
                    m.add_element(nd, [int(v) for v in offsets[r]], off_v)
                    m.add_element(nd, [int(v) for v in cap[:, r]], cap_v)
                    o = m.new_int_var(0, int(cap[:, r].max()), f"o[{j.id},{k},{r}]")
                    m.add(o <= cap_v - q)
                    m.add(y == off_v + o)
                if hinted_node is not None:
                    m.add_hint(y, hinted_pos[r])
                    if not affine:
                        m.add_hint(o, hinted_pos[r] - int(offsets[r][hinted_node]))
                        m.add_hint(off_v, int(offsets[r][hinted_node]))
                        m.add_hint(cap_v, int(cap[hinted_node, r]))
                add_box(j, k, r, y, job_ys)
            if resources and job_ys[resources[0]]:
                ys_first.append(job_ys[resources[0]][-1])
        for r in resources:
            if len(job_ys[r]) > 1:
                m.add_all_different(job_ys[r])
        if position_only:
            position_of[j.index] = offsets[r0]
        if settings.symmetry:
            for a, b in zip(ys_first, ys_first[1:]):
                m.add(a < b)
        if j.max_units_per_node == 1 and j.units > 1:
            m.add_all_different(node_vars[j.index])
    for r in resources:
        m.add_no_overlap_2d(box_x[r] + fixed_x[r], box_y[r] + fixed_y[r])
        # implied: pooled capacity over time, and over positions (capacity: the horizon)
        m.add_cumulative(box_x[r] + fixed_x[r], box_amount[r] + fixed_amount[r], int(totals[r]))
        m.add_cumulative(box_y[r] + fixed_y[r], box_len[r] + fixed_len[r], horizon + max(fixed_len[r], default=0))
    m.add_decision_strategy(alloc_vars, cp_model.CHOOSE_MIN_DOMAIN_SIZE, cp_model.SELECT_MAX_VALUE)

    def decode_now(solver):
        out = {}
        for j in jobs:
            if solver.value(sched.starts[j.index]) != 0:
                continue
            counts: dict[int, int] = {}
            for nd in node_vars[j.index]:
                v = int(solver.value(nd))
                n = v if j.index not in position_of else int(np.searchsorted(position_of[j.index], v, "right")) - 1
                counts[n] = counts.get(n, 0) + 1
            out[j.index] = Allocation.from_pairs(sorted(counts.items()))
        return out

    notes = {"element_pairs": elements, "unhinted_jobs": sum(1 for j in jobs if hints.get(j.index) is None)}
    return BuiltModel("pcp20", m, jobs, sched.starts, decode_now, sched.elapsed(), {**sched.notes, **notes})


MODEL = CPModel("pcp20", node_level=True, flavour="pcp", build=build)
