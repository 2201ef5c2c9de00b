"""Solving with CP'19's search control, on CP-SAT.

CP'19: search is bounded by a time limit ``delta``; the best solution found within it is the
decision; when no solution was found, the search restarts with ``2 delta`` while
``delta <= delta_max``; no restart when the solver proved the instance infeasible, or when
``k`` consecutive restarts did not change the outcome. Here:

- the limit is both a deterministic limit (reproducible with one worker) and a wall-clock
  limit; a watchdog thread stops the search if CP-SAT overruns it (model loading is not
  covered by CP-SAT's own limit). On a loaded machine the wall clock binds first and the
  decisions depend on the load. ``deterministic=True`` makes the same run give the same
  schedule: only the deterministic limit bounds the search (CP-SAT gets no wall-clock limit:
  its own check stops a search early, by up to a whole subsolver task, which under load cut
  0.2 s of deterministic time to 0.06), the watchdog stays as a safety net against hangs at
  ``100 delta + 60`` s (a fired watchdog is recorded in the decision's info), and CP-SAT's
  packing neighbourhood searches are left out (``PACKING_LNS``: in OR-Tools 9.15 they pick
  their rectangles in the iteration order of an unordered hash map, so on models with
  NoOverlap2D -- PCP'20's -- two solves of one model in one process gave different
  solutions);
- the priority-rule schedule is given as a complete hint, so a solution normally exists at
  once; when none comes back the caller uses the rule's decision (and says so).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


from hpcdispatch._util import LazyModule
from hpcdispatch.cp.policy import CPSettings

cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)

#: CP-SAT subsolvers whose neighbourhoods depend on hash-map iteration order (memory
#: addresses), left out when ``deterministic`` (``GetActiveRectangles`` in cp_model_lns.cc)
PACKING_LNS = ("packing_precedences_lns", "packing_random_lns", "packing_slice_lns", "packing_square_lns",
               "packing_swap_lns")

#: CP-SAT's status codes (``cp_model.OPTIMAL`` ...: CpSolverStatus in cp_model.proto; a test
#: keeps them equal to OR-Tools' own) -> our names
STATUS = {4: "optimal", 2: "feasible", 3: "infeasible", 1: "invalid", 0: "unknown"}


@dataclass
class SolveOutcome:
    status: str
    solver: cp_model.CpSolver | None
    objective: float | None = None
    bound: float | None = None
    solve_s: float = 0.0
    attempts: list[tuple[float, str]] = field(default_factory=list)
    watchdog_fired: bool = False

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


def solve(model: cp_model.CpModel, settings: CPSettings, extra_params: dict | None = None) -> SolveOutcome:
    delta = settings.delta
    attempts: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    fired = False
    unchanged = 0
    while True:
        solver = cp_model.CpSolver()
        p = solver.parameters
        if settings.deterministic:
            wall = delta * 100 + 60.0  # the watchdog's only: no wall-clock limit for CP-SAT itself
            p.ignore_subsolvers.extend(PACKING_LNS)
        else:
            wall = delta
            p.max_time_in_seconds = wall
        p.max_deterministic_time = delta
        p.num_workers = settings.workers
        p.random_seed = 0
        for key, value in (extra_params or {}).items():
            if isinstance(value, list):
                getattr(p, key).extend(value)
            elif key == "search_branching" and isinstance(value, str):
                p.search_branching = getattr(type(p), value)
            else:
                setattr(p, key, value)
        code, stopped = solve_interruptibly(solver, model, wall * 1.5 + 0.25)
        fired = fired or stopped
        status = STATUS.get(code, "unknown")
        attempts.append((delta, status))
        if status in ("optimal", "feasible"):
            return SolveOutcome(status, solver, solver.objective_value, solver.best_objective_bound,
                                time.perf_counter() - t0, attempts, fired)
        if status in ("infeasible", "invalid"):
            break
        unchanged += 1  # a restart without any solution: the outcome did not change
        if unchanged >= settings.k or delta * 2 > settings.delta_max:
            break
        delta *= 2
    return SolveOutcome(attempts[-1][1], None, None, None, time.perf_counter() - t0, attempts, fired)


def hint_is_solution(model: cp_model.CpModel, time_limit: float = 5.0) -> bool | None:
    """Whether the model's hint is a solution (every hinted variable fixed to its hint):
    ``None`` when CP-SAT could not tell within ``time_limit``. The dispatcher asks this when a
    search returns nothing or worse than the rule, whose schedule is the hint: an infeasible
    hint is a defect of the rule or the model, not the solver's limit, and the record says so."""
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = time_limit
    code, _ = solve_interruptibly(solver, model, time_limit * 1.5 + 0.25)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    if code == cp_model.INFEASIBLE:
        return False
    return None


def solve_interruptibly(solver: cp_model.CpSolver, model: cp_model.CpModel,
                        watchdog_s: float | None = None) -> tuple[cp_model.CpSolverStatus, bool]:
    """``solver.solve(model)``, stoppable: returns ``(status code, whether the watchdog
    stopped it)``.

    CP-SAT catches SIGINT itself by default and only ends the current search, so Ctrl-C did
    not stop a CP run (the next decision started a new search). Here CP-SAT leaves SIGINT
    alone and searches in a worker thread while the main thread waits in an interruptible
    join: Ctrl-C raises ``KeyboardInterrupt`` in the main thread at once, the search is
    stopped and joined, and the interrupt goes on up (the simulator's journal and checkpoint
    are left as they were after the last decision). ``watchdog_s``: wall-clock seconds after
    which the search is stopped (a safety net against hangs; CP-SAT's own limits are in its
    parameters)."""
    solver.parameters.catch_sigint_signal = False
    box: dict[str, object] = {}
    done = threading.Event()

    def search() -> None:
        try:
            box["code"] = solver.solve(model)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    # (waiting on an event, not Thread.join: a join interrupted by Ctrl-C marks the thread
    # as stopped in CPython 3.11 while it still runs, and the process then aborts at exit)
    deadline = None if watchdog_s is None else time.monotonic() + watchdog_s
    stopped = False
    threading.Thread(target=search, name="cp-sat", daemon=True).start()
    try:
        while not done.is_set():
            wait = 0.5 if deadline is None else min(0.5, max(0.0, deadline - time.monotonic()))
            done.wait(wait)
            if deadline is not None and not stopped and not done.is_set() and time.monotonic() >= deadline:
                solver.stop_search()
                stopped = True
    except BaseException:  # Ctrl-C (or any interruption of the waiting thread)
        solver.stop_search()
        done.wait()
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["code"], stopped  # type: ignore[return-value]
