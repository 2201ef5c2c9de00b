"""HCP'19's iterations between its two stages (issue 36): when best fit cannot place a job
the pooled scheduling stage starts now, the stage is solved again with that job postponed."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cores_system
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.cp.instance import DispatchInstance, QueuedJob, RunningEntry
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics.summary import allocation_iterations
from hpcdispatch.runner import run_simulation
from hpcdispatch.sim.info_log import InfoLog
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


def instance(system, queued, running):
    free = np.array(system.capacity)
    for r in running:
        free[list(r.nodes)] -= r.amounts()
    return DispatchInstance(
        0.0, system.resources, np.array(system.capacity), free, list(queued), list(running)
    )


def decide(name, system, inst, **params):
    d = make_dispatcher(name, time_unit=1.0, deterministic=True, **params)
    d.setup(system)
    placed, info = d.decide(inst)
    return {idx: alloc.pairs() for idx, alloc in placed}, info


def test_pooled_capacity_says_yes_placement_says_no_the_job_is_postponed_by_a_second_solve():
    # 2 nodes x 4 cores; a 2-core job runs on each node until 10; queued: one unit of 4 cores
    # (1 s). Pooled: 4 cores free now; per node: 2. First solve: start it now (objective 0);
    # best fit cannot place it; second solve with s >= 1: it starts at 1 -> nothing now.
    system = cores_system(2, 4)
    running = [
        RunningEntry(10, 11, -5.0, 10.0, (0,), (1,), (2,)),
        RunningEntry(11, 12, -5.0, 10.0, (1,), (1,), (2,)),
    ]
    inst = instance(system, [QueuedJob(0, 1, 0.0, 1.0, 1, (4,))], running)
    placed, info = decide("hcp", system, inst)
    assert placed == {}
    assert info["allocation_iterations"] == 2 and info["postponed_by_allocation"] == 1
    assert "postponed_at_allocation" not in info and "fallback" not in info


def test_the_second_solve_starts_the_job_the_first_one_kept_for_later():
    # 2 nodes x 4 cores; 2-core jobs run on node 0 until 1 and on node 1 until 10. Queued at 0:
    # B = one 4-core unit for 1 s, S = one 2-core unit for 10 s (version 3 weights
    # 100 d_max / d: B 1000, S 100; objective sum w s). Pooled free: 4 on [0, 1), 6 on [1, 10).
    #   solve 1: B@0, S@1 (objective 100; S@0 would push B to 1: 1000) -> B cannot be placed
    #            (2 cores free on each node);
    #   solve 2 (B >= 1): B@1, S@0 (1000; B@1, S@2: 1200) -> S starts now, on a node with 2
    #            cores free; the rule's own schedule is the same (1000), so no fallback.
    # Without the re-solve S would have waited for the next decision.
    system = cores_system(2, 4)
    running = [
        RunningEntry(10, 11, -5.0, 1.0, (0,), (1,), (2,)),
        RunningEntry(11, 12, -5.0, 10.0, (1,), (1,), (2,)),
    ]
    queue = [QueuedJob(0, 1, 0.0, 1.0, 1, (4,)), QueuedJob(1, 2, 0.0, 10.0, 1, (2,))]
    inst = instance(system, queue, running)
    placed, info = decide("hcp", system, inst)
    assert set(placed) == {1} and len(placed[1]) == 1 and placed[1][0][1] == 1
    assert info["allocation_iterations"] == 2 and info["postponed_by_allocation"] == 1
    assert info["objective"] == 1000 and info["rule_objective"] == 1000 and "fallback" not in info
    assert info["dispatched"] == 1


def test_without_the_re_solve_the_job_is_only_postponed():
    # the same instance with the iteration off: the first solution stands, B is postponed and
    # S (planned at 1) waits -- what hcp did before, and what the other models do by default
    system = cores_system(2, 4)
    running = [
        RunningEntry(10, 11, -5.0, 1.0, (0,), (1,), (2,)),
        RunningEntry(11, 12, -5.0, 10.0, (1,), (1,), (2,)),
    ]
    queue = [QueuedJob(0, 1, 0.0, 1.0, 1, (4,)), QueuedJob(1, 2, 0.0, 10.0, 1, (2,))]
    placed, info = decide("hcp", system, instance(system, queue, running), on_unplaced="postpone")
    assert (
        placed == {}
        and info["postponed_at_allocation"] == 1
        and "allocation_iterations" not in info
    )
    # cp-hybrid packs its start-now jobs on the real nodes: its first solution already is
    # S@0, B@1 (1,000), so asked to re-solve it solves once
    placed, info = decide(
        "cp-hybrid", system, instance(system, queue, running), on_unplaced="resolve"
    )
    assert set(placed) == {1} and info["allocation_iterations"] == 1 and info["objective"] == 1000


def test_on_unplaced_is_checked_and_old_hcp_runs_are_postpone_runs():
    with pytest.raises(ConfigError, match="on_unplaced must be one of default, resolve, postpone"):
        make_dispatcher("hcp", on_unplaced="sometimes").setup(cores_system(1, 1))
    hcp = make_dispatcher("hcp")
    old = hcp.identity()
    del old["params"]["on_unplaced"]
    assert not hcp.matches_identity(old)  # an old hcp run did not re-solve
    assert make_dispatcher("hcp", on_unplaced="postpone").matches_identity(old)
    pcp = make_dispatcher("pcp20")
    old = pcp.identity()
    del old["params"]["on_unplaced"]
    assert pcp.matches_identity(old)  # nothing changed for the other models


def test_a_placeable_first_solution_is_one_iteration():
    system = cores_system(2, 4)
    running = [RunningEntry(10, 11, -5.0, 10.0, (0,), (1,), (2,))]
    queue = [QueuedJob(0, 1, 0.0, 1.0, 1, (4,)), QueuedJob(1, 2, 0.0, 10.0, 1, (2,))]
    placed, info = decide("hcp", system, instance(system, queue, running), force_model=True)
    assert set(placed) == {0, 1}
    assert info["allocation_iterations"] == 1 and "postponed_by_allocation" not in info


def test_summary_totals_by_hand():
    log = InfoLog(
        [
            {"allocation_iterations": 1},
            {},
            {"allocation_iterations": 3, "postponed_by_allocation": 2},
            {"allocation_iterations": 2, "postponed_by_allocation": 1},
        ]
    )
    assert allocation_iterations(log) == {
        "allocation_iterations_total": 6,
        "allocation_iterations_max": 3,
        "decisions_reiterated": 2,
        "postponed_by_allocation_total": 3,
    }
    assert allocation_iterations(InfoLog([{}, {"status": "rule"}])) == {}


def test_a_eurora_like_run_is_valid_and_reports_its_iterations():
    system = load_system("eurora")
    w = load_workload("synthetic:eurora,jobs=60,seed=3,load=1.2", system)
    out = run_simulation(
        system, w, "hcp:deterministic=true,delta=0.2,delta_max=0.4", predictor="oracle"
    )
    assert out.validation.ok
    assert out.summary["allocation_iterations_total"] >= out.summary["decisions_reiterated"]
    its = [v for v in out.result.decisions["info"].column("allocation_iterations") if v is not None]
    assert out.summary["allocation_iterations_total"] == sum(its)


@st.composite
def fragmented_instances(draw):
    """2-3 nodes x 4 cores, each running 1-3 cores until 1-10 s, 1-4 queued jobs of one or two
    units of 2-4 cores: pooled capacity often says yes where no node can."""
    nodes = draw(st.integers(2, 3))
    system = cores_system(nodes, 4)
    running = [
        RunningEntry(
            100 + n,
            200 + n,
            -1.0,
            float(draw(st.integers(1, 10))),
            (n,),
            (1,),
            (draw(st.integers(1, 3)),),
        )
        for n in range(nodes)
    ]
    queued = [
        QueuedJob(
            k,
            k + 1,
            float(-draw(st.integers(0, 20))),
            float(draw(st.integers(1, 10))),
            draw(st.integers(1, 2)),
            (draw(st.integers(2, 4)),),
        )
        for k in range(draw(st.integers(1, 4)))
    ]
    return system, instance(system, queued, running)


@settings(max_examples=40, deadline=None)
@given(fragmented_instances())
def test_with_the_re_solve_every_job_started_now_is_placed(case):
    system, inst = case
    placed, info = decide("hcp", system, inst, delta=0.2, delta_max=0.4)
    assert "postponed_at_allocation" not in info  # nothing the final solution starts is refused
    free = np.array(inst.free)
    jobs = {j.index: j for j in inst.queued}
    for idx, pairs in placed.items():
        for node, units in pairs:
            free[node] -= units * np.asarray(jobs[idx].unit_request)
    assert (free >= 0).all()  # the starts fit the real free capacity together
    if "allocation_iterations" in info:
        assert 1 <= info["allocation_iterations"] <= info["in_model"] + 1
        # every extra solve postponed at least one more job
        assert info.get("postponed_by_allocation", 0) >= info["allocation_iterations"] - 1
