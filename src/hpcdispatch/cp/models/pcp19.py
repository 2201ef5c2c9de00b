"""PCP'19: the per-node allocation model (PCP'20 sec. 2.2).

Every job is replicated into optional intervals, one per possible unit placement per node:
``p_{i,n} = min(rn_i, min_r floor(cap_{n,r} / (req_{i,r} / rn_i)))`` copies on node ``n``
(further limited by the job's units-per-node limit), each sharing the job's start and
duration; exactly ``rn_i`` copies are present (the *alternative* constraint), and every node
has one cumulative per requested resource with its capacity, next to the running jobs'
fixed usage on that node. The model grows with the number of nodes -- which is what PCP'20
fixes.

Symmetry (``symmetry=True``, the paper's future work): the copies of a job on one node are
interchangeable, so copy ``k + 1`` may be present only if copy ``k`` is; and idle nodes of
the same capacity are interchangeable over the whole horizon, so of each such group only
the first ``min(size, total units of the model)`` nodes get copies (any schedule can be
mapped onto those). With ``symmetry=False`` the model is the faithful one (for model-size
comparisons, ``hpcdispatch instances eval``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcdispatch._util import LazyModule
from hpcdispatch.cp.instance import DispatchInstance, QueuedJob
from hpcdispatch.cp.models.common import (
    BuiltModel,
    CPModel,
    ModelInput,
    Schedule,
    per_node_units,
    requested_resources,
)
from hpcdispatch.cp.rule import RuleSchedule
from hpcdispatch.system.allocation import Allocation

if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)


def idle_node_groups(inst: DispatchInstance) -> list[list[int]]:
    """Groups of idle nodes (nothing running) with identical capacity, in node order."""
    busy = np.zeros(inst.n_nodes, dtype=bool)
    for r in inst.running:
        busy[list(r.nodes)] = True
    groups: dict[tuple[int, ...], list[int]] = {}
    for n in np.flatnonzero(~busy).tolist():
        groups.setdefault(tuple(inst.capacity[n].tolist()), []).append(n)
    return list(groups.values())


def usable_nodes(
    inst: DispatchInstance, jobs: list[QueuedJob], symmetry: bool, rule: RuleSchedule | None = None
) -> list[int]:
    """Nodes the model may use: all, or (symmetry) all but the surplus of idle identical groups.

    Any ``min(size, total units)`` nodes of an idle identical group will do; the ones the rule
    schedule (the hint) uses are kept first so that the hint stays feasible.
    """
    if not symmetry:
        return list(range(inst.n_nodes))
    total_units = sum(j.units for j in jobs)
    hinted = set()
    if rule is not None:
        for alloc in rule.allocations.values():
            hinted.update(alloc.nodes.tolist())
    dropped: set[int] = set()
    for group in idle_node_groups(inst):
        keep = [n for n in group if n in hinted]
        keep += [n for n in group if n not in hinted][: max(0, total_units - len(keep))]
        dropped.update(set(group) - set(keep))
    return [n for n in range(inst.n_nodes) if n not in dropped]


def copies(cap: np.ndarray, job: QueuedJob) -> int:
    """PCP'19's p_{i,n}: copies of job ``i``'s units on a node of capacity ``cap``."""
    return min(job.units, per_node_units(cap, job))


def build(x: ModelInput) -> BuiltModel:
    inst, jobs, rule, settings = x.inst, x.jobs, x.rule, x.settings
    sched = Schedule(x)
    m = sched.model
    nodes = usable_nodes(inst, jobs, settings.model.symmetry, rule)
    resources = requested_resources(jobs)
    # presence literals per job and node: list of copies
    present: dict[int, dict[int, list[cp_model.IntVar]]] = {}
    per_node: dict[int, list[tuple[cp_model.IntervalVar, QueuedJob]]] = {n: [] for n in nodes}
    for j in jobs:
        s, d = sched.starts[j.index], sched.durations[j.index]
        present[j.index] = {}
        hinted = dict(rule.allocations[j.index].pairs()) if j.index in rule.allocations else {}
        for n in nodes:
            p = copies(inst.capacity[n], j)
            lits: list[cp_model.IntVar] = []
            for k in range(p):
                lit = m.new_bool_var(f"x[{j.id},{n},{k}]")
                iv = m.new_optional_fixed_size_interval_var(s, d, lit, f"u[{j.id},{n},{k}]")
                per_node[n].append((iv, j))
                m.add_hint(lit, 1 if k < hinted.get(n, 0) else 0)
                lits.append(lit)
            if settings.model.symmetry:
                for a, b in zip(lits, lits[1:]):
                    m.add_implication(b, a)
            if lits:
                present[j.index][n] = lits
        m.add(sum(lit for lits in present[j.index].values() for lit in lits) == j.units)
    for n in nodes:
        if not per_node[n]:
            continue
        running_here = [
            (entry, iv, entry.nodes.index(n))
            for entry, _left, iv in sched.running
            if n in entry.nodes
        ]
        for r in resources:
            intervals = [iv for iv, _ in per_node[n] if _.unit_request[r] > 0]
            demands = [j.unit_request[r] for _, j in per_node[n] if j.unit_request[r] > 0]
            if not intervals:
                continue
            for entry, iv, k in running_here:
                amount = entry.units[k] * entry.unit_request[r]
                if amount:
                    intervals.append(iv)
                    demands.append(amount)
            m.add_cumulative(intervals, demands, int(inst.capacity[n, r]))

    def decode_now(solver):
        out = {}
        for j in jobs:
            if solver.value(sched.starts[j.index]) != 0:
                continue
            pairs = [
                (n, sum(solver.value(x) for x in lits)) for n, lits in present[j.index].items()
            ]
            out[j.index] = Allocation.from_pairs([(n, u) for n, u in pairs if u > 0])
        return out

    notes = {"nodes_in_model": len(nodes)}
    return BuiltModel(
        "pcp19", m, jobs, sched.starts, decode_now, sched.elapsed(), {**sched.notes, **notes}
    )


MODEL = CPModel("pcp19", node_level=True, flavour="pcp", build=build)
