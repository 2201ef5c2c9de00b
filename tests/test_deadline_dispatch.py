"""Deadline jobs in the simulator and the static strategies (dispatchers/deadline.py): the
design note's vectors U7 (reservation boundaries to the second), U9 (cancellation) and U2/U3
(Hilbert first fit, Manhattan greedy partitions) through the dispatchers, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import InvalidDecisionError
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.system.io import load_system
from hpcdispatch.validation import validate_result, validate_run_dir
from hpcdispatch.workload.deadline import deadline_job
from hpcdispatch.workload.job import AppSpec, Workload

GRID = load_system("hlrn2-grid")  # 8 x 16 mesh, 4 cores per node


def djob(
    i: int, submit: int, run: int, procs: int, deadline: float | None, est: float | None = None
):
    return deadline_job(GRID, i, submit, run, est, deadline, AppSpec(0, "async", procs))


def run(jobs, dispatcher: str):
    result = Simulator(
        GRID,
        Workload(jobs, GRID.resources),
        make_dispatcher(dispatcher),
        None,
        SimulationOptions(engine="python"),
    ).run()
    report = validate_result(result)
    assert report.ok, report.describe()
    return result


@pytest.mark.parametrize("dispatcher", ["count-only", "hilbert", "manhattan"])
def test_u7_reservation_boundaries_to_the_second(dispatcher):
    jobs = [
        djob(1, 0, 1000, 512, 5000),  # the whole machine during [0, 1000)
        djob(2, 10, 500, 4, 1500),  # fits only after job 1: booked at 1000, ends 1500 = deadline
        djob(3, 20, 500, 4, 1499),  # the same, one second short: rejected
        djob(4, 30, 500, 4, 529),  # est + R = 530 > 529: rejected before any search
        djob(5, 40, 200, 8, 2000, est=1200),  # earliest start 1200: booked then, not at 1000
    ]
    r = run(jobs, dispatcher)
    assert r.start.tolist()[:2] == [0.0, 1000.0] and r.end.tolist()[:2] == [1000.0, 1500.0]
    assert r.status.tolist() == [3, 3, 4, 4, 3]
    assert r.reject_reason[2].startswith("count: no window of 500 s in [20, 1499]")
    assert r.reject_reason[3].startswith(
        "deadline: earliest start 30 + 500 s is after the deadline 529"
    )
    assert r.start[4] == 1200.0 and r.end[4] == 1400.0
    booked = {b.job: b for b in r.bookings}
    assert (booked[1].made, booked[1].start, booked[1].end) == (10.0, 1000.0, 1500.0)
    assert booked[4].start == 1200.0 and len(booked[4].nodes) == 2


def test_u2_hilbert_books_consecutive_curve_positions():
    # job 1 holds node 0 (curve position 0); job 2 needs 2 nodes: curve positions 1, 2 = nodes 16, 17
    jobs = [djob(1, 0, 100, 4, 1000), djob(2, 0, 100, 8, 1000)]
    r = run(jobs, "hilbert")
    assert sorted(r.bookings[0].nodes) == [0]
    assert r.bookings[1].nodes == (16, 17)
    order = GRID.topology.grid.hilbert_order[:8].tolist()
    assert order == [0, 16, 17, 1, 2, 3, 19, 18]  # U1
    jobs = [djob(1, 0, 100, 4, 1000), djob(2, 0, 100, 16, 1000)]
    r = run(jobs, "hilbert")
    assert sorted(r.bookings[1].nodes) == sorted(
        order[1:5]
    )  # positions 1-4: first fit after the busy node 0


@pytest.mark.parametrize(
    "procs, nodes",
    [
        (8, [0, 1]),
        (12, [0, 1, 2]),
        (16, [0, 1, 2, 17]),
        (20, [0, 1, 2, 16, 17]),
        (32, [0, 1, 2, 16, 17, 18, 32, 33]),
    ],
)
def test_u3_manhattan_greedy_partitions_on_the_empty_grid(procs, nodes):
    r = run([djob(1, 0, 100, procs, 1000)], "manhattan")
    assert sorted(r.bookings[0].nodes) == nodes
    assert sorted(r.allocation_rows().node.tolist()) == nodes


def test_count_only_takes_the_lowest_free_nodes():
    r = run([djob(1, 0, 100, 8, 1000), djob(2, 0, 100, 12, 1000)], "count-only")
    assert r.bookings[1].nodes == (2, 3, 4)


def test_early_end_frees_the_rest_of_the_booking():
    # job 1's reservation is its wall-time 1000, it runs 300: job 2 (whole machine) fits at 300
    j1 = djob(1, 0, 300, 512, 5000)._replace(wall_time=1000)
    j2 = djob(2, 10, 100, 512, 420)
    # (count-only's per-node reading; line 0 alone holds every count for its full R)
    r = run([j1, j2], "count-only:reading=nodes")
    assert r.status.tolist() == [3, 4]  # at submission job 1 still holds its booking to 1000
    j2 = djob(2, 400, 100, 512, 520)  # submitted after job 1 ended: booked at 400
    r = run([j1, j2], "count-only:reading=nodes")
    # the dispatcher learns of the end at its next call (the submission at 400): released then
    assert r.start[1] == 400.0 and r.end[0] == 300.0 and r.bookings[0].released == 400.0


def test_u9_cancelled_at_the_deadline_waiting_and_running():
    jobs = [
        djob(1, 0, 1000, 512, 5000),  # the whole machine until 1000
        djob(2, 5, 100, 4, 500),  # waits (FIFO) and reaches its deadline at 500
        djob(3, 0, 100, 4, 5000)._replace(run_time=900, wall_time=900, deadline=1600.0),
    ]
    r = run(jobs, "fifo")
    # job order: submission, then source order -> indices: job 1 = 0, job 3 = 1, job 2 = 2
    assert r.workload.ids.tolist() == [1, 3, 2]
    assert r.status.tolist() == [3, 5, 5]
    assert r.cancel_reason == {1: "deadline-running", 2: "deadline-waiting"}
    assert np.isnan(r.start[2]) and r.end[2] == 500.0
    assert (
        r.start[1] == 1000.0 and r.end[1] == 1600.0
    )  # stopped at its deadline, its node freed then
    frame = r.jobs_frame()
    assert frame.status.tolist() == ["completed", "cancelled", "cancelled"]
    assert frame.cancel_reason.tolist() == ["", "deadline-running", "deadline-waiting"]


def test_a_job_ending_at_its_deadline_is_on_time():
    r = run([djob(1, 0, 100, 4, 100)], "fifo")
    assert r.status.tolist() == [3] and r.end[0] == 100.0


def test_no_start_before_the_earliest_start():
    with pytest.raises(InvalidDecisionError, match="before its earliest start 50"):
        run([djob(1, 0, 100, 4, 1000, est=50)], "fifo")


def test_compiled_engine_refuses_deadline_jobs():
    from hpcdispatch.compiled.eligibility import refusal

    sim = Simulator(
        GRID, Workload([djob(1, 0, 100, 4, 1000)], GRID.resources), make_dispatcher("fifo")
    )
    assert "deadline" in (refusal(sim) or "")


def test_cli_simulate_and_validate(tmp_path):
    from hpcdispatch.cli.main import main

    out = tmp_path / "run"
    code = main(
        [
            "simulate",
            "--system",
            "hlrn2-grid",
            "--workload",
            "synthetic:deadline,jobs=150,load=very-heavy,types=uniform,seed=1",
            "-d",
            "manhattan",
            "-o",
            str(out),
        ]
    )
    assert code in (0, None)
    assert (out / "bookings.parquet").is_file()
    assert validate_run_dir(out).ok
    assert main(["validate", str(out)]) in (0, None)


def test_summary_counts_rates_and_compactness():
    from hpcdispatch.metrics import summarize

    jobs = [
        djob(1, 0, 1000, 512, 5000),
        djob(2, 10, 500, 4, 1500),
        djob(3, 20, 500, 4, 1499),
        djob(4, 30, 500, 4, 529),
        djob(5, 40, 200, 8, 2000, est=1200),
    ]
    s = summarize(run(jobs, "manhattan"))
    assert (s["submitted"], s["accepted"], s["rejected"], s["cancelled"], s["on_time"]) == (
        5,
        3,
        2,
        0,
        3,
    )
    assert s["reject_reasons"] == {"count": 1, "deadline": 1}
    assert s["acceptance_rate"] == 0.6 and s["cancel_rate"] == 0.0 and s["success_rate"] == 0.6
    # job 5: nodes [0, 1] (1 hop); job 1: the whole 8 x 16 mesh, mean pairwise hops
    # (mean |dr| over 8 rows = 21/8, over 16 cols = 85/16; pairs of distinct nodes) = 128^2/(128*127) x (2.625 + 5.3125)
    whole = 128 * 128 * (21 / 8 + 85 / 16) / (128 * 127)
    assert s["compactness_mean"] == pytest.approx((1.0 + whole) / 2)
    # normalised: job 5's pair is optimal (1 / 1); the whole machine equals its own reference
    assert s["compactness_norm"] == pytest.approx(1.0)


def test_summary_single_partition_by_hand():
    from hpcdispatch.metrics import summarize

    s = summarize(run([djob(1, 0, 100, 12, 1000)], "manhattan"))  # nodes 0, 1, 2: hops 1 + 2 + 1
    assert s["compactness_mean"] == pytest.approx(4 / 3) and s["compactness_norm"] == pytest.approx(
        1.0
    )
    s = summarize(
        run([djob(1, 0, 100, 12, 1000)], "hilbert")
    )  # curve positions 0-2: nodes 0, 16, 17
    assert s["compactness_mean"] == pytest.approx((1 + 2 + 1) / 3)


# ---- properties on random deadline workloads (a 4 x 6 mesh of 2-core nodes) ------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hpcdispatch.system.model import NodeType, System, Topology  # noqa: E402

SMALL = System(
    "grid-4x6", ("core",), (NodeType("node", 24, {"core": 2}),), Topology("grid2d", (4, 6))
)
SMALL_GRID = SMALL.topology.grid


@st.composite
def deadline_workloads(draw):
    n = draw(st.integers(1, 14))
    jobs = []
    for i in range(n):
        submit = draw(st.integers(0, 60))
        run = draw(st.integers(1, 40))
        procs = draw(st.integers(1, 20))
        lead = draw(st.integers(0, 20))
        slack = draw(st.integers(0, 60))
        app = AppSpec(draw(st.integers(0, 3)), "async", procs)
        jobs.append(
            deadline_job(SMALL, i + 1, submit, run, submit + lead, submit + lead + run + slack, app)
        )
    return Workload(jobs, SMALL.resources)


def _peak(job) -> int:
    from hpcdispatch.workload.job import peak_units

    cores = int(SMALL.capacity[:, 0].max())
    return peak_units(job.app, job.units, cores, SMALL.n_nodes) if job.app else job.units


def _connected(nodes: list[int]) -> bool:
    seen, todo = {nodes[0]}, [nodes[0]]
    while todo:
        for m in SMALL_GRID.neighbours(todo.pop()).tolist():
            if m in nodes and m not in seen:
                seen.add(m)
                todo.append(m)
    return len(seen) == len(nodes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workload=deadline_workloads(),
    dispatcher=st.sampled_from(
        [
            "count-only",
            "hilbert",
            "manhattan",
            "hilbert:fit=best",
            "count-only:start=est",
            "manhattan:starts=all",
            "manhattan:starts=median",
        ]
    ),
)
def test_static_strategies_on_random_deadline_workloads(workload, dispatcher):
    result = Simulator(
        SMALL, workload, make_dispatcher(dispatcher), None, SimulationOptions(engine="python")
    ).run()
    report = validate_result(result)
    assert report.ok, report.describe()
    deadline = np.array([j.deadline for j in workload.jobs])
    # static jobs run on their booked nodes for as long as the execution model says: done by
    # their deadline, or cancelled at it or when the next booking on their nodes begins (A19)
    assert set(result.status.tolist()) <= {3, 4, 5}
    assert (result.end[result.status == 3] <= deadline[result.status == 3]).all()
    assert set(result.cancel_reason.values()) <= {"deadline-running", "booking-conflict"}
    assert all(
        r.split(":")[0] in ("count", "shape", "deadline") for r in result.reject_reason.values()
    )
    positions = SMALL_GRID.hilbert_position
    for b in result.bookings:  # the shape invariants (design note I3)
        nodes = list(b.nodes)
        job = workload.jobs[b.job]
        # static_request=peak (default): a dynamic job books the nodes of its peak
        want = job.units if dispatcher.startswith("count-only") else _peak(job)
        assert len(nodes) == want, (dispatcher, job)
        if dispatcher.startswith("hilbert"):
            pos = sorted(positions[nodes].tolist())
            assert pos == list(range(pos[0], pos[0] + len(pos))), pos
        if dispatcher.startswith("manhattan"):
            assert _connected(nodes), nodes


@pytest.mark.parametrize("dispatcher", ["manhattan", "fifo"])
def test_checkpoint_resume_keeps_bookings_and_cancellations(tmp_path, dispatcher):
    workload = h_load("synthetic:deadline,jobs=60,seed=3,load=heavy")
    whole = Simulator(
        GRID, workload, make_dispatcher(dispatcher), None, SimulationOptions(engine="python")
    ).run()
    path = tmp_path / "run.ckpt"
    sim = Simulator(
        GRID,
        workload,
        make_dispatcher(dispatcher),
        None,
        SimulationOptions(engine="python"),
        checkpoint=path,
    )
    sim.begin()
    for _ in range(40):
        sim.step()
    sim.save_checkpoint()
    sim.close()
    resumed = Simulator(
        GRID,
        workload,
        make_dispatcher(dispatcher),
        None,
        SimulationOptions(engine="python"),
        checkpoint=path,
    ).run()
    assert resumed.notes.checkpoint.resumed_at is not None
    for name in ("start", "end", "status"):
        assert np.array_equal(getattr(whole, name), getattr(resumed, name), equal_nan=True), name
    assert resumed.cancel_reason == whole.cancel_reason and resumed.bookings == whole.bookings
    if dispatcher == "fifo":
        assert whole.cancel_reason  # the run has cancellations to resume across


def h_load(spec: str) -> Workload:
    from hpcdispatch.workload.loader import load_workload

    return load_workload(spec, GRID)


def test_jsonl_workload_run_directory_validates_against_its_source(tmp_path):
    from hpcdispatch.results.store import write_result
    from hpcdispatch.workload.deadline import write_deadline_jsonl

    source = tmp_path / "w.deadline.jsonl"
    write_deadline_jsonl(h_load("synthetic:deadline,jobs=40,seed=4,load=heavy"), source)
    workload = h_load(str(source))
    result = Simulator(
        GRID, workload, make_dispatcher("hilbert"), None, SimulationOptions(engine="python")
    ).run()
    write_result(result, tmp_path / "run")
    report = validate_run_dir(tmp_path / "run")
    assert report.ok, report.describe()
    assert any("re-read from" in n and "matches" in n for n in report.notes), report.notes
    # an edited source (a later deadline for a job) no longer matches the stored workload
    lines = source.read_text().splitlines()
    lines[0] = lines[0].replace('"deadline": ', '"deadline": 1')
    source.write_text("\n".join(lines) + "\n")
    assert not validate_run_dir(tmp_path / "run").ok


def test_count_only_line0_is_a_pooled_count_without_placement_or_model():
    """count-only's default (Fig. 6 line 0 alone) by hand on hlrn2-grid (128 nodes of 4
    cores): a pooled count of booked nodes over [t, t + R), no node identity, no execution
    model (a type-2 job runs exactly R, nodes picked at the start).

    - job 1: 100 nodes (400 processes) in [0, 1000);
    - job 2: 28 nodes, booked [10, 1010): 100 + 28 = 128 fit;
    - job 3: 1 node, deadline 1500, R 500: no count before 1000 (128 booked), booked at
      1000 (job 1's end, a boundary), ends 1500 = its deadline: on time;
    - job 4: 1 node, deadline 1009, R 500: rejected (count);
    - job 5: type 2 (dynamic, would fork under the model): 1 node from job 1's end at
      1000 (28 + 1 + 1 booked then), runs exactly its 300 s."""
    jobs = [
        djob(1, 0, 1000, 400, 5000),
        djob(2, 10, 1000, 112, 5000),
        djob(3, 20, 500, 4, 1500),
        djob(4, 30, 500, 4, 1009),
        deadline_job(GRID, 5, 40, 300, None, 2000.0, AppSpec(2, "async", 4)),
    ]
    r = run(jobs, "count-only")
    assert not make_dispatcher("count-only").get_tags().app_model
    assert r.status.tolist() == [3, 3, 3, 4, 3]
    assert r.start[[0, 1, 2, 4]].tolist() == [0.0, 10.0, 1000.0, 1000.0]
    assert r.end[2] == 1500.0 and r.end[4] == 1300.0
    assert r.reject_reason[3].startswith("count: no window of 500 s in [30, 1009]")
    assert "pooled" in r.reject_reason[3]
    booked = {b.job: b for b in r.bookings}
    assert booked[2].start == 1000.0 and len(booked[2].nodes) == 1
    # the nodes are picked at the start: job 1 took nodes 0-99, job 2 100-127; at 1000 job 3
    # takes the lowest free node (0), job 5 the next (1)
    assert booked[2].nodes == (0,) and booked[4].nodes == (1,)
    assert r.notes.execution.phases == 0  # nothing ran through the execution model


@pytest.mark.parametrize("behaviour", [2, 3])
@pytest.mark.parametrize("comm", ["async", "sync"])
@pytest.mark.parametrize("procs, run_time", [(7, 3601), (48, 86400), (300, 123457)])
@pytest.mark.parametrize("dispatcher", ["hilbert", "manhattan"])
def test_i4_lone_dynamic_job_under_a_static_strategy_ends_by_est_plus_r(
    dispatcher, behaviour, comm, procs, run_time
):
    """I4 extended to types 2, 3 (static_request=peak, the default): a lone dynamic job books
    the nodes of its peak process count (ceil(3n/2) processes) and so ends within 10 % of
    its earliest start + R; with the nominal request its forks time-share the booked
    cores."""
    job = deadline_job(
        GRID, 1, 0, run_time, 100.0, 100.0 + 3 * run_time, AppSpec(behaviour, comm, procs)
    )
    r = run([job], dispatcher)
    assert r.status.tolist() == [3]
    peak = -(-((3 * procs + 1) // 2) // 4)  # ceil(ceil(3n / 2) / 4)
    assert len(r.bookings[0].nodes) == min(128, peak)
    assert r.end[0] - r.start[0] <= 1.1 * run_time
    nominal = run([job], f"{dispatcher}:static_request=nominal")
    assert len(nominal.bookings[0].nodes) == -(-procs // 4)


@pytest.mark.parametrize(
    "spec, said",
    [
        ("manhattan:growth=round", "growth must be one of strict, bend"),
        ("count-only:reading=pool", "reading must be one of line0, nodes"),
        ("hilbert:static_request=max", "static_request must be one of peak, nominal"),
        ("manhattan:static_request=all", "static_request must be one of peak, nominal"),
        ("leak:admission=later", "admission must be one of free-node, queue, overbook"),
        ("leak-nc:partial=false", "partial=false waits for a whole request"),
    ],
)
def test_new_readings_are_checked_parameters(spec, said):
    """Issue 48's options are named parameters, checked when the run is set up: a bad value
    is one error naming the dispatcher, the parameter and the choices."""
    from hpcdispatch.errors import ConfigError

    with pytest.raises(ConfigError, match=said):
        make_dispatcher(spec).setup(GRID)
