"""EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001), node-level.

1. Start queued jobs in FIFO order while they fit.
2. The first job that does not fit (the *head*) gets a reservation: the *shadow time* is the
   earliest expected end of running jobs (including the ones just started) after which the
   head fits, node by node; ``free_at_shadow`` is the free capacity then.
3. Every later job may start now (backfill) if it fits now and either ends (by its planned
   duration) no later than the shadow time, or leaves enough of ``free_at_shadow`` for the
   head to still fit. Jobs that would delay the head are refused.

Expected ends of running jobs are ``max(planned_end, now + 1)``: a job that outlived its
prediction (possible without wall-time kills or with predictors) is expected to need at
least one more second, and the reservation is recomputed at every call.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

import numpy as np

from hpcdispatch.dispatchers.base import Dispatcher, Scratch, Tags, register
from hpcdispatch.sim.allocation import units_fit_per_node
from hpcdispatch.sim.decision import Decision, Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.workload.job import Job


def releases_in_end_order(view: DispatchView, started: list[Start]) -> Iterator[tuple[float, int, Start | object]]:
    """Running jobs and just-started ones as ``(expected end, job index, record)``, ascending."""
    now = view.now
    running = ((max(rj.planned_end, now + 1.0), rj.job.index, rj) for rj in view.running_by_planned_end())
    fresh = sorted((now + view.planned_duration(s.job), s.job.index, s) for s in started)
    return heapq.merge(running, fresh, key=lambda x: (x[0], x[1]))


def shadow_time(view: DispatchView, scratch: Scratch, head: Job) -> tuple[float, np.ndarray]:
    """Earliest time the head fits (node-level) and the free capacity at that time."""
    future = np.array(scratch.free, order="F")
    total = list(scratch.total)
    req = view.requests[head.index]
    need = [a * head.units for a in head.unit_request]
    pending_time = None
    for end, idx, rec in releases_in_end_order(view, scratch.starts):
        if pending_time is not None and end != pending_time:
            if all(t >= n for t, n in zip(total, need)):
                if int(units_fit_per_node(future, req, head.max_units_per_node).sum()) >= head.units:
                    return pending_time, future
        alloc = rec.allocation
        amounts = alloc.units[:, None] * view.requests[idx]
        future[alloc.nodes] += amounts
        total = [t + a for t, a in zip(total, amounts.sum(axis=0).tolist())]
        pending_time = end
    if pending_time is not None and int(units_fit_per_node(future, req, head.max_units_per_node).sum()) >= head.units:
        return pending_time, future
    return math.inf, future


@register
class EASY(Dispatcher):
    """EASY backfilling: FIFO plus backfilling that never delays the first waiting job."""

    name = "easy"
    tags = Tags(backfilling=True)

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    def _dispatch(self, view: DispatchView) -> Decision:
        scratch = Scratch(view, self._allocator)
        queue = view.queue.as_list()
        head_pos = None
        for pos, job in enumerate(queue):
            if scratch.try_start(job) is None:
                head_pos = pos
                break
        if head_pos is None or head_pos == len(queue) - 1 or scratch.nothing_free():
            return Decision(scratch.starts)
        candidates = [j for j in queue[head_pos + 1 :] if scratch.pooled_ok(j)]
        if not candidates:
            return Decision(scratch.starts)
        head = queue[head_pos]
        shadow, at_shadow = shadow_time(view, scratch, head)
        head_req = view.requests[head.index]
        head_need = [a * head.units for a in head.unit_request]
        spare = [t - n for t, n in zip(at_shadow.sum(axis=0).tolist(), head_need)]  # pooled slack at shadow
        now = view.now
        backfilled = 0
        for job in candidates:
            short = now + view.planned_duration(job) <= shadow
            if not short:
                units = job.units
                if any(a and s < a * units for s, a in zip(spare, job.unit_request)):
                    continue  # would eat into what the head needs at the shadow time
            alloc = scratch.allocate(job)
            if alloc is None:
                continue
            if short:
                scratch.take(job, alloc)
                backfilled += 1
            else:
                amounts = alloc.units[:, None] * view.requests[job.index]
                trial = at_shadow.copy(order="F")
                trial[alloc.nodes] -= amounts
                if int(units_fit_per_node(trial, head_req, head.max_units_per_node).sum()) >= head.units:
                    scratch.take(job, alloc)
                    at_shadow = trial
                    spare = [s - a for s, a in zip(spare, amounts.sum(axis=0).tolist())]
                    backfilled += 1
            if scratch.nothing_free():
                break
        return Decision(scratch.starts, info={"shadow": shadow, "head": head.id, "backfilled": backfilled})
