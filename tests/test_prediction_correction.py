"""Prediction correction: a running job that outlives its predicted end gets a new one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import Scaled, cores_system, job, simulate, starts, system_of, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ReferenceEASY

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.engine import choose_engine
from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors import Predictor
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim.correction import LADDER_S, revised_end

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


class Fixed(Predictor):
    """Predicts a given duration per job id (the wall-time for the others)."""

    name = "fixed"

    def __init__(self, by_id: dict[int, float]):
        self.by_id = by_id

    def predict(self, job, now):
        return float(self.by_id.get(int(job.id), job.wall_time))


def test_revised_end_walltime_and_ladder():
    # started at 100 with a 1,000 s wall-time: the wall-time end is 1,100
    assert revised_end("walltime", now=160, start=100, wall_time=1000, revisions=0) == 1100
    assert revised_end("ladder", now=160, start=100, wall_time=1000, revisions=0) == 160 + 60
    assert revised_end("ladder", now=220, start=100, wall_time=1000, revisions=1) == 220 + 300
    assert (
        revised_end("ladder", now=900, start=100, wall_time=1000, revisions=3) == 1100
    )  # capped at the wall-time end
    # past the wall-time end (no kills): no bound left, both grow by the ladder
    assert revised_end("walltime", now=1100, start=100, wall_time=1000, revisions=0) == 1160
    assert (
        revised_end("ladder", now=5000, start=100, wall_time=1000, revisions=40)
        == 5000 + LADDER_S[-1]
    )


def test_unknown_correction_is_a_config_error():
    with pytest.raises(ConfigError, match="prediction_correction must be one of walltime, ladder"):
        SimulationOptions(prediction_correction="double")


# 3 nodes x 1 core. X (node 0) runs 100 s but is predicted 10 s; Y (node 1) runs and is
# predicted 50 s; H needs all three nodes (head from t=1); L (t=5, 200 s, predicted 200 s)
# fits on node 2 now.
#   t=1: H waits; its shadow time is 50 (X released at 10, Y at 50).
#   t=5: L would hold node 2 past the shadow time and nothing is spare then: L refused.
# - no correction: X is only ever "ending in a second"; at 50 (Y ends) the shadow time is
#   51 and L is refused again; X ends at 100: H starts at 100, L at 110.
# - walltime: at 10 X's prediction expires and becomes its wall-time end, 1,000; the shadow
#   time is 1,000 and L (ends 210) backfills at 10. H waits for L: starts at 210.
# - ladder: at 10 X's end becomes 70 (shadow 70, L ends at 210: refused); at 70 it becomes
#   370 and L (ends 270) backfills at 70; H starts at 270.
JOBS = [
    job(1, 0, 100, wall=1000),  # X
    job(2, 0, 50, wall=1000),  # Y
    job(3, 1, 10, units=3, wall=1000, max_units_per_node=1),  # H
    job(4, 5, 200, wall=1000),  # L
]
PREDICTED = {1: 10.0, 2: 50.0, 3: 10.0, 4: 200.0}


@pytest.mark.parametrize("dispatcher", ["easy", "reference"])
@pytest.mark.parametrize(
    "correction, h_start, l_start, revisions",
    [
        (None, 100, 110, None),
        ("walltime", 210, 10, 1),
        ("ladder", 270, 70, 2),
    ],
)
def test_easy_backfills_once_an_expired_prediction_is_revised(
    dispatcher, correction, h_start, l_start, revisions
):
    disp = ReferenceEASY() if dispatcher == "reference" else make_dispatcher("easy")
    r = simulate(cores_system(3, 1), JOBS, disp, Fixed(PREDICTED), prediction_correction=correction)
    s = starts(r)
    assert (s[1], s[2], s[3], s[4]) == (0, 0, h_start, l_start)
    assert r.notes.prediction_revisions == revisions
    if correction == "ladder":
        assert {10.0, 70.0} <= set(
            r.decisions["time"].tolist()
        )  # each revision is a dispatch instant


def test_revisions_reach_the_dispatcher_as_records():
    seen = []

    class Spy(ReferenceEASY):
        def _dispatch(self, view):
            seen.extend(
                (view.now, rj.job.id, rj.planned_end, view.expected_end(rj))
                for rj in view.revised_running
            )
            return super()._dispatch(view)

    simulate(cores_system(3, 1), JOBS, Spy(), Fixed(PREDICTED), prediction_correction="ladder")
    assert seen == [(10.0, 1, 70.0, 70.0), (70.0, 1, 370.0, 370.0)]


def test_correction_needs_the_python_engine():
    system = cores_system(3, 1)
    sim = Simulator(
        system,
        workload(JOBS),
        make_dispatcher("easy"),
        options=SimulationOptions(prediction_correction="walltime", engine="auto"),
    )
    assert choose_engine(sim) == "python"
    with pytest.raises(ConfigError, match="prediction correction needs the Python engine"):
        choose_engine(
            Simulator(
                system,
                workload(JOBS),
                make_dispatcher("easy"),
                options=SimulationOptions(prediction_correction="walltime", engine="compiled"),
            )
        )


def test_journal_header_names_the_correction_only_when_set(tmp_path):
    system = cores_system(3, 1)
    plain = Simulator(system, workload(JOBS), make_dispatcher("easy")).journal_run()
    assert (
        "prediction_correction" not in plain["options"]
    )  # journals written before the option stay valid
    corrected = Simulator(
        system,
        workload(JOBS),
        make_dispatcher("easy"),
        options=SimulationOptions(prediction_correction="ladder"),
    ).journal_run()
    assert corrected["options"]["prediction_correction"] == "ladder"
    json.dumps(corrected)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 10_000),
    st.sampled_from(["cp-rule", "hcp", "cp-hybrid", "pcp20"]),
    st.sampled_from(["walltime", "ladder"]),
    st.floats(0.05, 0.9),
    st.booleans(),
)
def test_cp_dispatchers_with_corrected_predictions_give_valid_schedules(
    seed, name, correction, factor, kill
):
    rng = np.random.default_rng(seed)
    system = system_of([(3, {"core": 4, "gpu": 1})], ["core", "gpu"])
    jobs = [
        job(
            i + 1,
            int(rng.integers(0, 60)),
            int(rng.integers(1, 40)),
            units=int(rng.integers(1, 4)),
            req=(int(rng.integers(1, 5)), int(rng.integers(0, 2))),
            wall=int(rng.integers(1, 60)),
        )
        for i in range(12)
    ]
    r = simulate(
        system,
        jobs,
        make_dispatcher(f"{name}:time_unit=1,delta=0.2"),
        Scaled(factor),
        prediction_correction=correction,
        walltime_kill=kill,
    )  # validated
    assert not np.isnan(r.start).any()
    # every job that outlives its prediction is revised at least once, the others never
    outliving = sum(
        (min(j.run_time, j.wall_time) if kill else j.run_time) > max(1.0, j.run_time * factor)
        for j in jobs
    )
    assert r.notes.prediction_revisions >= outliving
    assert (r.notes.prediction_revisions > 0) == (outliving > 0)


def test_a_negative_prediction_is_revised_at_the_start_not_in_the_past():
    # a custom predictor says -10 s for X: without a floor the revision would be scheduled
    # at t=-10 and time would run backwards
    jobs = [
        job(1, 0, 100, wall=1000),
        job(2, 0, 50, wall=1000),
        job(3, 0, 10, units=3, wall=1000, max_units_per_node=1),
        job(4, 0, 200, wall=1000),
    ]
    r = simulate(
        cores_system(3, 1),
        jobs,
        make_dispatcher("easy"),
        Fixed({1: -10.0, 2: 50.0, 3: 10.0, 4: 200.0}),
        prediction_correction="walltime",
    )  # validated: nothing starts before its submission
    times = r.decisions["time"].tolist()
    assert times == sorted(times) and min(times) >= 0
    assert r.notes.prediction_revisions == 1
