"""The independent validator catches every kind of violation (on corrupted schedules)."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import cores_system, job, simulate

from hpcdispatch.errors import ScheduleValidationError
from hpcdispatch.results import write_result
from hpcdispatch.results.store import workload_frame
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate_run_dir, validate_tables
from hpcdispatch.workload import load_workload


@pytest.fixture()
def tables():
    system = cores_system(2, 2)
    r = simulate(system, [job(1, 0, 10, units=2, req=(2,)), job(2, 1, 5, req=(2,)), job(3, 2, 5, req=(1,))], "fifo")
    return system, workload_frame(r), r.jobs_frame(), r.allocations_frame()


def check(system, wl, jobs, allocs, kill=True):
    return validate_tables(system, wl, jobs, allocs, walltime_kill=kill)


def test_a_valid_schedule_passes(tables):
    assert check(*tables).ok


def test_capacity_overflow_is_caught(tables):
    system, wl, jobs, allocs = tables
    allocs = allocs.copy()
    allocs.loc[allocs.job_id == 3, "node"] = 0  # job 3 [10, 15) on node 0 next to job 2
    allocs.loc[allocs.job_id == 2, "node"] = 0
    report = check(system, wl, jobs, allocs)
    first = report.first()
    assert first.kind == "capacity" and "node 0" in first.message and "3 core in use, capacity 2" in first.message
    with pytest.raises(ScheduleValidationError, match="capacity"):
        report.raise_if_invalid()


def test_start_before_submit_is_caught(tables):
    system, wl, jobs, allocs = tables
    jobs = jobs.copy()
    allocs = allocs.copy()
    jobs.loc[jobs.job_id == 2, ["start", "end"]] = [0.5, 5.5]
    allocs.loc[allocs.job_id == 2, ["from", "to"]] = [0.5, 5.5]
    kinds = {v.kind for v in check(system, wl, jobs, allocs).violations}
    assert "early" in kinds


def test_wrong_duration_is_caught(tables):
    system, wl, jobs, allocs = tables
    jobs = jobs.copy()
    allocs = allocs.copy()
    jobs.loc[jobs.job_id == 3, "end"] += 1
    allocs.loc[allocs.job_id == 3, "to"] += 1
    report = check(system, wl, jobs, allocs)
    assert [v.kind for v in report.violations] == ["duration"]
    assert "job 3 ran 6 s" in report.violations[0].message


def test_missing_never_started_and_twice(tables):
    system, wl, jobs, allocs = tables
    report = check(system, wl, jobs[jobs.job_id != 2], allocs[allocs.job_id != 2])
    assert any(v.kind == "missing" for v in report.violations)
    j2 = jobs.copy()
    j2.loc[j2.job_id == 2, ["start", "end"]] = [float("nan")] * 2
    report = check(system, wl, j2, allocs[allocs.job_id != 2])
    assert any(v.kind == "never" for v in report.violations)
    dup = pd.concat([allocs, allocs[allocs.job_id == 3].assign(**{"from": 12.0, "to": 17.0})])
    report = check(system, wl, jobs, dup)
    assert any(v.kind == "twice" for v in report.violations)


def test_wrong_units_and_amounts(tables):
    system, wl, jobs, allocs = tables
    a = allocs.copy()
    a.loc[a.job_id == 1, "core"] = 1
    assert any(v.kind == "amount" for v in check(system, wl, jobs, a).violations)
    b = allocs[~((allocs.job_id == 1) & (allocs.node == 1))]
    assert any(v.kind == "units" for v in check(system, wl, jobs, b).violations)


def test_killed_jobs_must_stop_at_their_walltime():
    system = cores_system(1, 1)
    r = simulate(system, [job(1, 0, 20, wall=10)], "fifo")
    wl, jobs, allocs = workload_frame(r), r.jobs_frame(), r.allocations_frame()
    assert check(system, wl, jobs, allocs).ok
    assert any(v.kind == "duration" for v in check(system, wl, jobs, allocs, kill=False).violations)


def test_run_directory_is_validated_against_its_source(tmp_path):
    system = load_system("machine-s")
    wl = load_workload("synthetic:lublin,jobs=200,seed=3", system)
    r = simulate(system, wl, "easy")
    write_result(r, tmp_path / "run")
    report = validate_run_dir(tmp_path / "run")
    assert report.ok and "matches the stored one" in report.notes[0]
    # tamper with the stored workload: the validator notices it no longer matches the source
    stored = pd.read_parquet(tmp_path / "run" / "workload.parquet")
    stored.loc[0, "run_time"] += 1
    stored.to_parquet(tmp_path / "run" / "workload.parquet", index=False)
    report = validate_run_dir(tmp_path / "run")
    assert not report.ok and "differs from its source" in report.violations[0].message


def test_node_listed_twice_unknown_rows_and_per_node_limit_are_caught():
    system = cores_system(2, 4)
    r = simulate(system, [job(1, 0, 10, units=2, req=(1,)), job(2, 0, 10, units=2, req=(1,), max_units_per_node=1)], "fifo")
    wl, jobs, allocs = workload_frame(r), r.jobs_frame(), r.allocations_frame()
    assert check(system, wl, jobs, allocs).ok
    # job 1 (2 units on node 0) listed as 1 + 1 units on node 0 in the same segment
    row = allocs[allocs.job_id == 1].iloc[0]
    split = pd.DataFrame([row, row]).assign(units=1, core=1)
    twice = pd.concat([allocs[allocs.job_id != 1], split], ignore_index=True)
    report = check(system, wl, jobs, twice)
    assert [v.kind for v in report.violations] == ["node-twice"] and "job 1 lists node 0 twice" in report.violations[0].message
    # job 2 (at most 1 unit per node) with both units on one node
    crowded = allocs.copy()
    crowded.loc[crowded.job_id == 2, "node"] = int(crowded[crowded.job_id == 2]["node"].iloc[0])
    kinds = {v.kind for v in check(system, wl, jobs, crowded).violations}
    assert "per-node" in kinds
    # rows of a job the workload does not have
    stray = pd.concat([allocs, allocs[allocs.job_id == 1].assign(job_id=99)], ignore_index=True)
    report = check(system, wl, jobs, stray)
    assert any(v.kind == "unknown" and "99" in v.message for v in report.violations)
