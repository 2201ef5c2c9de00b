"""The discrete-event simulator: the Python engine.

Events live in one heap of ``(time, priority, sequence, kind, payload)``; the rising sequence
number makes ties deterministic. Submissions come from the workload (already sorted by
submit time) and are merged in at priority 1. :meth:`Simulator.step` processes one instant,
in this order, each kind of event by its own handler:

1. job ends (real end or wall-time kill), priority 0 -- so a job ending at ``t`` frees its
   resources for a job starting at ``t`` (:meth:`Simulator._end_jobs`);
2. submissions, priority 1, each offered to ``dispatcher.admit`` (:meth:`Simulator._submit_jobs`);
3. resize requests of running jobs, expired predictions and deadlines (priority 2: a job
   waiting or running at its deadline is cancelled, :meth:`Simulator._cancel`), wake-ups and
   interval ticks (priority 3) (:meth:`Simulator._timed_events`);
4. then, once, the dispatcher -- when anything happened at ``t`` (AccaSim's behaviour), or
   at a tick of ``dispatch_interval``, or at a time the dispatcher asked for
   (``Decision.wakeup``) -- provided jobs are queued (:meth:`Simulator._call_dispatcher`).

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

import gc
import heapq
import math
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import (
    ConfigError,
    InvalidDecisionError,
    SimulationStalledError,
    UnsupportedJobError,
)
from hpcdispatch.protocol import (
    Allocation,
    Dispatcher,
    ForkRequest,
    Predictor,
    RunningJob,
    WallTimePredictor,
)
from hpcdispatch.sim.checkpoint import Checkpoint
from hpcdispatch.sim.correction import revised_end
from hpcdispatch.sim.execution import ExecutionModel
from hpcdispatch.sim.journal import DecisionJournal
from hpcdispatch.sim.options import SimulationOptions, resolve_options
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.state import LoopState
from hpcdispatch.system.allocation import per_node_array
from hpcdispatch.system.model import System
from hpcdispatch.vocabulary import CancelReason, EventKind, JobStatus
from hpcdispatch.workload.job import GrowthRequest, Job, Workload

ProgressCallback = Callable[[int, int, float], None]

_INF = math.inf

# The vocabulary as plain ints and strings for the event loop (an enum member costs more to
# compare, and a checkpoint pickles the heap): heap entries are (time, priority, sequence,
# kind, payload), the priority ordering the kinds of one instant (EventKind.heap_priority).
_END, _RESIZE, _WAKEUP = int(EventKind.END), int(EventKind.RESIZE), int(EventKind.WAKEUP)
_REVISE, _CANCEL, _PHASE, _TICK = (
    int(EventKind.REVISE),
    int(EventKind.CANCEL),
    int(EventKind.PHASE),
    int(EventKind.TICK),
)
_P_END = EventKind.END.heap_priority
_P_RESIZE = EventKind.RESIZE.heap_priority
_P_WAKEUP = EventKind.WAKEUP.heap_priority
_P_REVISE = EventKind.REVISE.heap_priority
_P_CANCEL = EventKind.CANCEL.heap_priority
_P_PHASE = EventKind.PHASE.heap_priority
_P_TICK = EventKind.TICK.heap_priority
_QUEUED, _RUNNING = int(JobStatus.QUEUED), int(JobStatus.RUNNING)
_COMPLETED, _REJECTED, _CANCELLED = (
    int(JobStatus.COMPLETED),
    int(JobStatus.REJECTED),
    int(JobStatus.CANCELLED),
)
_DEADLINE_WAITING = CancelReason.DEADLINE_WAITING.value
_DEADLINE_RUNNING = CancelReason.DEADLINE_RUNNING.value
_heappush, _heappop = heapq.heappush, heapq.heappop
_perf = _time.perf_counter


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
        keep_checkpoint: bool = False,
    ):
        """``journal``: a decision journal file (:mod:`hpcdispatch.sim.journal`); calls already
        recorded there are replayed, new ones appended, so an interrupted run resumes.

        ``checkpoint``: a checkpoint file (:mod:`hpcdispatch.sim.checkpoint`), written every
        ``checkpoint_every`` wall-clock seconds; when it exists the run continues from it
        (any dispatcher, with memory or without), and it is deleted when the run finishes --
        unless ``keep_checkpoint``: then the caller deletes it once the results are safe
        (:func:`hpcdispatch.runner.run_simulation` does, after writing them)."""
        if tuple(workload.resources) != tuple(system.resources):
            raise ConfigError(
                f"workload resources {list(workload.resources)} do not match system '{system.name}' "
                f"resources {list(system.resources)}"
            )
        refused = dispatcher.unsupported(workload)
        if refused is not None:
            raise UnsupportedJobError(dispatcher.name, refused[0].id, refused[1])
        self.system = system
        self.workload = workload
        self.dispatcher = dispatcher
        self.predictor = predictor or WallTimePredictor()
        self.options = resolve_options(dispatcher, options)
        self.journal_path = Path(journal) if journal is not None else None
        self.checkpoint = (
            None
            if checkpoint is None
            else Checkpoint(
                checkpoint,
                self.journal_run(),
                checkpoint_every,
                {"dispatcher": dispatcher.matches_identity},
            )
        )
        if self.journal_path is not None and not dispatcher.get_tags().memoryless:
            raise ConfigError(
                f"dispatcher '{dispatcher.name}' keeps state between calls: its runs cannot resume from a journal"
            )
        self.keep_checkpoint = keep_checkpoint
        #: refuse a state where jobs wait with nothing running and no event left (off for a
        #: caller that feeds the dispatcher its decisions between steps: dispatch_now)
        self.stall_check = True
        self._st: LoopState | None = None
        self._journal: DecisionJournal | None = None

    def journal_run(self) -> dict[str, Any]:
        """What identifies this run in a decision journal's (and a checkpoint's) header."""
        src = self.workload.source
        return {
            "system": self.system.name,
            "workload": {
                "kind": src.kind,
                "spec": src.spec,
                "options": src.options,
                "jobs": len(self.workload),
            },
            "dispatcher": self.dispatcher.identity(),
            "predictor": self.predictor.name,
            # a run may resume on the other engine, and across options added later
            "options": self.options.identity(),
        }

    @property
    def state(self) -> LoopState | None:
        """The loop's state (``None`` before :meth:`begin`)."""
        return self._st

    @property
    def _loop_state(self) -> LoopState:
        """The loop's state, for the event handlers (which run only after :meth:`begin`)."""
        st = self._st
        if st is None:
            raise RuntimeError("the simulation has not begun: call Simulator.begin() first")
        return st

    @property
    def _model(self) -> ExecutionModel:
        """The execution model, for the handlers of jobs with an application model (a run
        has one whenever its workload has such jobs)."""
        model = self._exec
        if model is None:
            raise RuntimeError(
                "a job with an application model, but the run has no execution model"
            )
        return model

    # ------------------------------------------------------------------------------------
    def run(self, progress: ProgressCallback | None = None) -> SimulationResult:
        """Simulate to the end (resuming from the checkpoint or the journal when they hold an
        interrupted run) and return the result."""
        # The workload's half a million job objects live through the whole run: move them out
        # of the cyclic collector's sight (full collections would traverse all of them again
        # and again as the decision log grows); cycles created during the run are still
        # collected. (A workload held as columns builds its jobs here, before the freeze.)
        self.workload.jobs  # noqa: B018
        gc.freeze()
        try:
            self.begin()
            result = self._loop(progress)
        finally:
            gc.unfreeze()
            self.close()
        result.notes = replace(
            result.notes,
            journal=None if self._journal is None else self._journal.summary(),
            checkpoint=None if self.checkpoint is None else self.checkpoint.summary(),
            engine="python",
        )
        if self.checkpoint is not None and not self.keep_checkpoint:
            self.checkpoint.remove()
        return result

    def begin(self) -> LoopState:
        """Set the run up: the state from the checkpoint when one exists, else a fresh one
        (the dispatcher and the predictor set up for it); the journal opened."""
        system, workload, opts = self.system, self.workload, self.options
        if self.checkpoint is not None and self.checkpoint.exists():
            st = self.checkpoint.load(self.dispatcher, self.predictor, system, workload)
        else:
            self.dispatcher.setup(system)
            self.predictor.reset(workload, opts.walltime_kill)
            st = LoopState.start(system, workload, opts)
        self._st = st
        if self.journal_path is not None:
            self._journal = DecisionJournal(
                self.journal_path,
                self.journal_run(),
                equivalent={"dispatcher": self.dispatcher.matches_identity},
            )
        # what the handlers read at every event, bound once
        self._jobs = workload.jobs
        self._n = len(workload)
        self._submit_l = workload.submit.tolist()
        self._wall_l = workload.wall_time.tolist()
        kill = opts.walltime_kill
        self._duration = [
            min(r, w) if kill else r for r, w in zip(workload.run_time.tolist(), self._wall_l)
        ]
        self._requests = workload.unit_requests
        self._on_events = opts.dispatch_on_events
        self._interval = opts.dispatch_interval
        self._charge = opts.charge_dispatch_time
        self._correction = opts.prediction_correction
        self._dispatch = self.dispatcher.dispatch
        self._running_added = st.view._running_added
        self._running_removed = st.view._running_removed
        self._invalidate_queue = st.view.queue._invalidate
        self._record = opts.record_decisions
        self._timed = self.predictor.timed  # a field lookup (W, R) costs less than its timer
        self._rejects = self.dispatcher.get_tags().rejects
        # earliest starts enforced, cancellations at deadlines, jobs with an application model
        self._deadlines = workload.has_deadlines or workload.has_apps
        # the execution model (jobs with an application model), or None
        self._exec: ExecutionModel | None = st.execution
        self._forks = self.dispatcher.get_tags().forks
        return st

    def close(self) -> None:
        """Release the journal (a run interrupted by its caller between :meth:`step` calls
        resumes from the journal or the checkpoint in a new :class:`Simulator`)."""
        if self._journal is not None:
            self._journal.close()

    def save_checkpoint(self, wall_s: float | None = None) -> None:
        """Write the checkpoint now (between instants); ``wall_s``: wall-clock seconds
        simulated so far, for people."""
        st = self._st
        if self.checkpoint is None or st is None:
            raise ConfigError("no checkpoint file was given, or the run has not begun")
        if wall_s is not None:
            st.wall_s = wall_s
        self.checkpoint.save(
            st,
            self.dispatcher,
            self.predictor,
            self.system,
            self.workload,
            {
                "t": st.t,
                "done": st.done,
                "jobs": self._n,
                "queued": len(st.queue),
                "calls": st.calls,
                "wall_s": st.wall_s,
            },
        )

    def _loop(self, progress: ProgressCallback | None) -> SimulationResult:
        st = self._loop_state
        checkpoint, n, step = self.checkpoint, self._n, self.step
        last_report = began = last_checkpoint = _perf()
        earlier_wall = st.wall_s
        while step():
            if progress is not None:
                now_wall = _perf()
                if now_wall - last_report > 0.2:
                    progress(st.done, n, st.t)
                    last_report = now_wall
            if checkpoint is not None and _perf() - last_checkpoint >= checkpoint.every:
                self.save_checkpoint(earlier_wall + _perf() - began)
                last_checkpoint = _perf()
        if progress is not None:
            progress(st.done, n, st.t if st.t != _INF else 0.0)
        result = st.result(
            self.system, self.workload, self.dispatcher, self.predictor, self.options
        )
        if self.options.prediction_correction is not None:
            result.notes = replace(
                result.notes,
                prediction_correction=self.options.prediction_correction,
                prediction_revisions=st.revisions,
            )
        return result

    # ---- one instant -------------------------------------------------------------------
    def step(self) -> bool:
        """Process the next instant (every event at the earliest pending time, then at most
        one dispatcher call); ``False`` when no event is left."""
        st = self._loop_state
        heap = st.heap
        si = st.next_submit
        n = self._n
        t_heap = heap[0][0] if heap else _INF
        t_sub = self._submit_l[si] if si < n else _INF
        t = t_heap if t_heap < t_sub else t_sub
        if t == _INF:
            return False
        st.t = t
        happened = woken = False
        if t_heap == t and heap[0][1] == _P_END:
            self._end_jobs(t)
            happened = True
        if t_sub == t:
            self._submit_jobs(t)
            happened = True
        if heap and heap[0][0] == t:
            happened, woken = self._timed_events(t, happened)
        queue = st.queue
        if not queue:
            return True
        if (happened and self._on_events) or woken:
            self._call_dispatcher(t)
        interval = self._interval
        if interval is not None and queue and not st.tick_pending:
            _heappush(
                heap, ((math.floor(t / interval) + 1) * interval, _P_TICK, st.next_seq, _TICK, None)
            )
            st.next_seq += 1
            st.tick_pending = True
        if queue and not heap and st.next_submit >= n and self.stall_check:
            raise SimulationStalledError(
                f"dispatcher '{self.dispatcher.name}' left {len(st.queue)} job(s) queued at t={t:g} with nothing "
                f"running and no more events (first waiting job: {next(iter(st.queue.values())).id})"
            )
        return True

    def dispatch_now(self) -> None:
        """Call the dispatcher once more at the current instant (between :meth:`step` calls,
        with jobs queued) and apply its decision: for a caller that feeds the dispatcher its
        decisions one at a time (:mod:`hpcdispatch.rl`'s environment)."""
        st = self._st
        if st is None or st.t == _INF:
            raise ConfigError("the run has not begun, or it has ended")
        if st.queue:
            self._call_dispatcher(st.t)

    def _end_jobs(self, t: float) -> None:
        """The jobs that end at ``t`` give their nodes back; the predictor learns their run time."""
        st = self._loop_state
        heap = st.heap
        running = st.running
        held = st.held
        jobs = self._jobs
        give = st.cluster.give
        removed = self._running_removed
        learn = self.predictor.learn
        timed = self._timed
        ended_jobs = st.ended_jobs
        ended_running = st.ended_running
        apps = st.apps
        ended = 0
        spent = 0.0
        while heap and heap[0][0] == t and heap[0][1] == _P_END:
            idx = _heappop(heap)[4]
            rj = running.pop(idx, None)
            if rj is None:  # cancelled at its deadline before this end
                continue
            removed(rj)
            for nodes, amounts in held.pop(idx):
                give(nodes, amounts)
            if apps:
                run = apps.pop(idx, None)
                if run is not None:
                    self._model.end_phase(run)
            st.end_at[idx] = t
            st.status[idx] = _COMPLETED
            job = jobs[idx]
            if timed:
                t0 = _perf()
                learn(job, t - rj.start, t)
                spent += _perf() - t0
            else:
                learn(job, t - rj.start, t)
            ended_jobs.append(job)
            ended_running.append(rj)
            ended += 1
        st.done += ended
        if spent:
            st.predict_time_s += spent

    def _submit_jobs(self, t: float) -> None:
        """The jobs submitted at ``t`` get their planned duration and are offered to the dispatcher."""
        st = self._loop_state
        jobs = self._jobs
        submit_l = self._submit_l
        n = self._n
        timed = self._timed
        planned = st.planned
        planned_np = st.planned_np
        queue = st.queue
        status = st.status
        view = st.view
        predict = self.predictor.predict
        admit = self.dispatcher.admit
        rejects = self._rejects
        deadlines = self._deadlines
        si = st.next_submit
        spent = 0.0
        while si < n and submit_l[si] == t:
            job = jobs[si]
            si += 1
            if timed:
                t0 = _perf()
                p_dur = float(predict(job, t))
                spent += _perf() - t0
            else:
                p_dur = float(predict(job, t))
            planned[job.index] = p_dur
            planned_np[job.index] = p_dur
            view.now = t
            answer = admit(job, view)
            if answer.accept:
                queue[job.index] = job
                status[job.index] = _QUEUED
                st.new_jobs.append(job)
                if deadlines and job.deadline is not None:
                    _heappush(
                        st.heap, (float(job.deadline), _P_CANCEL, st.next_seq, _CANCEL, job.index)
                    )
                    st.next_seq += 1
            else:
                if not rejects:
                    raise InvalidDecisionError(
                        self.dispatcher.name,
                        job.id,
                        t,
                        "rejected at submission, but its tags say it never rejects (Tags.rejects)",
                    )
                if not answer.reason:
                    raise InvalidDecisionError(
                        self.dispatcher.name, job.id, t, "rejected without a reason"
                    )
                status[job.index] = _REJECTED
                st.reject_reason[job.index] = answer.reason
                st.done += 1
        st.next_submit = si
        if spent:
            st.predict_time_s += spent

    def _timed_events(self, t: float, happened: bool) -> tuple[bool, bool]:
        """Resize requests, expired predictions, wake-ups and ticks at ``t``; returns whether
        anything happened (so far this instant) and whether the dispatcher was woken up."""
        st = self._loop_state
        heap, running = st.heap, st.running
        woken = False
        while heap and heap[0][0] == t:
            _, _prio, _, kind, payload = _heappop(heap)
            if kind == _REVISE:
                idx, count = payload
                rj = running.get(idx)
                if rj is not None and rj.planned_end <= t:
                    correction = self._correction
                    assert correction is not None, "REVISE events are pushed only with a correction"
                    new_end = revised_end(correction, t, rj.start, self._wall_l[idx], count)
                    new_rj = rj._replace(planned_end=new_end)
                    running[idx] = new_rj
                    self._running_removed(rj)
                    self._running_added(new_rj)
                    st.revised[idx] = None
                    st.revisions += 1
                    if new_end < rj.start + self._duration[idx]:  # still before its real end
                        _heappush(
                            heap, (new_end, _P_REVISE, st.next_seq, _REVISE, (idx, count + 1))
                        )
                        st.next_seq += 1
                    happened = True
            elif kind == _RESIZE:
                idx, request = payload
                if idx in running:
                    granted = self._resize(idx, request, t)
                    st.resize_log.append((t, self._jobs[idx].id, request.units, granted))
                    happened = True
            elif kind == _WAKEUP:
                st.wakeup_pending.discard(t)
                woken = True
            elif kind == _PHASE:
                idx, k = payload
                run = st.apps.get(idx)
                if run is not None and idx in running:
                    self._model.end_phase(run)
                    self._next_phase(idx, run, k, t)
                    happened = True
            elif kind == _CANCEL:
                happened = self._cancel(payload, t) or happened
            else:  # an interval tick
                st.tick_pending = False
                woken = True
        return happened, woken

    def _cancel(self, idx: int, t: float) -> bool:
        """Job ``idx`` reaches its deadline at ``t``: still waiting, it leaves the queue; still
        running (it did not end at or before its deadline: ends come first at an instant), it
        is stopped and gives its nodes back. Either way its status is ``cancelled`` with a
        reason, its end time is ``t``; ``False`` when it had already ended or been cancelled."""
        st = self._loop_state
        if idx in st.queue:
            del st.queue[idx]
            st.cancel_reason[idx] = _DEADLINE_WAITING
        elif idx in st.running:
            self._stop(idx, t, _DEADLINE_RUNNING)
            return True
        else:
            return False
        st.status[idx] = _CANCELLED
        st.end_at[idx] = t
        st.done += 1
        return True

    def _stop(self, idx: int, t: float, reason: str) -> None:
        """Cancel the running job ``idx`` at ``t``: its nodes back, status ``cancelled``."""
        st = self._loop_state
        rj = st.running.pop(idx)
        self._running_removed(rj)
        for nodes, amounts in st.held.pop(idx):
            st.cluster.give(nodes, amounts)
        run = st.apps.pop(idx, None)
        if run is not None:
            self._model.end_phase(run)
        st.ended_jobs.append(rj.job)
        st.ended_running.append(rj)
        st.cancel_reason[idx] = reason
        st.status[idx] = _CANCELLED
        st.end_at[idx] = t
        st.done += 1

    def _call_dispatcher(self, t: float) -> None:
        """One dispatcher call at ``t`` (or its journalled record), and its starts applied."""
        st = self._loop_state
        if t < st.busy_until:  # still deciding (charged dispatch time): called again when done
            self._push_wakeup(st.busy_until)
            return
        queue = st.queue
        running = st.running
        view = st.view
        journal = self._journal
        new_jobs = st.new_jobs
        ended_jobs = st.ended_jobs
        ended_running = st.ended_running
        revised = st.revised
        calls = st.calls
        view.now = t
        view.new_jobs = tuple(new_jobs)
        view.ended_jobs = tuple(ended_jobs)
        view.ended_running = tuple(ended_running)
        # current records: a job revised, then grown or ended since, is listed as it is now
        view.revised_running = tuple(running[i] for i in revised if i in running) if revised else ()
        self._invalidate_queue()
        queue_before = len(queue)
        running_before = len(running)
        if journal is not None and journal.has(calls):
            decision, elapsed = journal.replay(calls, t, queue, self._jobs)
        else:
            t0 = _perf()
            decision = self._dispatch(view)
            elapsed = _perf() - t0
            if journal is not None:  # the queue is still the one the dispatcher saw
                journal.append(calls, t, queue, decision, elapsed)
        st.calls = calls + 1
        new_jobs.clear()
        ended_jobs.clear()
        ended_running.clear()
        revised.clear()
        begin = t
        if self._charge:
            begin = st.busy_until = t + elapsed
        if decision.cancels:
            self._apply_cancels(t, decision.cancels)
        starts = decision.starts
        if starts:
            self._start_jobs(t, begin, starts)
        if decision.wakeup is not None:
            if decision.wakeup <= t:
                raise InvalidDecisionError(
                    self.dispatcher.name, None, t, f"wakeup {decision.wakeup} is not in the future"
                )
            self._push_wakeup(float(decision.wakeup))
        elif (
            self._interval is not None
            and not starts
            and not running
            and st.next_submit >= self._n
            and not st.wakeup_pending
            and queue
        ):
            # only interval ticks are left and the state cannot change any more
            raise SimulationStalledError(
                f"dispatcher '{self.dispatcher.name}' left {len(queue)} job(s) queued at t={t:g} with nothing running, "
                f"no more submissions and no wake-up requested (first waiting job: "
                f"{next(iter(queue.values())).id})"
            )
        if self._record:
            log = st.decisions
            log.time.append(t)
            log.queue_length.append(queue_before)
            log.running.append(running_before)
            log.started.append(len(starts))
            log.elapsed.append(elapsed)
            log.info.append(decision.info)

    def _start_jobs(self, t: float, begin: float, starts: list) -> None:
        """Verify every start of a decision made at ``t`` and apply it (the jobs start at
        ``begin``: ``t``, or later by the charged dispatch time)."""
        st = self._loop_state
        queue = st.queue
        running = st.running
        held = st.held
        heap = st.heap
        status = st.status
        start_at = st.start_at
        planned = st.planned
        duration = self._duration
        requests = self._requests
        take_checked = st.cluster.take_checked
        added = self._running_added
        segments = st.segments
        correction = self._correction
        deadlines = self._deadlines
        app_starts: list[int] | None = (
            None  # deadline jobs started: their first phase after the loop
        )
        seq = st.next_seq
        for start in starts:
            job = start.job
            idx = job.index
            if idx not in queue:
                why = "it is not queued" if status[idx] != _RUNNING else "it is already running"
                raise InvalidDecisionError(
                    self.dispatcher.name, job.id, t, f"cannot start it: {why}"
                )
            alloc = start.allocation
            if not isinstance(alloc, Allocation):
                raise InvalidDecisionError(
                    self.dispatcher.name,
                    job.id,
                    t,
                    f"allocation must be an Allocation, got {type(alloc).__name__}",
                )
            if deadlines:
                self._check_deadline_start(job, alloc, t, begin)
                if job.app is not None and self._exec is not None:
                    self._start_app(job, alloc, t, begin)
                    if app_starts is None:
                        app_starts = []
                    app_starts.append(idx)
                    continue
            if job.node_count or job.contiguous or job.per_node_request:
                amounts = take_checked(
                    alloc,
                    requests[idx],
                    job.units,
                    job.max_units_per_node,
                    job.node_count,
                    per_node_array(job.per_node_request),
                    job.contiguous,
                )
            else:
                amounts = take_checked(alloc, requests[idx], job.units, job.max_units_per_node)
            if isinstance(amounts, str):
                raise InvalidDecisionError(self.dispatcher.name, job.id, t, amounts)
            del queue[idx]
            status[idx] = _RUNNING
            start_at[idx] = begin
            end_t = begin + duration[idx]
            rj = RunningJob(job, begin, alloc, begin + planned[idx])
            running[idx] = rj
            held[idx] = [(alloc.nodes, amounts)]
            added(rj)
            segments.start(idx, begin, alloc)
            _heappush(heap, (end_t, _P_END, seq, _END, idx))
            seq += 1
            if correction is not None and end_t > rj.planned_end:
                # (a prediction <= 0 from a custom predictor: revised at the start)
                _heappush(heap, (max(rj.planned_end, begin), _P_REVISE, seq, _REVISE, (idx, 0)))
                seq += 1
            if job.growth:
                for request in job.growth:
                    at = begin + request.after
                    if at < end_t:
                        _heappush(heap, (at, _P_RESIZE, seq, _RESIZE, (idx, request)))
                        seq += 1
        st.next_seq = seq
        if app_starts is not None:
            for idx in app_starts:
                if idx in running:
                    self._next_phase(idx, st.apps[idx], 0, begin)

    # ---- jobs with an application model (sim/execution.py) --------------------------------
    def _start_app(self, job, alloc: Allocation, t: float, begin: float) -> None:
        """Start a job with an application model on whole nodes: between one node and the
        nodes its request names (a forking dispatcher may start it on fewer: the leak's
        partial start). Its first phase begins once all starts of the decision are applied
        (its forks must not take nodes another start of the same decision was given)."""
        st = self._loop_state
        idx = job.index
        name = self.dispatcher.name
        m = len(alloc.nodes)
        if not 1 <= m <= job.units or (m != job.units and not self._forks):
            want = f"1 to {job.units}" if self._forks else f"exactly {job.units}"
            raise InvalidDecisionError(
                name, job.id, t, f"a deadline job starts on {want} whole node(s), got {m}"
            )
        amounts = st.cluster.take_checked(alloc, self._requests[idx], m, 1)
        if isinstance(amounts, str):
            raise InvalidDecisionError(name, job.id, t, amounts)
        del st.queue[idx]
        st.status[idx] = _RUNNING
        st.start_at[idx] = begin
        rj = RunningJob(job, begin, alloc, begin + st.planned[idx])
        st.running[idx] = rj
        st.held[idx] = [(alloc.nodes, amounts)]
        self._running_added(rj)
        st.segments.start(idx, begin, alloc)
        st.apps[idx] = self._model.start(job, alloc.nodes.tolist())

    def _next_phase(self, idx: int, run, k: int, t: float) -> None:
        """Phase ``k`` of a running app job begins at ``t``: its children placed (forks asked
        of a forking dispatcher), nodes left without a process given back (forking
        dispatchers, from the second phase on: a join), the phase's end pushed."""
        model = self._model
        forks = self._forks
        ask = (lambda parent: self._fork(idx, parent, t)) if forks else None
        model.place_phase(run, k, forks, ask)
        if forks and k > 0:
            idle = model.idle_nodes(run)
            if idle:
                self._release(idx, idle, t)
                gone = set(idle)
                run.nodes = [v for v in run.nodes if v not in gone]
        end = t + model.begin_phase(run, k)
        st = self._loop_state
        if k + 1 < run.program.phases:
            _heappush(st.heap, (end, _P_PHASE, st.next_seq, _PHASE, (idx, k + 1)))
        else:
            _heappush(st.heap, (end, _P_END, st.next_seq, _END, idx))
        st.next_seq += 1

    def _regrant(self, idx: int, rj: RunningJob, nodes: np.ndarray) -> None:
        """The running record of an app job now on ``nodes`` (one unit each)."""
        new = rj._replace(allocation=Allocation.trusted(nodes, np.ones(len(nodes), dtype=np.int64)))
        self._loop_state.running[idx] = new
        self._running_removed(rj)
        self._running_added(new)

    def _fork(self, idx: int, parent: int, t: float) -> int | None:
        """A child of a process on ``parent`` finds no free core: the dispatcher grants one
        whole free node (verified) or refuses."""
        st = self._loop_state
        rj = st.running[idx]
        job = rj.job
        view = st.view
        view.now = t
        alloc = self.dispatcher.on_resize(rj, ForkRequest(parent), view)
        if alloc is None:
            st.resize_log.append((t, job.id, 1, False))
            return None
        name = self.dispatcher.name
        if not isinstance(alloc, Allocation) or len(alloc.nodes) != 1:
            raise InvalidDecisionError(
                name, job.id, t, "a fork grant must be an Allocation of exactly one node"
            )
        node = int(alloc.nodes[0])
        if node in rj.allocation.nodes:
            raise InvalidDecisionError(
                name, job.id, t, f"fork grant: node {node} is already the job's"
            )
        cluster = st.cluster
        if 0 <= node < cluster.n_nodes and not (cluster.free[node] == cluster.capacity[node]).all():
            raise InvalidDecisionError(
                name, job.id, t, f"fork grant: node {node} is not a whole free node"
            )
        amounts = cluster.take_checked(alloc, self._requests[idx], 1, 1)
        if isinstance(amounts, str):
            raise InvalidDecisionError(name, job.id, t, f"fork grant: {amounts}")
        st.held[idx].append((alloc.nodes, amounts))
        st.segments.grow(idx, t, alloc)
        self._regrant(idx, rj, np.union1d(rj.allocation.nodes, alloc.nodes))
        st.resize_log.append((t, job.id, 1, True))
        return node

    def _release(self, idx: int, nodes: list[int], t: float) -> None:
        """Job ``idx`` gives ``nodes`` back at ``t`` (a join left no process on them)."""
        st = self._loop_state
        gone = np.asarray(sorted(nodes), dtype=np.int64)
        kept = []
        for seg_nodes, amounts in st.held[idx]:
            out = np.isin(seg_nodes, gone)
            if out.any():
                st.cluster.give(seg_nodes[out], amounts[out])
                if not out.all():
                    kept.append((seg_nodes[~out], amounts[~out]))
            else:
                kept.append((seg_nodes, amounts))
        st.held[idx] = kept
        for v in gone.tolist():
            st.segments.release(idx, v, t)
        rj = st.running[idx]
        self._regrant(idx, rj, np.setdiff1d(rj.allocation.nodes, gone))

    def _apply_cancels(self, t: float, cancels: Sequence[tuple[Job, str]]) -> None:
        """The dispatcher stops running jobs (``Decision.cancels``), verified."""
        for job, reason in cancels:
            idx = job.index
            if idx not in self._loop_state.running:
                raise InvalidDecisionError(
                    self.dispatcher.name, job.id, t, "cannot cancel it: it is not running"
                )
            if not reason:
                raise InvalidDecisionError(
                    self.dispatcher.name, job.id, t, "cancelled without a reason"
                )
            self._stop(idx, t, str(reason))

    def _check_deadline_start(self, job, alloc: Allocation, t: float, begin: float) -> None:
        """A start in a deadline workload: never before the job's earliest start; a job with
        an application model (a deadline job) gets whole nodes nobody else uses."""
        if begin < job.ready_at:
            raise InvalidDecisionError(
                self.dispatcher.name,
                job.id,
                t,
                f"starts at {begin:g}, before its earliest start {job.ready_at:g}",
            )
        if job.app is not None:
            cluster = self._loop_state.cluster
            nodes = alloc.nodes
            if not (cluster.free[nodes] == cluster.capacity[nodes]).all():
                raise InvalidDecisionError(
                    self.dispatcher.name,
                    job.id,
                    t,
                    "a deadline job needs whole nodes: a node of its allocation is in use",
                )

    def _push_wakeup(self, at: float) -> None:
        st = self._loop_state
        if at not in st.wakeup_pending:
            st.wakeup_pending.add(at)
            _heappush(st.heap, (at, _P_WAKEUP, st.next_seq, _WAKEUP, None))
            st.next_seq += 1

    def _resize(self, idx: int, request: GrowthRequest, t: float) -> bool:
        """A running job asks for more units: the dispatcher grants an allocation (verified,
        applied as a new segment) or refuses."""
        st = self._loop_state
        rj = st.running[idx]
        view = st.view
        view.now = t
        alloc = self.dispatcher.on_resize(rj, request, view)
        if alloc is None:
            return False
        job = rj.job
        name = self.dispatcher.name
        if not isinstance(alloc, Allocation):
            raise InvalidDecisionError(name, job.id, t, "resize grant must be an Allocation")
        if job.constrained:
            raise InvalidDecisionError(
                name,
                job.id,
                t,
                "resize of a job with node constraints (node count, per-node "
                "extras, contiguity) is not supported",
            )
        merged: dict[int, int] = dict(rj.allocation.pairs())
        for node, units in alloc.pairs():
            merged[node] = merged.get(node, 0) + units
        if job.max_units_per_node > 0 and max(merged.values()) > job.max_units_per_node:
            raise InvalidDecisionError(
                name,
                job.id,
                t,
                f"resize grant puts more than {job.max_units_per_node} unit(s) on a node",
            )
        amounts = st.cluster.take_checked(alloc, self._requests[idx], request.units, 0)
        if isinstance(amounts, str):
            raise InvalidDecisionError(name, job.id, t, f"resize grant: {amounts}")
        st.held[idx].append((alloc.nodes, amounts))
        st.segments.grow(idx, t, alloc)
        grown = RunningJob(
            job, rj.start, Allocation.from_pairs(sorted(merged.items())), rj.planned_end
        )
        st.running[idx] = grown
        view._running_removed(rj)
        view._running_added(grown)
        return True
