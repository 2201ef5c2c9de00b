"""Duration predictors: hand-made histories for every rule, no look-ahead, robustness."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import Scaled, cores_system, job, simulate, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcdispatch.dispatchers import DispatcherSpec, make_dispatcher
from hpcdispatch.predictors import (
    DataDrivenPredictor,
    LastTwoPredictor,
    OraclePredictor,
    Predictor,
    make_predictor,
)
from hpcdispatch.runner import run_simulation
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


def pj(id, run=100, wall=1000, user=1, queue=1, units=1, req=(1,), name=None, executable=-1):
    return job(
        id,
        0,
        run,
        units=units,
        req=req,
        wall=wall,
        user=user,
        queue=queue,
        name=name,
        executable=executable,
    )


def fresh(cls):
    p = cls()
    p.reset(workload([pj(1)]))
    return p


# ---- last two ------------------------------------------------------------------------------


def test_last_two():
    p = fresh(LastTwoPredictor)
    assert p.predict(pj(10, wall=500), 0) == 500  # no history: wall-time
    p.learn(pj(1), 100, 10)
    assert p.predict(pj(11, wall=500), 10) == 100  # one completed job
    p.learn(pj(2), 300, 20)
    assert p.predict(pj(12, wall=500), 20) == 200  # mean of the last two
    assert p.predict(pj(13, wall=150), 20) == 150  # capped by the wall-time
    p.learn(pj(3), 500, 30)
    assert p.predict(pj(14, wall=1000), 30) == 400  # (300 + 500) / 2: only the last two
    assert p.predict(pj(15, user=2, wall=777), 30) == 777  # another user has no history


def test_oracle():
    p = OraclePredictor()
    p.reset(workload([pj(1)]), walltime_kill=True)
    assert p.predict(pj(1, run=50, wall=40), 0) == 40
    p.reset(workload([pj(1)]), walltime_kill=False)
    assert p.predict(pj(1, run=50, wall=40), 0) == 50


# ---- data-driven: one test per rule ---------------------------------------------------------


def test_rule1_identical_profile_most_recent_wins():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="sim", run=100), 100, 1)
    p.learn(pj(2, name="sim", run=200), 200, 2)  # same profile, more recent
    assert p.match(pj(3, name="sim")) == (1, 200)


def test_rule2_longest_name_prefix_rest_identical():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="job1"), 100, 1)
    p.learn(pj(2, name="jab9"), 999, 2)  # shares only "j"
    p.learn(pj(3, name="job2", req=(2,)), 555, 3)  # other request: not rule 2
    assert p.match(pj(4, name="job7")) == (2, 100)
    # ties on the prefix length: the most recent wins
    p.learn(pj(5, name="job3"), 300, 4)
    assert p.match(pj(6, name="job7")) == (2, 300)


def test_rule3_same_name_most_similar_request():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="lmp", units=2, req=(8,)), 100, 1)  # 16 cores
    p.learn(pj(2, name="lmp", units=8, req=(8,)), 400, 2)  # 64 cores
    assert p.match(pj(3, name="lmp", units=3, req=(8,))) == (3, 100)  # 24 cores: closest is 16
    assert p.match(pj(4, name="lmp", units=6, req=(8,))) == (3, 400)  # 48 cores: closest is 64
    # equally similar requests: the most recent wins
    p.learn(pj(5, name="lmp", units=4, req=(8,)), 250, 3)  # 32 cores
    p.learn(pj(6, name="lmp", units=4, req=(8,)), 260, 4)  # 32 cores again, later
    assert p.match(pj(7, name="lmp", units=4, req=(8,))) == (1, 260)  # identical profile is rule 1
    assert p.match(pj(8, name="lmp", units=5, req=(8,))) == (3, 260)


def test_rule4_name_prefix_and_most_similar_request():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="run_a", units=1), 100, 1)
    p.learn(pj(2, name="run_b", units=8), 800, 2)
    p.learn(pj(3, name="other", units=2), 999, 3)
    assert p.match(pj(4, name="run_c", units=2)) == (4, 100)
    assert p.match(pj(5, name="run_c", units=7)) == (4, 800)


def test_rule5_same_name_other_queue_or_walltime():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="x", queue=1), 100, 1)
    p.learn(pj(2, name="x", queue=2, wall=50), 40, 2)
    assert p.match(pj(3, name="x", queue=3, wall=999)) == (5, 40)  # the user's last job named x


def test_rule6_name_prefix_anywhere():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, name="abc1", queue=1), 100, 1)
    p.learn(pj(2, name="abd", queue=2), 200, 2)
    assert p.match(pj(3, name="abc9", queue=7)) == (6, 100)  # "abc" beats "ab"
    assert p.match(pj(4, name="zzz", queue=7)) == (0, None)  # no common prefix at all


def test_no_match_falls_back_to_walltime_and_results_are_capped():
    p = fresh(DataDrivenPredictor)
    assert p.predict(pj(1, name="new", wall=321), 0) == 321
    p.learn(pj(2, name="long", run=5000, wall=6000), 5000, 1)
    assert p.predict(pj(3, name="long", wall=6000), 2) == 5000
    assert p.predict(pj(4, name="long", wall=600), 2) == 600  # capped by its own wall-time
    assert p.rule_counts[0] == 1


def test_users_do_not_share_histories_and_executables_are_names():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1, executable=42, user=1), 100, 1)
    assert p.match(pj(2, executable=42, user=2)) == (0, None)
    assert p.match(pj(3, executable=42, user=1, queue=9)) == (5, 100)
    assert p.match(pj(4, executable=421, user=1, queue=9)) == (6, 100)  # "42" is a prefix of "421"


def test_jobs_without_names_only_match_identical_profiles():
    p = fresh(DataDrivenPredictor)
    p.learn(pj(1), 100, 1)
    assert p.match(pj(2)) == (1, 100)
    assert p.match(pj(3, queue=2)) == (0, None)


# ---- on-line: no look-ahead ---------------------------------------------------------------------


class Spy(Predictor):
    """Wraps a predictor and checks every job it learned from had ended by prediction time."""

    name = "spy"

    def __init__(self, inner: Predictor):
        self.inner = inner

    def reset(self, workload, walltime_kill=True):
        super().reset(workload, walltime_kill)
        self.inner.reset(workload, walltime_kill)
        self.learned: list[tuple[int, float]] = []
        self.predictions: dict[int, float] = {}

    def predict(self, job, now):
        assert all(end <= now for _, end in self.learned)
        value = self.inner.predict(job, now)
        self.predictions[job.id] = value
        return value

    def learn(self, job, run_time, now):
        self.learned.append((job.id, now))
        self.inner.learn(job, run_time, now)


@pytest.mark.parametrize("name", ["last-two", "data-driven"])
def test_predictions_never_see_the_future(name):
    system = load_system("sdsc-sp2")
    from helpers import trace

    from hpcdispatch.workload import SwfOptions

    wl = load_workload(
        str(trace("SDSC-SP2-1998-4.2-cln.swf.gz")), system, SwfOptions(max_jobs=1500)
    )
    cut = wl.jobs[1000].submit
    # the same trace, but every job submitted after `cut` runs 7x longer: a predictor that
    # peeked at jobs not yet ended (or not yet submitted) would predict differently before `cut`
    changed = type(wl)(
        [
            j._replace(run_time=j.run_time * 7, wall_time=j.wall_time * 7) if j.submit > cut else j
            for j in wl.jobs
        ],
        wl.resources,
    )
    a, b = Spy(make_predictor(name)), Spy(make_predictor(name))
    simulate(system, wl, make_dispatcher("fifo"), predictor=a)
    simulate(system, changed, make_dispatcher("fifo"), predictor=b)
    before = [j.id for j in wl.jobs if j.submit <= cut]
    assert [a.predictions[i] for i in before] == [b.predictions[i] for i in before]
    assert any(a.predictions[j.id] != b.predictions[j.id] for j in wl.jobs if j.submit > cut)


# ---- dispatchers with predictions ---------------------------------------------------------------


def test_predictor_suffix_in_dispatcher_specs():
    def parsed(text):
        spec = DispatcherSpec.parse(text)
        return spec.name, spec.params, spec.predictor

    assert parsed("easy-L2") == ("easy", {}, "last-two")
    assert parsed("sjf-R:allocator=best-fit") == ("sjf", {"allocator": "best-fit"}, "oracle")
    assert parsed("easy-d") == ("easy", {}, "data-driven")
    assert parsed("easy") == ("easy", {}, None)
    assert parsed("cp-rule") == ("cp-rule", {}, None)  # a dash in the name is not a suffix
    system = load_system("machine-s")
    wl = load_workload("synthetic:lublin,jobs=200,seed=1", system)
    out = run_simulation(system, wl, "easy-R")
    assert out.result.predictor == "oracle" and out.validation.ok
    assert out.summary["prediction_mae_s"] == 0.0 and out.summary["prediction_exact_rate"] == 1.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["sjf", "easy", "conservative"]), st.floats(0.05, 0.9), st.integers(0, 10_000)
)
def test_underestimated_jobs_keep_dispatchers_going(name, factor, seed):
    rng = np.random.default_rng(seed)
    jobs = [
        job(
            i + 1,
            int(rng.integers(0, 200)),
            int(rng.integers(1, 100)),
            units=int(rng.integers(1, 4)),
        )
        for i in range(25)
    ]
    r = simulate(
        cores_system(4, 1), jobs, make_dispatcher(name), predictor=Scaled(factor)
    )  # validated
    assert not np.isnan(r.start).any()
    # a long gap without events must not make conservative wake up every second
    assert len(r.decisions["time"]) < 200


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(1, 5_000), st.integers(1, 5_000)), max_size=40
    ),
    st.booleans(),
)
def test_predict_all_is_predict_at_each_submission(rows, kill):
    """The static predictors' whole-workload predictions (what the compiled engine plans with)
    are, job by job, what ``predict`` returns at the job's submission; W from the wall-time,
    R the run time, cut at the wall-time when kills are on (hand-checked on two jobs)."""
    wl = workload(
        [job(i, submit, run, wall=wall) for i, (submit, run, wall) in enumerate(sorted(rows))]
    )
    for predictor in (make_predictor("W"), make_predictor("R")):
        predictor.reset(wl, kill)
        expected = [predictor.predict(j, float(j.submit)) for j in wl.jobs]
        got = predictor.predict_all(wl)
        assert got.dtype == np.float64 and got.tolist() == expected
    two = workload([job(1, 0, 100, wall=60), job(2, 5, 30, wall=90)])
    oracle = make_predictor("R")
    oracle.reset(two, True)
    assert oracle.predict_all(two).tolist() == [60.0, 30.0]
    oracle.reset(two, False)
    assert oracle.predict_all(two).tolist() == [100.0, 30.0]
    assert make_predictor("W").predict_all(two).tolist() == [60.0, 90.0]


def test_predict_all_refuses_a_predictor_that_learns():
    wl = workload([job(1, 0, 100)])
    last_two = make_predictor("L2")
    last_two.reset(wl, True)
    with pytest.raises(TypeError, match="not static"):
        last_two.predict_all(wl)


def test_predict_all_of_a_subclass_is_its_own_predict():
    """A subclass of W or R that predicts its own way is planned with its own ``predict``
    (the columnar shortcut is W's and R's alone)."""
    from hpcdispatch.protocol.predictor import WallTimePredictor

    class HalfWall(WallTimePredictor):
        def predict(self, job, now):
            return job.wall_time / 2

    class Doubled(OraclePredictor):
        def predict(self, job, now):
            return 2.0 * job.run_time

    wl = workload([job(1, 0, 100, wall=60), job(2, 5, 30, wall=90)])
    half, doubled = HalfWall(), Doubled()
    half.reset(wl, True)
    doubled.reset(wl, True)
    assert half.predict_all(wl).tolist() == [30.0, 45.0]
    assert doubled.predict_all(wl).tolist() == [200.0, 60.0]
