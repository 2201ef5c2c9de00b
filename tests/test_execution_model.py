"""The application execution model (sim/execution.py), against values computed by hand (U8)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.sim.execution import AppModelParams, ExecutionModel, combine
from hpcdispatch.system.grid import grid_of
from hpcdispatch.workload.job import AppSpec, Job


def _job(index: int, behaviour: int, comm: str, n: int, run: int, job_id: int | None = None) -> Job:
    return Job(
        id=job_id if job_id is not None else index + 1,
        submit=0,
        run_time=run,
        wall_time=run,
        units=1,
        unit_request=(1,),
        app=AppSpec(behaviour, comm, n),
        index=index,
    )


def _phase(model: ExecutionModel, run, k: int, forks: bool = False, ask=None) -> float:
    model.place_phase(run, k, forks, ask)
    return model.begin_phase(run, k)


def test_halo_program_and_its_calibration_by_hand():
    # 8 ranks of type 1: a 3 x 3 rank grid holding ranks 0-7; 5 right + 5 down edges, both ways
    model = ExecutionModel(grid_of(1, 4), 4, AppModelParams(phases=2))
    prog = model.build_program(1, 1, "sync", 8, 100)
    assert prog.procs.tolist() == [8, 8] and prog.base == 8
    assert len(prog.src[0]) == 20
    # baseline: nodes 0, 1; ranks 0-3 on node 0, 4-7 on node 1; edges (3,4), (1,4), (2,5), (3,6)
    # cross: 8 messages at 1 + 1 hop = 2, 12 inside at 0.1 -> 17.2 / 20
    assert prog.base_cost.tolist() == pytest.approx([0.86, 0.86])
    assert prog.nominal.tolist() == [50.0, 50.0]
    # sync: 0.7 of each phase computes, 0.3 communicates: W = 8 x 0.7 x 50, kappa = 15 / 0.86
    assert prog.work().tolist() == pytest.approx([280.0, 280.0])
    assert prog.comm_scale().tolist() == pytest.approx([15 / 0.86] * 2)


def test_two_phase_job_on_two_nodes_by_hand():
    model = ExecutionModel(grid_of(1, 4), 4, AppModelParams(phases=2))
    job = _job(0, 1, "sync", 8, 100)
    # on the baseline nodes 0, 1: exactly the nominal 50 s per phase, 100 s in all
    run = model.start(job, [0, 1])
    assert _phase(model, run, 0) == 50.0
    model.end_phase(run)
    assert _phase(model, run, 1) == 50.0
    model.end_phase(run)
    # on nodes 0 and 2 (2 hops): cross messages cost 3 -> mean (24 + 1.2) / 20 = 1.26
    run = model.start(job, [0, 2])
    d0 = _phase(model, run, 0)
    assert d0 == pytest.approx(50 * (0.7 + 0.3 * 1.26 / 0.86))  # 56.9767...
    assert run.gamma == 1.0  # alone on its links
    model.end_phase(run)
    assert model.link_load.sum() == 0.0
    # async: combine = max + 0.5 min, baseline 0.7 + 0.15 = 0.85
    job_a = _job(1, 1, "async", 8, 100)
    run = model.start(job_a, [0, 1])
    assert _phase(model, run, 0) == 50.0
    model.end_phase(run)
    run = model.start(job_a, [0, 2])
    b = 0.3 * 1.26 / 0.86
    assert _phase(model, run, 0) == pytest.approx(50 * (max(0.7, b) + 0.5 * min(0.7, b)) / 0.85)


def test_oversubscription_doubles_compute():
    # type 0, 8 processes, three phases: the middle one only computes
    model = ExecutionModel(grid_of(1, 4), 4, AppModelParams(phases=3))
    job = _job(0, 0, "sync", 8, 300)
    run = model.start(job, [0])  # 8 processes on one node of 4 cores: 2 per core
    assert run.base_node.tolist() == [0, 0, 0, 0, 0, 0, 0, 0]
    model.place_phase(run, 1, False, None)
    assert run.oversubscription == 2.0
    assert model.begin_phase(run, 1) == 200.0  # nominal 100 s, computation doubled
    run2 = model.start(job, [0, 1])
    assert _phase(model, run2, 1) == 100.0


def test_message_cost_grows_with_hops():
    # 2 processes of type 1, one core per node: the two messages 0 -> 1, 1 -> 0 cross nodes
    model = ExecutionModel(grid_of(1, 8), 1, AppModelParams(phases=1, network="distance"))
    job = _job(0, 1, "sync", 2, 100)
    prog = model.program(job)
    assert prog.base_cost[0] == 2.0  # injection 1 + 1 hop
    for hops in (1, 2, 5):
        run = model.start(job, [0, hops])
        assert _phase(model, run, 0) == pytest.approx(100 * (0.7 + 0.3 * (1 + hops) / 2))


@pytest.mark.parametrize(
    "network, comm, expected",
    [
        # max: the worst link, 1-2: (2 + delta_a x 2) / 2
        ("max", "async", 2.0),
        ("max", "sync", 1.3),
        # mean (default): traffic-weighted over b's links 1-2 and 2-3, 2 messages each:
        # (2 + delta_a x 2 + 2 + 0) / (2 + 2)
        ("mean", "async", 1.5),
        ("mean", "sync", 1.15),
    ],
)
def test_contention_between_two_jobs_on_one_link(network, comm, expected):
    model = ExecutionModel(grid_of(1, 4), 1, AppModelParams(phases=1, network=network))
    a = model.start(_job(0, 1, comm, 2, 100), [0, 2])  # links 0-1 and 1-2
    b = model.start(_job(1, 1, comm, 2, 100), [1, 3])  # links 1-2 and 2-3: share 1-2
    _phase(model, a, 0)
    assert a.gamma == 1.0  # alone when it started
    d = _phase(model, b, 0)
    assert b.gamma == pytest.approx(expected)
    base = b.program.base_cost[0]
    assert base == 2.0
    ratio = 3.0 / 2.0  # 2 hops instead of 1
    bb = 0.3 * ratio * expected
    want = (0.7 + bb) if comm == "sync" else (max(0.7, bb) + 0.5 * min(0.7, bb)) / 0.85
    assert d == pytest.approx(100 * want)
    model.end_phase(a)
    model.end_phase(b)
    assert model.link_load.max() == 0.0


def test_children_go_to_parent_node_then_neighbours_then_asked_nodes():
    model = ExecutionModel(grid_of(2, 4), 2, AppModelParams(phases=1))
    prog_job = _job(0, 3, "async", 4, 100)
    prog = model.program(prog_job)
    # force a phase of 6 processes over a base of 2 (children 0-3, parents 0, 1, 0, 1)
    object.__setattr__(prog, "procs", np.array([6]))
    object.__setattr__(prog, "base", 2)
    run = model.start(prog_job, [0])  # base ranks 0, 1 on node 0 (2 cores): no free core
    asked = []

    def ask(parent):
        asked.append(parent)
        return [1, 4][len(asked) - 1] if len(asked) <= 2 else None

    granted = model.place_phase(run, 0, True, ask)
    assert granted == [1, 4] and asked == [0, 0]
    assert run.rank_node.tolist() == [0, 0, 1, 1, 4, 4]
    assert run.oversubscription == 1.0
    # a static type 3 job without asking: its other node's free cores, then time-sharing
    run = model.start(prog_job, [0, 5])  # base on node 0
    model.place_phase(run, 0, False, None)
    assert sorted(run.rank_node.tolist()) == [0, 0, 0, 5, 5, 5]
    assert run.oversubscription == 2.0
    assert model.idle_nodes(run) == []


def test_static_type2_children_stay_on_the_parent_node():
    model = ExecutionModel(grid_of(1, 4), 2, AppModelParams(phases=1))
    job = _job(0, 2, "async", 4, 100)
    prog = model.program(job)
    object.__setattr__(prog, "procs", np.array([4]))
    object.__setattr__(prog, "base", 2)
    object.__setattr__(prog, "src", (np.zeros(0, np.int64),))
    object.__setattr__(prog, "dst", (np.zeros(0, np.int64),))
    run = model.start(job, [0, 1])  # base ranks 0, 1 on node 0; node 1 idle
    model.place_phase(run, 0, False, None)
    assert run.rank_node.tolist() == [0, 0, 0, 0]
    assert run.oversubscription == 2.0
    assert model.idle_nodes(run) == [1]


@settings(max_examples=60, deadline=None)
@given(
    behaviour=st.integers(0, 3),
    comm=st.sampled_from(["async", "sync"]),
    n=st.integers(1, 80),
    run=st.integers(1, 10**6),
    job_id=st.integers(1, 10**6),
)
def test_calibration_on_the_baseline_partition_is_exact(behaviour, comm, n, run, job_id):
    """On the baseline partition of the empty machine every phase lasts its nominal whole
    seconds, which sum to R exactly (A9)."""
    from hpcdispatch.system.partition import manhattan_partition

    model = ExecutionModel(grid_of(8, 16), 4)
    job = _job(0, behaviour, comm, n, run, job_id)
    prog = model.program(job)
    assert prog.nominal.sum() == run and (prog.nominal == np.floor(prog.nominal)).all()
    m = -(-int(prog.procs.max()) // 4)
    nodes = sorted(manhattan_partition(np.ones(128, bool), (8, 16), m).tolist())
    r = model.start(job, nodes)
    total = 0.0
    for k in range(prog.phases):
        if behaviour in (0, 1):
            d = _phase(model, r, k)
            assert d == prog.nominal[k]
        else:  # dynamic types: children in rank order on the baseline's free cores
            r.rank_node = np.repeat(np.asarray(nodes), 4)[: int(prog.procs[k])]
            r.oversubscription = 1.0
            d = model.begin_phase(r, k)
            assert d == prog.nominal[k]
        total += d
        model.end_phase(r)
    assert total == run


def test_combine():
    assert combine(0.7, 0.3, True, 0.5) == 1.0
    assert combine(0.7, 0.3, False, 0.5) == pytest.approx(0.85)


def test_bad_parameters_are_one_line():
    from hpcdispatch.errors import ConfigError

    with pytest.raises(ConfigError, match="network"):
        AppModelParams(network="fluid")
    with pytest.raises(ConfigError, match="now 'max'"):
        AppModelParams(network="contention")
