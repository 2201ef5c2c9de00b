"""The leak (Linnert, De Rose, Heiss 2024, sec. 4, Fig. 10-13): dynamic allocation of deadline
jobs whose partitions grow and shrink while they run. ``leak`` (contiguous) and ``leak-nc``
(non-contiguous) are one class, :class:`Leak`, with a ``contiguous`` parameter.

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import numpy as np

from hpcdispatch.protocol import (
    Admission,
    Allocation,
    Boolean,
    Decision,
    Dispatcher,
    DispatchView,
    ForkRequest,
    OneOf,
    ParamConstraint,
    RunningJob,
    Start,
    Tags,
    register,
)
from hpcdispatch.system.allocation import held_amounts
from hpcdispatch.system.grid import Grid, grid_of
from hpcdispatch.system.model import System
from hpcdispatch.system.partition import leak_grow
from hpcdispatch.workload.job import GrowthRequest, Job

ADMITS = ("queue", "free-node")
ORDERS = ("fifo", "edf")


def _late(job: Job, start: float) -> bool:
    """Whether ``job``, started at ``start``, would end after its deadline at its calibrated
    speed (its wall time: R for a deadline job; what a dispatcher may know of it)."""
    return job.deadline is not None and start + job.wall_time > job.deadline


@register
class Leak(Dispatcher):
    """The contiguous leak (``contiguous=False``: the non-contiguous one); see the module."""

    name: ClassVar[str] = "leak"
    tags = Tags(
        deterministic=True,
        memoryless=False,
        node_constraints=True,
        rejects=True,
        forks=True,
        contiguous_grants=True,
    )

    ADDED_PARAMS: ClassVar[dict[str, Any]] = {
        "partial": True,
        "order": "fifo",
        "skip_hopeless": False,
    }
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "contiguous": Boolean(),
        "admission": OneOf(*ADMITS),
        "partial": Boolean(),
        "order": OneOf(*ORDERS),
        "skip_hopeless": Boolean(),
    }

    def __init__(
        self,
        contiguous: bool = True,
        admission: str = "queue",
        partial: bool = True,
        allocator: str = "first-fit",
        order: str = "fifo",
        skip_hopeless: bool = False,
    ):
        self.contiguous = contiguous
        self.admission = admission
        self.partial = partial
        self.allocator = allocator
        self.order = order
        self.skip_hopeless = skip_hopeless

    def get_tags(self) -> Tags:
        t = self.tags
        return Tags(
            t.deterministic,
            t.memoryless,
            t.uses_solver,
            t.node_constraints,
            t.rejects,
            t.forks,
            bool(self.contiguous),
        )

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [
            {},
            {"admission": "free-node", "partial": False},
            {"order": "edf", "skip_hopeless": True},
        ]

    def _setup(self, system: System) -> None:
        topo = system.topology
        self._grid: Grid = topo.grid if topo.is_grid else grid_of(1, system.n_nodes)
        rows, cols = self._grid.rows, self._grid.cols
        self._starts = sorted({(rows * q // 4) * cols for q in range(4)})
        self._next_start = 0
        self._job_start: dict[int, int] = {}  # job index -> its snake's start node
        # order=edf: the queued jobs' keys (deadline, submit, index), kept sorted across calls
        self._edf_order: list[tuple[float, int, int]] = []
        self._edf_known = np.zeros(0, dtype=bool)  # job index -> its key is in _edf_order
        self._capacity = system.capacity

    # ---- helpers ---------------------------------------------------------------------------
    def _whole_free(self, view: DispatchView) -> np.ndarray:
        return (view.free == self._capacity).all(axis=1)

    def _by_deadline(self, view: DispatchView) -> Iterator[Job]:
        """The queued jobs by deadline (then submission, then index; no deadline last), lazily:
        a job's key is inserted into a sorted list once, when it is first queued, and keys of
        jobs that left the queue are dropped when the walk meets them -- so a call that stops
        at the first job it cannot start costs no sort of the whole queue."""
        queue = view.queue
        idx = queue.indices()
        if len(idx) and int(idx.max()) >= len(self._edf_known):
            grown = np.zeros(max(int(idx.max()) + 1, 2 * len(self._edf_known)), dtype=bool)
            grown[: len(self._edf_known)] = self._edf_known
            self._edf_known = grown
        known = self._edf_known
        order = self._edf_order
        for i in idx[~known[idx]].tolist():
            job = queue.get(i)
            bisect.insort(
                order, (math.inf if job.deadline is None else float(job.deadline), job.submit, i)
            )
            known[i] = True
        pos = 0
        while pos < len(order):
            i = order[pos][2]
            try:
                job = queue.get(i)
            except KeyError:  # started or cancelled since: forget it (a job queued again is new)
                del order[pos]
                known[i] = False
                continue
            yield job
            pos += 1

    # ---- the contract ----------------------------------------------------------------------
    def admit(self, job: Job, view: DispatchView) -> Admission:
        ready = job.ready_at
        if job.deadline is not None and _late(job, ready):
            return Admission(
                False,
                f"deadline: earliest start {ready:g} + {job.wall_time:g} s is after the deadline "
                f"{float(job.deadline):g}",
            )
        if (
            self.admission == "free-node"
            and job.app is not None
            and not self._whole_free(view).any()
        ):
            return Admission(False, "count: no free node at submission (Fig. 10 line 7)")
        return Admission(True, "")

    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        free = view.free.copy()
        whole = (free == self._capacity).all(axis=1)
        starts: list[Start] = []
        wakeup = math.inf
        queue: Iterable[Job] = self._by_deadline(view) if self.order == "edf" else view.queue
        for job in queue:
            if job.ready_at > now:
                wakeup = min(wakeup, job.ready_at)
                continue
            if self.skip_hopeless and _late(job, now):
                continue  # late even at its calibrated speed; the simulator cancels it at its deadline
            if job.app is None:
                alloc = self.place(job, free, view)
                if alloc is None:
                    break
                free[alloc.nodes] -= held_amounts(
                    alloc, view.requests[job.index], job.per_node_request
                )
                whole[alloc.nodes] = False
                starts.append(Start(job, alloc))
                continue
            start = self._starts[self._next_start % len(self._starts)]
            snake = self._grid.snake_order(start)
            hits = np.flatnonzero(whole[snake])
            if len(hits) == 0:
                break
            first = int(snake[hits[0]])
            nodes = leak_grow(
                whole, self._grid, first, job.units, jump=not self.contiguous, snake_start=start
            )
            if len(nodes) < job.units and not self.partial:
                break  # it waits for its whole request; FIFO: nobody behind it starts
            nodes = np.sort(nodes)
            whole[nodes] = False
            free[nodes] = 0
            self._next_start += 1
            self._job_start[job.index] = start
            starts.append(
                Start(job, Allocation.trusted(nodes, np.ones(len(nodes), dtype=np.int64)))
            )
        return Decision(starts=starts, wakeup=None if wakeup == math.inf else wakeup)

    def on_resize(
        self, running: RunningJob, request: GrowthRequest | ForkRequest, view: DispatchView
    ) -> Allocation | None:
        if not isinstance(request, ForkRequest):
            return None
        node = self.fork_node(running, request.parent_node, self._whole_free(view))
        if node is None:
            return None
        return Allocation.trusted(np.array([node], dtype=np.int64), np.ones(1, dtype=np.int64))

    def fork_node(self, running: RunningJob, parent: int, whole: np.ndarray) -> int | None:
        """Where a fork of a process on ``parent`` goes (see the module), or ``None``."""
        grid = self._grid
        near = grid.neighbours(parent)
        near = near[whole[near]]
        if len(near):
            return int(near[0])
        held = running.allocation.nodes
        indptr, indices = grid.neighbour_csr
        around = np.unique(
            np.concatenate([indices[indptr[v] : indptr[v + 1]] for v in held.tolist()])
        )
        around = around[whole[around]]
        if len(around):
            d = grid.distance(parent, around)
            return int(around[np.lexsort((around, d))[0]])
        if self.contiguous:
            return None
        snake = grid.snake_order(self._job_start.get(running.job.index, 0))
        hits = np.flatnonzero(whole[snake])
        return int(snake[hits[0]]) if len(hits) else None


@register
class LeakNC(Leak):
    """The non-contiguous leak (``leak`` with ``contiguous=False``)."""

    name = "leak-nc"

    def __init__(
        self,
        contiguous: bool = False,
        admission: str = "queue",
        partial: bool = True,
        allocator: str = "first-fit",
        order: str = "fifo",
        skip_hopeless: bool = False,
    ):
        super().__init__(contiguous, admission, partial, allocator, order, skip_hopeless)
