"""cp-hybrid (beyond the papers): pooled future, node-level "now", on node classes.

Only the jobs that start now are actually applied, so only they need node-level precision:

- the future is planned on pooled capacity (one cumulative per resource type, as HCP);
- a boolean ``b_i`` says job ``i`` starts now (``b_i <=> s_i = 0``);
- nodes with identical free capacity form a *class* ``c`` (``K_c`` nodes, free vector
  ``f_c``); ``x_{i,c}`` units of job ``i`` go to class ``c``, at most ``K_c`` times the units
  one such node holds (``min_r floor(f_{c,r} / q_{i,r})``, and the job's units-per-node
  limit); ``sum_c x_{i,c} = rn_i b_i``; and per class and resource
  ``sum_i q_{i,r} x_{i,c} <= K_c f_{c,r}``.

The model grows with the number of distinct node states, not with the number of nodes, and
the classes remove the symmetry between interchangeable nodes by construction. The class
constraint pools the capacity *within* a class, so the counts are turned into nodes by an
exact first-fit packing step (jobs in priority order, each on the class's nodes in node
order); a job whose units do not pack is handed to best fit over all nodes, and postponed
if it does not fit there either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcdispatch._util import LazyModule
from hpcdispatch.cp.models.common import (
    BuiltModel,
    CPModel,
    ModelInput,
    Schedule,
    per_node_units,
    requested_resources,
)
from hpcdispatch.cp.models.hcp import add_pooled_cumulatives
from hpcdispatch.system.allocation import Allocation

if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)


def node_classes(free: np.ndarray) -> list[tuple[tuple[int, ...], list[int]]]:
    """Nodes grouped by identical free vector (nodes with nothing free are left out)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for n, row in enumerate(free.tolist()):
        if any(row):
            groups.setdefault(tuple(row), []).append(n)
    return sorted(groups.items(), key=lambda kv: kv[1][0])


def build(x: ModelInput) -> BuiltModel:
    inst, jobs, rule = x.inst, x.jobs, x.rule
    sched = Schedule(x)
    m = sched.model
    add_pooled_cumulatives(m, sched, inst, jobs)
    classes = node_classes(inst.free)
    class_of = {n: c for c, (_vec, nodes) in enumerate(classes) for n in nodes}
    now: dict[int, cp_model.IntVar] = {}
    units_in: dict[int, dict[int, cp_model.IntVar]] = {}
    load: dict[int, list[tuple[int, cp_model.IntVar]]] = {
        c: [] for c in range(len(classes))
    }  # (job index, var)
    for j in jobs:
        s = sched.starts[j.index]
        b = m.new_bool_var(f"now[{j.id}]")
        m.add(s == 0).only_enforce_if(b)
        m.add(s >= 1).only_enforce_if(b.Not())
        now[j.index] = b
        starts_now = rule.starts[j.index] == 0
        m.add_hint(b, 1 if starts_now else 0)
        hinted: dict[int, int] = {}
        if starts_now and j.index in rule.allocations:
            for n, u in rule.allocations[j.index].pairs():
                hinted[class_of[n]] = hinted.get(class_of[n], 0) + u
        units_in[j.index] = {}
        for c, (vec, nodes) in enumerate(classes):
            fit = per_node_units(vec, j)
            if fit == 0:
                continue
            v = m.new_int_var(0, min(j.units, fit * len(nodes)), f"x[{j.id},{c}]")
            m.add_hint(v, hinted.get(c, 0))
            units_in[j.index][c] = v
            load[c].append((j.index, v))
        if units_in[j.index]:
            m.add(sum(units_in[j.index].values()) == j.units * b)
        else:
            m.add(b == 0)
    by_index = {j.index: j for j in jobs}
    for c, (vec, nodes) in enumerate(classes):
        if not load[c]:
            continue
        for r in requested_resources(jobs):
            terms = [
                by_index[i].unit_request[r] * v
                for i, v in load[c]
                if by_index[i].unit_request[r] > 0
            ]
            if terms:
                m.add(sum(terms) <= len(nodes) * vec[r])

    def decode_now(solver):
        free = np.array(inst.free, dtype=np.int64)
        out: dict[int, Allocation | None] = {}
        for j in jobs:  # priority order
            if not solver.value(now[j.index]):
                continue
            req = np.asarray(j.unit_request, dtype=np.int64)
            trial = free.copy()
            pairs: list[tuple[int, int]] = []
            ok = True
            for c, v in units_in[j.index].items():
                need = int(solver.value(v))
                for n in classes[c][1]:
                    if need == 0:
                        break
                    per = [int(trial[n, r]) // a for r, a in enumerate(j.unit_request) if a > 0]
                    fit = min(per) if per else need
                    if j.max_units_per_node > 0:
                        fit = min(fit, j.max_units_per_node)
                    take = min(fit, need)
                    if take > 0:
                        trial[n] -= take * req
                        pairs.append((n, take))
                        need -= take
                if need:
                    ok = False
                    break
            if ok:
                free = trial
                out[j.index] = Allocation.from_pairs(sorted(pairs))
            else:
                out[j.index] = None  # counts did not pack: best fit over all nodes decides
        return out

    notes = {"node_classes": len(classes)}
    return BuiltModel(
        "cp-hybrid", m, jobs, sched.starts, decode_now, sched.elapsed(), {**sched.notes, **notes}
    )


MODEL = CPModel("cp-hybrid", node_level=False, flavour="hcp", build=build)
