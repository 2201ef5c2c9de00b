"""The read-only view a dispatcher gets at every call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

import numpy as np

from hpcdispatch.sim.allocation import job_fits, pooled_fits
from hpcdispatch.sim.decision import RunningJob
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job



class QueueView:
    """Queued jobs in arrival order (submit time, then workload order). Read-only."""

    __slots__ = ("_jobs", "_list")

    def __init__(self, jobs: dict[int, Job]):
        self._jobs = jobs
        self._list: list[Job] | None = None

    def _invalidate(self) -> None:
        self._list = None

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
    - ``new_jobs`` / ``ended_jobs``: what was submitted / what ended since the last call.
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
    ):
        self.system = system
        self.capacity = system.capacity
        self.free = free
        self._free_total = free_total
        self.queue = QueueView(queue)
        self._running = running
        self.running: Mapping[int, RunningJob] = MappingProxyType(running)
        self._order: list[RunningJob] | None = None
        self._order_key = -1
        #: incremented by the simulator whenever a job starts, ends or grows
        self.running_version = 0
        self._planned = planned
        ro = np.asarray(planned if planned_array is None else planned_array, dtype=np.float64).view()
        ro.flags.writeable = False
        #: planned durations of all jobs of the workload, by job index (read-only numpy view)
        self.planned_durations = ro
        self.requests = requests
        self.walltime_kill = walltime_kill
        #: expected waiting time per queue, from the workload's recorded waits (may be empty)
        self.queue_ewt: Mapping[int, float] = MappingProxyType(dict(queue_ewt or {}))
        self.now: float = 0.0
        self.new_jobs: tuple[Job, ...] = ()
        self.ended_jobs: tuple[Job, ...] = ()

    @property
    def free_total(self) -> tuple[int, ...]:
        return tuple(self._free_total)

    def planned_duration(self, job: Job) -> float:
        return self._planned[job.index]

    def expected_end(self, running: RunningJob) -> float:
        return max(running.planned_end, self.now + 1.0)

    def running_by_planned_end(self) -> Iterator[RunningJob]:
        """Running jobs in ascending planned end (ties by job order).

        Sorted on demand (and cached while the running set is unchanged): only the policies
        that plan ahead pay for it.
        """
        if self._order is None or self._order_key != self.running_version:
            self._order = sorted(self._running.values(), key=lambda rj: (rj.planned_end, rj.job.index))
            self._order_key = self.running_version
        return iter(self._order)

    def fits_now(self, job: Job) -> bool:
        req = self.requests[job.index]
        if not pooled_fits(self._free_total, req, job.units):
            return False
        return job_fits(self.free, job, req)
