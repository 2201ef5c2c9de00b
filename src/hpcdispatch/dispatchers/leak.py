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

from hpcdispatch.errors import ConfigError
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

ADMITS = ("free-node", "queue", "overbook")
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
        admission: str = "free-node",
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
        overbook = self.admission == "overbook"
        return Tags(
            t.deterministic,
            t.memoryless,
            t.uses_solver,
            t.node_constraints,
            t.rejects,
            not overbook,  # per core: children share the job's cores, no fork grants
            bool(self.contiguous) and not overbook,
            per_core=overbook,
        )

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [
            {},
            {"admission": "queue", "partial": False},
            {"admission": "queue", "order": "edf", "skip_hopeless": True},
            {"admission": "overbook"},
        ]

    def _setup(self, system: System) -> None:
        if not self.partial and self.admission != "queue":  # (a check between two parameters)
            raise ConfigError(
                f"dispatcher '{self.name}': partial=false waits for a whole request, which needs "
                f"a queue (admission=queue), got admission={self.admission}"
            )
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
        # admission=free-node: first nodes claimed at admission, started by the next call
        self._claims: dict[int, tuple[int, int]] = {}  # job index -> (first node, snake start)
        self._claimed = np.zeros(system.n_nodes, dtype=bool)
        # admission=overbook: time-shared starts (job index -> node beyond its cores)
        self._excess: dict[int, int] = {}
        res = list(system.resources)
        self._core = res.index("core") if "core" in res else -1
        self._cores = int(system.capacity[:, self._core].max()) if self._core >= 0 else 1

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
        if self.admission == "free-node" and job.app is not None and ready <= view.now:
            # Fig. 10 l.1-7 at the job's earliest start (now): the first free node along the
            # snake from the next start node, claimed until the call of this instant starts it
            start = self._starts[self._next_start % len(self._starts)]
            snake = self._grid.snake_order(start)
            hits = np.flatnonzero((self._whole_free(view) & ~self._claimed)[snake])
            if len(hits) == 0:
                return Admission(
                    False, "count: no free node at the job's earliest start (Fig. 10 line 7)"
                )
            first = int(snake[hits[0]])
            self._next_start += 1
            self._claims[job.index] = (first, start)
            self._claimed[first] = True
        return Admission(True, "")

    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        free = view.free.copy()
        whole = (free == self._capacity).all(axis=1)
        starts: list[Start] = []
        wakeup = math.inf
        queue: Iterable[Job] = self._by_deadline(view) if self.order == "edf" else view.queue
        admission = self.admission
        if admission == "overbook":
            for idx in [i for i in self._excess if i not in view.running]:
                del self._excess[idx]
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
            if admission == "overbook":
                starts.append(Start(job, self._per_core_start(job, free)))
                continue
            claim = self._claims.pop(job.index, None)
            if claim is not None:  # free-node: the node claimed at admission
                first, start = claim
                self._claimed[first] = False
                mask = whole & ~self._claimed
            else:
                start = self._starts[self._next_start % len(self._starts)]
                snake = self._grid.snake_order(start)
                mask = whole & ~self._claimed
                hits = np.flatnonzero(mask[snake])
                if len(hits) == 0:
                    if admission == "free-node":
                        continue  # (an earliest start after its submission: it waits)
                    break
                first = int(snake[hits[0]])
                self._next_start += 1
            nodes = leak_grow(
                mask, self._grid, first, job.units, jump=not self.contiguous, snake_start=start
            )
            if len(nodes) < job.units and not self.partial:
                break  # it waits for its whole request; FIFO: nobody behind it starts
            nodes = np.sort(nodes)
            whole[nodes] = False
            free[nodes] = 0
            self._job_start[job.index] = start
            starts.append(
                Start(job, Allocation.trusted(nodes, np.ones(len(nodes), dtype=np.int64)))
            )
        return Decision(starts=starts, wakeup=None if wakeup == math.inf else wakeup)

    def _per_core_start(self, job: Job, free: np.ndarray) -> Allocation:
        """``admission=overbook``: the job's cores (its process count) from the first node
        with a free core along the snake, then by breadth-first layers over 4-neighbours with
        free cores (``leak-nc``: jumping along the snake), taking each node's free cores; when
        no node has a free core, one core on the node with the fewest held cores (lowest id),
        time-shared. ``free`` is updated."""
        c = self._cores
        excess = np.zeros(len(free), dtype=np.int64)
        for v in self._excess.values():
            excess[v] += 1
        # free cores: the view's, less the time-shared cores held beyond capacity
        cores = np.maximum(0, free[:, self._core] - excess)
        start = self._starts[self._next_start % len(self._starts)]
        self._next_start += 1
        self._job_start[job.index] = start
        snake = self._grid.snake_order(start)
        hits = np.flatnonzero(cores[snake] > 0)
        if len(hits) == 0:
            held = (c - free[:, self._core]).astype(np.int64) + excess
            node = int(np.argmin(held))  # argmin: lowest id on ties
            self._excess[job.index] = node
            return Allocation.trusted(np.array([node], np.int64), np.ones(1, np.int64))
        assert (
            job.app is not None
        )  # (jobs without an application model are placed by the allocator)
        need = int(job.app.processes)
        order = leak_grow(
            cores > 0,
            self._grid,
            int(snake[hits[0]]),
            need,
            jump=not self.contiguous,
            snake_start=start,
        )
        take = np.minimum(cores[order], need)
        cum = np.cumsum(take)
        last = int(np.searchsorted(cum, need))  # the node that completes the request
        order, take = order[: last + 1], take[: last + 1].copy()
        if cum[min(last, len(cum) - 1)] > need:
            take[-1] -= int(cum[last] - need)
        srt = np.argsort(order)
        nodes, units = order[srt], take[srt].astype(np.int64)
        free[nodes, self._core] -= units
        return Allocation.trusted(nodes, units)

    def on_resize(
        self, running: RunningJob, request: GrowthRequest | ForkRequest, view: DispatchView
    ) -> Allocation | None:
        if not isinstance(request, ForkRequest):
            return None
        node = self.fork_node(running, request.parent_node, self._whole_free(view) & ~self._claimed)
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
        admission: str = "free-node",
        partial: bool = True,
        allocator: str = "first-fit",
        order: str = "fifo",
        skip_hopeless: bool = False,
    ):
        super().__init__(contiguous, admission, partial, allocator, order, skip_hopeless)
