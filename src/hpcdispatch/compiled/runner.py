"""Builds the compiled engine's state from a simulation, runs it, and turns the arrays back
into a :class:`~hpcdispatch.sim.result.SimulationResult` (the Python engine's result for the
same run, decision for decision)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from hpcdispatch.allocators import BestFit, make_allocator
from hpcdispatch.compiled import layout as S
from hpcdispatch.compiled.aot import check_state_types, load_engine
from hpcdispatch.compiled.layout import POLICIES
from hpcdispatch.errors import ConfigError, InvalidDecisionError, SimulationStalledError
from hpcdispatch.sim.info_log import InfoLog, NumericColumn
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.segments import SegmentLog
from hpcdispatch.sim.state import DecisionLog, LoopState

if TYPE_CHECKING:
    from hpcdispatch.sim.simulator import Simulator

#: instants simulated between two progress reports
STEPS_PER_CHUNK = 50_000


def build_state(sim: Simulator) -> S.EngineState:
    system, workload, dispatcher, opts = sim.system, sim.workload, sim.dispatcher, sim.options
    spec = dispatcher.kernel()
    if spec is None or spec.policy not in POLICIES:
        raise ConfigError(f"dispatcher '{dispatcher.name}' has no compiled kernel")
    if len(spec.params) > S.F_POL - S.PARAMS:
        raise ConfigError(
            f"compiled policy '{spec.policy}': at most {S.F_POL - S.PARAMS} parameters"
        )
    allocator = make_allocator(getattr(dispatcher, "allocator", "first-fit"), system)
    n = len(workload)
    capacity = np.ascontiguousarray(system.capacity, dtype=np.int64)
    n_nodes, n_res = capacity.shape
    i64 = np.int64

    ji = np.zeros((S.N_JI, n), dtype=i64)
    ji[S.UNITS] = workload.units
    ji[S.MPN] = workload.max_units_per_node
    ji[S.QNEXT] = ji[S.QPREV] = -1
    unit_requests = np.ascontiguousarray(workload.unit_requests, dtype=i64).view()
    unit_requests.flags.writeable = False  # always read-only: one compiled signature
    shape_keys = (
        np.column_stack([unit_requests, ji[S.MPN]]) if n else np.zeros((0, n_res + 1), dtype=i64)
    )
    n_shapes, ji[S.SHAPE] = distinct_rows(shape_keys)
    jf = np.zeros((S.N_JF, n), dtype=np.float64)
    jf[S.JF_SUBMIT] = workload.submit
    run = workload.run_time.astype(np.float64)
    jf[S.JF_DURATION] = (
        np.minimum(run, workload.wall_time.astype(np.float64)) if opts.walltime_kill else run
    )
    jf[S.JF_PLANNED] = sim.predictor.predict_all(workload)
    jf[S.JF_PLANNED_END] = jf[S.JF_START] = jf[S.JF_END] = math.nan

    mat = np.broadcast_to(capacity, (3, n_nodes, n_res)).copy()
    tot = np.broadcast_to(capacity.sum(axis=0), (3, n_res)).copy()
    max_rows = max(1, int(np.minimum(workload.units, n_nodes).sum()))
    max_calls = 2 * n + 1
    regs = np.zeros(S.N_REGS, dtype=i64)
    regs[S.QHEAD] = regs[S.QTAIL] = regs[S.NEWFIRST] = -1
    regs[S.ALLOCATOR] = S.BEST_FIT if isinstance(allocator, BestFit) else S.FIRST_FIT
    regs[S.POLICY] = POLICIES[spec.policy]
    fregs = np.zeros(S.F_POL + 8 + n_res, dtype=np.float64)
    fregs[S.PARAMS : S.PARAMS + len(spec.params)] = spec.params
    weights = np.zeros(n_res, dtype=np.float64)
    if isinstance(allocator, BestFit):
        weights[:] = allocator._weights
    return S.EngineState(
        ji=ji,
        jf=jf,
        req=unit_requests,
        mat=mat,
        tot=tot,
        weights=weights,
        rows=np.zeros((2, max_rows), dtype=i64),
        dl=np.zeros((S.D_INFO + len(spec.info), max_calls), dtype=np.float64),
        regs=regs,
        fregs=fregs,
        memo=np.full((2, 2, max(1, n_shapes)), -1, dtype=i64),
    )


def distinct_rows(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """The number of distinct rows of the ``(n, k)`` integer array ``keys`` and each row's index
    among them in lexicographic order (``np.unique(keys, axis=0, return_inverse=True)``, whose
    row sort costs 0.13 s on HPC2N's 202,871 jobs: each column is numbered on its own and the
    numbers joined into one integer when they fit, 10x cheaper)."""
    n, k = keys.shape
    code = np.zeros(n, dtype=np.int64)
    span = 1
    for c in range(k):
        values, codes = np.unique(keys[:, c], return_inverse=True)
        span *= len(values)
        if span >= 2**62:  # (never for real requests: a few distinct values per column)
            distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
            return len(distinct), inverse.reshape(-1)
        code = code * len(values) + codes.reshape(-1)
    distinct, inverse = np.unique(code, return_inverse=True)
    return len(distinct), inverse.reshape(-1)


def _raise_refused(sim: Simulator, st: S.EngineState) -> None:
    regs = st.regs
    code, j, node = int(regs[S.ERROR]), int(regs[S.ERROR_JOB]), int(regs[S.ERROR_NODE])
    t = float(st.dl[S.D_TIME, regs[S.NCALL]])
    name = sim.dispatcher.name
    workload = sim.workload
    if code == S.STALLED:
        raise SimulationStalledError(
            f"dispatcher '{name}' left {int(regs[S.QLEN])} job(s) queued at t={t:g} with nothing running and "
            f"no more events (first waiting job: {int(workload.ids[j])})"
        )
    job_id = int(workload.ids[j]) if 0 <= j < len(workload) else j
    why = {
        S.NOT_QUEUED: "cannot start it: it is not queued",
        S.BAD_NODES: f"allocation names node {node}: nodes must be distinct, ascending and below {sim.system.n_nodes}",
        S.BAD_UNITS: "allocation does not place the job's units (count, or more per node than allowed)",
        S.OVER_CAPACITY: f"allocation exceeds the free capacity of node {node}",
    }.get(code, f"refused (code {code})")
    raise InvalidDecisionError(name, job_id, t, why)


def compiled_on_disk(st: S.EngineState) -> bool | None:
    """Whether numba's engine is on disk, compiled for ``st``'s types on this CPU and numba
    version (``None``: cannot tell). It is after an installation (``install_time``); without it
    the first run compiles it (about 20 s)."""
    from numba import typeof, types

    from hpcdispatch.compiled.disk_cache import has_compiled
    from hpcdispatch.compiled.kernels import run_steps

    return has_compiled(run_steps, (typeof(st), types.int64))


def engine_loop(st: S.EngineState) -> Callable[[S.EngineState, int], int]:
    """The event loop :func:`run_compiled` calls: the ahead-of-time engine an installation built
    (:mod:`hpcdispatch.compiled.aot`; numba is not imported), else numba's, loaded from its
    disk cache or compiled now (which is said: about 20 s)."""
    ahead = load_engine()
    if ahead is not None:
        check_state_types(st, S.example_state(st.req.shape[1]))
        return ahead.run_steps  # type: ignore[no-any-return]
    from numba import typeof, types

    from hpcdispatch.compiled.disk_cache import load_compiled, load_numba_registries
    from hpcdispatch.compiled.kernels import run_steps

    if not run_steps.signatures and not load_compiled(run_steps, (typeof(st), types.int64)):
        load_numba_registries()  # numba compiles it, or loads it on the first call (no EngineCache)
    if not run_steps.signatures and compiled_on_disk(st) is False:
        logging.getLogger("hpcdispatch").warning(
            "compiling the simulation engine (once: numba keeps it on disk for the next runs; "
            "about 20 s) ..."
        )
    return run_steps  # type: ignore[no-any-return]


def run_compiled(
    sim: Simulator, progress: Callable[[int, int, float], None] | None = None
) -> SimulationResult:
    """Run ``sim``'s simulation on the compiled engine (the caller checked :func:`refusal`)."""
    system, workload, dispatcher, predictor, opts = (
        sim.system,
        sim.workload,
        sim.dispatcher,
        sim.predictor,
        sim.options,
    )
    dispatcher.setup(system)
    predictor.reset(workload, opts.walltime_kill)
    spec = dispatcher.kernel()
    st = build_state(sim)
    run_steps = engine_loop(st)
    n = len(workload)
    while True:  # no Python objects are made in the loop: no gc.freeze as in the Python engine
        outcome = run_steps(st, STEPS_PER_CHUNK)
        if progress is not None:
            t_now = float(st.dl[S.D_TIME, int(st.regs[S.NCALL]) - 1]) if st.regs[S.NCALL] else 0.0
            progress(int(st.regs[S.NDONE]), n, t_now)
        if outcome == S.FINISHED:
            break
        if outcome == S.REFUSED:
            _raise_refused(sim, st)

    regs = st.regs
    calls, started, n_rows = int(regs[S.NCALL]), int(regs[S.NSTARTED]), int(regs[S.NROWS])
    done = int(regs[S.NDONE])
    # the hand-off: each of the state's big arrays is let go once the result's own copy of what
    # it holds is made (the run's peak memory is here and in the validation)
    ji, jf, rows, dl = st.ji, st.jf, st.rows, st.dl
    del st
    order = ji[S.START_ORDER, :started]
    segments = SegmentLog.from_arrays(
        job=order,
        t_from=jf[S.JF_START, order],
        lengths=ji[S.ALLOC_LEN, order],
        node=rows[S.NODE, :n_rows],
        units=rows[S.ROW_UNITS, :n_rows],
    )
    del rows, order
    status = ji[S.STATUS].astype(np.int8)
    del ji
    start_at, end_at, planned = (jf[row].copy() for row in (S.JF_START, S.JF_END, S.JF_PLANNED))
    del jf
    keep = calls if opts.record_decisions else 0
    info = InfoLog()
    if keep and spec.info:
        columns: dict[str, NumericColumn] = {}
        ids = workload.ids
        for k, key in enumerate(spec.info):
            values = dl[S.D_INFO + k, :keep]
            present = ~np.isnan(values)
            if key in spec.info_jobs:  # a job index, reported as its id
                column = ids[np.where(present, values, 0).astype(np.int64)]
            elif key in spec.info_ints:
                column = np.where(present, values, 0).astype(np.int64)
            else:
                column = values.copy()
            columns[key] = NumericColumn(column, present)
        info = InfoLog.from_columns(keep, columns)
    elif keep:
        info = InfoLog.empty(keep)
    decisions = DecisionLog.from_columns(
        dl[S.D_TIME, :keep],
        dl[S.D_QUEUE, :keep],
        dl[S.D_RUNNING, :keep],
        dl[S.D_STARTED, :keep],
        dl[S.D_ELAPSED, :keep],
        info,
    )
    del dl
    # the compiled outcome goes into the Python engine's state, which makes the result
    state = LoopState.start(system, workload, opts)
    state.start_at, state.end_at, state.status, state.planned = start_at, end_at, status, planned
    state.segments, state.decisions = segments, decisions
    state.done, state.calls = done, calls
    result = state.result(system, workload, dispatcher, predictor, opts)
    result.notes = replace(result.notes, prediction_time_s=0.0, engine="compiled")
    return result
