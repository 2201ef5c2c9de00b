"""EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001), node-level.

1. Start queued jobs in FIFO order while they fit.
2. The first job that does not fit (the *head*) gets a reservation: the *shadow time* is the
   earliest expected end of running jobs (including the ones just started) after which the
   head fits, node by node; ``free_at_shadow`` is the free capacity then.
3. Every later job, in queue order, may start now (backfill) if it fits now and either ends
   (by its planned duration) no later than the shadow time, or leaves enough of
   ``free_at_shadow`` for the head to still fit. Jobs that would delay the head are refused.

Expected ends of running jobs are ``max(planned_end, now + 1)``: a job that outlived its
prediction (possible without wall-time kills or with predictors) is expected to need at
least one more second, and the reservation is recomputed at every call.

Speed without changing a single decision:

- only queued jobs whose pooled request fits the pooled free capacity are visited (a
  :class:`~hpcdispatch.dispatchers.queue_index.RequestIndex` kept between calls);
- within one call free capacity only shrinks, so a request shape (per-unit request, unit
  limit per node) that failed to fit with ``u`` units fails with ``u' >= u`` units for the rest
  of the call; a long job refused because the head would not fit any more is refused again
  for the same shape and more units until the next start (allocators with
  ``prefix_monotone`` fill nodes in an order that does not depend on the unit count);
- the shadow time is found on pooled totals first; node-level arrays are only built once
  the pooled capacity could hold the head.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterator

import numpy as np

from hpcdispatch.dispatchers.base import Dispatcher, Scratch, Tags, register
from hpcdispatch.dispatchers.queue_index import ShapeIndex
from hpcdispatch.sim.allocation import units_fit_per_node
from hpcdispatch.sim.decision import Decision, Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


def releases_in_end_order(view: DispatchView, started: list[Start]) -> Iterator[tuple[float, int, object]]:
    """Running jobs and just-started ones as ``(expected end, job index, record)``, ascending."""
    now = view.now
    running = ((max(rj.planned_end, now + 1.0), rj.job.index, rj) for rj in view.running_by_planned_end())
    fresh = sorted((now + view.planned_duration(s.job), s.job.index, s) for s in started)
    return heapq.merge(running, fresh, key=lambda x: (x[0], x[1]))


def shadow_time(view: DispatchView, scratch: Scratch, head: Job) -> tuple[float, np.ndarray]:
    """Earliest expected time the head fits (node-level) and the free capacity at that time."""
    req = view.requests[head.index]
    need = [a * head.units for a in head.unit_request]
    total = list(scratch.total)
    future: np.ndarray | None = None
    pending: list[object] = []  # releases not yet applied to ``future``
    group_time = None
    for end, _idx, rec in releases_in_end_order(view, scratch.starts):
        if group_time is not None and end != group_time and all(t >= n for t, n in zip(total, need)):
            if future is None:
                future = np.array(scratch.free, order="F")
            for r in pending:
                alloc = r.allocation  # type: ignore[attr-defined]
                future[alloc.nodes] += alloc.units[:, None] * view.requests[r.job.index]  # type: ignore[attr-defined]
            pending.clear()
            if int(units_fit_per_node(future, req, head.max_units_per_node).sum()) >= head.units:
                return group_time, future
        units = rec.allocation.total_units  # type: ignore[attr-defined]
        for r, a in enumerate(rec.job.unit_request):  # type: ignore[attr-defined]
            total[r] += units * a
        pending.append(rec)
        group_time = end
    if future is None:
        future = np.array(scratch.free, order="F")
    for r in pending:
        alloc = r.allocation  # type: ignore[attr-defined]
        future[alloc.nodes] += alloc.units[:, None] * view.requests[r.job.index]  # type: ignore[attr-defined]
    if group_time is not None and int(units_fit_per_node(future, req, head.max_units_per_node).sum()) >= head.units:
        return group_time, future
    return math.inf, future


@register
class EASY(Dispatcher):
    """EASY backfilling: FIFO plus backfilling that never delays the first waiting job."""

    name = "easy"
    tags = Tags(backfilling=True)

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    def _setup(self, system: System) -> None:
        self._index = ShapeIndex()
        self._started: list[Job] = []

    def _dispatch(self, view: DispatchView) -> Decision:
        self._index.sync(view, self._started)
        scratch = Scratch(view, self._allocator)
        head: Job | None = None
        for job in view.queue:
            if scratch.try_start(job) is None:
                head = job
                break
        info: dict[str, object] = {}
        if head is not None and not scratch.nothing_free():
            self._backfill(view, scratch, head, info)
        self._started = [s.job for s in scratch.starts]
        return Decision(scratch.starts, info=info)

    def _backfill(self, view: DispatchView, scratch: Scratch, head: Job, info: dict[str, object]) -> None:
        """Backfill in queue order, visiting request-shape groups merged by job index.

        A group is dropped as soon as its shape cannot fit now (free capacity only shrinks
        during the call). When a group's *long* jobs cannot go (the head would not fit at the
        shadow time), its pointer jumps to its next short job; a later start may make long
        jobs possible again, so every such group is rewound to just after that start --
        exactly the jobs a single pass in queue order would still look at. The shadow time is
        only computed once some job fits now.
        """
        started = {s.job.index for s in scratch.starts}
        started.add(head.index)
        total = scratch.total
        groups: list[dict[int, Job]] = []
        members: list[list[Job] | None] = []
        indices: list[list[int] | None] = []
        heap: list[tuple[int, int, int, int]] = []  # (job index, group, position, version)
        for (req, _maxpn, units), group in self._index.fitting(total[0]):
            if any(a and t < a * units for t, a in zip(total, req)):
                continue
            n = len(groups)
            groups.append(group)
            members.append(None)
            indices.append(None)
            for pos, job in enumerate(group.values()):
                if job.index not in started:
                    heap.append((job.index, n, pos, 0))
                    break
        if not heap:
            return
        heapq.heapify(heap)

        def jobs_of(g: int) -> list[Job]:
            jobs = members[g]
            if jobs is None:
                jobs = members[g] = list(groups[g].values())
                indices[g] = [j.index for j in jobs]
            return jobs

        version = [0] * len(groups)
        shadow = math.nan
        at_shadow = spare = None
        latest_short = math.nan
        head_req = view.requests[head.index]
        prefix = self._allocator.prefix_monotone
        no_fit: dict[tuple, int] = {}  # (req, maxpn) -> fewest units that did not fit (whole call)
        hurts: dict[tuple, int] = {}  # (req, maxpn) -> fewest units refused for the head (until a start)
        long_dead: set[int] = set()  # groups whose long jobs cannot go until the next start
        dropped: set[int] = set()
        planned = view.planned_duration
        planned_all = view.planned_durations
        short_pos: dict[int, np.ndarray] = {}  # group -> positions of its short jobs
        backfilled = 0

        def skip_to_next_short(g: int, pos: int, ver: int) -> None:
            jobs = jobs_of(g)
            shorts = short_pos.get(g)
            if shorts is None:
                shorts = short_pos[g] = np.flatnonzero(planned_all[indices[g]] <= latest_short)
            k = int(np.searchsorted(shorts, pos + 1))
            while k < len(shorts) and jobs[shorts[k]].index in started:
                k += 1
            if k < len(shorts):
                nxt = int(shorts[k])
                heapq.heappush(heap, (jobs[nxt].index, g, nxt, ver))

        while heap:
            idx, n, pos, ver = heapq.heappop(heap)
            if ver != version[n] or n in dropped:
                continue  # stale entry
            if pos == 0 and members[n] is None:  # a group's first job: no need to list the group yet
                job = next(iter(groups[n].values()))
            else:
                job = jobs_of(n)[pos]
            req, units = job.unit_request, job.units
            base = (req, job.max_units_per_node)
            bound = no_fit.get(base)
            if not scratch.pooled_ok(job) or (bound is not None and (units >= bound if prefix else units == bound)):
                dropped.add(n)  # every job of this group would fail the same way
                continue
            known_shadow = at_shadow is not None
            if known_shadow:
                short = planned(job) <= latest_short
                if not short and (n in long_dead or self._hurts(base, units, hurts, prefix, spare)):
                    long_dead.add(n)  # only this group's short jobs may go now: skip to the next one
                    skip_to_next_short(n, pos, ver)
                    continue
            alloc = scratch.allocate(job)
            if alloc is None:
                no_fit[base] = units if bound is None else min(units, bound)
                dropped.add(n)
                continue
            if not known_shadow:
                shadow, at_shadow = shadow_time(view, scratch, head)
                need = [a * head.units for a in head.unit_request]
                spare = [t - k for t, k in zip(at_shadow.sum(axis=0).tolist(), need)]  # pooled slack at shadow
                latest_short = shadow - view.now
                short = planned(job) <= latest_short
                if not short and self._hurts(base, units, hurts, prefix, spare):
                    long_dead.add(n)
                    skip_to_next_short(n, pos, ver)
                    continue
            took = False
            if short:
                scratch.take(job, alloc)
                took = True
            else:
                amounts = alloc.units[:, None] * view.requests[job.index]
                trial = at_shadow.copy(order="F")
                trial[alloc.nodes] -= amounts
                if int(units_fit_per_node(trial, head_req, head.max_units_per_node).sum()) >= head.units:
                    scratch.take(job, alloc)
                    at_shadow = trial
                    spare = [s - a for s, a in zip(spare, amounts.sum(axis=0).tolist())]
                    took = True
                else:
                    hb = hurts.get(base)
                    hurts[base] = units if hb is None else min(units, hb)
                    long_dead.add(n)
            if took:
                backfilled += 1
                started.add(idx)
                hurts.clear()
                if scratch.nothing_free():
                    break
                for g in long_dead:  # their skipped long jobs after this start are candidates again
                    if g in dropped or g == n:
                        continue
                    jobs = jobs_of(g)
                    p = bisect.bisect_right(indices[g], idx)
                    p = _next_waiting(jobs, p, started)
                    version[g] += 1
                    if p < len(jobs):
                        heapq.heappush(heap, (jobs[p].index, g, p, version[g]))
                long_dead.clear()
            jobs = jobs_of(n)
            nxt = _next_waiting(jobs, pos + 1, started)
            if nxt < len(jobs):
                heapq.heappush(heap, (jobs[nxt].index, n, nxt, version[n]))
        if at_shadow is not None:
            info.update(shadow=shadow, head=head.id, backfilled=backfilled)

    @staticmethod
    def _hurts(base: tuple, units: int, hurts: dict[tuple, int], prefix: bool, spare: list[int]) -> bool:
        """A long job of this shape cannot go: it would eat into the head's share at the shadow time."""
        req = base[0]
        if any(a and s < a * units for s, a in zip(spare, req)):
            return True
        bound = hurts.get(base)
        return bound is not None and (units >= bound if prefix else units == bound)


def _next_waiting(jobs: list[Job], pos: int, started: set[int]) -> int:
    """Position of the next job of a group (from ``pos``) not started yet, ``len(jobs)`` if none."""
    n = len(jobs)
    while pos < n and jobs[pos].index in started:
        pos += 1
    return pos
