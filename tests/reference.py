"""Straightforward reference implementations the optimized dispatchers are checked against.

``ReferenceEASY`` is textbook EASY written as plainly as possible: one pass over the queue,
node-level shadow time by releasing every running job in order of expected end. The
production :class:`hpcdispatch.dispatchers.easy.EASY` must take exactly the same decisions.
"""

from __future__ import annotations

import numpy as np

from hpcdispatch.protocol import Dispatcher, Scratch
from hpcdispatch.system.allocation import held_amounts, request_fits
from hpcdispatch.protocol.decision import Decision
from hpcdispatch.protocol.view import DispatchView


def head_fits(free: np.ndarray, view: DispatchView, head) -> bool:
    # the exact test with every constraint (node count, per-node extras, contiguity)
    return request_fits(free, view.requests[head.index], head.units, head.max_units_per_node, head.node_count,
                        head.per_node_request, head.contiguous)


class ReferenceEASY(Dispatcher):
    name = "reference-easy"  # not registered

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
        if head_pos is None:
            return Decision(scratch.starts)
        head = queue[head_pos]
        # releases: running jobs and the jobs just started, by expected end then job order
        releases = []
        for rj in view.running.values():
            releases.append((max(rj.planned_end, view.now + 1.0), rj.job.index, rj.allocation, rj.job))
        for s in scratch.starts:
            releases.append((view.now + view.planned_duration(s.job), s.job.index, s.allocation, s.job))
        releases.sort(key=lambda r: (r[0], r[1]))
        future = np.array(scratch.free)
        shadow, at_shadow = np.inf, None
        k = 0
        while k < len(releases):
            t = releases[k][0]
            while k < len(releases) and releases[k][0] == t:
                _, idx, alloc, _job = releases[k]
                future[alloc.nodes] += held_amounts(alloc, view.requests[idx], _job.per_node_request)
                k += 1
            if head_fits(future, view, head):
                shadow, at_shadow = t, future.copy()
                break
        if at_shadow is None:
            at_shadow = future
        for job in queue[head_pos + 1 :]:
            alloc = scratch.allocate(job)
            if alloc is None:
                continue
            if view.now + view.planned_duration(job) <= shadow:
                scratch.take(job, alloc)
                continue
            trial = at_shadow.copy()
            trial[alloc.nodes] -= held_amounts(alloc, view.requests[job.index], job.per_node_request)
            if head_fits(trial, view, head):
                scratch.take(job, alloc)
                at_shadow = trial
        return Decision(scratch.starts)
