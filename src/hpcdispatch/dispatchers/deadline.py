"""Advance reservation at submission for deadline jobs (Linnert, De Rose, Heiss 2024, sec. 3):
``hilbert`` (Fig. 6), ``manhattan`` (Fig. 8) and the ``count-only`` baseline (line 0 of both;
by default line 0 alone, a pooled count: :class:`CountOnly`).

Readings (design note Revision 2; every one a parameter, the first build's kept as options):
``manhattan:growth=strict`` (default, Fig. 8 lines 10-18 as written: a busy best neighbour
ends the growth from a start node, the next start node is tried) or ``growth=bend``;
``starts=first|all|median``; ``static_request=peak`` (default: a dynamic job of type 2 or 3
books the whole nodes of its peak process count, :attr:`AppSpec.peak_processes`) or
``nominal``; ``count-only:reading=line0|nodes``.

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
    MANHATTAN_GROWTHS,
    MANHATTAN_STARTS,
    hilbert_best_fit,
    hilbert_first_fit,
    manhattan_partition,
)
from hpcdispatch.vocabulary import CancelReason
from hpcdispatch.workload.job import Job, peak_units

STARTS = ("any", "est")
FITS = ("first", "best")
STATIC_REQUESTS = ("peak", "nominal")


def _cores_per_node(system: System) -> int:
    """The cores of a node (the ``core`` resource; 1 without one): a deadline job's process
    count in whole nodes (the generator's units are ``ceil(n / cores)`` nodes)."""
    names = list(system.resources) if hasattr(system, "resources") else []
    if "core" in names:
        return max(1, int(system.capacity[:, names.index("core")].max()))
    return 1


class Reservation(Dispatcher):
    """Advance reservation at submission with a shape rule (``SHAPE``): see the module."""

    name: ClassVar[str] = "reservation"
    SHAPE: ClassVar[str] = "count"
    tags = Tags(deterministic=True, memoryless=False, node_constraints=True, rejects=True)

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "start": OneOf(*STARTS),
        "static_request": OneOf(*STATIC_REQUESTS),
    }

    def __init__(
        self, start: str = "any", static_request: str = "peak", allocator: str = "first-fit"
    ):
        self.start = start
        self.static_request = static_request
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"start": "est", "allocator": "best-fit"}]

    def _units(self, job: Job) -> int:
        """The whole nodes a deadline job books: its request (``static_request=nominal``),
        or for the dynamic types 2, 3 the nodes of its peak process count
        (``static_request=peak``, the default: "there will always be enough computing
        resources available to start the processes", L308; design note Revision 2, A10)."""
        if self.static_request == "peak" and job.app is not None:
            return peak_units(job.app, job.units, self._cores, len(self._capacity))
        return job.units

    # ---- set-up ----------------------------------------------------------------------------
    def _setup(self, system: System) -> None:
        """The whole-node profile and the shape's geometry (``self._allocator``, built by
        :meth:`Dispatcher.setup`, places jobs without an application model)."""
        self._capacity = system.capacity
        self._cores = _cores_per_node(system)
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
        k = self._units(job)
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
            f"{self._units(job)} whole free node(s)"
            if job.app is not None
            else "enough whole free nodes"
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


COUNT_READINGS = ("line0", "nodes")


@register
class CountOnly(Reservation):
    """The paper's counting-only admission: line 0 of Figs. 6 and 8 alone.

    ``reading="line0"`` (default; design note Revision 2, A20): a **pooled count** of booked
    nodes -- a deadline job is accepted at the first candidate start ``t`` (``t0``, then every
    later boundary of the count, while ``t + R <= deadline``; ``start=est``: ``t0`` only) at
    which ``booked(u) + k <= nodes`` for every ``u`` in ``[t, t + R)``, and its count is booked
    for exactly ``[t, t + R)``. No placement is searched (no node identity, no shape), and its
    jobs do not run through the execution model (tag ``app_model=False``): each runs exactly
    ``R``, so at its booked start at least ``k`` whole nodes are free, and it takes the ``k``
    lowest free ones then (recorded as its booking's nodes). It is a baseline of Fig. 14 only
    ("only the first step ... line 0", L272).

    ``reading="nodes"`` (the first build's): per-node bookings of the ``k`` lowest node ids
    free for the whole window, run through the execution model like the shape strategies
    (``static_request`` applies to this reading only; line 0 counts the request).

    Jobs without an application model (other workloads) are booked per node by the
    ``allocator`` under either reading (:class:`Reservation`)."""

    name = "count-only"
    SHAPE = "count"
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {"reading": "nodes", "static_request": "nominal"}
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Reservation.parameter_constraints,
        "reading": OneOf(*COUNT_READINGS),
    }

    def __init__(
        self,
        start: str = "any",
        reading: str = "line0",
        static_request: str = "peak",
        allocator: str = "first-fit",
    ):
        self.start = start
        self.reading = reading
        self.static_request = static_request
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"start": "est", "allocator": "best-fit"}, {"reading": "nodes"}]

    def get_tags(self) -> Tags:
        t = self.tags
        return Tags(
            t.deterministic,
            t.memoryless,
            t.uses_solver,
            t.node_constraints,
            t.rejects,
            app_model=self.reading != "line0",
        )

    def _setup(self, system: System) -> None:
        super()._setup(system)
        self._n_nodes = system.n_nodes
        self._pool: AvailabilityProfile | None = None
        self._pooled: dict[int, tuple[float, float, int, int]] = {}  # idx -> (t, end, k, made)
        self._kinds: set[bool] = set()  # seen: jobs with / without an application model

    def _line0(self, job: Job) -> bool:
        line0 = self.reading == "line0" and job.app is not None
        self._kinds.add(line0)
        if len(self._kinds) > 1 and self.reading == "line0":
            raise ConfigError(
                "dispatcher 'count-only' (reading=line0) counts deadline jobs pooled and books "
                "other jobs per node; a workload mixing both needs reading=nodes"
            )
        return line0

    def admit(self, job: Job, view: DispatchView) -> Admission:
        if not self._line0(job):
            return super().admit(job, view)
        now = view.now
        if self._pool is None:
            self._pool = AvailabilityProfile(now, np.array([[self._n_nodes]]), [])
        pool = self._pool
        pool.advance(now)
        length = float(job.wall_time)
        t0 = max(now, job.ready_at)
        deadline = math.inf if job.deadline is None else float(job.deadline)
        if t0 + length > deadline:
            return Admission(
                False,
                f"deadline: earliest start {t0:g} + {length:g} s is after the deadline {deadline:g}",
            )
        k = job.units  # line 0 counts the request (nodes_job): it runs no program to peak
        pool.add_boundary(t0)
        times = pool.times
        cands = times[(times >= t0) & (times <= deadline - length)]
        if self.start == "est":
            cands = cands[:1]
        for t in cands.tolist():
            if int(pool.min_free(t, t + length)[0, 0]) >= k:
                pool.reserve(t, t + length, _POOL_NODE, np.array([[k]]))
                self._pooled[job.index] = (t, t + length, k, int(len(self._log)))
                self._log.append(Booking(job.index, now, t, t + length, (), t + length))
                return Admission(True, "")
        return Admission(
            False,
            f"count: no window of {length:g} s in [{t0:g}, {deadline:g}] has {k} node(s) "
            "unbooked (pooled count)",
        )

    def _dispatch(self, view: DispatchView) -> Decision:
        if self.reading != "line0" or not self._pooled:
            return super()._dispatch(view)
        now = view.now
        whole = (view.free == self._capacity).all(axis=1)
        starts: list[Start] = []
        wakeup = math.inf
        for idx, (t, _end, k, row) in list(self._pooled.items()):
            if t > now:
                wakeup = min(wakeup, t)
                continue
            job = view.queue.get(idx)
            nodes = np.flatnonzero(whole)[:k]
            if len(nodes) < k:  # cannot happen: every counted job runs exactly R
                raise RuntimeError(
                    f"count-only: {k} whole free node(s) booked for job {job.id} at {now:g}, "
                    f"{len(nodes)} free"
                )
            whole[nodes] = False
            del self._pooled[idx]
            self._log[row] = self._log[row]._replace(nodes=tuple(int(n) for n in nodes))
            starts.append(Start(job, Allocation.trusted(nodes, np.ones(k, dtype=np.int64))))
        return Decision(starts=starts, wakeup=None if wakeup == math.inf else wakeup)


_POOL_NODE = np.zeros(1, dtype=np.int64)


@register
class Hilbert(Reservation):
    """Fig. 6: ``k`` consecutive positions of the Hilbert curve free for the whole window
    (first fit; ``fit=best``: Slurm's best fit over the curve)."""

    name = "hilbert"
    SHAPE = "hilbert"

    ADDED_PARAMS: ClassVar[dict[str, Any]] = {"static_request": "nominal"}
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Reservation.parameter_constraints,
        "fit": OneOf(*FITS),
    }

    def __init__(
        self,
        start: str = "any",
        fit: str = "first",
        static_request: str = "peak",
        allocator: str = "first-fit",
    ):
        self.start = start
        self.fit = fit
        self.static_request = static_request
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"fit": "best"}]

    def _shape_nodes(self, free_mask: np.ndarray, k: int) -> np.ndarray | None:
        search = hilbert_best_fit if self.fit == "best" else hilbert_first_fit
        return search(free_mask, self._curve, k)


@register
class Manhattan(Reservation):
    """Fig. 8: the greedy least-Manhattan-increase partition grown from start nodes in node
    order -- ``growth=strict`` (default, lines 10-18 as written: the growth from a start node
    ends at a busy best neighbour, the next start node is tried) or ``growth=bend`` (design
    note A22: around busy nodes, from the first start node whose free component holds ``k``);
    ``starts=all`` / ``starts=median``: grown from every free node / each component's median
    node, the least pairwise sum kept (MM-like centring, :func:`manhattan_partition`)."""

    name = "manhattan"
    SHAPE = "manhattan"
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {
        "starts": "first",
        "growth": "bend",
        "static_request": "nominal",
    }

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Reservation.parameter_constraints,
        "starts": OneOf(*MANHATTAN_STARTS),
        "growth": OneOf(*MANHATTAN_GROWTHS),
    }

    def __init__(
        self,
        start: str = "any",
        starts: str = "first",
        growth: str = "strict",
        static_request: str = "peak",
        allocator: str = "first-fit",
    ):
        self.start = start
        self.starts = starts
        self.growth = growth
        self.static_request = static_request
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [{}, {"starts": "median"}, {"growth": "bend", "static_request": "nominal"}]

    def _shape_nodes(self, free_mask: np.ndarray, k: int) -> np.ndarray | None:
        return manhattan_partition(
            free_mask, self._shape, k, torus=self._torus, starts=self.starts, growth=self.growth
        )
