"""slurm-bf's ``will_run="slurm"``: the backfill pass with Slurm's own start-time estimate
(select/cons_tres's will-run test removes running jobs in batches within a 30 s window that
doubles, slurm.conf(5) ``bf_window_linear``), against hand-computed schedules.

Found by the fidelity benchmark (benchmarks/slurm_fidelity.py, docs/RESULTS-SLURM.md): a real
Slurm 22.05 started a one-node job at once where the exact planner had reserved that node for
a wider job, because Slurm had estimated the wider job's start later (after a batch of ends).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import placement, simulate, starts, system_of

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.dispatchers.slurm_bf import SlurmBackfill
from hpcdispatch.errors import ConfigError
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.slurm import SlurmRequest, slurm_job

RES = ("core", "gpu")


def sjob(id, run=100, submit=0, **request):
    return slurm_job(id, SlurmRequest(**request), run, RES, submit=submit)


def whole(id, run, submit=0, nodes=1):
    return sjob(id, run=run, submit=submit, nodes=nodes, ntasks_per_node=4)


# 4 nodes x 4 cores. J1, J2, J3 take nodes 0, 1, 2 at 0 and end at 100, 120, 1000 (run time =
# time limit); node 3 stays free. J4 (2 whole nodes) waits; J5 (1 whole node, 150 s) arrives at 2.
JOBS = [
    whole(1, 100),
    whole(2, 120),
    whole(3, 1000),
    whole(4, 100, submit=1, nodes=2),
    whole(5, 150, submit=2),
]
SYSTEM = system_of([(4, {"core": 4, "gpu": 0})], RES)


def test_exact_planner_reserves_the_earliest_start():
    # exact: J4 fits at 100 on nodes {0, 3} (sets {0} and {3}: the first, then the other) and
    # reserves them for [100, 200); J5 on node 3 would run [2, 152): it waits, its earliest
    # start off the reservation is node 1 at 120, which the main scheduler then takes.
    r = simulate(SYSTEM, Workload(JOBS, RES), "slurm-bf:bf_interval=1,bf_resolution=1")
    assert starts(r) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 100.0, 5: 120.0}
    assert [n for n, _ in placement(r)[4]] == [0, 3] and [n for n, _ in placement(r)[5]] == [1]


def test_slurm_will_run_estimates_after_a_batch_of_ends():
    # Slurm: nothing fits J4 now. The batches are wall-clock windows: the first job to end, J1
    # at 100, sets the boundary B = 120 (100 rounded up to a multiple of 30 s; epoch 0); the
    # first batch takes every job ending by B + 30 = 150: J1 and J2 (120). J4 then fits on
    # {0, 1} (a consecutive set) and its start is the batch's last end, 120: nodes {0, 1} are
    # reserved for [120, 220). Node 3 is not reserved, so the backfill pass at 2 starts J5
    # there. At 100 only node 0 is free (J4 blocks the main scheduler); at 120 J4 starts.
    r = simulate(
        SYSTEM, Workload(JOBS, RES), "slurm-bf:bf_interval=1,bf_resolution=1,will_run=slurm"
    )
    assert starts(r) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 120.0, 5: 2.0}
    assert [n for n, _ in placement(r)[4]] == [0, 1] and [n for n, _ in placement(r)[5]] == [3]


def test_ends_beyond_the_first_window_are_a_later_batch():
    # J2 ends at 170 > B + 30 = 150: the first batch is J1 alone, J4 fits on {0, 3} at 100 and
    # reserves both for [100, 200); J5 (2..152 on node 3) cannot start; its own estimate on
    # the unreserved nodes {1, 2}: J2's end 170 (B = 180, J3 at 1000 is beyond 210) on node 1,
    # where the main scheduler starts it when J2 ends.
    jobs = [
        whole(1, 100),
        whole(2, 170),
        whole(3, 1000),
        whole(4, 100, submit=1, nodes=2),
        whole(5, 150, submit=2),
    ]
    r = simulate(
        SYSTEM, Workload(jobs, RES), "slurm-bf:bf_interval=1,bf_resolution=1,will_run=slurm"
    )
    assert starts(r)[4] == 100.0 and starts(r)[5] == 170.0
    assert [n for n, _ in placement(r)[4]] == [0, 3] and [n for n, _ in placement(r)[5]] == [1]


def _will_run(
    bf_window_linear: int, ends: list[float], fits_after: int, epoch: float = 0.0
) -> float | None:
    """The start the will-run test gives a 1-node job on one 8-core node whose running jobs end
    at ``ends``, each holding one core, when the job fits once ``fits_after`` of them ended."""
    d = SlurmBackfill(will_run="slurm", bf_window_linear=bf_window_linear, epoch=epoch)
    d._core, d.cons_res_sets = 0, False
    job = sjob(9, ntasks=8 - len(ends) + fits_after, nodes=1)
    free = np.array([[8 - len(ends), 0]], dtype=np.int64)
    running = [(e, np.array([0]), np.array([[1, 0]], dtype=np.int64)) for e in ends]
    found = d._will_run(job, np.array([1, 0], dtype=np.int64), free, np.ones(1, bool), running, 0.0)
    return None if found is None else found[0]


@pytest.mark.parametrize(
    "linear, fits_after, start",
    [
        # ends 10, 35, 100, 150, 300. Boundary B = 30 (10 rounded up to 30 s). Doubling: batch 1
        # takes the ends <= B + 30 = 60: {10, 35}; the window doubles until the next end (100) is
        # within B + window: 60, 120; batch 2: {100, 150} (150 <= 30 + 120); window 240, 480;
        # batch 3: {300}
        (0, 1, 35.0),
        (0, 2, 35.0),
        (0, 3, 150.0),
        (0, 4, 150.0),
        (0, 5, 300.0),
        # bf_window_linear=5: {10, 35}; window 35 ... 70 (100 <= 30 + 70); {100} (150 > 100);
        # window ... 120; {150}; then {300}
        (5, 2, 35.0),
        (5, 3, 100.0),
        (5, 4, 150.0),
        (5, 5, 300.0),
    ],
)
def test_will_run_batches_by_hand(linear, fits_after, start):
    assert _will_run(linear, [10.0, 35.0, 100.0, 150.0, 300.0], fits_after) == start


@pytest.mark.parametrize(
    "epoch, start",
    [
        (0.0, 45.0),  # B = 30: the first batch takes ends <= 60, 45 included
        (15.0, 45.0),  # 10 s is wall clock 25: B = 15 (30 on the wall clock), ends <= 45
        (16.0, 10.0),  # wall clock 26: B = 14, ends <= 44: 10 alone
    ],
)
def test_windows_are_aligned_on_the_wall_clock(epoch, start):
    assert _will_run(0, [10.0, 45.0], 1, epoch=epoch) == start


def test_will_run_finds_nothing_when_the_job_never_fits():
    assert _will_run(0, [10.0, 35.0], 3) is None  # 9 cores on an 8-core node


def test_parameters_in_slurm_units_and_the_identity_of_older_runs():
    d = make_dispatcher(
        'slurm-bf:will_run=slurm,scheduler_parameters="bf_window_linear=60,bf_interval=1"'
    )
    assert d.bf_window_linear == 60 and d.bf_interval == 1 and d.will_run == "slurm"
    old = make_dispatcher("slurm-bf").identity()
    old["params"].pop("will_run")
    old["params"].pop("bf_window_linear")
    old["params"].pop("epoch")
    assert make_dispatcher("slurm-bf").matches_identity(old)  # a run from before: the exact planner
    assert not make_dispatcher("slurm-bf:will_run=slurm").matches_identity(old)
    with pytest.raises(ConfigError, match="will_run must be one of slurm, exact, got 'fast'"):
        simulate(SYSTEM, Workload(JOBS, RES), "slurm-bf:will_run=fast")
    with pytest.raises(
        ConfigError,
        match=re.escape("bf_window_linear must be a number in [0, 43200] (seconds), got -1"),
    ):
        simulate(SYSTEM, Workload(JOBS, RES), "slurm-bf:bf_window_linear=-1")
    with pytest.raises(ConfigError, match="parameter 'epoch' must be float, got 'soon'"):
        simulate(SYSTEM, Workload(JOBS, RES), "slurm-bf:epoch=soon")
    with pytest.raises(ConfigError, match="epoch must be a finite number .seconds"):
        simulate(SYSTEM, Workload(JOBS, RES), SlurmBackfill(epoch=float("nan")))


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_properties import scenarios  # noqa: E402


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(max_jobs=15),
    st.sampled_from(
        [
            "slurm-bf:will_run=slurm",
            "slurm-bf:will_run=slurm,bf_interval=1,bf_resolution=1,epoch=17",
            "slurm-bf:will_run=slurm,bf_resolution=0,bf_interval=7,bf_window_linear=20,bf_max_job_test=2",
        ]
    ),
)
def test_random_workloads_give_valid_deterministic_schedules(scenario, name):
    system, wl, kill = scenario
    r = simulate(system, wl, name, walltime_kill=kill)  # the helper validates the schedule
    assert not np.isnan(r.start).any()  # every job ran
    assert np.array_equal(r.start, simulate(system, wl, name, walltime_kill=kill).start)
