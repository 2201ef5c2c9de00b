"""The discrete-event simulator.

Events live in one heap of ``(time, priority, sequence, kind, payload)``; the rising sequence
number makes ties deterministic. Submissions come from the workload (already sorted by
submit time) and are merged in at priority 1. At one instant the order is:

1. job ends (real end or wall-time kill), priority 0 -- so a job ending at ``t`` frees its
   resources for a job starting at ``t``;
2. submissions, priority 1 (each offered to ``dispatcher.admit``);
3. resize requests of running jobs and expired predictions (priority 2), wake-ups and
   interval ticks (priority 3);
4. then, once, the dispatcher -- when anything happened at ``t`` (AccaSim's behaviour), or
   at a tick of ``dispatch_interval``, or at a time the dispatcher asked for
   (``Decision.wakeup``) -- provided jobs are queued.

Every start is verified against the current free capacity before it is applied; an invalid
decision raises :class:`~hpcdispatch.errors.InvalidDecisionError` naming the dispatcher and
the job. A job runs its real run time, or is killed at its requested wall-time
(``walltime_kill``, default on).

Prediction correction (``prediction_correction``, off by default): when a running job passes
its planned end without ending, its planned end is revised
(:mod:`hpcdispatch.predictors.correction`); the revision is an event, so the dispatcher is
called then, and ``view.revised_running`` lists the revised records.

Dispatch time: every call is timed (wall clock). With ``charge_dispatch_time`` the jobs of a
decision start that much later in simulated time, and the dispatcher cannot be called again
before then (events in between are processed and trigger the next call at the end of the
busy period). Results then depend on the machine's speed, so charging is off by default.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
import time as _time
from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.dispatchers.base import Dispatcher
from hpcdispatch.errors import ConfigError, InvalidDecisionError, SimulationStalledError
from hpcdispatch.predictors.base import Predictor, WallTimePredictor
from hpcdispatch.predictors.correction import check_correction, revised_end
from hpcdispatch.sim.allocation import Allocation, per_node_array
from hpcdispatch.sim.checkpoint import LOOP_STATE, Checkpoint
from hpcdispatch.sim.cluster import ClusterState
from hpcdispatch.sim.decision import Decision, RunningJob
from hpcdispatch.sim.info_log import InfoLog
from hpcdispatch.sim.journal import DecisionJournal
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.segments import SegmentLog
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job, Workload

END, SUBMIT, RESIZE, WAKEUP = 0, 1, 2, 3
REVISE = 4  # an expired prediction (heap priority RESIZE)

# job status codes (result arrays)
PENDING, QUEUED, RUNNING, DONE, REJECTED = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class SimulationOptions:
    walltime_kill: bool = True
    charge_dispatch_time: bool = False
    dispatch_interval: float | None = None
    dispatch_on_events: bool = True
    record_decisions: bool = True
    #: "auto": the compiled engine (:mod:`hpcdispatch.compiled`) when it can run the
    #: simulation and the workload has at least ``AUTO_MIN_JOBS`` (20,000) jobs, else the
    #: Python loop; "python" / "compiled": that one (compiled fails with the reason when it
    #: cannot). Both take the same decisions.
    engine: str = "auto"
    #: revise the planned end of a running job that outlived it: None (the papers': it is
    #: expected to end in the next second), "walltime" or "ladder"
    #: (:mod:`hpcdispatch.predictors.correction`)
    prediction_correction: str | None = None

    def __post_init__(self) -> None:
        check_correction(self.prediction_correction)
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got '{self.engine}'")
        if self.dispatch_interval is not None and self.dispatch_interval <= 0:
            raise ConfigError(f"dispatch_interval must be positive, got {self.dispatch_interval}")
        if not self.dispatch_on_events and self.dispatch_interval is None:
            raise ConfigError("dispatch_on_events=False needs a dispatch_interval, or the dispatcher is never called")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> dict[str, Any]:
        """The options that identify a run (decision journal headers, sweep cell ids): all
        but the engine, which changes no decision, and without the options added later
        (``ADDED_OPTIONS``) while they have the value that behaves as before they existed,
        so journals and sweeps written before an addition stay valid."""
        return {k: v for k, v in asdict(self).items()
                if k != "engine" and not (k in ADDED_OPTIONS and v == ADDED_OPTIONS[k])}


ENGINES = ("auto", "python", "compiled")
#: options added after decision journals existed, with the value that means "as before"
ADDED_OPTIONS: dict[str, Any] = {"prediction_correction": None}

ProgressCallback = Callable[[int, int, float], None]


def resolve_options(dispatcher: Dispatcher, options: SimulationOptions | None = None) -> SimulationOptions:
    """The options a run uses: ``options`` (default ones when ``None``), completed by the
    dispatcher's own invocation hints (:meth:`Dispatcher.simulation_hints`, e.g. a periodic
    scheduler's step) when no ``dispatch_interval`` was given explicitly."""
    options = options or SimulationOptions()
    hints = dispatcher.simulation_hints()
    if hints and options.dispatch_interval is None:
        options = replace(options, **hints)
    return options


class Simulator:
    """Replays ``workload`` on ``system`` with ``dispatcher``; :meth:`run` returns the result."""

    def __init__(
        self,
        system: System,
        workload: Workload,
        dispatcher: Dispatcher,
        predictor: Predictor | None = None,
        options: SimulationOptions | None = None,
        journal: str | Path | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_every: float = 600.0,
    ):
        """``journal``: a decision journal file (:mod:`hpcdispatch.sim.journal`); calls already
        recorded there are replayed, new ones appended, so an interrupted run resumes.

        ``checkpoint``: a checkpoint file (:mod:`hpcdispatch.sim.checkpoint`), written every
        ``checkpoint_every`` wall-clock seconds; when it exists the run continues from it
        (any dispatcher, with memory or without), and it is deleted when the run finishes.
        Checkpoints need the Python engine ("auto" then chooses it)."""
        if tuple(workload.resources) != tuple(system.resources):
            raise ConfigError(
                f"workload resources {list(workload.resources)} do not match system '{system.name}' "
                f"resources {list(system.resources)}"
            )
        self.system = system
        self.workload = workload
        self.dispatcher = dispatcher
        self.predictor = predictor or WallTimePredictor()
        self.options = resolve_options(dispatcher, options)
        self.journal_path = Path(journal) if journal is not None else None
        self.checkpoint = None if checkpoint is None else Checkpoint(
            checkpoint, self.journal_run(), checkpoint_every, {"dispatcher": dispatcher.is_described_by})
        if self.journal_path is not None and not dispatcher.tags.memoryless:
            raise ConfigError(
                f"dispatcher '{dispatcher.name}' keeps state between calls: its runs cannot resume from a journal")

    # ------------------------------------------------------------------------------------
    def run(self, progress: ProgressCallback | None = None) -> SimulationResult:
        engine = self.engine()
        if engine != "python":
            from hpcdispatch.compiled.runner import run_compiled

            return run_compiled(self, progress)
        # The workload's half a million job objects live through the whole run: move them out
        # of the cyclic collector's sight (full collections would traverse all of them again
        # and again as the decision log grows); cycles created during the run are still
        # collected.
        gc.freeze()
        journal = None
        checkpoint = self.checkpoint
        if self.journal_path is not None:
            journal = DecisionJournal(self.journal_path, self.journal_run(),
                                      equivalent={"dispatcher": self.dispatcher.is_described_by})
        try:
            result = self._run(progress, journal, checkpoint)
        finally:
            gc.unfreeze()
            if journal is not None:
                journal.close()
        if journal is not None:
            result.extra["journal"] = journal.summary()
        if checkpoint is not None:
            result.extra["checkpoint"] = checkpoint.summary()
            checkpoint.remove()
        result.extra["engine"] = "python"
        return result

    def engine(self) -> str:
        """The engine :meth:`run` uses: "compiled" or "python" (see ``SimulationOptions.engine``)."""
        wanted = self.options.engine
        if wanted == "python":
            return "python"
        if self.checkpoint is not None:
            if wanted == "compiled":
                raise ConfigError("the compiled engine cannot write checkpoints: use the Python engine")
            return "python"
        from hpcdispatch.compiled import AUTO_MIN_JOBS, refusal

        reason = refusal(self)
        if reason is None and wanted == "auto" and len(self.workload) < AUTO_MIN_JOBS:
            return "python"
        if reason is None:
            return "compiled"
        if wanted == "compiled":
            raise ConfigError(f"the compiled engine cannot run this simulation: {reason}")
        return "python"

    def journal_run(self) -> dict[str, Any]:
        """What identifies this run in a decision journal's header."""
        src = self.workload.source
        return {
            "system": self.system.name,
            "workload": {"kind": src.kind, "spec": src.spec, "options": src.options, "jobs": len(self.workload)},
            "dispatcher": self.dispatcher.describe(),
            "predictor": self.predictor.name,
            # a run may resume on the other engine, and across options added later
            "options": self.options.identity(),
        }

    def _fresh_loop(self) -> dict[str, Any]:
        """The simulation loop's variables at the start of a run (see ``checkpoint.LOOP_STATE``)."""
        n = len(self.workload)
        nan = math.nan
        loop: dict[str, Any] = {
            "state": ClusterState(self.system),
            "queue": {},  # job index -> job, in submission order
            "running": {},  # job index -> RunningJob
            "planned": [0.0] * n,  # Python lists in the loop (numpy scalar writes are slow)
            "planned_np": np.zeros(n, dtype=np.float64),
            "held": {},  # job index -> [(nodes, amounts)], one pair per allocation segment
            "segments": SegmentLog(),
            "start_at": [nan] * n,
            "end_at": [nan] * n,
            "killed": [False] * n,
            "status": [PENDING] * n,
            "reject_reason": {},
            "resize_log": [],
            "heap": [],  # (time, priority, sequence, kind, payload)
            "next_seq": 0,
            # decision log columns: typed arrays and a by-key info log, not lists of Python
            # objects (a whole trace makes hundreds of thousands of calls)
            "d_time": array("d"),
            "d_queue": array("q"),
            "d_running": array("q"),
            "d_started": array("q"),
            "d_elapsed": array("d"),
            "d_info": InfoLog(),
            "si": 0,  # next submission
            "calls": 0,  # dispatcher calls so far (the journal numbers them)
            "busy_until": -math.inf,
            "wakeup_pending": set(),
            "tick_pending": False,
            "done": 0,
            "new_jobs": [],
            "ended_jobs": [],
            "ended_running": [],
            "revised": {},  # jobs revised since the last call (ordered, no repeats)
            "revisions": 0,
            "t": -math.inf,
            "predict_time": [0.0],
            "wall_s": 0.0,  # wall-clock seconds simulated before (by processes that wrote a checkpoint)
        }
        loop["view"] = DispatchView(
            self.system, loop["state"].free_readonly, loop["state"].free_total, loop["queue"], loop["running"],
            loop["planned"], self.workload.unit_requests, self.options.walltime_kill, loop["planned_np"],
            self.workload.queue_ewt, loop["held"],
        )
        return loop

    def _run(self, progress: ProgressCallback | None, journal: DecisionJournal | None,
             checkpoint: Checkpoint | None = None) -> SimulationResult:
        system, workload, dispatcher, opts = self.system, self.workload, self.dispatcher, self.options
        jobs = workload.jobs
        n = len(jobs)
        predictor = self.predictor
        if checkpoint is not None and checkpoint.exists():
            loop = checkpoint.load(dispatcher, predictor, system, workload)
        else:
            dispatcher.setup(system)
            predictor.reset(workload, opts.walltime_kill)
            loop = self._fresh_loop()
        state: ClusterState = loop["state"]
        queue: dict[int, Job] = loop["queue"]
        running: dict[int, RunningJob] = loop["running"]
        planned: list[float] = loop["planned"]
        planned_np: np.ndarray = loop["planned_np"]
        held: dict[int, list[tuple[np.ndarray, np.ndarray]]] = loop["held"]
        segments: SegmentLog = loop["segments"]
        start_at: list[float] = loop["start_at"]
        end_at: list[float] = loop["end_at"]
        killed: list[bool] = loop["killed"]
        status: list[int] = loop["status"]
        reject_reason: dict[int, str] = loop["reject_reason"]
        resize_log: list[tuple[float, int, int, bool]] = loop["resize_log"]
        heap: list[tuple[float, int, int, int, Any]] = loop["heap"]
        seq = itertools.count(loop["next_seq"])
        d_time, d_queue, d_running = loop["d_time"], loop["d_queue"], loop["d_running"]
        d_started, d_elapsed, d_info = loop["d_started"], loop["d_elapsed"], loop["d_info"]
        si: int = loop["si"]
        calls: int = loop["calls"]
        busy_until: float = loop["busy_until"]
        wakeup_pending: set[float] = loop["wakeup_pending"]
        tick_pending: bool = loop["tick_pending"]
        done: int = loop["done"]
        new_jobs: list[Job] = loop["new_jobs"]
        ended_jobs: list[Job] = loop["ended_jobs"]
        ended_running: list[RunningJob] = loop["ended_running"]
        revised: dict[int, None] = loop["revised"]
        revisions: int = loop["revisions"]
        t: float = loop["t"]
        predict_time: list[float] = loop["predict_time"]

        requests = workload.unit_requests
        kill = opts.walltime_kill
        submit_l = workload.submit.tolist()
        run_l = workload.run_time.tolist()
        wall_l = workload.wall_time.tolist()
        duration = [min(r, w) if kill else r for r, w in zip(run_l, wall_l)]

        view: DispatchView = loop["view"]
        name = dispatcher.name
        interval = opts.dispatch_interval
        correction = opts.prediction_correction
        inf = math.inf
        last_report = _time.perf_counter()
        last_checkpoint = began = last_report
        earlier_wall: float = loop["wall_s"]

        heappush, heappop = heapq.heappush, heapq.heappop
        running_added, running_removed = view._running_added, view._running_removed
        perf = _time.perf_counter
        give = state.give
        take_checked = state.take_checked
        raw_learn = predictor.learn
        raw_predict = predictor.predict

        def learn(job: Job, run_time: float, now: float) -> None:
            t0 = perf()
            raw_learn(job, run_time, now)
            predict_time[0] += perf() - t0

        def predict(job: Job, now: float) -> float:
            t0 = perf()
            value = raw_predict(job, now)
            predict_time[0] += perf() - t0
            return value

        if not predictor.timed:  # a field lookup: the timer would cost more than the call
            learn, predict = raw_learn, raw_predict
        admit = dispatcher.admit
        dispatch = dispatcher.dispatch
        charge = opts.charge_dispatch_time
        record = opts.record_decisions
        on_events = opts.dispatch_on_events
        queue_view = view.queue

        def push_wakeup(at: float) -> None:
            if at not in wakeup_pending:
                wakeup_pending.add(at)
                heappush(heap, (at, WAKEUP, next(seq), WAKEUP, None))

        while True:
            t_heap = heap[0][0] if heap else inf
            t_sub = submit_l[si] if si < n else inf
            t = t_heap if t_heap < t_sub else t_sub
            if t == inf:
                break
            happened = False
            woken = False

            # 1. ends
            while heap and heap[0][0] == t and heap[0][1] == END:
                idx = heappop(heap)[4]
                rj = running.pop(idx)
                running_removed(rj)
                for nodes, amounts in held.pop(idx):
                    give(nodes, amounts)
                end_at[idx] = t
                status[idx] = DONE
                job = jobs[idx]
                if kill and run_l[idx] > wall_l[idx]:
                    killed[idx] = True
                learn(job, t - start_at[idx], t)
                ended_jobs.append(job)
                ended_running.append(rj)
                done += 1
                happened = True

            # 2. submissions
            while si < n and submit_l[si] == t:
                job = jobs[si]
                si += 1
                p_dur = float(predict(job, t))
                planned[job.index] = p_dur
                planned_np[job.index] = p_dur
                view.now = t
                answer = admit(job, view)
                if answer.accept:
                    queue[job.index] = job
                    status[job.index] = QUEUED
                    new_jobs.append(job)
                else:
                    status[job.index] = REJECTED
                    reject_reason[job.index] = answer.reason or "rejected"
                    done += 1
                happened = True

            # 3. resize requests, wake-ups and ticks
            while heap and heap[0][0] == t:
                _, prio, _, kind, payload = heappop(heap)
                if kind == REVISE:
                    idx, count = payload
                    rj = running.get(idx)
                    if rj is not None and rj.planned_end <= t:
                        new_end = revised_end(correction, t, rj.start, wall_l[idx], count)
                        new_rj = rj._replace(planned_end=new_end)
                        running[idx] = new_rj
                        running_removed(rj)
                        running_added(new_rj)
                        revised[idx] = None
                        revisions += 1
                        if new_end < rj.start + duration[idx]:  # still before its real end
                            heappush(heap, (new_end, RESIZE, next(seq), REVISE, (idx, count + 1)))
                        happened = True
                elif kind == RESIZE:
                    idx, request = payload
                    if idx in running:
                        granted = self._resize(idx, request, t, view, running, held, segments, state, requests)
                        resize_log.append((t, jobs[idx].id, request.units, granted))
                        happened = True
                elif kind == WAKEUP:
                    wakeup_pending.discard(t)
                    woken = True
                else:  # tick
                    tick_pending = False
                    woken = True

            # 4. dispatch
            if queue and ((happened and on_events) or woken):
                if t < busy_until:
                    push_wakeup(busy_until)
                else:
                    view.now = t
                    view.new_jobs = tuple(new_jobs)
                    view.ended_jobs = tuple(ended_jobs)
                    view.ended_running = tuple(ended_running)
                    # current records: a job revised, then grown or ended since, is listed as it is now
                    view.revised_running = tuple(running[i] for i in revised if i in running)
                    queue_view._invalidate()
                    queue_before, running_before = len(queue), len(running)
                    if journal is not None and journal.has(calls):
                        decision, elapsed = journal.replay(calls, t, queue, jobs)
                    else:
                        t0 = perf()
                        decision = dispatch(view)
                        elapsed = perf() - t0
                        if journal is not None:  # the queue is still the one the dispatcher saw
                            journal.append(calls, t, queue, decision, elapsed)
                    calls += 1
                    new_jobs.clear()
                    ended_jobs.clear()
                    ended_running.clear()
                    revised.clear()
                    begin = t + elapsed if charge else t
                    if charge:
                        busy_until = begin
                    for start in decision.starts:
                        job = start.job
                        idx = job.index
                        if idx not in queue:
                            why = "it is not queued" if status[idx] != RUNNING else "it is already running"
                            raise InvalidDecisionError(name, job.id, t, f"cannot start it: {why}")
                        alloc = start.allocation
                        if not isinstance(alloc, Allocation):
                            raise InvalidDecisionError(name, job.id, t, f"allocation must be an Allocation, got {type(alloc).__name__}")
                        if job.node_count or job.contiguous or job.per_node_request:
                            amounts = take_checked(alloc, requests[idx], job.units, job.max_units_per_node,
                                                   job.node_count, per_node_array(job.per_node_request), job.contiguous)
                        else:
                            amounts = take_checked(alloc, requests[idx], job.units, job.max_units_per_node)
                        if isinstance(amounts, str):
                            raise InvalidDecisionError(name, job.id, t, amounts)
                        del queue[idx]
                        status[idx] = RUNNING
                        start_at[idx] = begin
                        end_t = begin + duration[idx]
                        rj = RunningJob(job, begin, alloc, begin + planned[idx])
                        running[idx] = rj
                        held[idx] = [(alloc.nodes, amounts)]
                        running_added(rj)
                        segments.start(idx, begin, alloc)
                        heappush(heap, (end_t, END, next(seq), END, idx))
                        if correction is not None and end_t > rj.planned_end:
                            # (a prediction <= 0 from a custom predictor: revised at the start)
                            heappush(heap, (max(rj.planned_end, begin), RESIZE, next(seq), REVISE, (idx, 0)))
                        if job.growth:
                            for request in job.growth:
                                at = begin + request.after
                                if at < end_t:
                                    heappush(heap, (at, RESIZE, next(seq), RESIZE, (idx, request)))
                    if decision.wakeup is not None:
                        if decision.wakeup <= t:
                            raise InvalidDecisionError(name, None, t, f"wakeup {decision.wakeup} is not in the future")
                        push_wakeup(float(decision.wakeup))
                    elif (interval is not None and not decision.starts and not running and si >= n
                          and not wakeup_pending and queue):
                        # only interval ticks are left and the state cannot change any more
                        raise SimulationStalledError(
                            f"dispatcher '{name}' left {len(queue)} job(s) queued at t={t:g} with nothing running, "
                            f"no more submissions and no wake-up requested (first waiting job: "
                            f"{next(iter(queue.values())).id})"
                        )
                    if record:
                        d_time.append(t)
                        d_queue.append(queue_before)
                        d_running.append(running_before)
                        d_started.append(len(decision.starts))
                        d_elapsed.append(elapsed)
                        d_info.append(decision.info)

            if interval is not None and queue and not tick_pending:
                nxt = (math.floor(t / interval) + 1) * interval
                heappush(heap, (nxt, WAKEUP, next(seq), -1, None))
                tick_pending = True

            if queue and not heap and si >= n:
                raise SimulationStalledError(
                    f"dispatcher '{name}' left {len(queue)} job(s) queued at t={t:g} with nothing running and "
                    f"no more events (first waiting job: {next(iter(queue.values())).id})"
                )

            if progress is not None:
                now_wall = perf()
                if now_wall - last_report > 0.2:
                    progress(done, n, t)
                    last_report = now_wall

            if checkpoint is not None and perf() - last_checkpoint >= checkpoint.every:
                # the containers in ``loop`` are the loop's own; only rebound names are updated
                loop.update(si=si, calls=calls, busy_until=busy_until, tick_pending=tick_pending, done=done,
                            revisions=revisions, t=t, next_seq=next(seq), wall_s=earlier_wall + perf() - began)
                seq = itertools.count(loop["next_seq"])
                checkpoint.save(loop, dispatcher, predictor, system, workload,
                                {"t": t, "done": done, "jobs": n, "queued": len(queue), "calls": calls,
                                 "wall_s": loop["wall_s"]})
                last_checkpoint = perf()

        if progress is not None:
            progress(done, n, t if t != inf else 0.0)

        result = SimulationResult(
            system=system,
            workload=workload,
            dispatcher=dispatcher.describe(),
            dispatcher_name=dispatcher.name,
            predictor=predictor.name,
            options=opts,
            start=np.asarray(start_at, dtype=np.float64),
            end=np.asarray(end_at, dtype=np.float64),
            killed=np.asarray(killed, dtype=bool),
            status=np.asarray(status, dtype=np.int8),
            planned=np.asarray(planned, dtype=np.float64),
            segment_log=segments,
            reject_reason=reject_reason,
            resize_log=resize_log,
            decisions={
                "time": np.array(d_time, dtype=np.float64),
                "queue_length": np.array(d_queue, dtype=np.int64),
                "running": np.array(d_running, dtype=np.int64),
                "started": np.array(d_started, dtype=np.int64),
                "elapsed": np.array(d_elapsed, dtype=np.float64),
                "info": d_info,
            },
        )
        result.extra["prediction_time_s"] = predict_time[0]
        if correction is not None:
            result.extra["prediction_correction"] = correction
            result.extra["prediction_revisions"] = revisions
        return result

    # ------------------------------------------------------------------------------------
    def _resize(self, idx, request, t, view, running, held, segments, state, requests) -> bool:
        rj = running[idx]
        view.now = t
        alloc = self.dispatcher.on_resize(rj, request, view)
        if alloc is None:
            return False
        job = rj.job
        if not isinstance(alloc, Allocation):
            raise InvalidDecisionError(self.dispatcher.name, job.id, t, "resize grant must be an Allocation")
        if job.constrained:
            raise InvalidDecisionError(self.dispatcher.name, job.id, t,
                                       "resize of a job with node constraints (node count, per-node extras, "
                                       "contiguity) is not supported")
        merged: dict[int, int] = dict(rj.allocation.pairs())
        for node, units in alloc.pairs():
            merged[node] = merged.get(node, 0) + units
        if job.max_units_per_node > 0 and max(merged.values()) > job.max_units_per_node:
            raise InvalidDecisionError(
                self.dispatcher.name, job.id, t, f"resize grant puts more than {job.max_units_per_node} unit(s) on a node"
            )
        amounts = state.take_checked(alloc, requests[idx], request.units, 0)
        if isinstance(amounts, str):
            raise InvalidDecisionError(self.dispatcher.name, job.id, t, f"resize grant: {amounts}")
        held[idx].append((alloc.nodes, amounts))
        segments.grow(idx, t, alloc)
        grown = RunningJob(job, rj.start, Allocation.from_pairs(sorted(merged.items())), rj.planned_end)
        running[idx] = grown
        view._running_removed(rj)
        view._running_added(grown)
        return True
