"""The read-only view a dispatcher gets at every call."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

import numpy as np

from hpcdispatch.protocol.decision import RunningJob
from hpcdispatch.protocol.release_order import ReleaseOrder
from hpcdispatch.system.allocation import held_amounts, job_fits, pooled_fits
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


class QueueView:
    """Queued jobs in arrival order (submit time, then workload order). Read-only."""

    __slots__ = ("_jobs", "_list", "_indices")

    def __init__(self, jobs: dict[int, Job]):
        self._jobs = jobs
        self._list: list[Job] | None = None
        self._indices: np.ndarray | None = None

    def _invalidate(self) -> None:
        """The queue changed (the simulator calls this before every dispatcher call)."""
        self._list = None
        self._indices = None

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs.values())

    def __len__(self) -> int:
        return len(self._jobs)

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __contains__(self, job: object) -> bool:
        return isinstance(job, tuple) and getattr(job, "index", None) in self._jobs

    def __getitem__(self, i: int) -> Job:
        return self.as_list()[i]

    def as_list(self) -> list[Job]:
        """The queue as a list (built once per dispatcher call). Do not modify it."""
        if self._list is None:
            self._list = list(self._jobs.values())
        return self._list

    def indices(self) -> np.ndarray:
        """The queued jobs' indices in queue order (built once per dispatcher call). Do not
        modify it."""
        if self._indices is None:
            self._indices = np.fromiter(self._jobs, dtype=np.int64, count=len(self._jobs))
        return self._indices

    def get(self, index: int) -> Job:
        """The queued job with workload index ``index`` (KeyError when it is not queued)."""
        return self._jobs[index]

    def head(self) -> Job | None:
        return next(iter(self._jobs.values()), None)


class DispatchView:
    """Everything a dispatcher may read at time ``now``. Nothing here can be modified.

    - ``free`` / ``capacity``: ``(n_nodes, n_resources)`` int arrays (read-only views);
    - ``free_total``: pooled free capacity per resource (tuple);
    - ``queue``: :class:`QueueView`; ``running``: job index -> :class:`RunningJob`;
    - ``requests[job.index]``: the per-unit request of a job as a numpy row;
    - ``planned_duration(job)``: the duration the predictor gave the job at submission
      (``planned_durations``: the same for every job index, as a numpy array);
    - ``expected_end(running_job)``: ``max(planned_end, now + 1)`` -- a running job that
      outlived its prediction is expected to need at least one more second (CP'19 sec. 4);
    - ``new_jobs`` / ``ended_jobs``: what was submitted / what ended since the last call
      (``ended_running``: the ended jobs' last running records -- start, allocation, planned end);
    - ``revised_running``: the still running jobs whose planned end was revised since the last
      call (prediction correction, :mod:`hpcdispatch.sim.correction`), as they are now
      (a revised job that ended since is in ``ended_running``, with its revised planned end).
      A dispatcher that keeps a plan between calls must not trust it when this is not empty.
    """

    def __init__(
        self,
        system: System,
        free: np.ndarray,
        free_total: list[int],
        queue: dict[int, Job],
        running: dict[int, RunningJob],
        planned: list[float],
        requests: np.ndarray,
        walltime_kill: bool,
        planned_array: np.ndarray | None = None,
        queue_ewt: Mapping[int, float] | None = None,
        held: Mapping[int, list[tuple[np.ndarray, np.ndarray]]] | None = None,
    ):
        self.system = system
        self.capacity = system.capacity
        self.free = free
        self._free_total = free_total
        self.queue = QueueView(queue)
        self._running = running
        self.running: Mapping[int, RunningJob] = MappingProxyType(running)
        # running jobs as (planned end, job index, record), kept sorted by the simulator --
        # built on the first request, so policies that never ask (FIFO) do not pay for it
        self._by_end: list[tuple[float, int, RunningJob]] | None = None
        #: incremented by the simulator whenever a job starts, ends or grows
        self.running_version = 0
        self._planned = planned
        ro = np.asarray(
            planned if planned_array is None else planned_array, dtype=np.float64
        ).view()
        ro.flags.writeable = False
        #: planned durations of all jobs of the workload, by job index (read-only numpy view)
        self.planned_durations = ro
        self.requests = requests
        self.walltime_kill = walltime_kill
        #: expected waiting time per queue, from the workload's recorded waits (may be empty)
        self.queue_ewt: Mapping[int, float] = MappingProxyType(dict(queue_ewt or {}))
        # what every running job holds: job index -> [(nodes, amounts per node)], one pair per
        # segment (a grown job has several); kept by the simulator
        self._held: Mapping[int, list[tuple[np.ndarray, np.ndarray]]] = (
            held if held is not None else {}
        )
        self._releases: ReleaseOrder | None = None  # likewise built on the first request
        self.now: float = 0.0
        self.new_jobs: tuple[Job, ...] = ()
        self.ended_jobs: tuple[Job, ...] = ()
        self.ended_running: tuple[RunningJob, ...] = ()
        self.revised_running: tuple[RunningJob, ...] = ()

    def __getstate__(self) -> dict:
        """For a checkpoint (:mod:`hpcdispatch.sim.checkpoint`): the read-only proxies are
        re-made from the dicts they show, not copied."""
        state = dict(vars(self))
        del state["running"]
        state["queue_ewt"] = dict(self.queue_ewt)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.running = MappingProxyType(self._running)
        self.queue_ewt = MappingProxyType(state["queue_ewt"])

    @property
    def free_total(self) -> tuple[int, ...]:
        return tuple(self._free_total)

    def planned_duration(self, job: Job) -> float:
        return self._planned[job.index]

    def expected_end(self, running: RunningJob) -> float:
        return max(running.planned_end, self.now + 1.0)

    def running_by_planned_end(self) -> Iterator[RunningJob]:
        """Running jobs in ascending planned end (ties by job order)."""
        return (entry[2] for entry in self.running_end_order())

    def holdings(self, running: RunningJob) -> list[tuple[np.ndarray, np.ndarray]]:
        """What a running job holds: ``[(nodes, amounts)]`` with ``amounts`` of shape
        ``(len(nodes), n_resources)`` (units x request plus per-node extras), one pair per
        segment of its allocation. Do not modify the arrays."""
        segments = self._held.get(running.job.index)
        if segments is None:  # a view built outside the simulator
            job = running.job
            segments = [
                (
                    running.allocation.nodes,
                    held_amounts(
                        running.allocation, self.requests[job.index], job.per_node_request
                    ),
                )
            ]
        return segments

    def running_end_order(self) -> Sequence[tuple[float, int, RunningJob]]:
        """Running jobs as ``(planned end, job index, record)`` in ascending order -- the
        simulator's own sorted list, kept up to date as jobs start and end (no sort per call).
        Do not modify it."""
        if self._by_end is None:
            self._by_end = sorted(
                (rj.planned_end, rj.job.index, rj) for rj in self._running.values()
            )
        return self._by_end

    def release_arrays(
        self,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray, list[np.ndarray]]:
        """What running jobs hold, flattened in ascending planned end (see
        :class:`~hpcdispatch.protocol.release_order.ReleaseOrder`): ``(ends, lengths, totals,
        nodes, amounts)`` -- per running job its planned end, its number of rows and its
        total per resource (``totals[r]``); per row a node and the amount of resource ``r``
        held there (``amounts[r]``). Do not modify them."""
        if self._releases is None:
            self._releases = ReleaseOrder(len(self.system.resources))
            for rj in self._running.values():
                self._releases.add(rj.job.index, rj.planned_end, self.holdings(rj))
        return self._releases.arrays()

    # ---- kept by the simulator (call after the job's holdings are recorded) -------------
    def _running_added(self, rj: RunningJob) -> None:
        if self._by_end is not None:
            bisect.insort(self._by_end, (rj.planned_end, rj.job.index, rj))
        if self._releases is not None:
            self._releases.add(rj.job.index, rj.planned_end, self.holdings(rj))
        self.running_version += 1

    def _running_removed(self, rj: RunningJob) -> None:
        by_end = self._by_end
        if by_end is not None:
            i = bisect.bisect_left(by_end, (rj.planned_end, rj.job.index))
            if i >= len(by_end) or by_end[i][1] != rj.job.index:
                raise RuntimeError(f"running job {rj.job.id} is missing from the end order")
            del by_end[i]
        if self._releases is not None:
            self._releases.remove(rj.job.index)
        self.running_version += 1

    def fits_now(self, job: Job) -> bool:
        req = self.requests[job.index]
        if not pooled_fits(self._free_total, req, job.units):
            return False
        return job_fits(self.free, job, req)
