"""The simulation loop's state, named once: :class:`LoopState`.

The Python engine (:mod:`hpcdispatch.sim.simulator`) binds it once and its event handlers
read and write it; a checkpoint (:mod:`hpcdispatch.sim.checkpoint`) pickles its fields
(``dataclasses.fields(LoopState)``); the compiled engine (:mod:`hpcdispatch.compiled`) hands
its outcome over by filling the same per-job fields and logs, so that one method,
:meth:`LoopState.result`, makes the :class:`~hpcdispatch.sim.result.SimulationResult` of
either engine.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcdispatch.protocol import Dispatcher, DispatchView, Predictor, RunningJob
from hpcdispatch.sim.cluster import ClusterState
from hpcdispatch.sim.execution import AppRun, ExecutionModel, app_model_params
from hpcdispatch.sim.info_log import InfoLog
from hpcdispatch.sim.options import SimulationOptions
from hpcdispatch.sim.result import RunNotes, SimulationResult
from hpcdispatch.sim.segments import SegmentLog, buffer_view, raw_bytes
from hpcdispatch.system.model import System
from hpcdispatch.vocabulary import JobStatus
from hpcdispatch.workload.job import Job, Workload


class DecisionLog:
    """One row per dispatcher call: time, queue length and running jobs before the call,
    jobs started, wall-clock seconds, and the call's ``info`` (typed arrays and a by-key
    :class:`InfoLog`, not lists of Python objects: a whole trace makes hundreds of thousands
    of calls)."""

    __slots__ = ("time", "queue_length", "running", "started", "elapsed", "info")

    def __init__(self) -> None:
        self.time = array("d")
        self.queue_length = array("q")
        self.running = array("q")
        self.started = array("q")
        self.elapsed = array("d")
        self.info = InfoLog()

    @classmethod
    def from_columns(
        cls,
        time: np.ndarray,
        queue_length: np.ndarray,
        running: np.ndarray,
        started: np.ndarray,
        elapsed: np.ndarray,
        info: InfoLog,
    ) -> DecisionLog:
        log = cls()
        log.time.frombytes(raw_bytes(time, np.float64))  # (no bytes object in between)
        log.queue_length.frombytes(raw_bytes(queue_length, np.int64))
        log.running.frombytes(raw_bytes(running, np.int64))
        log.started.frombytes(raw_bytes(started, np.int64))
        log.elapsed.frombytes(raw_bytes(elapsed, np.float64))
        log.info = info
        return log

    def columns(self) -> dict[str, Any]:
        """The result's ``decisions``: numpy columns (read-only views of the log's own buffers,
        not copies: the log takes no more calls once a result is made of it) and the info log."""
        return {
            "time": buffer_view(self.time, np.float64),
            "queue_length": buffer_view(self.queue_length, np.int64),
            "running": buffer_view(self.running, np.int64),
            "started": buffer_view(self.started, np.int64),
            "elapsed": buffer_view(self.elapsed, np.float64),
            "info": self.info,
        }


@dataclass(slots=True)
class LoopState:
    """Everything the event loop changes while it runs (see :mod:`hpcdispatch.sim.simulator`).

    Per-job values are Python lists in the loop (numpy scalar writes are slow); ``planned``
    and ``planned_np`` hold the same planned durations for the loop and for the view."""

    # the machine and the jobs in it
    cluster: ClusterState
    view: DispatchView
    queue: dict[int, Job]  # job index -> job, in submission order
    running: dict[int, RunningJob]  # job index -> its running record
    held: dict[
        int, list[tuple[np.ndarray, np.ndarray]]
    ]  # job index -> [(nodes, amounts)], one per segment
    planned: list[float]
    planned_np: np.ndarray
    # events: the heap of (time, priority, sequence, kind, payload) and the next submission
    heap: list[tuple[float, int, int, int, Any]] = field(default_factory=list)
    next_seq: int = 0
    next_submit: int = 0
    t: float = -math.inf
    # per-job outcomes and the logs (what the result is made of)
    start_at: list[float] = field(default_factory=list)
    end_at: list[float] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    reject_reason: dict[int, str] = field(default_factory=dict)
    # job index -> why it was cancelled (a CancelReason's text)
    cancel_reason: dict[int, str] = field(default_factory=dict)
    resize_log: list[tuple[float, int, int, bool]] = field(default_factory=list)
    segments: SegmentLog = field(default_factory=SegmentLog)
    decisions: DecisionLog = field(default_factory=DecisionLog)
    done: int = 0  # jobs ended, rejected or cancelled
    # the dispatcher's calls: how many, when it may be called again, what it will be told
    calls: int = 0  # the journal numbers them
    busy_until: float = -math.inf  # charged dispatch time
    wakeup_pending: set[float] = field(default_factory=set)
    tick_pending: bool = False
    new_jobs: list[Job] = field(default_factory=list)
    ended_jobs: list[Job] = field(default_factory=list)
    ended_running: list[RunningJob] = field(default_factory=list)
    revised: dict[int, None] = field(
        default_factory=dict
    )  # jobs revised since the last call (ordered set)
    revisions: int = 0
    # the execution model of jobs with an application model, and their runs in it
    execution: ExecutionModel | None = None
    apps: dict[int, AppRun] = field(default_factory=dict)
    # costs measured so far
    predict_time_s: float = 0.0
    wall_s: float = 0.0  # wall-clock seconds simulated by processes that wrote a checkpoint

    @classmethod
    def start(cls, system: System, workload: Workload, options: SimulationOptions) -> LoopState:
        """The state at the start of a run: an empty machine, nothing submitted."""
        n = len(workload)
        cluster = ClusterState(system)
        queue: dict[int, Job] = {}
        running: dict[int, RunningJob] = {}
        held: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        planned = [0.0] * n
        planned_np = np.zeros(n, dtype=np.float64)
        view = DispatchView(
            system,
            cluster.free_readonly,
            cluster.free_total,
            queue,
            running,
            planned,
            workload.unit_requests,
            options.walltime_kill,
            planned_np,
            workload.queue_ewt,
            held,
        )
        nan = math.nan
        execution = (
            ExecutionModel.for_system(system, app_model_params(options.app_model))
            if workload.has_apps
            else None
        )
        return cls(
            cluster=cluster,
            view=view,
            queue=queue,
            running=running,
            held=held,
            planned=planned,
            planned_np=planned_np,
            start_at=[nan] * n,
            end_at=[nan] * n,
            status=[int(JobStatus.PENDING)] * n,
            execution=execution,
        )

    def result(
        self,
        system: System,
        workload: Workload,
        dispatcher: Dispatcher,
        predictor: Predictor,
        options: SimulationOptions,
    ) -> SimulationResult:
        """The run's result from its outcome fields (a job that ended and ran past its
        wall-time was killed at it, when jobs are killed)."""
        status = np.asarray(self.status, dtype=np.int8)
        killed = (status == JobStatus.COMPLETED) & (workload.run_time > workload.wall_time)
        if not options.walltime_kill:
            killed[:] = False
        return SimulationResult(
            system=system,
            workload=workload,
            dispatcher=dispatcher.identity(),
            predictor=predictor.name,
            options=options,
            start=np.asarray(self.start_at, dtype=np.float64),
            end=np.asarray(self.end_at, dtype=np.float64),
            killed=killed,
            status=status,
            planned=np.asarray(self.planned, dtype=np.float64),
            segment_log=self.segments,
            reject_reason=self.reject_reason,
            cancel_reason=self.cancel_reason,
            bookings=list(dispatcher.bookings()),
            resize_log=self.resize_log,
            decisions=self.decisions.columns(),
            notes=RunNotes(
                prediction_time_s=self.predict_time_s,
                execution=None if self.execution is None else self.execution.summary(),
            ),
            tags=dict(vars(dispatcher.get_tags())),
        )
