"""Deadline jobs run through the execution model in the simulator (docs/DEADLINE.md): the
calibration rule, run times as outputs, A19 overruns of static jobs, the leak's forks and
joins, cancellations -- every time computed by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.sim import execution
from hpcdispatch.sim.execution import AppProgram, ExecutionModel
from hpcdispatch.sim.options import SimulationOptions
from hpcdispatch.sim.simulator import Simulator
from hpcdispatch.system.io import load_system
from hpcdispatch.system.model import NodeType, System, Topology
from hpcdispatch.validation import validate_result
from hpcdispatch.workload.deadline import deadline_job
from hpcdispatch.workload.job import AppSpec, Workload

HLRN = load_system("hlrn2-grid")
LINE3 = System("line-3", ("core",), (NodeType("node", 3, {"core": 1}),), Topology("grid2d", (1, 3)))


def run(system, jobs, dispatcher):
    result = Simulator(
        system,
        Workload(jobs, system.resources),
        make_dispatcher(dispatcher),
        None,
        SimulationOptions(engine="python"),
    ).run()
    report = validate_result(result)
    assert report.ok, report.describe()
    return result


@pytest.mark.parametrize("behaviour", [0, 1])
@pytest.mark.parametrize("comm", ["async", "sync"])
@pytest.mark.parametrize("procs, run_time", [(1, 60), (7, 3601), (48, 86400), (300, 1234567)])
def test_calibration_alone_on_the_empty_machine_under_manhattan(behaviour, comm, procs, run_time):
    """A9 / I4: a type 0 or 1 job alone on the empty hlrn2-grid under manhattan ends exactly at
    its earliest start + R (its partition is the calibration's baseline)."""
    job = deadline_job(
        HLRN, 1, 100, run_time, 250.0, 250.0 + 2 * run_time, AppSpec(behaviour, comm, procs)
    )
    result = run(HLRN, [job], "manhattan")
    assert result.status.tolist() == [3]
    assert result.start[0] == 250.0
    assert result.end[0] == 250.0 + run_time


def test_run_time_is_an_output_of_the_placement():
    """Type 1, 2 processes, 1 core per node: the baseline is nodes 0, 1 (message cost 1 + 1);
    count-only (``reading=nodes``, the first build's: per-node bookings through the model) has
    to book nodes 0 and 2 (cost 1 + 2), so every 10 s phase (sync, comm share
    0.3) lasts 10 x (0.7 + 0.3 x 3 / 2) = 11.5 s: 115 s instead of 100."""
    x1 = deadline_job(LINE3, 1, 0, 10, 0.0, 10_000.0, AppSpec(0, "sync", 1))  # node 0 [0, 10)
    x2 = deadline_job(LINE3, 2, 0, 1000, 0.0, 10_000.0, AppSpec(0, "sync", 1))  # node 1 [0, 1000)
    b = deadline_job(
        LINE3, 3, 0, 100, 0.0, 130.0, AppSpec(1, "sync", 2)
    )  # only [10, 110) on 0 and 2
    result = run(LINE3, [x1, x2, b], "count-only:reading=nodes")
    assert result.bookings[2].nodes == (0, 2) and result.bookings[2].start == 10.0
    assert result.status.tolist() == [3, 3, 3]
    assert result.start[2] == 10.0
    assert result.end[2] == pytest.approx(125.0)  # outlived its booking (A19) and ended on time
    assert result.bookings[2].end <= 130.0


def test_overrun_cancelled_at_its_deadline():
    x1 = deadline_job(LINE3, 1, 0, 10, 0.0, 10_000.0, AppSpec(0, "sync", 1))
    x2 = deadline_job(LINE3, 2, 0, 1000, 0.0, 10_000.0, AppSpec(0, "sync", 1))
    b = deadline_job(LINE3, 3, 0, 100, 0.0, 120.0, AppSpec(1, "sync", 2))
    result = run(LINE3, [x1, x2, b], "count-only:reading=nodes")
    assert result.status.tolist() == [3, 3, 5]
    assert result.end[2] == 120.0 and result.cancel_reason[2] == "deadline-running"


def test_overrun_cancelled_when_the_next_booking_begins():
    """A19: job 3 keeps nodes 0 and 2 past its booked end 110 until the next booking on them,
    job 4's at 110 (booked at t = 5: nothing was free before 110): cancelled then."""
    x1 = deadline_job(LINE3, 1, 0, 10, 0.0, 10_000.0, AppSpec(0, "sync", 1))
    x2 = deadline_job(LINE3, 2, 0, 1000, 0.0, 10_000.0, AppSpec(0, "sync", 1))
    b = deadline_job(LINE3, 3, 0, 100, 0.0, 130.0, AppSpec(1, "sync", 2))
    y = deadline_job(LINE3, 4, 5, 10, 5.0, 10_000.0, AppSpec(0, "sync", 1))
    result = run(LINE3, [x1, x2, b, y], "count-only:reading=nodes")
    assert result.bookings[3].start == 110.0 and result.bookings[3].nodes == (0,)
    assert result.status.tolist() == [3, 3, 5, 3]
    assert result.end[2] == 110.0 and result.cancel_reason[2] == "booking-conflict"
    assert result.start[3] == 110.0 and result.end[3] == 120.0


def _hand_program(job_id: int, procs: list[int]):
    """Patch: job ``job_id`` gets a type-2 program with these process counts, 10 s phases and
    no messages (pure computation), whatever else it says."""
    original = ExecutionModel.build_program

    def build(self, jid, behaviour, comm, n, run_time):
        if jid != job_id:
            return original(self, jid, behaviour, comm, n, run_time)
        k = len(procs)
        empty = tuple(np.zeros(0, np.int64) for _ in range(k))
        return AppProgram(
            2,
            False,
            self.cores,
            np.array(procs),
            min(procs),
            np.full(k, 10.0),
            np.zeros(k),
            empty,
            empty,
            np.zeros(k),
            np.ones(k),
        )

    return build


@pytest.mark.parametrize(
    "name, busy, end, rows",
    [
        (
            "leak",
            False,
            30.0,
            {(0, 0.0, 30.0), (1, 10.0, 20.0)},
        ),  # fork -> neighbour 1, given back at the join
        ("leak-nc", False, 30.0, {(0, 0.0, 30.0), (1, 10.0, 20.0)}),
        (
            "leak",
            True,
            40.0,
            {(0, 0.0, 40.0)},
        ),  # node 1 taken: refused, the child shares the core: 20 s
        (
            "leak-nc",
            True,
            30.0,
            {(0, 0.0, 30.0), (2, 10.0, 20.0)},
        ),  # NC: the next free node along the snake
    ],
)
def test_leak_fork_and_join_by_hand(monkeypatch, name, busy, end, rows):
    monkeypatch.setattr(ExecutionModel, "build_program", _hand_program(1, [1, 2, 1]))
    jobs = [deadline_job(LINE3, 1, 0, 30, 0.0, 1000.0, AppSpec(2, "async", 1))]
    if busy:  # a long one-node job on node 1 (the snake's first free node after node 0)
        jobs.append(deadline_job(LINE3, 2, 0, 500, 0.0, 1000.0, AppSpec(0, "async", 1)))
    result = run(LINE3, jobs, name)
    assert result.start[0] == 0.0 and result.end[0] == end and result.status[0] == 3
    a = result.allocation_rows()
    mine = a.job == 0
    assert {
        (int(n), float(f), float(t)) for n, f, t in zip(a.node[mine], a.t_from[mine], a.t_to[mine])
    } == rows
    assert result.notes.execution.forks_asked == 1
    assert result.notes.execution.forks_granted == (0 if (busy and name == "leak") else 1)
    assert result.notes.execution.phases == 3 + (
        10 if busy else 0
    )  # (the busy job: 10 phases of 50 s)


def test_leak_job_waits_and_is_cancelled_at_its_deadline():
    """U9 under admission=queue (the first build's A18): a queued leak job never finds a free
    node and leaves the queue at its deadline. Under the default (Fig. 10 as written, no
    queue) the same job is rejected at its earliest start, and under admission=overbook it
    starts at once, time-shared on the least-loaded node (node 0, lowest id): its ten 1 s
    phases (one process, no messages) run at half speed, 2 s each, on time by 21."""
    hog = deadline_job(LINE3, 1, 0, 500, 0.0, 1000.0, AppSpec(0, "async", 3))  # all three nodes
    late = deadline_job(LINE3, 2, 1, 10, 1.0, 50.0, AppSpec(0, "async", 1))
    result = run(LINE3, [hog, late], "leak:admission=queue")
    assert result.status.tolist() == [3, 5]
    assert result.end[1] == 50.0 and result.cancel_reason[1] == "deadline-waiting"
    result = run(LINE3, [hog, late], "leak")
    assert result.status.tolist() == [3, 4]
    assert result.reject_reason[1].startswith("count: no free node")
    result = run(LINE3, [hog, late], "leak:admission=overbook")
    assert result.start[1] == 1.0
    a = result.allocation_rows()
    assert a.node[a.job == 1].tolist() == [0] and a.units[a.job == 1].tolist() == [1]
    assert result.end[1] == 21.0 and result.status.tolist() == [3, 3]
    # the hog's phases sampled while the late job shared node 0 (none: they begin at 0, 50,
    # ...) are not slowed: it ends at 500 (sampled contention, docs/DEADLINE.md)
    assert result.end[0] == 500.0


def test_compiled_engine_refuses_app_jobs_in_one_line():
    from hpcdispatch.compiled.eligibility import refusal

    job = deadline_job(HLRN, 1, 0, 100, None, None, AppSpec(1, "async", 4))
    sim = Simulator(
        HLRN,
        Workload([job], HLRN.resources),
        make_dispatcher("fifo"),
        None,
        SimulationOptions(engine="python"),
    )
    why = refusal(sim)
    assert why is not None and "application model" in why and "\n" not in why


def test_params_are_the_documented_defaults():
    p = execution.AppModelParams()
    assert (p.phases, p.comm_share, p.overlap, p.h_intra, p.h_inj, p.network) == (
        10,
        (0.5, 0.3, 0.2, 0.2),
        0.5,
        0.1,
        1.0,
        "mean",
    )


@pytest.mark.parametrize("name", ["leak-nc", "manhattan"])
def test_checkpoint_resume_mid_run_equals_the_whole_run(tmp_path, name):
    """The execution model's state (runs, link loads, granted nodes) lives in the loop state:
    a run interrupted between instants and resumed from its checkpoint is the same run."""
    from hpcdispatch.workload.loader import load_workload

    wl = load_workload("synthetic:deadline,jobs=120,load=heavy,types=uniform,seed=4", HLRN)
    whole = Simulator(
        HLRN, wl, make_dispatcher(name), None, SimulationOptions(engine="python")
    ).run()
    path = tmp_path / "run.ckpt"
    sim = Simulator(
        HLRN, wl, make_dispatcher(name), None, SimulationOptions(engine="python"), checkpoint=path
    )
    sim.begin()
    for _ in range(150):
        sim.step()
    assert sim.state.apps and sim.state.execution.link_load.any()  # mid-run, messages in flight
    sim.save_checkpoint()
    sim.close()
    resumed = Simulator(
        HLRN, wl, make_dispatcher(name), None, SimulationOptions(engine="python"), checkpoint=path
    ).run()
    assert resumed.notes.checkpoint.resumed_at is not None
    assert np.array_equal(whole.end, resumed.end, equal_nan=True)
    assert np.array_equal(whole.status, resumed.status)
    a, b = whole.allocation_rows(), resumed.allocation_rows()
    assert np.array_equal(a.node, b.node) and np.array_equal(a.t_to, b.t_to)
    assert validate_result(resumed).ok


@pytest.mark.parametrize("behaviour", [2, 3])
@pytest.mark.parametrize("comm", ["async", "sync"])
@pytest.mark.parametrize("procs", [3, 17, 64, 300])
def test_dynamic_job_alone_under_leak_nc_is_near_its_run_time(behaviour, comm, procs):
    """I4: a type 2 or 3 job alone on the empty machine under leak-nc gets every fork, never
    time-shares, and ends within 10 % of earliest start + R (its nodes differ from the
    baseline's only in distances)."""
    job = deadline_job(HLRN, 5, 0, 10_000, 0.0, 40_000.0, AppSpec(behaviour, comm, procs))
    result = run(HLRN, [job], "leak-nc")
    e = result.notes.execution
    assert e is not None
    assert e.forks_granted == e.forks_asked and e.oversubscribed_share == 0.0
    assert abs(result.end[0] - 10_000) <= 1_000


def test_app_model_options_are_checked_and_canonical():
    """The execution model's parameters as a simulation option (issue 34: the ablations of
    docs/RESULTS-DEADLINE.md from the command line and sweeps): canonical values, so equal
    models have equal options; wrong keys and values are one-line errors naming them."""
    from hpcdispatch.errors import ConfigError
    from hpcdispatch.sim.execution import app_model_params, parse_app_model

    a = SimulationOptions(app_model={"network": "none", "phases": "5", "growth": [1, 2]})
    assert a.app_model == {"network": "none", "phases": 5, "growth": [1.0, 2.0]}
    assert parse_app_model("network=none, phases=5,growth=1/2") == a.app_model
    assert app_model_params(a.app_model) == execution.AppModelParams(
        phases=5, growth=(1.0, 2.0), network="none"
    )
    assert SimulationOptions(app_model={}).app_model is None
    assert (
        "app_model" not in SimulationOptions().identity()
    )  # runs made before the option keep their ids
    # a default value is no change: the same model, the same identity
    assert SimulationOptions(app_model={"network": "mean", "overlap": 0.5}).app_model is None
    assert parse_app_model("network=none,peers=2") == {"network": "none"}
    assert parse_app_model("seed=9007199254740993") == {
        "seed": 9007199254740993
    }  # exact, not via float
    for text, said in (
        ("nope=1", "unknown parameter 'nope'"),
        ("phases=2.5", "phases must be a whole number"),
        ("overlap=x", "overlap must be a number"),
        ("network=fast", "network must be one of"),
        ("comm_share=0.5/0.5", "comm_share needs four shares"),
        ("overlap", "is not KEY=VALUE"),
        ("phases=inf", "phases must be a whole number .finite."),
        ("phases=1e400", "finite"),
        ("h_intra=nan", "h_intra must be a number .finite."),
        ("h_inj=-1", "h_inj must be >= 0"),
        ("growth=nan", "growth must be numbers separated by '/' .finite."),
        ("seed=-1", "seed must be >= 0"),
    ):
        with pytest.raises(ConfigError, match=said):
            parse_app_model(text)
    for value, said in (
        ({"growth": [True, 2]}, "growth must be numbers"),
        ({"phases": True}, "whole number"),
        ({"network": ["none"]}, "network must be a name"),
        ("network=none", "expected a table"),
    ):
        with pytest.raises(ConfigError, match=said):
            SimulationOptions(app_model=value)


def test_app_model_option_reaches_the_execution_model(tmp_path):
    """``--app-model network=none``: communication costs its baseline wherever the job runs
    (Gamma exactly 1), recorded in run.json; the default model charges the scattered nodes."""
    from hpcdispatch.cli.main import main

    runs = {}
    for name, extra in (("default", []), ("none", ["--app-model", "network=none"])):
        out = tmp_path / name
        try:
            main(
                [
                    "simulate",
                    "-s",
                    "hlrn2-grid",
                    "-w",
                    "synthetic:deadline,jobs=150,seed=1,load=heavy,types=2",
                    "-d",
                    "leak-nc",
                    "-q",
                    "-o",
                    str(out),
                    *extra,
                ]
            )
        except SystemExit as exc:
            assert not exc.code
        runs[name] = (
            json.loads((out / "summary.json").read_text()),
            json.loads((out / "run.json").read_text()),
        )
    assert runs["none"][1]["options"]["app_model"] == {"network": "none"}
    assert runs["default"][1]["options"]["app_model"] is None
    assert runs["none"][0]["exec_gamma_mean"] == 1.0
    assert runs["default"][0]["exec_gamma_mean"] > 1.0  # (traffic-weighted mean, shared links)
