"""The environment's fast engine: the same decisions as the simulator, on pooled counts.

On a machine where pooled counting is exact -- one resource, nodes of one unit each, plain
jobs (no node constraints, deadlines, growth or application models) and planned durations
equal to the requested times (predictor W) -- the simulation between two picks needs only
the free count, the queue and the heap of ends. :class:`FastEpisode` runs it so, with the
simulator's rules: at each instant ends first, then submissions, then one dispatcher call if
jobs are queued; the pick starts when it fits; EASY backfilling (shadow time from the
running jobs' expected ends ``max(planned end, now + 1)``, a job starts if it fits now and
ends by the shadow time or leaves the pick enough capacity then) or RLScheduler's variant
(:mod:`hpcdispatch.dispatchers.pick`).

The episode's run is then made by the simulator itself: :class:`Replay` starts, at each
call, the jobs the fast engine started at that instant, in that order, and the simulator
checks every start as it always does; a start the simulator would refuse is a bug here and
raises (tests/test_rl_env.py runs both engines on the same actions and compares them).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from itertools import islice

import numpy as np

from hpcdispatch.dispatchers.pick import PickBase
from hpcdispatch.protocol import DispatchView, Scratch, Start

_INF = math.inf


class FastEpisode:
    """One episode on pooled counts (see the module docstring)."""

    def __init__(
        self,
        submit: Sequence[float] | np.ndarray,
        duration: Sequence[float] | np.ndarray,
        planned: Sequence[float] | np.ndarray,
        units: Sequence[int] | np.ndarray,
        capacity: int,
        backfill: str,
    ):
        self.sub = [float(x) for x in submit]
        self.dur = [float(x) for x in duration]
        self.plan = [float(x) for x in planned]
        self.units = [int(x) for x in units]
        self.n = len(self.sub)
        self._plan_np = np.asarray(self.plan, dtype=np.float64)
        self._units_np = np.asarray(self.units, dtype=np.int64)
        self.free = int(capacity)
        self.backfill = backfill
        self.t = -_INF
        self.next_submit = 0
        self.queue: dict[int, None] = {}
        self.ends: list[tuple[float, int]] = []
        self.running: dict[int, float] = {}  # job -> planned end
        self.head: int | None = None
        self.shadow: float | None = None
        self.start = [math.nan] * self.n
        self.end = [math.nan] * self.n
        self.log: list[tuple[float, int]] = []  # (time, job) in start order
        # the backfilling pass may look only at jobs submitted since the last pass (index
        # >= mark) when it would fail again for every older one: nothing ended since, the
        # pick is the same, and (EASY) the last pass started nothing; 0: look at all
        self._mark = 0
        self._cands: list[int] = []  # backfill=rlscheduler: see _rlscheduler
        self._seen = 0  # backfill=rlscheduler: jobs below it were offered to _cands

    # ---- the loop ------------------------------------------------------------------------
    def instant(self) -> bool:
        """Process the next instant (ends, submissions, one dispatcher call); False when no
        event is left."""
        ends = self.ends
        t_end = ends[0][0] if ends else _INF
        i = self.next_submit
        t_sub = self.sub[i] if i < self.n else _INF
        t = t_end if t_end < t_sub else t_sub
        if t == _INF:
            return False
        self.t = t
        units, running = self.units, self.running
        if ends and ends[0][0] == t:
            self._mark = 0
        while ends and ends[0][0] == t:
            j = heapq.heappop(ends)[1]
            self.free += units[j]
            del running[j]
        sub, queue, n = self.sub, self.queue, self.n
        while i < n and sub[i] == t:
            queue[i] = None
            i += 1
        self.next_submit = i
        if queue:
            self.dispatch()
        return True

    def run_to_decision(self) -> bool:
        """Run until a job is queued with no pick pending; True when the episode is over."""
        queue = self.queue
        while not (queue and self.head is None):
            if not self.instant():
                return True
        return False

    def pick(self, job: int) -> None:
        """The agent's pick (a queued job), applied at once as a dispatcher call."""
        self.head, self.shadow = job, None
        self._mark = 0
        self.dispatch()

    def dispatch(self) -> None:
        h = self.head
        if h is None:
            return
        if self.units[h] <= self.free:
            self._start(h)
            self.head = self.shadow = None
            self._mark = 0
            return
        if self.backfill == "rlscheduler":
            if self.shadow is None:  # when the pick blocks, even with nothing free
                self._rls_shadow(h)
            if self.free > 0:
                self._rlscheduler(h)
        elif self.backfill == "on" and self.free > 0:
            self._easy(h)

    def _start(self, j: int) -> None:
        t = self.t
        self.free -= self.units[j]
        del self.queue[j]
        self.start[j] = t
        e = t + self.dur[j]
        self.end[j] = e
        heapq.heappush(self.ends, (e, j))
        self.running[j] = t + self.plan[j]
        self.log.append((t, j))

    def _candidates(self, shadow: float | None = None) -> list[int]:
        """The queued jobs the pass must look at (see ``_mark``), in queue order, less those
        larger than the free count now (free only shrinks during a pass) and, for
        RLScheduler's rule, those not ending before ``shadow``."""
        mark = self._mark
        queue = self.queue
        if mark == 0:
            if len(queue) <= 32:
                return list(queue)
            q = np.fromiter(queue, dtype=np.int64, count=len(queue))
        else:
            return [j for j in range(mark, self.next_submit) if j in queue]
        keep = self._units_np[q] <= self.free
        if shadow is not None:
            keep &= (self.t + self._plan_np[q]) < shadow
        return q[keep].tolist()

    def _easy(self, h: int) -> None:
        now = self.t
        units, plan = self.units, self.plan
        soon = now + 1.0
        running = self.running
        if self._mark and running and min(running.values()) < soon:
            self._mark = 0  # an overdue job's expected end moved: compute it all again
        todo = self._candidates()
        self._mark = self.next_submit
        rel = sorted((pe if pe > soon else soon, units[j]) for j, pe in running.items())
        need = units[h] - self.free
        acc = 0
        shadow = _INF
        extra = 0
        for k, (e, u) in enumerate(rel):
            acc += u
            if acc >= need:
                shadow = e
                for e2, u2 in islice(rel, k + 1, None):  # the rest of the group ending then
                    if e2 != e:
                        break
                    acc += u2
                extra = acc - need
                break
        started = False
        for j in todo:
            free = self.free
            if free == 0:
                break
            if j == h:
                continue
            u = units[j]
            if u > free:
                continue
            if now + plan[j] <= shadow:
                self._start(j)
                started = True
            elif u <= extra:
                self._start(j)
                extra -= u
                started = True
        if started:
            self._mark = 0

    def _rls_shadow(self, h: int) -> None:
        """RLScheduler's shadow time for the pick ``h`` and the jobs that may end before it."""
        now = self.t
        units, plan = self.units, self.plan
        queue = self.queue
        acc = self.free
        shadow = now
        for pe, j in sorted((pe, j) for j, pe in self.running.items()):
            acc += units[j]
            shadow = pe
            if acc >= units[h]:
                break
        self.shadow = shadow
        if len(queue) > 32:
            q = np.fromiter(queue, dtype=np.int64, count=len(queue))
            self._cands = q[(now + self._plan_np[q]) < shadow].tolist()
        else:
            self._cands = [j for j in queue if now + plan[j] < shadow]
        self._seen = self.next_submit

    def _rlscheduler(self, h: int) -> None:
        """RLScheduler's rule. Its shadow time is fixed for the pick, and ``now`` only grows,
        so a job that once failed ``now + requested < shadow`` fails it for ever: the jobs
        still passing it are kept in queue order (``_cands``), from the full queue when the
        pick is new, then with each pass's newly submitted jobs added."""
        now = self.t
        units, plan = self.units, self.plan
        queue = self.queue
        shadow = self.shadow
        assert shadow is not None
        cands = self._cands
        cands += [
            j for j in range(self._seen, self.next_submit) if j in queue and now + plan[j] < shadow
        ]
        self._seen = self.next_submit
        keep: list[int] = []
        for k, j in enumerate(cands):
            free = self.free
            if free == 0:
                keep += cands[k:]
                break
            if j not in queue or j == h:
                if j == h:
                    keep.append(j)
                continue
            if now + plan[j] >= shadow:
                continue
            if units[j] <= free:
                self._start(j)
            else:
                keep.append(j)
        self._cands = keep


class Replay(PickBase):
    """Starts, at each call, the jobs a fast episode started at that instant (in order)."""

    name = "rl-agent"
    _log: list[tuple[float, int]]  # the fast episode's starts, set before the run

    def _setup(self, system) -> None:
        super()._setup(system)
        plan: dict[float, list[int]] = {}
        for t, j in getattr(self, "_log", []):
            plan.setdefault(t, []).append(j)
        self._plan = plan

    def _dispatch(self, view: DispatchView) -> list[Start]:
        todo = self._plan.pop(view.now, None)
        if not todo:
            return []
        scratch = Scratch(view, self._allocator)
        for j in todo:
            if j not in view.queue._jobs or scratch.try_start(view.queue.get(j)) is None:
                raise RuntimeError(
                    f"rl fast engine: job index {j} cannot start at t={view.now:g} in the simulator"
                )
        return scratch.starts


def fast_eligible(system, workload, predictor: str) -> str | None:
    """Why the fast engine cannot run episodes of ``workload`` on ``system``, or None."""
    if len(system.resources) != 1 or int(system.capacity.max()) != 1:
        return "the machine is not nodes of one unit of one resource"
    if predictor.upper() not in ("W",):
        return f"predictor {predictor} (the fast engine plans with requested times, W)"
    if workload.has_constraints or workload.has_deadlines or workload.has_apps:
        return "the workload has node constraints, deadlines or application models"
    if any(j.growth for j in workload.jobs):
        return "the workload has growing jobs"
    if (np.asarray(workload.unit_requests) != 1).any():
        return "a job requests more than one unit of the resource per unit"
    return None
