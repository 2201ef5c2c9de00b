"""Solving with CP'19's search control, on CP-SAT: :func:`solve` runs a built model under a
:class:`~hpcdispatch.cp.policy.CPSettings` and returns a :class:`SolveOutcome`.

CP'19: a search is bounded by a time limit ``delta``; when it found no solution it restarts
with ``2 delta`` while that is ``<= delta_max``, and stops after ``k`` restarts without a
change. The limit is CP-SAT's deterministic limit and a wall-clock watchdog
(``deterministic=True``: the deterministic limit alone, so runs repeat on a loaded machine).
The rule's schedule is the complete hint, so a solution normally exists at once.

The decision budget (:class:`~hpcdispatch.cp.policy.BudgetOptions`; not in the papers):
``none``, ``gap`` (CP-SAT's ``relative_gap_limit``) or ``stall`` (stop once the best solution
has not improved for ``stall`` seconds); a :class:`DecisionBudget` caps all searches of one
decision at ``decision_limit``. Every outcome says why the search stopped
(``SolveOutcome.stop``: ``optimal``, ``gap``, ``stall``, ``limit``, ``infeasible`` or
``invalid``). :func:`solve_interruptibly` lets Ctrl-C stop a search at once.

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hpcdispatch._util import LazyModule
from hpcdispatch.cp.policy import CPSettings

_ORTOOLS = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)
if TYPE_CHECKING:
    from ortools.sat.python import cp_model

    from hpcdispatch.cp._recorder import ImprovementRecorder
else:
    cp_model = _ORTOOLS

#: CP-SAT subsolvers whose neighbourhoods depend on hash-map iteration order (memory
#: addresses), left out when ``deterministic`` (``GetActiveRectangles`` in cp_model_lns.cc)
PACKING_LNS = (
    "packing_precedences_lns",
    "packing_random_lns",
    "packing_slice_lns",
    "packing_square_lns",
    "packing_swap_lns",
)

#: CP-SAT's status codes (``cp_model.OPTIMAL`` ...: CpSolverStatus in cp_model.proto; a test
#: keeps them equal to OR-Tools' own) -> our names
STATUS = {4: "optimal", 2: "feasible", 3: "infeasible", 1: "invalid", 0: "unknown"}

#: why a search stopped (``SolveOutcome.stop``; the run summary counts them)
STOP_REASONS = ("optimal", "gap", "stall", "limit", "infeasible", "invalid")

#: how often the waiting thread checks a wall-clock stall (s)
STALL_POLL_S = 0.002


@dataclass
class DecisionBudget:
    """What one decision may still spend on its searches (module docstring, "The decision
    limit"): ``limit`` wall-clock seconds from this object's creation on, or, with
    ``deterministic``, ``limit`` units of CP-SAT's deterministic time summed over the
    decision's solves (each solve is charged what it used: :meth:`charge`). ``limit <= 0``:
    unbounded."""

    limit: float
    deterministic: bool = False
    used: float = 0.0  # deterministic units charged so far (deterministic only)
    started: float = field(default_factory=time.perf_counter)

    @property
    def bounded(self) -> bool:
        return self.limit > 0

    def left(self) -> float:
        """What is left (s or deterministic units); ``inf`` when unbounded."""
        if not self.bounded:
            return float("inf")
        spent = self.used if self.deterministic else time.perf_counter() - self.started
        return self.limit - spent

    def spent(self) -> bool:
        #: (a deterministic attempt of less than a millionth of a unit cannot find anything)
        return self.left() <= 1e-6

    def charge(self, deterministic_time: float) -> None:
        if self.deterministic:
            self.used += deterministic_time


@dataclass
class SolveOutcome:
    """What one solve returned: status, solver, objective and bound, time, why it stopped."""

    status: str
    solver: cp_model.CpSolver | None
    objective: float | None = None
    bound: float | None = None
    solve_s: float = 0.0
    attempts: list[tuple[float, str]] = field(default_factory=list)
    watchdog_fired: bool = False
    #: why the search stopped: one of ``STOP_REASONS``
    stop: str = "limit"
    #: improving solutions seen (with a ``stall`` budget; 0 otherwise)
    improvements: int = 0
    #: the decision's :class:`DecisionBudget` ran out during (or before) this solve
    budget_spent: bool = False

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


def improvement_recorder(deterministic: bool, stop_at_first: bool = False) -> ImprovementRecorder:
    """A CP-SAT solution callback recording the clock at every improving solution
    (``cp/_recorder.py``; imported on first use: OR-Tools is imported lazily)."""
    from hpcdispatch.cp._recorder import ImprovementRecorder

    return ImprovementRecorder(deterministic, stop_at_first)


def _new_solver(
    settings: CPSettings, limit: float, extra_params: dict | None
) -> tuple[cp_model.CpSolver, float]:
    """A solver with the attempt's limits and the dispatcher's parameters; and its watchdog
    wall-clock limit."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    if settings.search.deterministic:
        wall = limit * 100 + 60.0  # the watchdog's only: no wall-clock limit for CP-SAT itself
        p.ignore_subsolvers.extend(PACKING_LNS)
    else:
        wall = limit
        p.max_time_in_seconds = wall
    p.max_deterministic_time = limit
    p.num_workers = settings.search.workers
    p.random_seed = 0
    if settings.budget.kind == "gap":
        p.relative_gap_limit = settings.budget.gap
    for key, value in (extra_params or {}).items():
        if isinstance(value, list):
            getattr(p, key).extend(value)
        elif key == "search_branching" and isinstance(value, str):
            p.search_branching = getattr(type(p), value)
        else:
            setattr(p, key, value)
    return solver, wall


def _stop_reason(
    status: str, solver: cp_model.CpSolver | None, settings: CPSettings, stalled: bool
) -> str:
    if status == "optimal":
        if (
            settings.budget.kind == "gap"
            and solver is not None
            and solver.objective_value != solver.best_objective_bound
        ):
            return "gap"  # CP-SAT says OPTIMAL once the gap limit holds
        return "optimal"
    if status in ("infeasible", "invalid"):
        return status
    return "stall" if stalled else "limit"


def solve(
    model: cp_model.CpModel,
    settings: CPSettings,
    extra_params: dict | None = None,
    budget: DecisionBudget | None = None,
) -> SolveOutcome:
    """CP'19's search control (module docstring) with the decision budget; ``budget``: the
    decision's :class:`DecisionBudget`, which caps every attempt's limit at what is left of
    it and is charged with what the attempts used (None: unbounded)."""
    delta = settings.search.delta
    attempts: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    fired = False
    unchanged = 0
    spent = False
    while True:
        limit = delta
        if budget is not None and budget.bounded:
            if budget.spent():
                spent = True
                break
            limit = min(delta, budget.left())
        if settings.budget.kind == "stall" and settings.search.deterministic:
            code, solver, stopped, stalled, improvements, used = _solve_in_chunks(
                model, settings, limit, extra_params
            )
        else:
            solver, wall = _new_solver(settings, limit, extra_params)
            callback, stall_check = None, None
            if settings.budget.kind == "stall":
                callback = improvement_recorder(deterministic=False)

                def stall_check(cb=callback) -> bool:
                    last = cb.last_improvement
                    return last is not None and time.monotonic() - last >= settings.budget.stall

            code, stopped, stalled = _solve_watched(
                solver, model, wall * 1.5 + 0.25, callback, stall_check
            )
            improvements = callback.improvements if callback is not None else 0
            used = solver.deterministic_time
        if budget is not None:
            budget.charge(used)
        fired = fired or stopped
        status = STATUS.get(code, "unknown")
        attempts.append((limit, status))
        capped = budget is not None and budget.bounded and limit < delta
        # an attempt whose limit was what was left of the budget and that ran to it has spent
        # the budget, even when CP-SAT's clock stopped a hair before ours
        spent = (
            budget is not None
            and budget.bounded
            and (budget.spent() or (capped and status in ("unknown", "feasible") and not stalled))
        )
        if status in ("optimal", "feasible"):
            return SolveOutcome(
                status,
                solver,
                solver.objective_value,
                solver.best_objective_bound,
                time.perf_counter() - t0,
                attempts,
                fired,
                _stop_reason(status, solver, settings, stalled),
                improvements,
                spent and not stalled and status != "optimal",
            )
        if status in ("infeasible", "invalid"):
            break
        unchanged += 1  # a restart without any solution: the outcome did not change
        if unchanged >= settings.search.k or delta * 2 > settings.search.delta_max:
            break
        delta *= 2
    status = attempts[-1][1] if attempts else "unknown"
    return SolveOutcome(
        status,
        None,
        None,
        None,
        time.perf_counter() - t0,
        attempts,
        fired,
        _stop_reason(status, None, settings, False),
        budget_spent=spent,
    )


def _solve_watched(
    solver: cp_model.CpSolver,
    model: cp_model.CpModel,
    watchdog_s: float,
    callback: ImprovementRecorder | None,
    stall_check: Callable[[], bool] | None,
) -> tuple[int, bool, bool]:
    """``solve_interruptibly`` with an optional stall check: ``(code, watchdog fired, stalled)``."""
    flag = {"stalled": False}
    stop_when = None
    if stall_check is not None:

        def stop_when() -> bool:
            if stall_check():
                flag["stalled"] = True
                return True
            return False

    code, stopped = solve_interruptibly(
        solver, model, watchdog_s, callback=callback, stop_when=stop_when
    )
    return int(code), stopped, flag["stalled"]


def _solve_in_chunks(
    model: cp_model.CpModel, settings: CPSettings, limit: float, extra_params: dict | None
) -> tuple[int, cp_model.CpSolver, bool, bool, int, float]:
    """The deterministic stall (module docstring): ``(code, last solver with a solution or the
    last solver, watchdog fired, stalled, improvements, deterministic time used)``. The
    model's hint is restored after."""
    proto = model.proto
    hint_vars, hint_values = list(proto.solution_hint.vars), list(proto.solution_hint.values)
    used, fired, improvements = 0.0, False, 0
    best_solver: cp_model.CpSolver | None = None
    best: float | None = None
    first = True
    try:
        while True:
            chunk = limit - used if first else min(settings.budget.stall, limit - used)
            solver, wall = _new_solver(settings, chunk, extra_params)
            callback = improvement_recorder(deterministic=True, stop_at_first=first)
            status_code, stopped = solve_interruptibly(
                solver, model, wall * 1.5 + 0.25, callback=callback
            )
            code = int(status_code)
            fired = fired or stopped
            used += solver.deterministic_time
            status = STATUS.get(code, "unknown")
            if status not in ("optimal", "feasible"):
                if best_solver is None:
                    return code, solver, fired, False, improvements, used
                return (
                    int(cp_model.FEASIBLE),
                    best_solver,
                    fired,
                    status == "unknown" and used < limit,
                    improvements,
                    used,
                )
            value = solver.objective_value
            if (
                best_solver is not None
                and best is not None
                and value >= best
                and status != "optimal"
            ):
                # a whole chunk without improvement (or the limit ran out)
                return (
                    int(cp_model.FEASIBLE),
                    best_solver,
                    fired,
                    used < limit - 1e-9,
                    improvements,
                    used,
                )
            if best is None or value < best:
                improvements += 1
            best, best_solver = value, solver
            if status == "optimal":
                return code, solver, fired, False, improvements, used
            if used >= limit - 1e-9:
                return code, solver, fired, False, improvements, used
            first = False
            model.clear_hints()  # the next chunk starts from the best solution so far
            proto.solution_hint.vars.extend(range(len(proto.variables)))
            proto.solution_hint.values.extend(solver.response_proto.solution)
    finally:
        model.clear_hints()
        proto.solution_hint.vars.extend(hint_vars)
        proto.solution_hint.values.extend(hint_values)


#: the hint check's own wall-clock limit (s)
HINT_CHECK_S = 5.0


def load_ortools() -> None:
    """Import OR-Tools now: a dispatcher's ``setup`` calls it so that the import (about
    0.2 s, once per process) is not paid inside its first timed decision."""
    _ORTOOLS.load()


def hint_is_solution(
    model: cp_model.CpModel, time_limit: float = HINT_CHECK_S, budget: DecisionBudget | None = None
) -> bool | None:
    """Whether the model's hint is a solution (every hinted variable fixed to its hint):
    ``None`` when CP-SAT could not tell within ``time_limit`` (and within what is left of the
    decision's ``budget``, which is charged like a search). The dispatcher asks this when a
    search returns nothing or worse than the rule, whose schedule is the hint: an infeasible
    hint is a defect of the rule or the model, not the solver's limit, and the record says so."""
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    if budget is not None and budget.bounded:
        if budget.deterministic:
            solver.parameters.max_deterministic_time = max(budget.left(), 0.0)
        else:
            time_limit = min(time_limit, max(budget.left(), 0.0))
    solver.parameters.max_time_in_seconds = time_limit
    code, _ = solve_interruptibly(solver, model, time_limit * 1.5 + 0.25)
    if budget is not None:
        budget.charge(solver.deterministic_time)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    if code == cp_model.INFEASIBLE:
        return False
    return None


def solve_interruptibly(
    solver: cp_model.CpSolver,
    model: cp_model.CpModel,
    watchdog_s: float | None = None,
    callback: cp_model.CpSolverSolutionCallback | None = None,
    stop_when: Callable[[], bool] | None = None,
) -> tuple[cp_model.CpSolverStatus, bool]:
    """``solver.solve(model)``, stoppable: returns ``(status code, whether the watchdog
    stopped it)``.

    CP-SAT catches SIGINT itself by default and only ends the current search, so Ctrl-C did
    not stop a CP run (the next decision started a new search). Here CP-SAT leaves SIGINT
    alone and searches in a worker thread while the main thread waits in an interruptible
    join: Ctrl-C raises ``KeyboardInterrupt`` in the main thread at once, the search is
    stopped and joined, and the interrupt goes on up (the simulator's journal and checkpoint
    are left as they were after the last decision). ``watchdog_s``: wall-clock seconds after
    which the search is stopped (a safety net against hangs; CP-SAT's own limits are in its
    parameters). ``callback``: a solution callback for ``solve``; ``stop_when``: checked every
    ``STALL_POLL_S`` while the search runs, the search is stopped once it returns True (the
    wall-clock stall budget)."""
    solver.parameters.catch_sigint_signal = False
    codes: list[cp_model.CpSolverStatus] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        try:
            codes.append(solver.solve(model, callback))
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)
        finally:
            done.set()

    # (waiting on an event, not Thread.join: a join interrupted by Ctrl-C marks the thread
    # as stopped in CPython 3.11 while it still runs, and the process then aborts at exit)
    deadline = None if watchdog_s is None else time.monotonic() + watchdog_s
    stopped = False
    threading.Thread(target=search, name="cp-sat", daemon=True).start()
    try:
        while not done.is_set():
            period = 0.5 if stop_when is None else STALL_POLL_S
            wait = (
                period if deadline is None else min(period, max(0.0, deadline - time.monotonic()))
            )
            done.wait(wait)
            if stop_when is not None and not done.is_set() and stop_when():
                solver.stop_search()
                stop_when = None
                continue
            if (
                deadline is not None
                and not stopped
                and not done.is_set()
                and time.monotonic() >= deadline
            ):
                solver.stop_search()
                stopped = True
    except BaseException:  # Ctrl-C (or any interruption of the waiting thread)
        solver.stop_search()
        done.wait()
        raise
    if errors:
        raise errors[0]
    return codes[0], stopped
