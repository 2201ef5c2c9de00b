"""The decision budget of the CP dispatchers (issue 36): ``budget=none|stall|gap``, why each
search stopped, and the run summary's counts (cp/solve.py)."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from helpers import cores_system
from ortools.sat.python import cp_model

from hpcdispatch.cp import pipeline as cp_pipeline
from hpcdispatch.cp.instance import DispatchInstance, QueuedJob, RunningEntry
from hpcdispatch.cp.pipeline import CPDispatcher
from hpcdispatch.cp.policy import CPSettings
from hpcdispatch.cp.solve import DecisionBudget, solve
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics.summary import stop_reasons
from hpcdispatch.runner import run_simulation
from hpcdispatch.sim.info_log import InfoLog
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

PARAMS = CPDispatcher.SOLVER_PARAMS


def stalling_model(n: int = 30) -> cp_model.CpModel:
    """A model whose search improves once and then stalls without proving optimality.

    Minimise ``100 + r``, ``r`` in 0..3; ``r = 0`` needs ``sum a_i x_i = T`` with every
    ``a_i`` even and ``T`` odd, which has no solution, but CP-SAT's search (presolve off, as
    the dispatchers run it) does not see the parity and keeps looking; ``r >= 1`` is free.
    The hint says ``r = 3`` (objective 103). By hand: optimum 101, linear bound 100, so the
    search goes 103 -> 101 at once and then never improves nor closes the gap (1 / 101)."""
    m = cp_model.CpModel()
    rng = random.Random(7)
    a = [2 * rng.randint(50_000, 500_000) for _ in range(n)]
    target = sum(a) // 2 + (1 - (sum(a) // 2) % 2)  # odd
    assert target % 2 == 1
    x = [m.new_bool_var(f"x{i}") for i in range(n)]
    r = m.new_int_var(0, 3, "r")
    subset = m.new_bool_var("subset")
    m.add(sum(ai * xi for ai, xi in zip(a, x)) == target).only_enforce_if(subset)
    m.add(r == 0).only_enforce_if(subset)
    m.add(r >= 1).only_enforce_if(subset.negated())
    m.minimize(100 + r)
    m.add_hint(r, 3)
    m.add_hint(subset, False)
    for xi in x:
        m.add_hint(xi, False)
    return m


def test_without_a_budget_the_search_runs_to_its_limit():
    out = solve(
        stalling_model(), CPSettings.of(delta=0.2, delta_max=0.2, deterministic=True), PARAMS
    )
    assert (out.status, out.stop, out.objective, out.bound) == ("feasible", "limit", 101.0, 100.0)
    assert out.solver.deterministic_time >= 0.2 - 1e-6


def test_a_deterministic_stall_stops_after_a_chunk_without_improvement():
    # 103 (the hint: first chunk, stopped at the first solution), 101 (second chunk of 0.05
    # deterministic units), then a third chunk without improvement -> "stall", long before
    # the 2-unit limit; the model's own hint is left as it was
    settings = CPSettings.of(
        delta=2.0, delta_max=2.0, deterministic=True, budget="stall", stall=0.05
    )
    model = stalling_model()
    hint = (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values))
    out = solve(model, settings, PARAMS)
    assert (out.status, out.stop, out.objective, out.bound, out.improvements) == (
        "feasible",
        "stall",
        101.0,
        100.0,
        2,
    )
    assert (
        out.solver.deterministic_time <= 0.055
    )  # the chunk that found 101 (CP-SAT overruns by a hair)
    assert (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values)) == hint


def test_the_deterministic_stall_is_repeatable():
    settings = CPSettings.of(
        delta=2.0, delta_max=2.0, deterministic=True, budget="stall", stall=0.03
    )
    runs = set()
    for _ in range(3):
        out = solve(stalling_model(), settings, PARAMS)
        runs.add(
            (
                out.stop,
                out.objective,
                out.improvements,
                out.solver.num_branches,
                out.solver.num_conflicts,
            )
        )
    assert len(runs) == 1, runs


def test_a_wall_clock_stall_stops_the_search_long_before_its_limit():
    # the search finds 103 (the hint) and 101 at once, in a few milliseconds; then it stalls.
    # A stall of 0.5 s (not less: on a loaded machine 101 may come tenths of a second after
    # the hint) ends it long before the 60 s limit, which it would otherwise run to
    settings = CPSettings.of(delta=60.0, delta_max=60.0, budget="stall", stall=0.5)
    out = solve(stalling_model(), settings, PARAMS)
    assert (out.status, out.stop, out.objective, out.improvements) == (
        "feasible",
        "stall",
        101.0,
        2,
    )
    assert out.solve_s < 30.0  # 60 s without the budget


@pytest.mark.parametrize("gap, stop", [(0.01, "gap"), (0.001, "limit")])
def test_the_gap_budget_stops_at_cp_sats_relative_gap(gap, stop):
    # 101 against the bound 100: gap 1 / 101 = 0.0099 <= 0.01 -> CP-SAT reports OPTIMAL and we
    # say "gap"; 0.001 is never reached: the search runs to its limit
    out = solve(
        stalling_model(),
        CPSettings.of(delta=0.2, delta_max=0.2, deterministic=True, budget="gap", gap=gap),
        PARAMS,
    )
    assert (out.stop, out.objective, out.bound) == (stop, 101.0, 100.0)
    assert out.status == ("optimal" if stop == "gap" else "feasible")


def test_a_proved_optimum_says_optimal_under_every_budget():
    m = cp_model.CpModel()
    x = m.new_int_var(0, 10, "x")
    m.add(x >= 4)
    m.minimize(x)
    m.add_hint(x, 9)
    for budget in ("none", "stall", "gap"):
        for deterministic in (True, False):
            out = solve(m, CPSettings.of(budget=budget, deterministic=deterministic), PARAMS)
            assert (out.status, out.stop, out.objective) == ("optimal", "optimal", 4.0), (
                budget,
                deterministic,
            )


def test_every_decision_that_solves_records_why_it_stopped():
    # 1 node x 4 cores, a 2-core job running until 10 s; queued: A (4 cores, 1 s), B (2 cores,
    # 10 s): the rule starts B now and A at 10 -- a model is built, and its search is proved
    # optimal at once
    system = cores_system(1, 4)
    running = [RunningEntry(10, 11, -5.0, 10.0, (0,), (1,), (2,))]
    free = np.array(system.capacity)
    free[0] -= 2
    queue = [QueuedJob(0, 1, 0.0, 1.0, 1, (4,)), QueuedJob(1, 2, 0.0, 10.0, 1, (2,))]
    inst = DispatchInstance(0.0, system.resources, np.array(system.capacity), free, queue, running)
    for name in ("hcp", "pcp19", "pcp20", "cp-hybrid"):
        for budget in ("none", "stall", "gap"):
            d = make_dispatcher(
                name, time_unit=1.0, deterministic=True, budget=budget, keep_blocked=True
            )
            d.setup(system)
            placed, info = d.decide(inst)
            assert info["stop"] == "optimal", (name, budget, info)
            assert ("improvements" in info) == (budget == "stall")
            assert [idx for idx, _ in placed] == [1]


def test_the_summary_counts_the_stop_reasons():
    log = InfoLog(
        [
            {"stop": "optimal"},
            {},
            {"stop": "stall"},
            {"stop": "stall", "status": "feasible"},
            {"stop": "limit"},
            {"status": "rule-optimal"},
        ]
    )
    assert stop_reasons(log) == {"stop_limit": 1, "stop_optimal": 1, "stop_stall": 2}
    assert stop_reasons(InfoLog([{}, {"status": "rule"}])) == {}


@pytest.mark.parametrize(
    "params, field",
    [
        ({"budget": "fast"}, "budget"),
        ({"budget": "stall", "stall": 0}, "stall"),
        ({"budget": "gap", "gap": 1.5}, "gap"),
        ({"budget": "stall", "decision_limit": -1}, "decision_limit"),
    ],
)
def test_bad_budget_parameters_are_one_line_errors(params, field):
    d = make_dispatcher("hcp", **params)
    with pytest.raises(ConfigError, match=f"^dispatcher 'hcp': {field} must be ") as err:
        d.setup(cores_system(1, 4))
    assert "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [
        "hcp:deterministic=true,budget=stall,stall=0.02,delta=0.2,delta_max=0.4",
        "pcp20:deterministic=true,budget=gap,gap=0.05,delta=0.2,delta_max=0.4",
    ],
)
def test_a_deterministic_run_with_a_budget_is_the_same_twice(spec):
    system = load_system("lublin-256")
    w = load_workload("synthetic:lublin,jobs=80,seed=4,load=1.1", system)
    runs = [run_simulation(system, w, spec, predictor="oracle") for _ in range(2)]
    assert all(r.validation.ok for r in runs)
    assert np.array_equal(runs[0].result.start, runs[1].result.start)
    stops = {k: v for k, v in runs[0].summary.items() if k.startswith("stop_")}
    assert stops == {k: v for k, v in runs[1].summary.items() if k.startswith("stop_")}
    assert sum(stops.values()) > 0  # the run did build and solve models


# ---- the decision limit: one cap on all the searches of one decision ----------------------


def no_first_solution_model(n: int = 40) -> cp_model.CpModel:
    """A model CP-SAT finds no solution of within a few tenths of a deterministic unit: an
    exact subset sum of 40 numbers of 10^9..2*10^9 (a solution exists: the target is the sum
    of a random half), no hint, presolve off (as the dispatchers run it). Every attempt ends
    "unknown", so CP'19's search control restarts it with twice the limit -- the case where
    the stall budget, whose clock starts at the first solution, bounds nothing."""
    m = cp_model.CpModel()
    rng = random.Random(11)
    a = [rng.randint(10**9, 2 * 10**9) for _ in range(n)]
    target = sum(ai for ai in a if rng.random() < 0.5)
    x = [m.new_bool_var(f"x{i}") for i in range(n)]
    m.add(sum(ai * xi for ai, xi in zip(a, x)) == target)
    m.minimize(sum(x))
    return m


@pytest.mark.slow
def test_without_a_decision_limit_a_search_without_a_solution_takes_three_deltas():
    # delta 0.2, k = 2: 0.2 "unknown", restart with 0.4 "unknown", stop (two restarts without
    # a change): 0.6 deterministic units, whatever the stall budget says
    settings = CPSettings.of(
        delta=0.2, delta_max=16.0, deterministic=True, budget="stall", stall=0.01
    )
    out = solve(no_first_solution_model(), settings, PARAMS)
    assert (out.status, out.stop, out.attempts) == (
        "unknown",
        "limit",
        [(0.2, "unknown"), (0.4, "unknown")],
    )
    assert not out.budget_spent


def test_a_decision_limit_caps_the_restarts():
    # the same search with 0.3 units for the decision: 0.2, then the restart gets the 0.1 left
    # (not 0.4), and the budget is spent: 0.3 units in all (CP-SAT overruns by a hair)
    settings = CPSettings.of(
        delta=0.2, delta_max=16.0, deterministic=True, budget="stall", stall=0.01
    )
    budget = DecisionBudget(0.3, deterministic=True)
    out = solve(no_first_solution_model(), settings, PARAMS, budget)
    assert out.status == "unknown" and out.stop == "limit" and out.budget_spent
    assert [a[1] for a in out.attempts] == ["unknown", "unknown"]
    assert out.attempts[0][0] == 0.2 and out.attempts[1][0] == pytest.approx(0.1, abs=0.002)
    assert 0.3 - 1e-6 <= budget.used <= 0.302
    # nothing left: the next solve of the decision does not search at all
    again = solve(no_first_solution_model(), settings, PARAMS, budget)
    assert (again.status, again.attempts, again.budget_spent) == ("unknown", [], True)


def test_a_wall_clock_decision_limit_bounds_the_wall_time():
    # 10 s then 20 s without a solution (30 s) without the cap; 1 s with it: one attempt,
    # whose limit is what was left of the cap (not delta), and CP-SAT stops at that limit,
    # long before the attempt's own 10 s even on a loaded machine
    settings = CPSettings.of(delta=10.0, delta_max=16.0, budget="stall", stall=0.01)
    out = solve(no_first_solution_model(), settings, PARAMS, DecisionBudget(1.0))
    assert out.status == "unknown" and out.budget_spent
    assert len(out.attempts) == 1 and 0 < out.attempts[0][0] <= 1.0, out.attempts
    assert out.solve_s < 15.0  # (30 s without the cap; generous for a loaded machine)


def two_iteration_instance():
    """test_hcp_iterations' instance whose hcp decision needs two solves: 2 nodes x 4 cores,
    2-core jobs running on node 0 until 1 and on node 1 until 10; B (4 cores, 1 s) and S
    (2 cores, 10 s). Solve 1 starts B now, best fit cannot place it; solve 2 (B >= 1) starts
    S now. The rule's schedule is the same: S now, B at 1 (objective 1,000)."""
    system = cores_system(2, 4)
    running = [
        RunningEntry(10, 11, -5.0, 1.0, (0,), (1,), (2,)),
        RunningEntry(11, 12, -5.0, 10.0, (1,), (1,), (2,)),
    ]
    queue = [QueuedJob(0, 1, 0.0, 1.0, 1, (4,)), QueuedJob(1, 2, 0.0, 10.0, 1, (2,))]
    free = np.array(system.capacity)
    free[[0, 1]] -= 2
    return system, DispatchInstance(
        0.0, system.resources, np.array(system.capacity), free, queue, running
    )


def costly_solves(monkeypatch, units: float) -> None:
    """Every solve of the pipeline charges ``units`` more to the decision's budget (a search
    that needed long for its first solution; on the wall clock, a loaded machine). The
    dispatchers below run with deterministic limits, so the budget counts CP-SAT's
    deterministic time and these charges, and the searches' outcomes do not depend on the
    machine's load."""
    real = cp_pipeline.solve

    def costly(model, settings, extra=None, budget=None):
        out = real(model, settings, extra, budget)
        if budget is not None:
            budget.charge(units)
        return out

    monkeypatch.setattr(cp_pipeline, "solve", costly)


@pytest.mark.parametrize("decision_limit", [0.0, 0.15])
def test_the_decision_limit_stops_hcps_re_solves(monkeypatch, decision_limit):
    # each solve costs >= 0.2 units: without a cap hcp solves twice (S starts now, the model's
    # decision); with a 0.15 cap the first solve spends it, no re-solve starts, and the
    # decision is the rule's (S now as well), said so
    costly_solves(monkeypatch, 0.2)
    system, inst = two_iteration_instance()
    d = make_dispatcher(
        "hcp",
        time_unit=1.0,
        budget="stall",
        stall=0.01,
        decision_limit=decision_limit,
        deterministic=True,
    )
    d.setup(system)
    placed, info = d.decide(inst)
    assert [idx for idx, _ in placed] == [1] and info["dispatched"] == 1
    if decision_limit == 0:
        assert info["allocation_iterations"] == 2 and "fallback" not in info
    else:
        assert info["allocation_iterations"] == 1 and info["fallback"] == "decision limit"
        assert info["stop"] == "limit" and info["decision_limit_left"] < 0


def test_without_a_budget_there_is_no_decision_limit(monkeypatch):
    # budget=none is the papers' search control: decision_limit is ignored
    costly_solves(monkeypatch, 0.2)
    system, inst = two_iteration_instance()
    d = make_dispatcher("hcp", time_unit=1.0, decision_limit=0.15, deterministic=True)
    d.setup(system)
    placed, info = d.decide(inst)
    assert (
        info["allocation_iterations"] == 2
        and "fallback" not in info
        and "decision_limit_left" not in info
    )


def test_a_spent_decision_limit_skips_the_hint_check(monkeypatch):
    # a search that ends without a solution because the decision's limit ran out: the rule's
    # decision, "decision limit", and no 5 s hint check after it
    from hpcdispatch.cp.solve import SolveOutcome

    def spent(model, settings, extra, budget):
        time.sleep(budget.left() + 0.01)
        return SolveOutcome(
            "unknown", None, attempts=[(budget.limit, "unknown")], budget_spent=True
        )

    monkeypatch.setattr(cp_pipeline, "solve", spent)
    system, inst = two_iteration_instance()
    d = make_dispatcher("hcp", time_unit=1.0, budget="stall", decision_limit=0.05)
    d.setup(system)
    placed, info = d.decide(inst)
    assert [idx for idx, _ in placed] == [1]  # the rule: S now
    assert info["fallback"] == "decision limit" and info["decision_limit_spent"] is True
    assert info["hint_feasible"] is None and info["hint_check"] == "skipped: decision limit"
    assert info["allocation_iterations"] == 1


def test_runs_from_before_the_decision_limit_had_none():
    hcp = make_dispatcher("hcp", budget="stall")
    old = hcp.identity()
    del old["params"]["decision_limit"]
    assert not hcp.matches_identity(old)
    assert make_dispatcher("hcp", budget="stall", decision_limit=0).matches_identity(old)
