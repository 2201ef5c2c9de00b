"""HCP'19: pooled scheduling model, then priority-rule best-fit allocation.

Resources of one type across all nodes form a pool: one cumulative per resource type with
the system's total capacity. The jobs the solution starts now are then placed node by node,
in priority order, with best fit on the real free capacity. The pooled model cannot see
fragmentation: a job that does not fit is postponed (``s >= 1``) and the model solved again,
until every job it starts now is placed (the pipeline's ``on_unplaced``, "resolve" by default
for the ``hcp`` dispatcher; CP'19 sec. 2.2, PCP'20 sec. 1).
"""

from __future__ import annotations

from hpcdispatch.cp.instance import DispatchInstance, QueuedJob
from hpcdispatch.cp.models.common import (
    BuiltModel,
    CPModel,
    ModelInput,
    Schedule,
    requested_resources,
)


def add_pooled_cumulatives(
    m, sched: Schedule, inst: DispatchInstance, jobs: list[QueuedJob]
) -> None:
    """One cumulative per requested resource type, capacity: the system's total."""
    total = inst.capacity.sum(axis=0)
    for r in requested_resources(jobs):
        intervals = [sched.intervals[j.index] for j in jobs if j.unit_request[r] > 0]
        demands = [j.units * j.unit_request[r] for j in jobs if j.unit_request[r] > 0]
        for entry, _left, iv in sched.running:
            amount = sum(u * entry.unit_request[r] for u in entry.units)
            if amount:
                intervals.append(iv)
                demands.append(amount)
        m.add_cumulative(intervals, demands, int(total[r]))


def build(x: ModelInput) -> BuiltModel:
    inst, jobs = x.inst, x.jobs
    sched = Schedule(x)
    m = sched.model
    add_pooled_cumulatives(m, sched, inst, jobs)

    def decode_now(solver):
        return {j.index: None for j in jobs if solver.value(sched.starts[j.index]) == 0}

    return BuiltModel("hcp", m, jobs, sched.starts, decode_now, sched.elapsed(), dict(sched.notes))


MODEL = CPModel("hcp", node_level=False, flavour="hcp", build=build)
