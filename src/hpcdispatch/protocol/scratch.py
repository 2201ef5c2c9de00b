"""A dispatcher's working copy of the free capacity during one decision."""

from __future__ import annotations

import numpy as np

from hpcdispatch.allocators import Allocator, allocate_job
from hpcdispatch.protocol.decision import Start
from hpcdispatch.protocol.view import DispatchView
from hpcdispatch.system.allocation import Allocation, held_amounts
from hpcdispatch.workload.job import Job


class Scratch:
    """A dispatcher's working copy of the free capacity during one decision.

    ``try_start`` checks the pooled totals first (cheap), then asks the allocator, and on
    success subtracts the allocation so later jobs of the same decision see it taken. The
    free matrix is copied only when the first job is taken.
    """

    __slots__ = ("free", "total", "_view", "_allocator", "starts", "_owned")

    def __init__(self, view: DispatchView, allocator: Allocator):
        self.free = view.free
        self._owned = False
        self.total = list(view._free_total)
        self._view = view
        self._allocator = allocator
        self.starts: list[Start] = []

    def pooled_ok(self, job: Job) -> bool:
        """Necessary condition: the pooled free totals cover the job's (smallest) total need."""
        units = job.units
        for tot, amount in zip(self.total, job.unit_request):
            if amount and tot < amount * units:
                return False
        if job.per_node_request:
            nodes = max(job.exact_nodes, 1)
            for tot, amount, extra in zip(self.total, job.unit_request, job.per_node_request):
                if extra and tot < amount * units + extra * nodes:
                    return False
        return True

    def allocate(self, job: Job) -> Allocation | None:
        if not self.pooled_ok(job):
            return None
        return allocate_job(self._allocator, job, self._view.requests[job.index], self.free)

    def take(self, job: Job, allocation: Allocation) -> None:
        if not self._owned:
            self.free = np.array(self.free, order="F")
            self._owned = True
        nodes = allocation.nodes
        if job.per_node_request:
            amounts = held_amounts(allocation, self._view.requests[job.index], job.per_node_request)
            self.free[nodes] -= amounts
            self.total = [t - a for t, a in zip(self.total, amounts.sum(axis=0).tolist())]
            self.starts.append(Start(job, allocation))
            return
        units = job.units
        if len(nodes) == 1:  # scalar writes: numpy row arithmetic costs more on one node
            free, node, here = self.free, int(nodes[0]), int(allocation.units[0])
            for r, a in enumerate(job.unit_request):
                if a:
                    free[node, r] -= here * a
        else:
            self.free[nodes] -= allocation.units[:, None] * self._view.requests[job.index]
        self.total = [t - units * a for t, a in zip(self.total, job.unit_request)]
        self.starts.append(Start(job, allocation))

    def try_start(self, job: Job) -> Allocation | None:
        allocation = self.allocate(job)
        if allocation is not None:
            self.take(job, allocation)
        return allocation

    def nothing_free(self) -> bool:
        return not any(self.total)
