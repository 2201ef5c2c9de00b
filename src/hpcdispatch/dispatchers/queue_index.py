"""An index of the queue by request shape, kept in sync between dispatcher calls.

Backfilling policies look for queued jobs that fit the free capacity; scanning a queue of
thousands of jobs at every event is what makes naive backfilling slow on real traces. Real
queues hold few distinct request *shapes* -- (per-unit request, unit limit per node, units)
-- so the index groups queued jobs by shape, each group in queue order (job index order).
A policy can then dismiss a whole group at once (e.g. "this shape does not fit now").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from sortedcontainers import SortedList

from hpcdispatch.protocol import DispatchView
from hpcdispatch.workload.job import Job

Shape = (
    tuple  # (unit_request, max_units_per_node, units[, node_count, per_node_request, contiguous])
)


def shape_of(job: Job) -> Shape:
    if job.node_count or job.contiguous or job.per_node_request:
        return (
            job.unit_request,
            job.max_units_per_node,
            job.units,
            job.node_count,
            job.per_node_request,
            job.contiguous,
        )
    return (job.unit_request, job.max_units_per_node, job.units)


def _size(key: Shape, resource: int) -> int:
    return key[0][resource] * key[2]


class ShapeIndex:
    """Groups of queued jobs by shape; groups are also ordered by their total request of one
    resource (``resource``, default the first) so that ``fitting`` skips the ones too big."""

    def __init__(self, resource: int = 0) -> None:
        self.resource = resource
        self.groups: dict[Shape, dict[int, Job]] = {}
        self._where: dict[int, Shape] = {}
        self._by_size: SortedList = SortedList()
        # per group, built on demand and kept until the group changes: its jobs, their
        # indices (list and int64 array), in queue order
        self._members: dict[Shape, tuple[list[Job], list[int], np.ndarray]] = {}

    def _add(self, job: Job) -> None:
        key = shape_of(job)
        self._where[job.index] = key
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = {}
            self._by_size.add((_size(key, self.resource), key))
        group[job.index] = job
        self._members.pop(key, None)

    def members(self, key: Shape) -> tuple[list[Job], list[int], np.ndarray]:
        """The jobs of group ``key`` in queue order, their indices as a list and as an int64
        array (cached until the group changes; do not modify)."""
        cached = self._members.get(key)
        if cached is None:
            jobs = list(self.groups[key].values())
            indices = [job.index for job in jobs]
            cached = self._members[key] = (jobs, indices, np.asarray(indices, dtype=np.int64))
        return cached

    def fitting(self, limit: int) -> Iterator[tuple[Shape, dict[int, Job]]]:
        """Groups whose total request of the indexed resource is at most ``limit``."""
        for _, key in self._by_size.irange(maximum=(limit + 1,), inclusive=(True, False)):
            yield key, self.groups[key]

    def sync(self, view: DispatchView, started: Iterable[Job]) -> None:
        """Drop the jobs this dispatcher started last time, add the newly queued ones."""
        for job in started:
            key = self._where.pop(job.index, None)
            if key is not None:
                group = self.groups[key]
                del group[job.index]
                self._members.pop(key, None)
                if not group:
                    del self.groups[key]
                    self._by_size.remove((_size(key, self.resource), key))
        for job in view.new_jobs:
            if job.index not in self._where and job in view.queue:
                self._add(job)
        if len(self._where) != len(view.queue):  # something else changed the queue: rebuild
            self.groups, self._where, self._by_size, self._members = {}, {}, SortedList(), {}
            for job in view.queue:
                self._add(job)

    def __len__(self) -> int:
        return len(self._where)
