"""Conservative backfilling (Mu'alem and Feitelson 2001), node-level, with schedule compression.

Every queued job, in FIFO order, holds a reservation: a start time and the nodes it will use,
the earliest at which it fits for its planned duration without touching any reservation
made before it (an :class:`~hpcdispatch.planning.profile.AvailabilityProfile` of running
jobs' expected ends and all reservations). Jobs whose reservation starts now are started, so
a job starts early (backfills) only if it delays no job ahead of it.

The plan is kept between calls:

- a new job gets a reservation at the earliest slot left by everything ahead of it;
- when a job ends before its planned end (the usual case with wall-time estimates), its
  remaining slot is given back and the schedule is *compressed*: in queue order, each
  reservation is taken out, the earliest slot is searched strictly before its current start,
  and the job moves there if one exists -- otherwise it keeps its reservation. A
  reservation therefore never moves later, node-level included (re-planning from scratch
  could put an earlier job on a later job's nodes and delay it);
- when a running job outlives its planned end (only without wall-time kills, or with a
  predictor that under-estimates), the resources the plan counted on are not free: the
  whole plan is rebuilt in queue order from the current state (unavoidable: the plan was
  built on a wrong prediction). The same happens when a reservation's start has passed
  without its job starting (the job it waited for ran longer than planned and no call came
  in between).

With ``profile="auto"`` (default) the profile keeps only pooled totals while any free unit of
capacity can host any unit of any job (one resource, every unit needs 1 of it, no per-node
limit: e.g. ``--units processor`` on a cores-only system). That is the classic
processor-count formulation of conservative backfilling: a reservation counts capacity and
names no nodes, and the job is placed (by the allocator) when it starts, where it always
fits. A search then costs ``O(segments)`` instead of ``O(segments x nodes)``, which is what
makes whole large traces feasible. ``profile="node"`` pins every reservation to nodes even
then; pinned plans can be less flexible (a later job may find its slot blocked by a pinned
reservation that pooled counting would have rearranged), so the two may start jobs at
different times -- both never delay an earlier reservation.

``Decision.wakeup`` asks for a call at the next reservation start (unless that start is the
under-estimation clamp ``now + 1``, which would make the simulation tick every second).
"""

from __future__ import annotations

import math

import numpy as np

from hpcdispatch.dispatchers.base import Dispatcher, Scratch, Tags, register
from hpcdispatch.planning.profile import AvailabilityProfile
from hpcdispatch.errors import ConfigError, SimulationStalledError
from hpcdispatch.sim.allocation import Allocation, held_amounts, per_node_array
from hpcdispatch.sim.decision import Decision, Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


class _Reservation:
    """A queued job's slot; ``checked``: the profile's :attr:`~AvailabilityProfile.freed` count
    when the slot was last known to be the earliest the job can have."""

    __slots__ = ("start", "end", "alloc", "amounts", "checked")

    def __init__(self, start: float, end: float, alloc: Allocation | None, amounts: np.ndarray, checked: int = 0):
        self.start = start
        self.end = end
        self.alloc = alloc
        self.amounts = amounts
        self.checked = checked


@register
class Conservative(Dispatcher):
    """Conservative backfilling: every waiting job has a reservation no later job may delay."""

    name = "conservative"
    tags = Tags(backfilling=True)

    def __init__(self, allocator: str = "first-fit", profile: str = "auto"):
        self.allocator = allocator
        self.profile = profile

    def _setup(self, system: System) -> None:
        if self.profile not in ("auto", "node"):
            raise ConfigError(f"conservative: profile must be 'auto' or 'node', got '{self.profile}'")
        self._single_resource = len(system.resources) == 1
        self._profile: AvailabilityProfile | None = None
        self._res: dict[int, _Reservation] = {}
        # running jobs started by this dispatcher: index -> (release time in the plan, nodes, amounts)
        self._running: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
        self.rebuilds = 0
        self.compressions = 0

    # ------------------------------------------------------------------------------------
    def _duration(self, view: DispatchView, job: Job) -> float:
        return max(view.planned_duration(job), 1.0)

    def _pooled_exact(self, jobs) -> bool:
        """Node-level packing cannot matter: one resource, every unit needs 1 of it, no per-node limit."""
        return self.profile == "auto" and self._single_resource and all(
            j.unit_request == (1,) and j.max_units_per_node == 0 and not j.constrained for j in jobs
        )

    @staticmethod
    def _constraints(job: Job) -> dict:
        if not job.constrained:
            return {}
        return {"node_count": job.node_count, "per_node": per_node_array(job.per_node_request),
                "contiguous": job.contiguous}

    def _place(self, view: DispatchView, job: Job, before: float | None = None) -> _Reservation | None:
        profile = self._profile
        assert profile is not None
        duration = self._duration(view, job)
        req = view.requests[job.index]
        found = profile.earliest(
            job.units, req, duration, self._allocator, job.max_units_per_node, before=math.inf if before is None else before,
            **self._constraints(job),
        )
        if found is None:
            return None
        start, alloc = found
        if alloc is None:  # pooled profile: the nodes are chosen when the job starts
            return _Reservation(start, start + duration, None, (req * job.units)[None, :])
        return _Reservation(start, start + duration, alloc, held_amounts(alloc, req, job.per_node_request))

    def _reserve_new(self, view: DispatchView, job: Job) -> None:
        res = self._place(view, job)
        if res is None:
            raise SimulationStalledError(f"conservative: job {job.id} fits nowhere in the availability profile")
        assert self._profile is not None
        self._profile.reserve(res.start, res.end, _nodes(res), res.amounts)
        res.checked = self._profile.freed
        self._res[job.index] = res

    def _rebuild(self, view: DispatchView) -> None:
        """Plan from scratch: running jobs at their expected ends, queued jobs in order."""
        self.rebuilds += 1
        now = view.now
        releases = []
        running = {}
        for rj in view.running.values():
            t = view.expected_end(rj)
            amounts = held_amounts(rj.allocation, view.requests[rj.job.index], rj.job.per_node_request)
            releases.append((t, rj.allocation.nodes, amounts))
            running[rj.job.index] = (t, rj.allocation.nodes, amounts)
        self._running = running
        pooled = self._pooled_exact(view.queue) and self._pooled_exact(rj.job for rj in view.running.values())
        self._profile = AvailabilityProfile(now, view.free, releases, node_level=not pooled)
        self._res = {}
        for job in view.queue:
            self._reserve_new(view, job)

    def _rematerialize(self, view: DispatchView) -> None:
        """Rebuild the profile's segments (drop stale boundaries), keeping every reservation."""
        now = view.now
        releases = [(t, nodes, amounts) for t, nodes, amounts in self._running.values()]
        profile = AvailabilityProfile(now, view.free, releases, node_level=self._profile.node_level)
        profile.adopt_log(self._profile)
        for job in view.queue:
            res = self._res[job.index]
            profile.reserve(res.start, res.end, _nodes(res), res.amounts)
        self._profile = profile

    def _compress(self, view: DispatchView) -> None:
        """Move every reservation as early as it can go, in queue order, never later."""
        self.compressions += 1
        profile = self._profile
        assert profile is not None
        now = view.now
        jobs = [job for job in view.queue if (res := self._res.get(job.index)) is not None and res.start > now]
        if not any(job.constrained for job in jobs):
            batch = []
            for job in jobs:
                res = self._res[job.index]
                batch.append((res.start, res.end, _nodes(res), res.amounts, view.requests[job.index], job.units,
                              job.max_units_per_node, res.checked))
            done = profile.compress(batch, self._allocator)
            if done is not None:  # the compiled compression did it (same moves as the loop below)
                moved, checked = done
                for job, move, version in zip(jobs, moved, checked):
                    if move is None:
                        self._res[job.index].checked = version
                    else:
                        start, end, alloc = move
                        req = view.requests[job.index]
                        amounts = (req * job.units)[None, :] if alloc is None else held_amounts(alloc, req, job.per_node_request)
                        self._res[job.index] = _Reservation(start, end, alloc, amounts, version)
                return
        for job in jobs:
            res = self._res[job.index]
            req = view.requests[job.index]
            duration = res.end - res.start
            candidates = profile.candidate_starts(
                req * job.units, duration, before=res.start, credit=(res.start, res.end, res.amounts.sum(axis=0))
            )
            if len(candidates[0]) == 0:
                res.checked = profile.freed
                continue  # cannot move even by pooled capacity: skip the node-level search
            profile.release(res.start, res.end, _nodes(res), res.amounts)
            found = profile.earliest(job.units, req, duration, self._allocator, job.max_units_per_node,
                                     before=res.start, candidates=candidates, **self._constraints(job))
            if found is not None and found[0] < res.start:
                start, alloc = found
                amounts = (req * job.units)[None, :] if alloc is None else held_amounts(alloc, req, job.per_node_request)
                res = _Reservation(start, start + duration, alloc, amounts)
                self._res[job.index] = res
            profile.reserve(res.start, res.end, _nodes(res), res.amounts)
            res.checked = profile.freed

    def _sync(self, view: DispatchView) -> None:
        now = view.now
        if self._profile is None:
            self._rebuild(view)
            return
        for idx, (t, _, _) in self._running.items():
            if t <= now and idx in view.running:  # outlived its planned end
                self._rebuild(view)
                return
        for res in self._res.values():
            if res.start < now:  # a reservation passed without its job starting: the plan is stale
                self._rebuild(view)
                return
        profile = self._profile
        profile.advance(now)
        changed = False
        for job in view.ended_jobs:
            entry = self._running.pop(job.index, None)
            if entry is None:
                continue
            release, nodes, amounts = entry
            if release > now:  # ended early: give back [now, planned release)
                profile.release(now, release, nodes, amounts)
                changed = True
        if changed:
            self._compress(view)
        if not profile.node_level and not self._pooled_exact(view.new_jobs):
            self._rebuild(view)  # a job that needs node-level packing arrived
            return
        for job in view.new_jobs:
            if job.index not in self._res:
                self._reserve_new(view, job)
        if len(profile) > 4 * (len(self._running) + len(self._res)) + 64:
            self._rematerialize(view)

    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        self._sync(view)
        scratch = Scratch(view, self._allocator)
        next_start = math.inf
        for job in view.queue:
            res = self._res[job.index]
            if res.start <= now:
                if res.alloc is None:  # pooled reservation: any nodes will do, and some must
                    alloc = scratch.try_start(job)
                    if alloc is None:
                        raise RuntimeError(f"conservative: the pooled reservation of job {job.id} does not fit at {now}")
                    res.alloc, res.amounts = alloc, held_amounts(alloc, view.requests[job.index], job.per_node_request)
                else:
                    scratch.take(job, res.alloc)
            elif res.start < next_start:
                next_start = res.start
        for s in scratch.starts:
            res = self._res.pop(s.job.index)
            self._running[s.job.index] = (res.end, res.alloc.nodes, res.amounts)
        # Reservations normally start when a running job ends (an event). A wake-up is only
        # needed for starts not tied to an end; starts at now + 1 come from the under-estimation
        # clamp (a job past its planned end) and would make the simulator tick every second.
        return Decision(
            scratch.starts,
            wakeup=next_start if now + 1.0 < next_start < math.inf else None,
            info={"rebuilds": self.rebuilds, "compressions": self.compressions,
                  "segments": len(self._profile) if self._profile else 0,
                  "pooled": bool(self._profile is not None and not self._profile.node_level)},
        )

    def reservations(self) -> dict[int, tuple[float, list[tuple[int, int]] | None]]:
        """Current reservations (job index -> (start, node/unit pairs or None when pooled))."""
        return {idx: (r.start, r.alloc.pairs() if r.alloc is not None else None) for idx, r in self._res.items()}


def _nodes(res: _Reservation) -> np.ndarray:
    return res.alloc.nodes if res.alloc is not None else _NO_NODES


_NO_NODES = np.zeros(1, dtype=np.int64)
