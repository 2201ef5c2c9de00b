"""Pick dispatchers: one decision picks one job, and the picked job waits until it fits.

The scheduling model of the reinforcement-learning papers (RLScheduler, SC'20) and of the
heuristics they compare against: at every call the queue is ranked by a score, the best job
is *picked* and started if it fits, else it stays the pick until it fits; ``backfill=off``
starts nothing before it, ``on`` is EASY backfilling with the pick as the reserved head,
``rlscheduler`` RLScheduler's own variant (a shadow time from requested ends, computed once).

Scores, lower first (``w`` wait, ``r`` requested time, ``n`` processors, ``s`` submit time):
``fcfs`` ``s``; ``sjf-pick`` ``r``; ``wfp3`` ``-(w / r)^3 * n``; ``unicep``
``-w / (log2(n) * r)``; ``f1`` ``log10(r) * n + 8.70e2 * log10(s)`` (Carastan-Santos and de
Camargo, SC'17). The sources, RLScheduler's deviations and what they change:
docs/RESULTS-RL.md, "The pick dispatchers".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import ClassVar

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import (
    Decision,
    Dispatcher,
    DispatchView,
    OneOf,
    ParamConstraint,
    Scratch,
    Start,
    Tags,
    register,
)
from hpcdispatch.system.allocation import held_amounts, job_fits
from hpcdispatch.workload.job import Job

BACKFILL_MODES = ("off", "on", "rlscheduler")
SCORES = ("fcfs", "sjf", "wfp3", "unicep", "f1")


def requested_processors(job: Job) -> int:
    """``n``: the processors a job asked for (the trace's field when known, else its units
    times its per-unit request of the first resource)."""
    if job.processors > 0:
        return int(job.processors)
    return int(job.units * (job.unit_request[0] if job.unit_request else 1))


def score_key(score: str, job: Job, now: float) -> float:
    """The score of ``job`` at ``now`` (lower first), as the module docstring defines it."""
    r = float(job.wall_time)
    if score == "fcfs":
        return float(job.submit)
    if score == "sjf":
        return r
    n = requested_processors(job)
    if score == "f1":
        s = float(job.submit)
        return math.log10(r if r > 0 else 0.1) * n + 870.0 * math.log10(s if s > 0 else 0.1)
    w = max(now - job.submit, 0.0)
    r = max(r, 1.0)
    if score == "wfp3":
        return -((w / r) ** 3) * n
    if score == "unicep":
        return -(w + 1e-15) / (math.log2(n + 1e-15) * r)
    raise ConfigError(f"unknown score '{score}' (scores: {', '.join(SCORES)})")


def ranked(score: str, jobs: Iterable[Job], now: float) -> list[Job]:
    """``jobs`` best first: by score, then submit time (``sjf``), then queue order."""
    if score == "fcfs":
        return sorted(jobs, key=lambda j: j.index)
    return sorted(jobs, key=lambda j: (score_key(score, j, now), j.submit, j.index))


class PickBase(Dispatcher):
    """What every pick dispatcher shares: the kept pick, starting it, backfilling around it.
    Subclasses say which job is picked next (:meth:`_next_picks`)."""

    tags: ClassVar[Tags] = Tags(memoryless=False)
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "backfill": OneOf(*BACKFILL_MODES),
    }

    def __init__(self, backfill: str = "off", allocator: str = "first-fit"):
        self.backfill = backfill
        self.allocator = allocator

    def _setup(self, system) -> None:
        self._head: Job | None = None  # the pick that did not fit yet
        self._shadow: float | None = None  # backfill=rlscheduler: its shadow time

    # ---- the pick ----------------------------------------------------------------------
    def kept_pick(self, view: DispatchView) -> Job | None:
        """The pick kept from an earlier call, while it is still queued."""
        head = self._head
        if head is not None and head not in view.queue:
            self._head = self._shadow = None  # cancelled (a deadline passed)
            return None
        return head

    def try_pick(self, view: DispatchView, scratch: Scratch, job: Job) -> bool:
        """Start ``job`` if it may start now and fits; otherwise keep it as the pick."""
        if job.ready_at <= view.now and scratch.try_start(job) is not None:
            if self._head is job:
                self._head = self._shadow = None
            return True
        if self._head is not job:
            self._head, self._shadow = job, None
        return False

    def backfill_around(self, view: DispatchView, scratch: Scratch, head: Job) -> None:
        """Start queued jobs around the blocked pick ``head`` (the ``backfill`` mode)."""
        if self.backfill == "off":
            return
        if self.backfill == "rlscheduler":
            if self._shadow is None:  # when the pick blocks, even with nothing free
                self._shadow = _pooled_shadow(view, scratch, head)
            shadow = self._shadow
            if scratch.nothing_free():
                return
            for job in view.queue:
                if scratch.nothing_free():
                    return
                if (
                    job is not head
                    and job.ready_at <= view.now
                    and job.index not in _started(scratch)
                    and view.now + job.wall_time < shadow
                ):
                    scratch.try_start(job)
            return
        if scratch.nothing_free():
            return
        from hpcdispatch.dispatchers.easy import shadow_time

        shadow, at_shadow = shadow_time(view, scratch, head)
        head_req = view.requests[head.index]
        at_shadow = np.array(at_shadow, order="F")
        for job in view.queue:
            if scratch.nothing_free():
                return
            if job is head or job.ready_at > view.now or job.index in _started(scratch):
                continue
            alloc = scratch.allocate(job)
            if alloc is None:
                continue
            if view.now + view.planned_duration(job) <= shadow:
                scratch.take(job, alloc)
                continue
            after = np.array(at_shadow, order="F")
            after[alloc.nodes] -= held_amounts(
                alloc, view.requests[job.index], job.per_node_request
            )
            if (after >= 0).all() and job_fits(after, head, head_req):
                scratch.take(job, alloc)
                at_shadow = after

    def wakeup_for(self, view: DispatchView, head: Job | None) -> float | None:
        """A call at the pick's earliest start when it is not ready yet (deadline jobs)."""
        if head is not None and head.ready_at > view.now:
            return head.ready_at
        return None


def _started(scratch: Scratch) -> set[int]:
    return {s.job.index for s in scratch.starts}


def _pooled_shadow(view: DispatchView, scratch: Scratch, head: Job) -> float:
    """RLScheduler's shadow time: running jobs (and those just started) by start + requested
    time, their processors added to the free ones until the pick's request is covered; that
    job's requested end (the last one's when never covered)."""
    now = view.now
    items: list[tuple[float, int, tuple[int, ...]]] = []
    for rj in view.running.values():
        job = rj.job
        items.append((rj.start + job.wall_time, job.index, job.total_request))
    for st in scratch.starts:
        job = st.job
        items.append((now + job.wall_time, job.index, job.total_request))
    items.sort()
    free = list(scratch.total)
    need = head.total_request
    shadow = now
    for end, _, total in items:
        free = [f + t for f, t in zip(free, total)]
        shadow = end
        if all(f >= n for f, n in zip(free, need)):
            break
    return shadow


class PickHeuristic(PickBase):
    """A pick dispatcher ranking the queue by one of the scores of the RL papers."""

    score: ClassVar[str] = "fcfs"

    @classmethod
    def test_params(cls) -> list[dict[str, object]]:
        return [{"backfill": b} for b in BACKFILL_MODES]

    def _dispatch(self, view: DispatchView) -> Decision | list[Start]:
        scratch = Scratch(view, self._allocator)
        head = self.kept_pick(view)
        if head is not None:
            if not self.try_pick(view, scratch, head):
                self.backfill_around(view, scratch, head)
                return Decision(starts=scratch.starts, wakeup=self.wakeup_for(view, head))
        started = _started(scratch)
        for job in ranked(self.score, view.queue, view.now):
            if job.index in started:
                continue
            if not self.try_pick(view, scratch, job):
                self.backfill_around(view, scratch, job)
                return Decision(starts=scratch.starts, wakeup=self.wakeup_for(view, job))
        return scratch.starts


@register
class FCFS(PickHeuristic):
    """First come, first served as a pick dispatcher (``fifo`` with ``backfill=off``, plus
    EASY or RLScheduler backfilling around the head)."""

    name = "fcfs"
    score = "fcfs"


@register
class PickSJF(PickHeuristic):
    """Shortest requested time first, as a pick dispatcher (the RL papers' SJF: the pick is
    kept until it fits; ``sjf`` re-ranks at every call instead)."""

    name = "sjf-pick"
    score = "sjf"


@register
class WFP3(PickHeuristic):
    """WFP3: -(w/r)^3 * n, w the wait, r the requested time, n the processors (Tang et al.,
    IPDPS'09)."""

    name = "wfp3"
    score = "wfp3"


@register
class UNICEP(PickHeuristic):
    """UNICEP: -w / (log2(n) * r) (Tang et al. 2009)."""

    name = "unicep"
    score = "unicep"


@register
class F1(PickHeuristic):
    """F1: log10(r) * n + 8.70e2 * log10(s), s the submit time (Carastan-Santos and de
    Camargo, SC'17)."""

    name = "f1"
    score = "f1"


#: the RL papers' names of the five heuristics -> the registered pick dispatchers
HEURISTICS = {"fcfs": "fcfs", "sjf": "sjf-pick", "wfp3": "wfp3", "unicep": "unicep", "f1": "f1"}
