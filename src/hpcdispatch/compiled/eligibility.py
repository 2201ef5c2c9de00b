"""Which simulations the compiled engine can run (without importing numba)."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

from hpcdispatch.allocators import BestFit, FirstFit, make_allocator
from hpcdispatch.compiled.aot import jit_disabled
from hpcdispatch.protocol import Dispatcher

if TYPE_CHECKING:
    from hpcdispatch.sim.simulator import Simulator

#: ``engine="auto"`` uses the compiled engine only for workloads at least this large: loading
#: it takes about half a second (after an install; an editable install compiles it on its
#: first use, about 20 s), and a smaller run is over as soon on the Python loop
AUTO_MIN_JOBS = 20_000


def refusal(sim: Simulator) -> str | None:
    """Why ``sim`` cannot run on the compiled engine, or ``None`` when it can.

    It can when: numba is installed (and the platform has ``clock_gettime``); no decision
    journal; the dispatcher has a compiled kernel (:meth:`Dispatcher.kernel`) and admits
    every job; its allocator is first fit or best fit; the predictor's planned durations
    are fixed at submission (:attr:`Predictor.static`); no job has node constraints or
    growth requests; the dispatcher is called at events only, dispatch time is not
    charged and predictions are not corrected."""
    if importlib.util.find_spec("numba") is None:
        return "numba is not installed"
    if jit_disabled():
        return "NUMBA_DISABLE_JIT is set (the engine would run as slow Python)"
    if sys.platform == "win32":
        return "no clock_gettime on Windows"
    if sim.journal_path is not None:
        return "a decision journal needs the Python engine"
    dispatcher = sim.dispatcher
    if dispatcher.kernel() is None:
        return f"dispatcher '{dispatcher.name}' has no compiled kernel"
    if type(dispatcher).admit is not Dispatcher.admit:
        return f"dispatcher '{dispatcher.name}' has admission control"
    allocator = make_allocator(getattr(dispatcher, "allocator", "first-fit"), sim.system)
    if type(allocator) not in (FirstFit, BestFit):
        return f"allocator '{allocator.name}' has no compiled version"
    if not getattr(sim.predictor, "static", False):
        return f"predictor '{sim.predictor.name}' learns during the run"
    opts = sim.options
    if opts.charge_dispatch_time:
        return "charged dispatch time needs the Python engine"
    if opts.prediction_correction is not None:
        return "prediction correction needs the Python engine"
    if opts.dispatch_interval is not None or not opts.dispatch_on_events:
        return "periodic invocation needs the Python engine"
    workload = sim.workload
    if workload.has_constraints:
        return "jobs with node constraints need the Python engine"
    if workload.has_growth:
        return "jobs with growth requests need the Python engine"
    if workload.has_apps:
        return (
            "deadline jobs with an application model need the Python engine (their run time is the execution model's "
            "output: phases, forks and joins, sim/execution.py)"
        )
    if workload.has_deadlines:
        return (
            "jobs with a deadline or an earliest start need the Python engine (it enforces earliest starts "
            "and cancels jobs at their deadline)"
        )
    return None
