"""The RL papers' heuristics as pick dispatchers, and a learned policy as a dispatcher:
hand-computed scores and schedules."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system, job, simulate, starts

from hpcdispatch.dispatchers.pick import HEURISTICS, score_key
from hpcdispatch.dispatchers.policy import (
    NumpyPolicy,
    PolicyDispatcher,
    load_policy,
    save_policy,
)
from hpcdispatch.errors import ConfigError

# 4 one-core nodes. J0 holds 2 cores for 10 s; J1 needs all 4 from t=1; at t=2 come J2 (1
# core, 3 s) and J3 (2 cores, 20 s).
JOBS = [
    job(0, 0, 10, units=2),
    job(1, 1, 10, units=4),
    job(2, 2, 3, units=1),
    job(3, 2, 20, units=2),
]
SYSTEM = cores_system(4, 1)


def test_scores_by_hand():
    j = job(7, 100, 50, units=8, wall=400, processors=8)
    now = 500.0  # waited 400 s
    assert score_key("fcfs", j, now) == 100
    assert score_key("sjf", j, now) == 400
    assert score_key("wfp3", j, now) == pytest.approx(-((400 / 400) ** 3) * 8)
    assert score_key("unicep", j, now) == pytest.approx(-400 / (3 * 400))
    assert score_key("f1", j, now) == pytest.approx(math.log10(400) * 8 + 870 * math.log10(100))
    # a queued job not yet waited: WFP3 is 0, UNICEP ~0
    assert score_key("wfp3", j, 100.0) == 0
    # F1 guards r or s <= 0 as RLScheduler does (0.1)
    z = job(8, 0, 5, units=1, wall=5, processors=1)
    assert score_key("f1", z, 0.0) == pytest.approx(math.log10(5) + 870 * -1)


def test_fcfs_without_backfilling_waits_behind_the_pick():
    r = simulate(SYSTEM, JOBS, "fcfs:backfill=off")
    # J1 picked at t=1, starts at 10; J2 then picked at 10 and blocked until J1 ends at 20
    assert starts(r) == {0: 0, 1: 10, 2: 20, 3: 20}


@pytest.mark.parametrize("mode", ["on", "rlscheduler"])
def test_fcfs_backfills_around_the_pick(mode):
    r = simulate(SYSTEM, JOBS, f"fcfs:backfill={mode}")
    # shadow time 10 (J0's end): J2 (ends 5) backfills at 2; J3 (ends 22, and the pick needs
    # all 4 cores at 10) does not
    assert starts(r) == {0: 0, 1: 10, 2: 2, 3: 20}


def test_the_pick_is_kept_until_it_fits():
    # sjf-pick keeps J1 (the only job at t=1) although J2, shorter, arrives at 2 and fits;
    # the list scheduler sjf re-ranks at every call and starts J2 at once
    assert starts(simulate(SYSTEM, JOBS, "sjf-pick"))[2] == 20
    assert starts(simulate(SYSTEM, JOBS, "sjf"))[2] == 2


def test_wfp3_prefers_the_job_that_waited_longest_relative_to_its_length():
    # at t=20 (J1 ends) J2 (waited 18, r=3) and J3 (waited 18, r=20) compete: J2's
    # (18/3)^3*1 = 216 beats J3's (18/20)^3*2 = 1.458
    r = simulate(SYSTEM, JOBS, "wfp3")
    assert starts(r) == {0: 0, 1: 10, 2: 20, 3: 20}
    jobs = [job(0, 0, 10, units=4), job(1, 1, 2, units=4), job(2, 5, 40, units=4)]
    # at t=10: J1 waited 9 (r=2): 91.125*4; J2 waited 5 (r=40): tiny -> J1 first
    assert starts(simulate(SYSTEM, jobs, "wfp3")) == {0: 0, 1: 10, 2: 12}
    assert starts(simulate(SYSTEM, jobs, "f1")) == {0: 0, 1: 10, 2: 12}


def test_heuristic_names():
    assert HEURISTICS == {
        "fcfs": "fcfs",
        "sjf": "sjf-pick",
        "wfp3": "wfp3",
        "unicep": "unicep",
        "f1": "f1",
    }


def _sjf_like_policy(path: Path, window: int = 128) -> Path:
    # one linear layer: score = -(requested time feature)
    w = np.zeros((5, 1))
    w[1, 0] = -1.0
    save_policy(NumpyPolicy([w], [np.zeros(1)], window=window), path)
    return path


def test_a_policy_scoring_short_requests_first_dispatches_as_sjf_pick(tmp_path):
    path = _sjf_like_policy(tmp_path / "sjf.npz")
    jobs = [
        job(0, 0, 10, units=4),
        job(1, 1, 30, units=2),
        job(2, 2, 5, units=2),
        job(3, 3, 1, units=2),
        job(4, 3, 8, units=3),
    ]
    want = starts(simulate(SYSTEM, jobs, "sjf-pick"))
    got = starts(simulate(SYSTEM, jobs, f"policy:path={path}"))
    # J1 is the pick at t=1 (alone) and starts at 10; then J3 (1 s), J2 (5 s) when J3 ends
    # at 11, and J4 (3 cores) when J1 gives its 2 back at 40
    assert got == want == {0: 0, 1: 10, 2: 11, 3: 10, 4: 40}


def test_the_window_limits_what_a_policy_sees(tmp_path):
    # window 1: the policy can only pick the queue's head, i.e. it is FCFS
    path = _sjf_like_policy(tmp_path / "w1.npz", window=1)
    jobs = [job(0, 0, 10, units=4), job(1, 1, 30, units=2), job(2, 2, 5, units=2)]
    assert starts(simulate(SYSTEM, jobs, f"policy:path={path}")) == starts(
        simulate(SYSTEM, jobs, "fcfs")
    )


def test_policy_round_trip_and_bad_files(tmp_path):
    p = NumpyPolicy.random(hidden=(4,), seed=1, wait_scale=10.0, time_scale=20.0, window=7)
    save_policy(p, tmp_path / "p.npz")
    q = load_policy(tmp_path / "p.npz")
    assert (q.wait_scale, q.time_scale, q.window) == (10.0, 20.0, 7)
    x = np.random.default_rng(0).random((3, 5))
    assert np.allclose(p.scores(x), q.scores(x))
    (tmp_path / "bad.npz").write_text("not a policy")
    with pytest.raises(ConfigError, match="bad.npz: not a policy file"):
        load_policy(tmp_path / "bad.npz")
    np.savez(tmp_path / "shape.npz", w0=np.zeros((3, 1)), b0=np.zeros(1))
    with pytest.raises(ConfigError, match=r"layer 0 has weights \(3, 1\)"):
        load_policy(tmp_path / "shape.npz")
    with pytest.raises(ConfigError, match="missing.npz: policy file does not exist"):
        load_policy(tmp_path / "missing.npz")
    with pytest.raises(ConfigError, match="needs path=FILE"):
        simulate(SYSTEM, JOBS, PolicyDispatcher())


def test_fcfs_takes_fifos_decisions_and_with_easy_backfilling_easys():
    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload

    system = load_system("lublin-256")
    wl = load_workload("synthetic:lublin,jobs=300,seed=11,load=1.2", system)
    a = simulate(system, wl, "fcfs:backfill=off")
    b = simulate(system, wl, "fifo")
    assert np.array_equal(a.start, b.start)
    # in FCFS order the pick is EASY's head: the same reservation, the same backfilling
    c = simulate(system, wl, "fcfs:backfill=on")
    d = simulate(system, wl, "easy")
    assert np.array_equal(c.start, d.start)
    assert not np.array_equal(c.start, b.start)


def test_the_bundled_test_policy_is_its_recipe():
    # dispatchers/tiny_policy.npz (the conformance suite's policy): prefers jobs that fit
    # now, short requests, long waits and small jobs; made by
    # save_policy(NumpyPolicy([w0, w1], [0, 0], window=16), path) with these weights
    w0 = np.array([[1.0, 0.0], [-2.0, 0.0], [0.0, -1.0], [3.0, 0.0], [0.0, 0.0]])
    w1 = np.array([[1.0], [0.5]])
    pol = load_policy(Path(PolicyDispatcher.test_params()[0]["path"]))
    assert pol.window == 16 and len(pol.weights) == 2
    assert np.array_equal(pol.weights[0], w0) and np.array_equal(pol.weights[1], w1)
    assert not any(b.any() for b in pol.biases)
