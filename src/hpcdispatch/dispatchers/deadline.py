"""Advance reservation at submission for deadline jobs (Linnert, De Rose, Heiss 2024, sec. 3):
``hilbert`` (Fig. 6), ``manhattan`` (Fig. 8) and the ``count-only`` baseline (line 0 of both).

One class, :class:`Reservation`; the three registered names only pick its shape rule. At a
job's submission (:meth:`Reservation.admit`) it searches an
:class:`~hpcdispatch.planning.profile.AvailabilityProfile` of whole-node bookings (the running
jobs' and the booked ones') for a window ``[t, t + R)``, ``R`` the job's reserved length (its
wall-time; for generated deadline jobs the run time), at the candidate starts

- ``t0 = max(now, earliest start)``, then every later boundary of the profile (a booking
  starting or ending: "increments determined by the change in the occupancy state", design
  note A24), while ``t + R <= deadline`` (inclusive, Fig. 6 line 3);
- ``start=est``: ``t0`` only (the count-only baseline's other reading, A20).

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from hpcdispatch.allocators import allocate_job
from hpcdispatch.errors import ConfigError
from hpcdispatch.planning.profile import AvailabilityProfile
from hpcdispatch.protocol import (
    Admission,
    Allocation,
    Booking,
    Decision,
    Dispatcher,
    DispatchView,
    OneOf,
    ParamConstraint,
    Start,
    Tags,
    register,
)
from hpcdispatch.system.model import System
from hpcdispatch.system.partition import (
    MANHATTAN_STARTS,
    hilbert_best_fit,
    hilbert_first_fit,
    manhattan_partition,
)
from hpcdispatch.vocabulary import CancelReason
from hpcdispatch.workload.job import Job

STARTS = ("any", "est")
FITS = ("first", "best")


class Reservation(Dispatcher):
    """Advance reservation at submission with a shape rule (``SHAPE``): see the module."""

    name: ClassVar[str] = "reservation"
    SHAPE: ClassVar[str] = "count"
    tags = Tags(deterministic=True, memoryless=False, node_constraints=True, rejects=True)

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "start": OneOf(*STARTS),
    }

    def __init__(self, start: str = "any", allocator: str = "first-fit"):
        self.start = start
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"start": "est", "allocator": "best-fit"}]

    # ---- set-up ----------------------------------------------------------------------------
    def _setup(self, system: System) -> None:
        """The whole-node profile and the shape's geometry (``self._allocator``, built by
        :meth:`Dispatcher.setup`, places jobs without an application model)."""
        self._capacity = system.capacity
        topo = system.topology
        if topo.is_grid:
            grid = topo.grid
            self._shape = (grid.rows, grid.cols)
            self._torus = topo.kind == "torus2d"
            self._curve = np.asarray(grid.hilbert_order, dtype=np.int64)
        else:  # no 2-D grid: the node order is the curve, a line the Manhattan space
            self._shape = (1, system.n_nodes)
            self._torus = False
            self._curve = np.arange(system.n_nodes, dtype=np.int64)
        self._profile: AvailabilityProfile | None = None
        self._booked: dict[
            int, tuple[float, float, np.ndarray, Allocation, int]
        ] = {}  # waiting; last: log row
        self._holding: dict[
            int, tuple[float, np.ndarray, int]
        ] = {}  # started: booked end, nodes, log row
        self._log: list[Booking] = []
        self._conflicts: set[int] = set()  # overrunning jobs whose nodes are booked from now on
        self._deadline_of: dict[int, float] = {}  # deadline jobs booked: their deadlines (A19)

    # ---- the profile -----------------------------------------------------------------------
    def _sync(self, view: DispatchView) -> AvailabilityProfile:
        """The profile at ``view.now``: built at the first call; jobs that ended before their
        booked end give the rest back; the past is dropped."""
        if not view.walltime_kill:
            raise ConfigError(
                f"dispatcher '{self.name}' books each job for its wall-time and needs jobs killed "
                "at it (walltime_kill = true)"
            )
        now = view.now
        if self._profile is None:
            self._profile = AvailabilityProfile(now, self._capacity, [])
        profile = self._profile
        for idx in [i for i in self._holding if i not in view.running]:
            end, nodes, row = self._holding.pop(idx)
            if now < end:
                profile.release(now, end, nodes, self._capacity[nodes])
                self._log[row] = self._log[row]._replace(released=now)
            elif now > end and idx in self._deadline_of:
                self._settle(idx, end, nodes, row, now)
        for idx, (end, nodes, row) in list(self._holding.items()):
            if end <= now and idx not in self._conflicts:
                self._overrun(profile, idx, view.running[idx].job, end, nodes, row, now)
        profile.advance(now)
        return profile

    def _settle(self, idx: int, end: float, nodes: np.ndarray, row: int, now: float) -> None:
        """A deadline job gone by ``now`` and last seen before its booked ``end`` (nobody
        asked the strategy anything in between, so it made no booking then): it may have
        outlived its booking, up to what A19 entitled it to -- the next booking on its nodes
        or its deadline -- and no later (a booking beginning would have cancelled it). The
        booking is recorded as held until then, or ``now`` if earlier."""
        until = self._deadline_of[idx]
        for b in self._log:
            if (
                b.job != idx
                and b.start >= end
                and b.start < until
                and set(b.nodes) & set(nodes.tolist())
            ):
                until = b.start
        released = min(now, until)
        if released > end:
            self._log[row] = self._log[row]._replace(end=released, released=released)

    def bookings(self) -> list[Booking]:
        for idx, (end, nodes, row) in list(self._holding.items()):  # still held when the run ended
            if idx in self._deadline_of and math.isfinite(self._deadline_of[idx]):
                self._settle(idx, end, nodes, row, math.inf)
        return list(self._log)

    def _overrun(
        self,
        profile: AvailabilityProfile,
        idx: int,
        job: Job,
        end: float,
        nodes: np.ndarray,
        row: int,
        now: float,
    ) -> None:
        """A job still running at the end of its booking (its model time is longer than
        ``R``: design note A19): it keeps its nodes until the next booking on any of them
        begins or its deadline, whichever comes first -- the booking is extended to then --
        and is cancelled at that time (at its deadline by the simulator, at a booking by
        :meth:`_dispatch`: ``booking-conflict``)."""
        deadline = math.inf if job.deadline is None else float(job.deadline)
        nxt = min(
            (
                t
                for (t, _e, other, _a, _r) in self._booked.values()
                if np.intersect1d(other, nodes).size
            ),
            default=math.inf,
        )
        until = min(deadline, nxt)
        if until > now:
            profile.reserve(now, until, nodes, self._capacity[nodes])
            self._holding[idx] = (until, nodes, row)
            self._log[row] = self._log[row]._replace(end=until, released=until)
        else:  # (it held the nodes unobserved from its booked end until now)
            if until > end:
                self._log[row] = self._log[row]._replace(end=until, released=until)
            self._conflicts.add(idx)

    def _nodes_for(
        self, job: Job, free_mask: np.ndarray, window: np.ndarray, view: DispatchView
    ) -> Allocation | str:
        """The allocation of ``job`` in a window whose whole free nodes are ``free_mask``, or
        the stage that failed (``count`` or ``shape``)."""
        if job.app is None:  # any other job: the allocator on the whole free nodes
            usable = np.where(free_mask[:, None], window, 0)
            alloc = allocate_job(self._allocator, job, view.requests[job.index], usable)
            if alloc is None:
                return "count"
            return alloc
        k = job.units
        if int(free_mask.sum()) < k:
            return "count"
        shaped = self._shape_nodes(free_mask, k)
        if shaped is None:
            return "shape"
        nodes = np.sort(np.asarray(shaped, dtype=np.int64))
        return Allocation.trusted(nodes, np.ones(k, dtype=np.int64))

    def _shape_nodes(self, free_mask: np.ndarray, k: int) -> np.ndarray | None:
        return np.flatnonzero(free_mask)[:k]  # count-only: the lowest free node ids

    # ---- the contract ----------------------------------------------------------------------
    def admit(self, job: Job, view: DispatchView) -> Admission:
        profile = self._sync(view)
        now = view.now
        length = float(job.wall_time)
        t0 = max(now, job.ready_at)
        deadline = math.inf if job.deadline is None else float(job.deadline)
        if t0 + length > deadline:
            return Admission(
                False,
                f"deadline: earliest start {t0:g} + {length:g} s is after the deadline {deadline:g}",
            )
        latest = deadline - length
        profile.add_boundary(t0)
        times = profile.times
        cands = times[(times >= t0) & (times <= latest)]
        if self.start == "est":
            cands = cands[:1]
        stage = "count"
        for t in cands.tolist():
            window = profile.min_free(t, t + length)
            free_mask = (window == self._capacity).all(axis=1)
            found = self._nodes_for(job, free_mask, window, view)
            if isinstance(found, str):
                if found == "shape":
                    stage = "shape"
                continue
            alloc, nodes = found, found.nodes
            profile.reserve(t, t + length, nodes, self._capacity[nodes])
            self._booked[job.index] = (t, t + length, nodes, alloc, len(self._log))
            if job.app is not None:
                self._deadline_of[job.index] = deadline
            self._log.append(
                Booking(job.index, now, t, t + length, tuple(int(n) for n in nodes), t + length)
            )
            return Admission(True, "")
        what = (
            f"{job.units} whole free node(s)" if job.app is not None else "enough whole free nodes"
        )
        if stage == "count":
            return Admission(
                False, f"count: no window of {length:g} s in [{t0:g}, {deadline:g}] has {what}"
            )
        return Admission(
            False,
            f"shape: windows in [{t0:g}, {deadline:g}] have {what}, but not in {self.SHAPE} shape",
        )

    def _dispatch(self, view: DispatchView) -> Decision:
        profile = self._sync(view)
        now = view.now
        starts: list[Start] = []
        cancels: list[tuple[Job, str]] = []
        for idx in sorted(self._conflicts):
            if idx in view.running:
                cancels.append((view.running[idx].job, CancelReason.BOOKING_CONFLICT.value))
            self._holding.pop(idx, None)
        self._conflicts.clear()
        wakeup = math.inf
        for idx, (t, end, nodes, alloc, row) in list(self._booked.items()):
            try:
                job = view.queue.get(idx)
            except KeyError:  # gone before its start (cannot happen to a valid booking): free it
                del self._booked[idx]
                profile.release(max(now, t), end, nodes, self._capacity[nodes])
                self._log[row] = self._log[row]._replace(released=max(now, t))
                continue
            if t <= now:
                starts.append(Start(job, alloc))
                del self._booked[idx]
                self._holding[idx] = (end, nodes, row)
            else:
                wakeup = min(wakeup, t)
        return Decision(
            starts=starts, wakeup=None if wakeup == math.inf else wakeup, cancels=cancels
        )


@register
class CountOnly(Reservation):
    """The paper's counting-only admission (line 0 of Figs. 6 and 8): enough whole nodes free
    for the window, the lowest node ids; later booking boundaries too (``start=any``, A20)."""

    name = "count-only"
    SHAPE = "count"


@register
class Hilbert(Reservation):
    """Fig. 6: ``k`` consecutive positions of the Hilbert curve free for the whole window
    (first fit; ``fit=best``: Slurm's best fit over the curve)."""

    name = "hilbert"
    SHAPE = "hilbert"

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Reservation.parameter_constraints,
        "fit": OneOf(*FITS),
    }

    def __init__(self, start: str = "any", fit: str = "first", allocator: str = "first-fit"):
        self.start = start
        self.fit = fit
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"fit": "best"}]

    def _shape_nodes(self, free_mask: np.ndarray, k: int) -> np.ndarray | None:
        search = hilbert_best_fit if self.fit == "best" else hilbert_first_fit
        return search(free_mask, self._curve, k)


@register
class Manhattan(Reservation):
    """Fig. 8 fixed as in design note A22: the greedy least-Manhattan-increase partition from
    the first start node (node order) whose free 4-connected component holds ``k`` nodes;
    ``starts=all`` / ``starts=median``: grown from every free node / each component's median
    node, the least pairwise sum kept (MM-like centring, :func:`manhattan_partition`)."""

    name = "manhattan"
    SHAPE = "manhattan"
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {"starts": "first"}

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Reservation.parameter_constraints,
        "starts": OneOf(*MANHATTAN_STARTS),
    }

    def __init__(self, start: str = "any", starts: str = "first", allocator: str = "first-fit"):
        self.start = start
        self.starts = starts
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"starts": "median"}]

    def _shape_nodes(self, free_mask: np.ndarray, k: int) -> np.ndarray | None:
        return manhattan_partition(free_mask, self._shape, k, torus=self._torus, starts=self.starts)
