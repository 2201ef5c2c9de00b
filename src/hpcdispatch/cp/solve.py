"""Solving with CP'19's search control, on CP-SAT.

CP'19: search is bounded by a time limit ``delta``; the best solution found within it is the
decision; when no solution was found, the search restarts with ``2 delta`` while
``delta <= delta_max``; no restart when the solver proved the instance infeasible, or when
``k`` consecutive restarts did not change the outcome. Here:

- the limit is both a deterministic limit (reproducible with one worker) and a wall-clock
  limit; a watchdog thread stops the search if CP-SAT overruns it (model loading is not
  covered by CP-SAT's own limit);
- the priority-rule schedule is given as a complete hint, so a solution normally exists at
  once; when none comes back the caller uses the rule's decision (and says so).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from hpcdispatch.cp.policy import CPSettings

STATUS = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.MODEL_INVALID: "invalid",
    cp_model.UNKNOWN: "unknown",
}


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
        p.max_time_in_seconds = delta
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
        watchdog = threading.Timer(delta * 1.5 + 0.25, solver.stop_search)
        watchdog.daemon = True
        start = time.perf_counter()
        watchdog.start()
        try:
            code = solver.solve(model)
        finally:
            watchdog.cancel()
        took = time.perf_counter() - start
        if took > delta * 1.5 + 0.25:
            fired = True
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
