"""Conservative backfilling (Mu'alem and Feitelson 2001), node-level, with schedule compression.

Every queued job, in FIFO order, holds a reservation: the earliest start at which it fits on
specific nodes for its planned duration without touching any earlier reservation (an
:class:`~hpcdispatch.dispatchers.profile.AvailabilityProfile` of running jobs' expected ends
and the reservations made so far). Jobs whose reservation starts now are started. A job can
thus start early (backfill) only if it delays no job ahead of it.

The profile is kept between calls: new jobs only add reservations at its end. When the plan
no longer matches reality -- a job ended before its planned end (the usual case with
wall-time estimates) or a running job outlived it -- every reservation is recomputed from
the current state (compression), in queue order, so no job ever gets a later reservation
than it had. ``wakeup`` is requested at the next reservation start.
"""

from __future__ import annotations

import math

from hpcdispatch.dispatchers.base import Dispatcher, Tags, register
from hpcdispatch.dispatchers.profile import AvailabilityProfile
from hpcdispatch.errors import SimulationStalledError
from hpcdispatch.sim.allocation import Allocation
from hpcdispatch.sim.decision import Decision, Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


@register
class Conservative(Dispatcher):
    """Conservative backfilling: every waiting job has a reservation no later job may delay."""

    name = "conservative"
    tags = Tags(backfilling=True)

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    def _setup(self, system: System) -> None:
        self._profile: AvailabilityProfile | None = None
        self._reservations: dict[int, tuple[float, Allocation]] = {}
        self._release_at: dict[int, float] = {}  # running job index -> release time in the profile
        self.rebuilds = 0

    # ------------------------------------------------------------------------------------
    def _profile_stale(self, view: DispatchView) -> bool:
        if self._profile is None:
            return True
        now = view.now
        for job in view.ended_jobs:
            if self._release_at.pop(job.index, None) != now:
                return True
        for idx, t in self._release_at.items():
            if t <= now and idx in view.running:
                return True
        return False

    def _reserve(self, view: DispatchView, job: Job) -> None:
        profile = self._profile
        assert profile is not None
        duration = max(view.planned_duration(job), 1.0)
        req = view.requests[job.index]
        found = profile.earliest(job.units, req, duration, self._allocator, job.max_units_per_node)
        if found is None:
            raise SimulationStalledError(f"conservative: job {job.id} fits nowhere in the availability profile")
        start, alloc = found
        profile.reserve(start, start + duration, alloc.nodes, alloc.units[:, None] * req)
        self._reservations[job.index] = (start, alloc)

    def _rebuild(self, view: DispatchView) -> None:
        self.rebuilds += 1
        now = view.now
        releases = []
        self._release_at = {}
        for rj in view.running.values():
            t = view.expected_end(rj)
            releases.append((t, rj.allocation.nodes, rj.allocation.units[:, None] * view.requests[rj.job.index]))
            self._release_at[rj.job.index] = t
        self._profile = AvailabilityProfile(now, view.free, releases)
        self._reservations = {}
        for job in view.queue:
            self._reserve(view, job)

    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        if self._profile_stale(view):
            self._rebuild(view)
        else:
            assert self._profile is not None
            self._profile.advance(now)
            for job in view.new_jobs:
                if job.index not in self._reservations:
                    self._reserve(view, job)
        starts: list[Start] = []
        next_start = math.inf
        for job in view.queue:
            start, alloc = self._reservations[job.index]
            if start <= now:
                starts.append(Start(job, alloc))
            elif start < next_start:
                next_start = start
        for s in starts:
            del self._reservations[s.job.index]
            self._release_at[s.job.index] = now + max(view.planned_duration(s.job), 1.0)
        return Decision(
            starts,
            wakeup=next_start if next_start < math.inf else None,
            info={"rebuilds": self.rebuilds, "segments": len(self._profile) if self._profile else 0},
        )


def reservation_table(dispatcher: Conservative) -> dict[int, tuple[float, list[tuple[int, int]]]]:
    """Current reservations (job index -> (start, node/unit pairs)), for tests and inspection."""
    return {idx: (start, alloc.pairs()) for idx, (start, alloc) in dispatcher._reservations.items()}

