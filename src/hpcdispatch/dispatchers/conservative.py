"""Conservative backfilling (Mu'alem and Feitelson 2001), node-level, with schedule compression.

Every queued job, in FIFO order, holds a reservation: a start time and the nodes it will use,
the earliest at which it fits for its planned duration without touching any reservation
made before it (an :class:`~hpcdispatch.planning.profile.AvailabilityProfile` of running
jobs' expected ends and all reservations). Jobs whose reservation starts now are started, so
a job starts early (backfills) only if it delays no job ahead of it.

The plan is kept between calls (how it is kept up to date: the docs page below).

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

import numpy as np

from hpcdispatch.errors import SimulationStalledError
from hpcdispatch.planning.profile import AvailabilityProfile, load_compiled_kernels
from hpcdispatch.protocol import (
    Allocation,
    Decision,
    Dispatcher,
    DispatchView,
    OneOf,
    ParamConstraint,
    Scratch,
    Tags,
    register,
)
from hpcdispatch.system.allocation import held_amounts, per_node_array
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


@register
class Conservative(Dispatcher):
    """Conservative backfilling: every waiting job has a reservation no later job may delay."""

    name = "conservative"
    tags = Tags()  # keeps its plan between calls: checkpoints resume it, journals cannot

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "profile": OneOf("auto", "node"),
    }

    def __init__(self, allocator: str = "first-fit", profile: str = "auto"):
        self.allocator = allocator
        self.profile = profile

    def _setup(self, system: System) -> None:
        self._single_resource = len(system.resources) == 1
        self._profile: AvailabilityProfile | None = None
        load_compiled_kernels()  # (here, not inside the first timed decision)
        # The reservations, by job index (arrays grown as indices appear): start, end, the
        # profile's freed count when the slot was last known to be the earliest the job can
        # have, units and max units per node; ``_has``: whether the job holds one. Pinned
        # (node-level) reservations also name their nodes: ``_pinned[index] = (allocation,
        # amounts per node)``; a pooled one holds units x request of the pooled capacity.
        self._start = np.zeros(0)
        self._end = np.zeros(0)
        self._checked = np.zeros(0, dtype=np.int64)
        self._units = np.zeros(0, dtype=np.int64)
        self._mpn = np.zeros(0, dtype=np.int64)
        self._has = np.zeros(0, dtype=bool)
        self._pinned: dict[int, tuple[Allocation, np.ndarray]] = {}
        self._constrained: set[int] = set()  # reserved jobs with node constraints
        # running jobs started by this dispatcher: index -> (release time in the plan, nodes, amounts)
        self._running: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
        # (release time, index) of those, a heap: the earliest planned release without a scan
        # (entries of jobs that ended are dropped when they reach the top)
        self._releases: list[tuple[float, int]] = []
        self.rebuilds = 0
        self.compressions = 0

    # ------------------------------------------------------------------------------------
    def _duration(self, view: DispatchView, job: Job) -> float:
        return max(view.planned_duration(job), 1.0)

    def _pooled_exact(self, jobs) -> bool:
        """Node-level packing cannot matter: one resource, every unit needs 1 of it, no per-node limit."""
        return (
            self.profile == "auto"
            and self._single_resource
            and all(
                j.unit_request == (1,) and j.max_units_per_node == 0 and not j.constrained
                for j in jobs
            )
        )

    @staticmethod
    def _constraints(job: Job) -> dict:
        if not job.constrained:
            return {}
        return {
            "node_count": job.node_count,
            "per_node": per_node_array(job.per_node_request),
            "contiguous": job.contiguous,
        }

    # ---- the reservations --------------------------------------------------------------------
    def _holding(self, view: DispatchView, idx: int) -> tuple[np.ndarray, np.ndarray]:
        """``(nodes, amounts)`` a reservation takes in the profile."""
        pin = self._pinned.get(idx)
        if pin is not None:
            return pin[0].nodes, pin[1]
        return _NO_NODES, (view.requests[idx] * self._units[idx])[None, :]

    def _set(
        self,
        view: DispatchView,
        job: Job,
        start: float,
        end: float,
        alloc: Allocation | None,
        checked: int,
    ) -> None:
        idx = job.index
        if idx >= len(self._has):
            self._grow(idx + 1)
        self._start[idx], self._end[idx], self._checked[idx] = start, end, checked
        self._units[idx], self._mpn[idx] = job.units, job.max_units_per_node
        self._has[idx] = True
        if alloc is None:
            self._pinned.pop(idx, None)
        else:
            self._pinned[idx] = (
                alloc,
                held_amounts(alloc, view.requests[idx], job.per_node_request),
            )
        if job.constrained:
            self._constrained.add(idx)

    def _grow(self, size: int) -> None:
        size = max(size, 2 * len(self._has), 1024)
        for name in ("_start", "_end", "_checked", "_units", "_mpn", "_has"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _drop(self, idx: int) -> None:
        self._has[idx] = False
        self._pinned.pop(idx, None)
        self._constrained.discard(idx)

    def _clear(self) -> None:
        self._has[:] = False
        self._pinned.clear()
        self._constrained.clear()

    def _reserved(self, view: DispatchView) -> np.ndarray:
        """Indices of the queued jobs holding a reservation, in queue order."""
        q = view.queue.indices()
        if len(q) and int(q.max()) >= len(self._has):
            self._grow(int(q.max()) + 1)
        return q[self._has[q]]

    @property
    def _live_profile(self) -> AvailabilityProfile:
        """The availability profile (built at the first call)."""
        profile = self._profile
        if profile is None:
            raise RuntimeError("conservative: the profile is used before the first call built it")
        return profile

    # ------------------------------------------------------------------------------------
    def _place(
        self, view: DispatchView, job: Job, before: float | None = None
    ) -> tuple[float, Allocation | None] | None:
        profile = self._live_profile
        req = view.requests[job.index]
        return profile.earliest(
            job.units,
            req,
            self._duration(view, job),
            self._allocator,
            job.max_units_per_node,
            before=math.inf if before is None else before,
            **self._constraints(job),
        )

    def _reserve_new(self, view: DispatchView, job: Job) -> None:
        found = self._place(view, job)
        if found is None:
            raise SimulationStalledError(
                f"conservative: job {job.id} fits nowhere in the availability profile"
            )
        profile = self._live_profile
        start, alloc = found
        self._set(view, job, start, start + self._duration(view, job), alloc, 0)
        nodes, amounts = self._holding(view, job.index)
        profile.reserve(start, float(self._end[job.index]), nodes, amounts)
        self._checked[job.index] = profile.freed

    def _rebuild(self, view: DispatchView) -> None:
        """Plan from scratch: running jobs at their expected ends, queued jobs in order."""
        self.rebuilds += 1
        now = view.now
        releases = []
        running = {}
        for rj in view.running.values():
            t = view.expected_end(rj)
            amounts = held_amounts(
                rj.allocation, view.requests[rj.job.index], rj.job.per_node_request
            )
            releases.append((t, rj.allocation.nodes, amounts))
            running[rj.job.index] = (t, rj.allocation.nodes, amounts)
        self._running = running
        self._releases = [(t, idx) for idx, (t, _, _) in running.items()]
        heapq.heapify(self._releases)
        pooled = self._pooled_exact(view.queue) and self._pooled_exact(
            rj.job for rj in view.running.values()
        )
        self._profile = AvailabilityProfile(now, view.free, releases, node_level=not pooled)
        self._clear()
        for job in view.queue:
            self._reserve_new(view, job)

    def _rematerialize(self, view: DispatchView) -> None:
        """Rebuild the profile's segments (drop stale boundaries), keeping every reservation."""
        now = view.now
        releases = [(t, nodes, amounts) for t, nodes, amounts in self._running.values()]
        old = self._live_profile
        profile = AvailabilityProfile(now, view.free, releases, node_level=old.node_level)
        profile.adopt_log(old)
        for idx in self._reserved(view).tolist():
            nodes, amounts = self._holding(view, idx)
            profile.reserve(float(self._start[idx]), float(self._end[idx]), nodes, amounts)
        self._profile = profile

    def _compress(self, view: DispatchView) -> None:
        """Move every reservation as early as it can go, in queue order, never later."""
        self.compressions += 1
        profile = self._live_profile
        now = view.now
        sel = self._reserved(view)
        sel = sel[self._start[sel] > now]
        if not self._constrained:
            q_start, q_end, q_checked = self._start[sel], self._end[sel], self._checked[sel]
            pins = [self._pinned[idx] for idx in sel.tolist()] if profile.node_level else None
            done = profile.compress(
                q_start,
                q_end,
                view.requests[sel],
                self._units[sel],
                self._mpn[sel],
                q_checked,
                self._allocator,
                pins,
            )
            if done is not None:  # the compiled compression did it (same moves as the loop below)
                self._start[sel], self._end[sel], self._checked[sel] = q_start, q_end, q_checked
                for pos, moved in done:
                    idx = int(sel[pos])
                    self._pinned[idx] = (moved, held_amounts(moved, view.requests[idx], None))
                self._trim_log(view)
                return
        for idx in sel.tolist():
            job = view.queue.get(idx)
            start, end = float(self._start[idx]), float(self._end[idx])
            req = view.requests[idx]
            duration = end - start
            nodes, amounts = self._holding(view, idx)
            candidates = profile.candidate_starts(
                req * job.units, duration, before=start, credit=(start, end, amounts.sum(axis=0))
            )
            if len(candidates[0]) == 0:
                self._checked[idx] = profile.freed
                continue  # cannot move even by pooled capacity: skip the node-level search
            profile.release(start, end, nodes, amounts)
            found = profile.earliest(
                job.units,
                req,
                duration,
                self._allocator,
                job.max_units_per_node,
                before=start,
                candidates=candidates,
                **self._constraints(job),
            )
            if found is not None and found[0] < start:
                start, alloc = found
                self._set(view, job, start, start + duration, alloc, 0)
                nodes, amounts = self._holding(view, idx)
            profile.reserve(start, float(self._end[idx]), nodes, amounts)
            self._checked[idx] = profile.freed
        self._trim_log(view)

    def _trim_log(self, view: DispatchView) -> None:
        """Let the profile forget the given-back intervals no reservation can still ask for."""
        reserved = self._reserved(view)
        if len(reserved):
            self._live_profile.trim_log(int(self._checked[reserved].min()))

    def _sync(self, view: DispatchView) -> None:
        now = view.now
        if self._profile is None:
            self._rebuild(view)
            return
        releases = self._releases
        while releases and releases[0][0] <= now:
            t, idx = releases[0]
            entry = self._running.get(idx)
            if (
                entry is not None and entry[0] == t and idx in view.running
            ):  # outlived its planned end
                self._rebuild(view)
                return
            heapq.heappop(releases)  # it ended (now or before)
        reserved = self._reserved(view)
        if len(reserved) and self._start[reserved].min() < now:
            # a reservation passed without its job starting: the plan is stale
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
            if job.index >= len(self._has) or not self._has[job.index]:
                self._reserve_new(view, job)
        if len(profile) > 4 * (len(self._running) + len(reserved) + len(view.new_jobs)) + 64:
            self._rematerialize(view)

    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        self._sync(view)
        scratch = Scratch(view, self._allocator)
        q = view.queue.indices()
        starts = self._start[q]
        due = starts <= now
        later = starts[~due]
        next_start = float(later.min()) if len(later) else math.inf
        queued = view.queue.as_list()
        for pos in np.flatnonzero(due).tolist():
            job = queued[pos]
            pin = self._pinned.get(job.index)
            if pin is None:  # pooled reservation: any nodes will do, and some must
                alloc = scratch.try_start(job)
                if alloc is None:
                    raise RuntimeError(
                        f"conservative: the pooled reservation of job {job.id} does not fit at {now}"
                    )
                amounts = held_amounts(alloc, view.requests[job.index], job.per_node_request)
            else:
                alloc, amounts = pin
                scratch.take(job, alloc)
            end = float(self._end[job.index])
            self._running[job.index] = (end, alloc.nodes, amounts)
            heapq.heappush(self._releases, (end, job.index))
            self._drop(job.index)
        # Reservations normally start when a running job ends (an event). A wake-up is needed
        # for starts not tied to an end (a job ended before its planned end and nothing could
        # move into its slot). While a running job is past its planned end, the plan expects it
        # to end at now + 1 (the under-estimation clamp): waking up then would make the
        # simulator tick every second until it ends, so starts at now + 1 wait for an event
        # then -- only then (otherwise a reservation at now + 1 would start late).
        order = view.running_end_order()
        clamped = bool(order) and order[0][0] <= now
        wake = now < next_start < math.inf and (now + 1.0 < next_start or not clamped)
        return Decision(
            scratch.starts,
            wakeup=next_start if wake else None,
            info={
                "rebuilds": self.rebuilds,
                "compressions": self.compressions,
                "segments": len(self._profile) if self._profile else 0,
                "pooled": bool(self._profile is not None and not self._profile.node_level),
            },
        )

    def reservations(self) -> dict[int, tuple[float, list[tuple[int, int]] | None]]:
        """Current reservations (job index -> (start, node/unit pairs or None when pooled))."""
        out = {}
        for idx in np.flatnonzero(self._has).tolist():
            pin = self._pinned.get(idx)
            out[idx] = (float(self._start[idx]), pin[0].pairs() if pin is not None else None)
        return out


_NO_NODES = np.zeros(1, dtype=np.int64)
