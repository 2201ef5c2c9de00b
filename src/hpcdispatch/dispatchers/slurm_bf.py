"""SLURM/BF: Slurm's main scheduler plus its backfill plugin (sched/backfill), as documented.

- **Main scheduler**, at every event: jobs in priority order (``priority``,
  :mod:`hpcdispatch.dispatchers.slurm_priority`) start while they fit, up to the first that
  does not;
- **backfill pass**, every ``bf_interval`` s: the first ``bf_max_job_test`` pending jobs in
  priority order each get the earliest start within ``bf_window`` minutes at which Slurm's node
  selection (:mod:`hpcdispatch.allocators.slurm_linear`) succeeds; a job that can start now
  starts, the others reserve their nodes (the plan is rebuilt at every pass); ``will_run``
  chooses the start estimate (``exact``, or Slurm 22.05's own: ``slurm``);
- a job Slurm's selection cannot place even on the empty machine is rejected at submission.

Parameters have Slurm's units and names (``slurm.conf(5)``, ``SchedulerParameters``), and a
``SchedulerParameters=`` line is accepted as it is::

    -d "slurm-bf:scheduler_parameters=bf_window=2880,bf_resolution=600,bf_continue"

Slurm options this model does not have are accepted, ignored and recorded in ``unmodelled``.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

import bisect
import math
from typing import ClassVar

import numpy as np

from hpcdispatch.allocators.slurm_linear import SlurmLinear, slurm_select
from hpcdispatch.dispatchers.slurm_priority import PRIORITY_CONSTRAINTS, SlurmPriority
from hpcdispatch.protocol import (
    ACCEPT,
    Admission,
    Allocation,
    Boolean,
    Decision,
    Dispatcher,
    DispatchView,
    Interval,
    OneOf,
    ParamConstraint,
    Scratch,
    Tags,
    Text,
    register,
)
from hpcdispatch.system.allocation import held_amounts, node_units, per_node_array
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


def slurm_allocate(
    job: Job, unit_request: np.ndarray, free: np.ndarray, cons_res_sets: bool = False, core: int = 0
) -> Allocation | None:
    """Slurm's node selection for ``job`` on ``free`` (all of the job's constraints);
    ``cons_res_sets``: compare node sets by free CPUs (column ``core``), Slurm's test taken
    literally (:func:`hpcdispatch.allocators.slurm_linear.slurm_select`)."""
    avail = node_units(
        free, unit_request, job.max_units_per_node, per_node_array(job.per_node_request)
    )
    return slurm_select(
        avail, job.units, job.exact_nodes, job.contiguous, free[:, core] if cons_res_sets else None
    )


def total_need(job: Job, unit_request: np.ndarray) -> np.ndarray:
    """Smallest total amounts the job holds (units, plus per-node extras on its fewest nodes)."""
    need = unit_request * job.units
    if job.per_node_request:
        need = need + np.asarray(job.per_node_request, dtype=np.int64) * max(job.exact_nodes, 1)
    return need


class _Plan:
    """Slurm's backfill node-space map: per time segment, the free capacity of every node
    (running jobs release at their rounded expected ends) and the nodes reserved for pending
    jobs. Segment ``k`` covers ``[times[k], times[k+1])``; the last one extends forever.
    Arrays are over-allocated and grown by doubling; a new boundary shifts the tail."""

    def __init__(
        self,
        now: float,
        free: np.ndarray,
        releases: list[tuple[float, np.ndarray, np.ndarray]],
        resolution: float,
    ):
        self.resolution = resolution
        self.now = now
        ends = sorted({self.round_up(t) for t, _, _ in releases} - {now})
        self.times: list[float] = [now] + ends
        n_seg = len(self.times)
        cap = max(16, 2 * n_seg)
        n_nodes, n_res = free.shape
        self._free = np.zeros((cap, n_nodes, n_res), dtype=np.int64)
        self._blocked = np.zeros((cap, n_nodes), dtype=bool)
        self._usable = np.zeros((cap, n_res), dtype=np.int64)
        deltas = np.zeros((n_seg, n_nodes, n_res), dtype=np.int64)
        deltas[0] = free
        for t, nodes, amounts in releases:
            deltas[bisect.bisect_left(self.times, self.round_up(t)), nodes] += amounts
        np.cumsum(deltas, axis=0, out=self._free[:n_seg])
        self._usable[:n_seg] = self._free[:n_seg].sum(axis=1)  # free capacity on unreserved nodes
        self.n = n_seg

    @property
    def free(self) -> np.ndarray:
        return self._free[: self.n]

    @property
    def blocked(self) -> np.ndarray:
        return self._blocked[: self.n]

    @property
    def usable_total(self) -> np.ndarray:
        return self._usable[: self.n]

    def round_up(self, t: float) -> float:
        r = self.resolution
        if t <= self.now:
            t = self.now + 1.0
        return float(math.ceil(t / r) * r) if r > 0 else float(t)

    def split(self, t: float) -> int:
        """Make ``t`` a boundary; the index of the segment starting at ``t``."""
        k = bisect.bisect_left(self.times, t)
        if k < self.n and self.times[k] == t:
            return k
        if self.n + 1 > len(self._free):
            for name in ("_free", "_blocked", "_usable"):
                old = getattr(self, name)
                grown = np.zeros((2 * len(old),) + old.shape[1:], dtype=old.dtype)
                grown[: self.n] = old[: self.n]
                setattr(self, name, grown)
        n = self.n
        self.times.insert(k, t)
        for arr in (self._free, self._blocked, self._usable):
            if k < n:
                arr[k + 1 : n + 1] = arr[k:n]
            arr[k] = arr[k - 1]
        self.n = n + 1
        return k

    def end_index(self, t_end: float) -> int:
        """Segments ``k .. j-1`` cover ``[times[k], t_end)``: returns ``j``."""
        return max(bisect.bisect_left(self.times, t_end), 1)

    def window_free(self, k: int, j: int) -> np.ndarray:
        """Free capacity usable during segments ``k .. j-1``: the minimum over them, with
        nodes reserved in any of them removed."""
        if j == k + 1:
            w, blocked = self._free[k], self._blocked[k]
        else:
            w, blocked = self._free[k:j].min(axis=0), self._blocked[k:j].any(axis=0)
        if blocked.any():
            w = w.copy()
            w[blocked] = 0
        return w

    def take(self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray) -> None:
        """A job started by the backfill holds ``amounts`` on ``nodes`` until ``end``."""
        j = self.split(self.round_up(end))
        self._free[0:j, nodes] -= amounts
        unblocked = ~self._blocked[0:j][:, nodes]  # (segments, nodes)
        self._usable[0:j] -= np.einsum("sn,nr->sr", unblocked.astype(np.int64), amounts)

    def reserve(self, start: float, end: float, nodes: np.ndarray) -> None:
        """Reserve whole ``nodes`` for a pending job during ``[start, end)``."""
        k = self.split(start)
        j = self.split(self.round_up(end))
        newly = ~self._blocked[k:j][:, nodes]
        self._usable[k:j] -= (newly[:, :, None] * self._free[k:j][:, nodes]).sum(axis=1)
        self._blocked[k:j, nodes] = True


#: SchedulerParameters the model has: name -> (parameter, Slurm's minimum, maximum)
MODELLED_SCHEDULER_PARAMETERS = {
    "bf_interval": (1, 10800),
    "bf_window": (1, 43200),
    "bf_resolution": (0, 3600),
    "bf_max_job_test": (1, 1_000_000),
    "bf_window_linear": (0, 43200),
}
SCHEDULER_PARAMETER_UNITS = {
    "bf_interval": "seconds",
    "bf_window": "minutes",
    "bf_resolution": "seconds",
    "bf_window_linear": "seconds",
}
#: the will-run test's first time window (s); its batches of running jobs are aligned on
#: multiples of it on the wall clock (``slurm.conf(5)``, ``bf_window_linear``)
WILL_RUN_FIRST_WINDOW = 30.0
#: Slurm's cap on the running jobs removed in one step of the will-run test
WILL_RUN_MAX_BATCH = 200
WILL_RUN_MODES = ("slurm", "exact")
#: real Slurm SchedulerParameters (slurm.conf(5)) this model does not have: accepted, ignored,
#: recorded in ``unmodelled``
UNMODELLED_SCHEDULER_PARAMETERS = frozenset(
    """
    allow_zero_lic assoc_limit_stop batch_sched_delay bb_array_stage_cnt bf_busy_nodes bf_continue
    bf_hetjob_immediate bf_hetjob_prio bf_ignore_newly_avail_nodes bf_job_part_count_reserve
    bf_licenses bf_max_job_array_resv bf_max_job_assoc bf_max_job_part bf_max_job_start
    bf_max_job_user bf_max_job_user_part bf_max_time bf_min_age_reserve bf_min_prio_reserve
    bf_node_space_size bf_one_resv_per_job bf_running_job_reserve bf_yield_interval bf_yield_sleep
    build_queue_timeout correspond_after_task_cnt default_queue_depth defer defer_batch
    delay_boot disable_job_shrink disable_hetjob_steps enable_hetjob_steps enable_user_top
    extra_constraints ignore_numa ignore_prefer_validation inventory_interval
    max_array_tasks max_rpc_cnt max_sched_time max_script_size max_submit_line_size
    max_switch_wait no_backup_scheduling no_env_cache nohold_on_prolog_fail pack_serial_at_end
    partition_job_depth preempt_reorder_count preempt_strict_order preempt_youngest_first
    reduce_completing_frag requeue_setup_env_fail salloc_wait_nodes sbatch_wait_nodes
    sched_interval sched_max_job_start sched_min_interval spec_cores_first step_retry_count
    step_retry_time time_min_as_soft_limit whole_hetjob kill_invalid_depend max_depend_depth
    bf_allow_magnetic_slot bf_topopt_enable bf_topopt_iterations
""".split()
)


def parse_scheduler_parameters(text: str) -> tuple[dict[str, int], list[str]]:
    """``(modelled parameters, unmodelled items as written)`` of a slurm.conf
    ``SchedulerParameters`` value (``SchedulerParameters=`` in front is allowed); a name that
    is not a Slurm scheduler parameter, or a bad value, is a :class:`ConfigError` naming it."""
    from hpcdispatch.errors import ConfigError

    body = text.strip().strip("\"'")
    if body.lower().startswith("schedulerparameters="):
        body = body.split("=", 1)[1]
    modelled: dict[str, int] = {}
    unmodelled: list[str] = []
    for item in filter(None, (x.strip() for x in body.split(","))):
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        if name in MODELLED_SCHEDULER_PARAMETERS:
            lo, hi = MODELLED_SCHEDULER_PARAMETERS[name]
            try:
                number = int(value.strip())
            except ValueError:
                raise ConfigError(
                    f"SchedulerParameters: {name} needs an integer, got '{item}'"
                ) from None
            if not lo <= number <= hi:
                raise ConfigError(
                    f"SchedulerParameters: {name}={number} is outside Slurm's range {lo}-{hi}"
                )
            if name in modelled:
                raise ConfigError(f"SchedulerParameters: {name} is given twice")
            modelled[name] = number
        elif name in UNMODELLED_SCHEDULER_PARAMETERS:
            unmodelled.append(item)
        else:
            raise ConfigError(
                f"SchedulerParameters: unknown parameter '{name}' (slurm-bf models "
                f"{', '.join(MODELLED_SCHEDULER_PARAMETERS)}; other slurm.conf scheduler "
                "parameters are accepted and ignored)"
            )
    return modelled, unmodelled


def _expected_releases(
    view: DispatchView, scratch: Scratch
) -> tuple[list[tuple[float, np.ndarray, np.ndarray]], set[int]]:
    """What the backfill pass plans around: ``(expected end, nodes, amounts held)`` of every
    running job and of every job the main scheduler started in this call (for its planned
    duration, at least 1 s), and the indices of the latter."""
    requests = view.requests
    releases = [
        (
            view.expected_end(rj),
            rj.allocation.nodes,
            held_amounts(rj.allocation, requests[rj.job.index], rj.job.per_node_request),
        )
        for rj in view.running.values()
    ]
    started = set()
    for s in scratch.starts:
        started.add(s.job.index)
        releases.append(
            (
                view.now + max(view.planned_duration(s.job), 1.0),
                s.allocation.nodes,
                held_amounts(s.allocation, requests[s.job.index], s.job.per_node_request),
            )
        )
    return releases, started


@register
class SlurmBackfill(Dispatcher):
    """Slurm's main scheduler (FIFO at events) plus its backfill pass every bf_interval."""

    name = "slurm-bf"
    tags = Tags(rejects=True)  # jobs Slurm's node selection cannot place even on the empty machine
    TEXT_TAIL_KEYS = ("scheduler_parameters",)
    #: runs from before these parameters existed planned with exact earliest starts
    ADDED_PARAMS = {"will_run": "exact", "bf_window_linear": 0, "epoch": 0.0}
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,  # (and only slurm-linear models Slurm: _setup)
        # Slurm's ranges (slurm.conf(5))
        **{
            name: Interval(float, lo, hi, unit=SCHEDULER_PARAMETER_UNITS.get(name, ""))
            for name, (lo, hi) in MODELLED_SCHEDULER_PARAMETERS.items()
        },
        **PRIORITY_CONSTRAINTS,
        "cons_res_sets": Boolean(),
        "unmodelled": Text(),
        "will_run": OneOf(*WILL_RUN_MODES),
        "epoch": Interval(float, None, None, unit="seconds: the Unix time of simulated time 0"),
    }

    def __init__(
        self,
        bf_interval: int = 30,
        bf_window: int = 1440,
        bf_resolution: int = 60,
        bf_max_job_test: int = 500,
        priority: str = "basic",
        weight_age: float = 1000.0,
        weight_size: float = 1000.0,
        max_age: float = 604800.0,
        favor_small: bool = False,
        cons_res_sets: bool = False,
        allocator: str = "slurm-linear",
        unmodelled: str = "",
        will_run: str = "exact",
        bf_window_linear: int = 0,
        epoch: float = 0.0,
    ):
        self.bf_interval = bf_interval
        self.bf_window = bf_window
        self.bf_resolution = bf_resolution
        self.bf_max_job_test = bf_max_job_test
        self.priority = priority
        self.weight_age = weight_age
        self.weight_size = weight_size
        self.max_age = max_age
        self.favor_small = favor_small
        self.cons_res_sets = cons_res_sets
        self.allocator = allocator
        self.unmodelled = unmodelled
        self.will_run = will_run
        self.bf_window_linear = bf_window_linear
        self.epoch = epoch

    @classmethod
    def expand_params(cls, params: dict[str, object]) -> dict[str, object]:
        """``scheduler_parameters`` (a slurm.conf SchedulerParameters value) -> the parameters
        it sets, and the unmodelled items joined into ``unmodelled``."""
        from hpcdispatch.errors import ConfigError

        key = next(
            (k for k in params if k.lower() in ("scheduler_parameters", "schedulerparameters")),
            None,
        )
        if key is None:
            return params
        out = {k: v for k, v in params.items() if k != key}
        text = out.pop(key, params[key])
        if not isinstance(text, str):
            raise ConfigError(
                f"slurm-bf: scheduler_parameters must be text (a SchedulerParameters line), got {text!r}"
            )
        modelled, unmodelled = parse_scheduler_parameters(text)
        for name, value in modelled.items():
            if name in out and out[name] != value:
                raise ConfigError(
                    f"slurm-bf: {name} is given twice ({out[name]} and {value} in scheduler_parameters)"
                )
            out[name] = value
        if unmodelled:
            out["unmodelled"] = ",".join(
                filter(None, [str(out.get("unmodelled") or ""), *unmodelled])
            )
        return out

    def _setup(self, system: System) -> None:
        from hpcdispatch.errors import ConfigError

        if not isinstance(self._allocator, SlurmLinear):
            raise ConfigError(
                "slurm-bf: only the slurm-linear allocator models Slurm's node selection"
            )
        self._prio = SlurmPriority(
            self.priority,
            system,
            weight_age=self.weight_age,
            weight_size=self.weight_size,
            max_age=self.max_age,
            favor_small=self.favor_small,
        )
        self._core = system.resources.index("core") if "core" in system.resources else 0
        self._next_bf = -math.inf
        self._capacity = system.capacity
        self.passes = 0

    def admit(self, job: Job, view: DispatchView) -> Admission:
        req = view.requests[job.index]
        if slurm_allocate(job, req, self._capacity) is None:
            return Admission(
                False,
                "Requested node configuration is not available (Slurm's node selection "
                "cannot place the job even on the empty machine)",
            )
        return ACCEPT

    # ------------------------------------------------------------------------------------
    def _dispatch(self, view: DispatchView) -> Decision:
        now = view.now
        scratch = Scratch(view, self._allocator)
        requests = view.requests
        main_started = 0
        queue = view.queue if self._prio.fifo else self._prio.order(view.queue.as_list(), now)
        for job in queue:  # main scheduler: strict priority order, stop at the first blocked job
            if not scratch.pooled_ok(job):
                break
            alloc = slurm_allocate(
                job, requests[job.index], scratch.free, self.cons_res_sets, self._core
            )
            if alloc is None:
                break
            scratch.take(job, alloc)
            main_started += 1
        info: dict[str, object] = {"main": main_started}
        if now >= self._next_bf and len(view.queue) > main_started:
            self.passes += 1
            backfill = self._backfill_slurm if self.will_run == "slurm" else self._backfill
            tested, reserved, backfilled = backfill(view, scratch, queue)
            info.update(
                backfill_pass=self.passes, tested=tested, reserved=reserved, backfilled=backfilled
            )
            self._next_bf = (math.floor(now / self.bf_interval) + 1) * self.bf_interval
        # the next backfill pass (Slurm's backfill thread wakes up every bf_interval)
        wakeup = self._next_bf if len(view.queue) > len(scratch.starts) else None
        return Decision(scratch.starts, wakeup=wakeup, info=info)

    def _backfill(self, view: DispatchView, scratch: Scratch, queue) -> tuple[int, int, int]:
        now = view.now
        requests = view.requests
        releases, started = _expected_releases(view, scratch)
        plan = _Plan(now, np.asarray(scratch.free), releases, self.bf_resolution)
        horizon = now + self.bf_window * 60.0  # bf_window is in minutes, as in slurm.conf
        tested = reserved = backfilled = 0
        for job in self._tested_jobs(queue, started):
            tested += 1
            req = requests[job.index]
            duration = max(view.planned_duration(job), 1.0)
            need = total_need(job, req)
            times = plan.times
            # candidate starts: boundaries within bf_window whose whole run passes the pooled test
            # (a necessary condition), then Slurm's selection on the nodes free for the whole run
            bad = np.concatenate(
                ([0], np.cumsum(~(plan.usable_total >= need[None, :]).all(axis=1)))
            )
            t_arr = np.asarray(times)
            last = int(np.searchsorted(t_arr, horizon, side="right"))
            ks = np.arange(last)
            js = np.maximum(np.searchsorted(t_arr, t_arr[:last] + duration, side="left"), ks + 1)
            found = None
            for k in ks[bad[js] == bad[ks]].tolist():
                j = int(js[k])
                alloc = slurm_allocate(
                    job, req, plan.window_free(k, j), self.cons_res_sets, self._core
                )
                if alloc is not None:
                    found = (k, alloc)
                    break
            if found is None:
                continue  # no start within bf_window: no reservation for this job
            k, alloc = found
            if k == 0:
                scratch.take(job, alloc)
                plan.take(
                    now, now + duration, alloc.nodes, held_amounts(alloc, req, job.per_node_request)
                )
                backfilled += 1
            else:
                plan.reserve(times[k], times[k] + duration, alloc.nodes)
                reserved += 1
        return tested, reserved, backfilled

    # ------------------------------------------------------------------------------------
    # will_run="slurm": the backfill pass as sched/backfill and select/cons_tres run it
    # ------------------------------------------------------------------------------------
    def _tested_jobs(self, queue, started: set[int]):
        """The jobs a backfill pass tests, in queue order: those the main scheduler did not
        start in this call, at most ``bf_max_job_test`` of them (Slurm's cap)."""
        tested = 0
        for job in queue:
            if job.index in started:
                continue
            if tested >= self.bf_max_job_test:
                return
            tested += 1
            yield job

    def _backfill_slurm(self, view: DispatchView, scratch: Scratch, queue) -> tuple[int, int, int]:
        """The backfill pass with Slurm's own start-time estimate (``will_run="slurm"``).

        For each pending job in priority order (Slurm's ``_attempt_backfill``):

        1. ``start_res`` = now; the usable nodes are those no reservation holds at any time in
           ``[start_res, start_res + time limit]`` (a reservation starting exactly at the end
           counts, as Slurm's ``begin_time <= end_time``);
        2. the will-run test (:meth:`_will_run`) on the usable nodes gives a start time and
           the selected nodes;
        3. no start found, or a start later than ``later_start`` -- the first later moment
           at which a reserved node becomes usable again -- : try again from ``later_start``;
        4. a start now: the job starts; otherwise, if the selected nodes overlap a reservation
           during the job's run, try again from that start; if the start lies beyond
           ``bf_window``: no reservation; else the selected nodes are reserved from the start
           (rounded down to ``bf_resolution``) for the time limit.
        """
        now = view.now
        requests = view.requests
        n_nodes = self._capacity.shape[0]
        running, started = _expected_releases(view, scratch)
        reservations: list[tuple[float, float, np.ndarray]] = []  # (from, to, node mask)
        plan: dict[int, tuple[object, list[int]]] = {}  # job id -> ("START" | start, nodes)
        window_end = now + self.bf_window * 60.0
        res = float(self.bf_resolution)
        tested = reserved = backfilled = 0
        for job in self._tested_jobs(queue, started):
            tested += 1
            req = requests[job.index]
            duration = max(view.planned_duration(job), 1.0)
            start_res = now
            while True:
                end_time = start_res + duration
                usable = np.ones(n_nodes, dtype=bool)
                for r0, r1, mask in reservations:
                    if r1 > start_res and r0 <= end_time:
                        usable &= ~mask
                later = _later_start(reservations, start_res, window_end)
                found = self._will_run(job, req, np.asarray(scratch.free), usable, running, now)
                if found is None:
                    if later is not None:
                        start_res = later
                        continue
                    break  # cannot run within the window: no reservation
                start, alloc = found
                start = max(start, start_res)
                if start <= now:
                    scratch.take(job, alloc)
                    running.append(
                        (
                            now + duration,
                            alloc.nodes,
                            held_amounts(alloc, req, job.per_node_request),
                        )
                    )
                    plan[int(job.id)] = ("START", alloc.nodes.tolist())
                    backfilled += 1
                    break
                if later is not None and start > later:
                    start_res = later
                    continue
                if start > window_end:
                    break  # starts too far in the future to worry about
                t0, t1 = (
                    (math.floor(start / res) * res, math.floor((start + duration) / res) * res)
                    if res > 0
                    else (start, start + duration)
                )
                mask = np.zeros(n_nodes, dtype=bool)
                mask[alloc.nodes] = True
                if any(r0 < t1 and r1 > t0 and (m & mask).any() for r0, r1, m in reservations):
                    if start <= start_res:
                        break  # no progress possible (cannot happen with whole-second times)
                    start_res = (
                        start  # overlaps a reservation Slurm's select plugin does not know of
                    )
                    continue
                reservations.append((t0, t1, mask))
                plan[int(job.id)] = (start, alloc.nodes.tolist())
                reserved += 1
                break
        #: the last pass's plan, for comparing it with Slurm's backfill log (not used to decide)
        self.last_plan = plan
        return tested, reserved, backfilled

    def _will_run(
        self,
        job: Job,
        req: np.ndarray,
        free: np.ndarray,
        usable: np.ndarray,
        running: list[tuple[float, np.ndarray, np.ndarray]],
        now: float,
    ) -> tuple[float, Allocation] | None:
        """select/cons_tres's will-run test (Slurm 22.05's cons_common ``_will_run_test``):
        the job's start and nodes on the ``usable`` nodes. Can it start now? Else the running
        jobs holding a usable node are removed in order of expected end, in batches, and the
        selection is tried after each batch; the start is the expected end of the batch's last
        job. The batches: a boundary ``B`` is set once, at the first such job's end rounded up
        to the next multiple of 30 s of the wall clock (``epoch`` + simulated time; Slurm:
        "align all time windows on a time_window barrier"); a batch takes jobs while the next
        one ends no later than ``B + window``; after each batch the window (30 s at first)
        doubles, or grows by ``bf_window_linear`` seconds, until the next end is within ``B +
        window``. So the estimate is often later than the earliest possible start, and on
        other nodes (slurm.conf(5), ``bf_window_linear``: "can result in the expected start
        time of pending jobs being gradually being deferred due to lack of precision")."""
        free = np.array(free, dtype=np.int64)
        free[~usable] = 0
        alloc = slurm_allocate(job, req, free, self.cons_res_sets, self._core)
        if alloc is not None:
            return now, alloc
        ends = sorted(running, key=lambda r: r[0])
        window = WILL_RUN_FIRST_WINDOW
        boundary = None
        i = 0
        while i < len(ends):
            last = None
            removed = 0
            test = True
            while i < len(ends):
                end, nodes, amounts = ends[i]
                i += 1
                here = usable[nodes]
                if not here.any():
                    continue  # the job holds no usable node
                if boundary is None:
                    boundary = end + (window - (end + self.epoch) % window)
                last = end
                free[nodes[here]] += amounts[here]
                if i >= len(ends) or ends[i][0] > boundary + window:
                    break
                removed += 1
                if removed > WILL_RUN_MAX_BATCH:
                    test = False  # Slurm: goto timer_check, no test for this batch
                    break
            if last is None:
                break
            assert boundary is not None  # (set with ``last``)
            if test:
                while True:  # do { grow } while (the next job ends after boundary + window)
                    window = window + self.bf_window_linear if self.bf_window_linear else window * 2
                    if not (i < len(ends) and ends[i][0] > boundary + window):
                        break
                alloc = slurm_allocate(job, req, free, self.cons_res_sets, self._core)
                if alloc is not None:
                    return max(last, now), alloc
        return None


def _later_start(
    reservations: list[tuple[float, float, np.ndarray]], start_res: float, window_end: float
) -> float | None:
    """Slurm's ``later_start``: the first boundary of the reservation map after ``start_res``
    (and before the window's end) at which a node that was reserved becomes usable."""
    times = sorted(
        {t for r0, r1, _ in reservations for t in (r0, r1) if start_res < t < window_end}
    )
    if not times:
        return None

    def held(t: float) -> np.ndarray:
        mask = np.zeros_like(reservations[0][2])
        for r0, r1, m in reservations:
            if r0 <= t < r1:
                mask |= m
        return mask

    before = held(start_res)
    for t in times:
        after = held(t)
        if (before & ~after).any():
            return t
        before = after
    return None
