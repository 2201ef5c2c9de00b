"""Perturbed replicas of a workload: submission times moved by a seeded jitter, reproducible
from the run's recorded source (the validator re-reads it), and seeded replicas in sweeps."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import cores_system, job, trace
from hypothesis import given, settings
from hypothesis import strategies as hst
from sweeps import write_spec

from hpcdispatch.errors import ConfigError
from hpcdispatch.sweep import SweepSpecError, load_sweep
from hpcdispatch.workload.job import Workload, WorkloadSource
from hpcdispatch.workload.loader import load_workload, workload_from_source
from hpcdispatch.workload.swf import SwfOptions


def small() -> Workload:
    jobs = [job(1, 100, 50), job(2, 100, 60), job(3, 130, 10), job(4, 500, 20)]
    return Workload(jobs, ("core",), WorkloadSource("memory", "<test>", {"max_jobs": None}))


def test_each_submission_moves_by_the_seeded_draw_never_before_the_first():
    w = small()
    shift = (
        np.random.default_rng(5).integers(-40, 41, size=4).tolist()
    )  # the documented draw, job by job
    moved = w.jittered(40, seed=5)
    expected = {j.id: max(100, j.submit + dt) for j, dt in zip(w.jobs, shift)}
    assert {j.id: j.submit for j in moved} == expected
    assert list(moved.submit) == sorted(expected.values())  # kept in submission order
    assert [j.index for j in moved] == [0, 1, 2, 3]
    # everything but the submission is untouched
    assert {j.id: (j.run_time, j.wall_time, j.units) for j in moved} == {
        j.id: (j.run_time, j.wall_time, j.units) for j in w
    }
    assert moved.source.options == {"max_jobs": None, "submit_jitter": 40, "jitter_seed": 5}
    assert "jittered by up to 40 s (seed 5)" in moved.report.describe()
    assert not any("jittered" in n for n in w.report.notes)  # the original's report is left alone


def test_a_seed_is_a_replica_and_zero_jitter_is_the_trace():
    w = small()
    assert [j.submit for j in w.jittered(40, 5)] == [j.submit for j in w.jittered(40, 5)]
    replicas = {tuple(sorted((j.id, j.submit) for j in w.jittered(40, s))) for s in range(8)}
    assert len(replicas) > 1
    assert w.jittered(0, 5) is w
    with pytest.raises(ConfigError, match="submit jitter must be >= 0"):
        w.jittered(-1, 0)
    with pytest.raises(ConfigError, match="submit_jitter must be >= 0"):
        SwfOptions(submit_jitter=-3)


def test_a_jittered_trace_reloads_from_its_recorded_source():
    system = cores_system(128, 1)
    path = trace("SDSC-SP2-1998-4.2-cln.swf.gz")
    plain = load_workload(str(path), system, SwfOptions(max_jobs=300))
    moved = load_workload(
        str(path), system, SwfOptions(max_jobs=300, submit_jitter=60, jitter_seed=2)
    )
    assert len(moved) == 300 and sorted(moved.ids) == sorted(
        plain.ids
    )  # max_jobs first, then the jitter
    before = dict(zip(plain.ids.tolist(), plain.submit.tolist()))
    after = dict(zip(moved.ids.tolist(), moved.submit.tolist()))
    assert max(abs(after[i] - before[i]) for i in before) <= 60 and after != before
    again = workload_from_source(moved.source.kind, moved.source.spec, moved.source.options, system)
    assert [(j.id, j.submit) for j in again] == [(j.id, j.submit) for j in moved]


@pytest.mark.slow
def test_simulate_with_jitter_validates_against_the_re_read_workload(tmp_path):
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin"}
    out = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "simulate",
        "-w",
        "synthetic:lublin,jobs=200,seed=4",
        "--submit-jitter",
        "120",
        "--jitter-seed",
        "9",
        "-d",
        "easy",
        "-o",
        str(out),
        "-q",
    ]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "run.json").read_text())["workload"]["options"]["submit_jitter"] == 120
    v = subprocess.run(
        [sys.executable, "-m", "hpcdispatch", "validate", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert v.returncode == 0 and "schedule valid" in v.stdout and "re-read" in v.stdout, v.stdout
    bad = subprocess.run(
        args[:-4] + ["--submit-jitter", "-5", "-q"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_sweep_seeds_replicate_a_trace_only_with_jitter(tmp_path):
    base = 'dispatchers = ["easy"]\n[[workloads]]\ntrace = "traces/x.swf.gz"\nmax_jobs = 100\n'
    plain = load_sweep(write_spec(tmp_path, base)).cells
    assert (
        len(plain) == 1 and "submit_jitter" not in plain[0].config["workload"]
    )  # older sweeps keep their ids
    assert plain[0].swf_options().submit_jitter == 0
    replicas = load_sweep(
        write_spec(tmp_path, base + "submit_jitter = 60\nseeds = { from = 1, count = 3 }\n")
    ).cells
    assert len({c.id for c in replicas}) == 3 and plain[0].id not in {c.id for c in replicas}
    assert [c.labels["seed"] for c in replicas] == [1, 2, 3]
    assert [(c.swf_options().submit_jitter, c.swf_options().jitter_seed) for c in replicas] == [
        (60, 1),
        (60, 2),
        (60, 3),
    ]
    assert replicas[0].config["workload"]["submit_jitter"] == 60
    with pytest.raises(SweepSpecError, match=r"seeds on a trace need submit_jitter > 0"):
        load_sweep(write_spec(tmp_path, base + "seeds = [1, 2]\n"))
    with pytest.raises(SweepSpecError, match=r"submit_jitter: must be >= 0"):
        load_sweep(write_spec(tmp_path, base + "submit_jitter = -1\n"))


def reference_jitter(w: Workload, seconds: int, seed: int) -> list:
    """The replica job by job, as the definition reads (each submission moved by its draw,
    never before the first; deadline and earliest start moved with it; then sorted, ties in
    the original order)."""
    shift = np.random.default_rng(seed).integers(-seconds, seconds + 1, size=len(w)).tolist()
    first = min(j.submit for j in w.jobs)
    moved = []
    for j, dt in zip(w.jobs, shift):
        submit = max(first, j.submit + dt)
        d = submit - j.submit
        moved.append(
            j._replace(
                submit=submit,
                deadline=None if j.deadline is None else j.deadline + d,
                earliest_start=None if j.earliest_start is None else j.earliest_start + d,
            )
        )
    moved.sort(key=lambda j: j.submit)  # (stable)
    return [j._replace(index=pos) for pos, j in enumerate(moved)]


@settings(deadline=None, max_examples=60)
@given(
    hst.lists(
        hst.tuples(hst.integers(0, 300), hst.integers(1, 50), hst.booleans(), hst.booleans()),
        min_size=1,
        max_size=40,
    ),
    hst.integers(1, 120),
    hst.integers(0, 2**32 - 1),
)
def test_the_replica_is_the_definitions_job_for_job(rows, seconds, seed):
    """The one-pass replica (built in its final order, with the columns handed over) equals the
    definition's, field by field, and its columns are its jobs' (deadline jobs included)."""
    jobs = []
    for i, (submit, run, has_deadline, has_est) in enumerate(sorted(rows)):
        j = job(i + 1, submit, run)
        if has_deadline:
            j = j._replace(deadline=float(submit + 3 * run))
        if has_est:
            j = j._replace(earliest_start=float(submit + 5))
        jobs.append(j)
    w = Workload(jobs, ("core",), WorkloadSource("memory", "<test>", {}))
    replica = w.jittered(seconds, seed)
    assert list(replica.jobs) == reference_jitter(w, seconds, seed)
    assert all(type(j) is type(jobs[0]) for j in replica.jobs)
    rebuilt = Workload(list(replica.jobs), ("core",))  # the columns from the jobs themselves
    _ = w.users  # (a column the original has computed is handed over to the replica too)
    replica = w.jittered(seconds, seed)
    assert "users" in replica.__dict__
    for name in Workload.COLUMNS:
        np.testing.assert_array_equal(getattr(replica, name), getattr(rebuilt, name), err_msg=name)


# --- a workload held as columns (a trace reader's): its jobs built only when asked for -------------


def columns_of(jobs: list) -> dict[str, np.ndarray]:
    return {
        name: np.array([getattr(j, name) for j in jobs], dtype=np.int64)
        for name in Workload.PLAIN_FIELDS
    }


plain_jobs = hst.lists(
    hst.tuples(
        hst.integers(0, 500),
        hst.integers(1, 300),
        hst.integers(1, 400),
        hst.integers(1, 8),
        hst.integers(0, 3),
        hst.integers(-1, 4),
    ),
    min_size=1,
    max_size=25,
).map(
    lambda rows: [
        job(
            i + 1, submit, run, units=units, wall=wall, user=user, queue=queue, processors=3 * units
        )
        for i, (submit, run, wall, units, user, queue) in enumerate(
            sorted(rows, key=lambda r: r[0])
        )
    ]
)


@given(plain_jobs, hst.integers(0, 90), hst.integers(0, 5), hst.integers(1, 30))
@settings(max_examples=60, deadline=None)
def test_a_workload_of_columns_is_the_workload_of_its_jobs(jobs, jitter, seed, n):
    source = WorkloadSource("memory", "<test>", {"max_jobs": None})
    of_jobs = Workload(jobs, ("core",), source)
    of_columns = Workload.of_plain_columns(columns_of(jobs), ("core",), source)
    assert not of_columns.jobs_built and len(of_columns) == len(jobs)
    for name in Workload.COLUMNS:  # the columns, before any job exists
        assert np.array_equal(getattr(of_columns, name), getattr(of_jobs, name)), name
    for flag in ("has_deadlines", "has_apps", "has_constraints", "has_growth"):
        assert getattr(of_columns, flag) is getattr(of_jobs, flag) is False
    assert not of_columns.jobs_built
    # replicas and prefixes stay columns, and equal those of the jobs
    for a, b in (
        (of_columns.jittered(jitter, seed), of_jobs.jittered(jitter, seed)),
        (of_columns.subset(n), of_jobs.subset(n)),
    ):
        assert (a is of_columns) == (b is of_jobs)
        assert a is of_columns or not a.jobs_built
        assert np.array_equal(a.submit, b.submit) and np.array_equal(a.ids, b.ids)
        assert a.jobs == b.jobs and a.source == b.source and a.report.notes == b.report.notes
    assert of_columns.jobs == of_jobs.jobs  # built on demand: the same named tuples, indices set
    assert of_columns.jobs_built and of_columns[0] == of_jobs[0]


def test_a_workload_of_columns_refuses_what_a_workload_of_jobs_refuses():
    jobs = [job(1, 100, 50), job(2, 100, 60), job(3, 130, 10)]
    cols = columns_of(jobs)
    with pytest.raises(ConfigError, match="duplicate job id 2"):
        Workload.of_plain_columns({**cols, "id": np.array([1, 2, 2])}, ("core",))
    with pytest.raises(ValueError, match="submission order"):
        Workload.of_plain_columns({**cols, "submit": np.array([100, 90, 130])}, ("core",))
    with pytest.raises(
        ConfigError, match=r"column unit_request has shape \(3, 1\), expected \(3, 2\)"
    ):
        Workload.of_plain_columns(cols, ("core", "gpu"))
    with pytest.raises(
        ConfigError, match="column run_time holds float64 values; job fields are integers"
    ):
        Workload.of_plain_columns({**cols, "run_time": np.array([50.5, 60.0, 10.0])}, ("core",))
    with pytest.raises(ValueError, match=r"missing \['processors'\]"):
        Workload.of_plain_columns({k: v for k, v in cols.items() if k != "processors"}, ("core",))


def test_a_trace_run_on_the_compiled_engine_builds_no_job_objects(tmp_path):
    """The point of the columns: reading, simulating, validating and writing a 30,000-job trace
    on the compiled engine never turns its jobs into Python objects; a pickled copy (a sweep's
    worker, a checkpoint) stays columns too, and builds the same jobs."""
    import pickle

    from hpcdispatch.runner import run_simulation
    from hpcdispatch.sim import SimulationOptions
    from hpcdispatch.system.io import load_system

    system = load_system("kth-sp2")
    wl = load_workload(str(trace("KTH-SP2-1996-2.1-cln.swf.gz")), system)
    outcome = run_simulation(
        system, wl, "easy", options=SimulationOptions(engine="compiled"), out_dir=tmp_path / "run"
    )
    assert outcome.validation.ok and outcome.result.notes.engine == "compiled"
    assert not wl.jobs_built
    copy = pickle.loads(pickle.dumps(wl))
    assert not copy.jobs_built and len(copy) == len(wl) == 28467
    assert copy.jobs[1000] == wl.jobs[1000] and copy.jobs[1000].index == 1000


def test_a_workload_of_columns_builds_its_jobs_once_for_all_threads():
    import threading

    cols = columns_of([job(i, i, 10) for i in range(1, 20001)])
    wl = Workload.of_plain_columns(cols, ("core",))
    seen, start = [], threading.Barrier(4)

    def ask() -> None:
        start.wait()
        seen.append(wl.jobs)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(jobs is wl.jobs for jobs in seen)


def test_a_workload_pickled_by_an_older_version_still_loads():
    """Before the columns, ``jobs`` was an attribute of the pickled state."""
    w = small()
    old = {k: v for k, v in w.__dict__.items() if k not in ("_jobs", "_n_jobs", "_plain_fields")}
    old["jobs"] = w.jobs
    revived = Workload.__new__(Workload)
    revived.__setstate__(old)
    assert len(revived) == 4 and revived.jobs == w.jobs and list(revived.submit) == list(w.submit)


def test_the_python_engine_freezes_a_workload_of_columns_with_its_jobs(monkeypatch):
    """The Python loop moves the workload's jobs out of the collector's sight (gc.freeze);
    a workload of columns builds them before that, not during the run."""
    import gc

    from hpcdispatch.sim import SimulationOptions
    from hpcdispatch.sim.simulator import Simulator
    from hpcdispatch.system.io import load_system

    system = load_system("kth-sp2")
    wl = load_workload(str(trace("KTH-SP2-1996-2.1-cln.swf.gz")), system, SwfOptions(max_jobs=3000))
    assert not wl.jobs_built
    frozen = []
    real_loop = Simulator._loop

    def loop(self, progress):
        frozen.append((wl.jobs_built, gc.get_freeze_count()))
        return real_loop(self, progress)

    monkeypatch.setattr(Simulator, "_loop", loop)
    from hpcdispatch.engine import simulate

    simulate(system, wl, "sjf", options=SimulationOptions(engine="python"))
    built, count = frozen[0]
    assert built and count >= 2 * len(wl)  # (each job: its tuple and its request tuple, at least)
