"""The independent validator catches every kind of violation (on corrupted schedules)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from helpers import cores_system, job, simulate, trace

from hpcdispatch.errors import ScheduleValidationError
from hpcdispatch.results import write_result
from hpcdispatch.results.store import workload_frame
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate_result, validate_run_dir, validate_tables
from hpcdispatch.workload import load_workload
from hpcdispatch.workload.job import GrowthRequest, Workload
from hpcdispatch.workload.loader import resolve_system
from hpcdispatch.workload.swf import SwfOptions


@pytest.fixture()
def tables():
    system = cores_system(2, 2)
    r = simulate(
        system,
        [job(1, 0, 10, units=2, req=(2,)), job(2, 1, 5, req=(2,)), job(3, 2, 5, req=(1,))],
        "fifo",
    )
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
    assert (
        first.kind == "capacity"
        and "node 0" in first.message
        and "3 core in use, capacity 2" in first.message
    )
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
    r = simulate(
        system,
        [job(1, 0, 10, units=2, req=(1,)), job(2, 0, 10, units=2, req=(1,), max_units_per_node=1)],
        "fifo",
    )
    wl, jobs, allocs = workload_frame(r), r.jobs_frame(), r.allocations_frame()
    assert check(system, wl, jobs, allocs).ok
    # job 1 (2 units on node 0) listed as 1 + 1 units on node 0 in the same segment
    row = allocs[allocs.job_id == 1].iloc[0]
    split = pd.DataFrame([row, row]).assign(units=1, core=1)
    twice = pd.concat([allocs[allocs.job_id != 1], split], ignore_index=True)
    report = check(system, wl, jobs, twice)
    assert [v.kind for v in report.violations] == [
        "node-twice"
    ] and "job 1 lists node 0 twice" in report.violations[0].message
    # job 2 (at most 1 unit per node) with both units on one node
    crowded = allocs.copy()
    crowded.loc[crowded.job_id == 2, "node"] = int(crowded[crowded.job_id == 2]["node"].iloc[0])
    kinds = {v.kind for v in check(system, wl, jobs, crowded).violations}
    assert "per-node" in kinds
    # rows of a job the workload does not have
    stray = pd.concat([allocs, allocs[allocs.job_id == 1].assign(job_id=99)], ignore_index=True)
    report = check(system, wl, jobs, stray)
    assert any(v.kind == "unknown" and "99" in v.message for v in report.violations)


def test_node_listed_twice_is_caught_when_a_jobs_rows_are_apart():
    """The rule's quick path (each job's rows together, keys rising) does not hide a node
    listed twice in rows apart, nor calls rows apart a repeat."""
    system = cores_system(4, 1)
    r = simulate(
        system, [job(1, 0, 10, units=2, req=(1,)), job(2, 0, 10, units=2, req=(1,))], "fifo"
    )
    wl, jobs, allocs = workload_frame(r), r.jobs_frame(), r.allocations_frame()
    one, two = allocs[allocs.job_id == 1], allocs[allocs.job_id == 2]
    assert list(one.node) == [0, 1] and list(two.node) == [2, 3]
    # job 1's rows on both sides of job 2's, in rising order each: still valid
    apart = pd.concat([one.iloc[[0]], two, one.iloc[[1]]], ignore_index=True)
    assert check(system, wl, jobs, apart).ok
    # job 1's second row on node 0 again, after job 2's rows: node 0 twice in segment 0
    again = pd.concat([one.iloc[[0]], two, one.iloc[[0]]], ignore_index=True)
    assert [
        (v.kind, v.message.split(" (")[0])
        for v in check(system, wl, jobs, again).violations
        if v.kind == "node-twice"
    ] == [("node-twice", "job 1 lists node 0 twice in segment 0")]


# ---- issue 33: nothing lost, nothing false ------------------------------------------------


def kinds(report):
    return {v.kind for v in report.violations}


def test_nan_times_never_drop_a_row_out_of_the_capacity_sweep():
    # 2 single-core nodes, jobs 1 and 2 both run [0, 10): job 2 moved onto job 1's node
    system = cores_system(2, 1)
    r = simulate(system, [job(1, 0, 10), job(2, 0, 10)], "fifo")
    wl, jobs, allocs = workload_frame(r), r.jobs_frame(), r.allocations_frame()
    assert check(system, wl, jobs, allocs).ok
    for cols in (["from"], ["to"], ["from", "to"]):
        a = allocs.copy()
        a.loc[a.job_id == 2, "node"] = 0
        a.loc[a.job_id == 2, cols] = float("nan")
        report = check(system, wl, jobs, a)
        assert not report.ok, cols
        assert any(
            v.kind == "time" and "job 2" in v.message and "node 0" in v.message
            for v in report.violations
        ), cols
        # the row still takes part in the sweep (at the job's own start and end)
        assert any(v.kind == "capacity" and "node 0" in v.message for v in report.violations), cols
    for value in (float("inf"), float("-inf")):
        a = allocs.copy()
        a.loc[a.job_id == 2, "to"] = value
        report = check(system, wl, jobs, a)
        assert any(v.kind == "time" and "job 2" in v.message for v in report.violations)
    # an empty or negative interval is reported, not silently left out
    a = allocs.copy()
    a.loc[a.job_id == 2, ["node", "from", "to"]] = [0, 5.0, 5.0]
    assert any(
        v.kind == "time" and "job 2" in v.message for v in check(system, wl, jobs, a).violations
    )
    # a node (or a unit count) that is not an integer: reported, never a crash
    for col, value in (("node", float("nan")), ("units", 1.5)):
        a = allocs.astype({col: float})
        a.loc[a.job_id == 2, col] = value
        report = check(system, wl, jobs, a)
        assert any(v.kind == "row" and "job 2" in v.message for v in report.violations), col
    # a non-finite start or end of a started job
    for col in ("start", "end"):
        j = jobs.copy()
        j.loc[j.job_id == 1, col] = float("inf")
        report = check(system, wl, j, allocs)
        assert any(v.kind == "time" and "job 1" in v.message for v in report.violations), col


def test_nan_from_in_a_run_directory_is_caught(tmp_path):
    # a row moved onto a node busy with another job: caught as a capacity violation, and
    # still caught once its ``from`` is NaN
    system = load_system("machine-s")
    r = simulate(system, load_workload("synthetic:lublin,jobs=80,seed=3,load=1.2", system), "easy")
    write_result(r, tmp_path / "run")
    allocs = pd.read_parquet(tmp_path / "run" / "allocations.parquet")
    wl, jobs = (
        pd.read_parquet(tmp_path / "run" / "workload.parquet"),
        pd.read_parquet(tmp_path / "run" / "jobs.parquet"),
    )
    for k in allocs.index:
        b_job = allocs.job_id[k]
        busy = allocs[
            (allocs["from"] < allocs.to[k])
            & (allocs.to > allocs["from"][k])
            & (allocs.job_id != b_job)
            & ~allocs.node.isin(allocs.node[allocs.job_id == b_job])
        ]
        moved = [
            allocs.assign(node=allocs.node.where(allocs.index != k, n)) for n in busy.node.unique()
        ]
        moved = [a for a in moved if "capacity" in kinds(check(system, wl, jobs, a))]
        if moved:
            break
    a = moved[0]
    node = int(a.node[k])
    a.loc[k, "from"] = float("nan")
    assert check(system, wl, jobs, a).violations  # (fails before the fix: the row drops out)
    a.to_parquet(tmp_path / "run" / "allocations.parquet", index=False)
    report = validate_run_dir(tmp_path / "run")
    assert not report.ok
    assert any(
        f"job {b_job}" in v.message and f"node {node}" in v.message for v in report.violations
    )


def rejected_tables(tables, reason=""):
    system, wl, jobs, allocs = tables
    jobs = jobs.copy()
    jobs.loc[jobs.job_id == 3, ["start", "end"]] = float("nan")
    jobs.loc[jobs.job_id == 3, ["status", "reject_reason"]] = ["rejected", reason]
    jobs.loc[jobs.job_id == 3, "killed"] = False
    return system, wl, jobs, allocs[allocs.job_id != 3]


def test_rejections_must_be_declared_and_explained(tables):
    system, wl, jobs, allocs = rejected_tables(tables)
    # EASY / FIFO never reject: a job removed from the schedule and marked rejected is caught
    report = validate_tables(system, wl, jobs, allocs, dispatcher_tags={"rejects": False})
    assert any(
        v.kind == "rejected" and "job 3" in v.message and "never rejects" in v.message
        for v in report.violations
    )
    assert any(
        v.kind == "rejected" and "job 3" in v.message and "without a reason" in v.message
        for v in report.violations
    )
    # a dispatcher that may reject: only with a reason
    report = validate_tables(system, wl, jobs, allocs, dispatcher_tags={"rejects": True})
    assert [v.kind for v in report.violations] == [
        "rejected"
    ] and "without a reason" in report.violations[0].message
    system, wl, jobs, allocs = rejected_tables(tables, reason="too wide")
    assert validate_tables(system, wl, jobs, allocs, dispatcher_tags={"rejects": True}).ok
    # tags unknown (an old run): said in the notes, no verdict invented
    report = validate_tables(system, wl, jobs, allocs)
    assert report.ok and any("rejects" in n and "unknown" in n for n in report.notes)
    # a rejected job that still holds allocation rows or has a start
    allocs0 = tables[3]
    report = validate_tables(system, wl, jobs, allocs0, dispatcher_tags={"rejects": True})
    assert any(
        v.kind == "rejected" and "job 3" in v.message and "allocation" in v.message
        for v in report.violations
    )


def test_run_dir_rejections_are_checked_against_run_json(tmp_path):
    system = cores_system(2, 2)
    r = simulate(
        system,
        [job(1, 0, 10, units=2, req=(2,)), job(2, 1, 5, req=(2,)), job(3, 2, 5, req=(1,))],
        "fifo",
    )
    write_result(r, tmp_path / "run")
    assert (
        json.loads((tmp_path / "run" / "run.json").read_text())["dispatcher_tags"]["rejects"]
        is False
    )
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    jobs.loc[jobs.job_id == 3, ["start", "end"]] = float("nan")
    jobs.loc[jobs.job_id == 3, ["status", "reject_reason"]] = ["rejected", "no room"]
    jobs.to_parquet(tmp_path / "run" / "jobs.parquet", index=False)
    allocs = pd.read_parquet(tmp_path / "run" / "allocations.parquet")
    allocs[allocs.job_id != 3].to_parquet(tmp_path / "run" / "allocations.parquet", index=False)
    report = validate_run_dir(tmp_path / "run")
    assert any(v.kind == "rejected" and "job 3" in v.message for v in report.violations)


def test_validate_result_reads_the_tags_of_the_result():
    from test_simulator import RejectWide

    r = simulate(cores_system(2, 1), [job(1, 0, 5, units=2), job(2, 0, 5)], RejectWide())  # valid
    r.tags = {**r.tags, "rejects": False}
    report = validate_result(r)
    assert any(v.kind == "rejected" and "job 1" in v.message for v in report.violations)


def test_an_extra_segment_for_a_job_that_never_grows_is_caught(tmp_path):
    system = load_system("machine-s")
    r = simulate(system, load_workload("synthetic:lublin,jobs=40,seed=3", system), "easy")
    write_result(r, tmp_path / "run")
    allocs = pd.read_parquet(tmp_path / "run" / "allocations.parquet")
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    victim = jobs.iloc[0]
    during = allocs[(allocs["from"] < victim.end) & (allocs.to > victim.start + 1)]
    free_node = next(n for n in range(system.n_nodes) if n not in set(during.node))
    extra = allocs[allocs.job_id == victim.job_id].iloc[[0]].assign(segment=1, node=free_node)
    extra["from"] = victim.start + 1
    pd.concat([allocs, extra], ignore_index=True).to_parquet(
        tmp_path / "run" / "allocations.parquet", index=False
    )
    report = validate_run_dir(tmp_path / "run")
    assert any(
        v.kind == "growth" and f"job {int(victim.job_id)}" in v.message for v in report.violations
    )
    # without the workload's source (growth requests unknown): a note, not a silent pass
    report = validate_run_dir(tmp_path / "run", reload_workload=False)
    assert any("segment" in n and f"job {int(victim.job_id)}" in n for n in report.notes)
    # (--no-reload never gives "valid": the workload was not re-derived)
    assert report.unverified and not report.ok, report.describe()


def grown_run():
    from test_simulator import GrowFirstFit

    j1 = job(1, 0, 20, growth=(GrowthRequest(after=3, units=1), GrowthRequest(after=5, units=1)))
    r = simulate(cores_system(4, 1), [j1, job(2, 6, 5)], GrowFirstFit())
    return r


def test_growth_segments_must_match_the_growth_requests():
    r = grown_run()
    system, wl, jobs, allocs = r.system, workload_frame(r), r.jobs_frame(), r.allocations_frame()
    growth = {1: [(3.0, 1), (5.0, 1)]}
    assert validate_tables(system, wl, jobs, allocs, growth=growth).ok
    assert validate_tables(
        system, wl, jobs, allocs, growth={1: [(3.0, 1), (4.0, 1), (5.0, 1)]}
    ).ok  # one refused
    # a segment at another time than its request's
    a = allocs.copy()
    a.loc[(a.job_id == 1) & (a.segment == 2), "from"] = 6.0
    report = validate_tables(system, wl, jobs, a, growth=growth)
    assert any(
        v.kind == "growth" and "job 1" in v.message and "segment 2" in v.message
        for v in report.violations
    )
    # more units than requested
    a = allocs.copy()
    a.loc[(a.job_id == 1) & (a.segment == 1), ["units", "core"]] = 2
    report = validate_tables(system, wl, jobs, a, growth=growth)
    assert any(v.kind == "growth" and "job 1" in v.message for v in report.violations)
    # more segments than requests
    report = validate_tables(system, wl, jobs, allocs, growth={1: [(3.0, 1)]})
    assert any(v.kind == "growth" and "job 1" in v.message for v in report.violations)
    # growth unknown: a note
    report = validate_tables(system, wl, jobs, allocs)
    assert report.ok and any("job 1" in n and "segment" in n for n in report.notes)


def test_validate_result_reads_the_growth_requests_of_the_workload():
    r = grown_run()
    assert validate_result(r).ok
    plain = Workload([j._replace(growth=()) for j in r.workload.jobs], r.workload.resources)
    report = validate_result(dataclasses.replace(r, workload=plain))
    assert any(v.kind == "growth" and "job 1" in v.message for v in report.violations)


def kth_run(tmp_path):
    system = load_system("kth-sp2")
    r = simulate(system, load_workload("synthetic:lublin,jobs=60,seed=2", system), "easy")
    write_result(r, tmp_path / "run")
    return tmp_path / "run"


def test_the_stored_system_is_checked_against_the_preset_the_run_names(tmp_path):
    run = kth_run(tmp_path)
    toml = (run / "system.toml").read_text()
    assert "count = 100" in toml
    (run / "system.toml").write_text(toml.replace("count = 100", "count = 101"))
    allocs = pd.read_parquet(run / "allocations.parquet")
    j = int(allocs.job_id.iloc[-1])
    allocs.loc[allocs.index[-1], "node"] = 100
    allocs.to_parquet(run / "allocations.parquet", index=False)
    report = validate_run_dir(run)
    assert any(
        v.kind == "system" and "kth-sp2" in v.message and "101" in v.message
        for v in report.violations
    )
    assert any(
        v.kind == "node" and f"job {j}" in v.message and "node 100" in v.message
        for v in report.violations
    )


def test_every_workload_column_is_compared_with_the_source(tmp_path):
    run = kth_run(tmp_path)
    stored = pd.read_parquet(run / "workload.parquet")
    stored.loc[3, "max_units_per_node"] = 1
    stored.to_parquet(run / "workload.parquet", index=False)
    report = validate_run_dir(run)
    assert any(
        "max_units_per_node" in v.message and "differs from its source" in v.message
        for v in report.violations
    )


@pytest.mark.parametrize("status", ["queued", "pending", "running", "finished"])
def test_unfinished_or_unknown_status_is_caught(tables, status):
    system, wl, jobs, allocs = tables
    j = jobs.copy()
    j.loc[j.job_id == 3, "status"] = status
    report = check(system, wl, j, allocs)
    assert any(
        v.kind == "status" and "job 3" in v.message and status in v.message
        for v in report.violations
    )


def test_status_must_agree_with_start_and_end(tables):
    system, wl, jobs, allocs = tables
    j = jobs.copy()
    j.loc[j.job_id == 3, "status"] = "killed"  # ran its full run time
    assert any(
        v.kind == "status" and "job 3" in v.message for v in check(system, wl, j, allocs).violations
    )
    j = jobs.copy()
    j.loc[j.job_id == 3, "end"] = float("nan")
    assert any(
        v.kind == "status" and "job 3" in v.message for v in check(system, wl, j, allocs).violations
    )


@pytest.mark.parametrize(
    "field",
    [
        "jobs",
        "started",
        "rejected",
        "killed",
        "wait_mean",
        "slowdown_mean",
        "bounded_slowdown_mean",
        "makespan",
    ],
)
def test_the_summary_is_recomputed_from_the_tables(tmp_path, field):
    system = load_system("machine-s")
    r = simulate(system, load_workload("synthetic:lublin,jobs=60,seed=3,load=1.2", system), "easy")
    write_result(r, tmp_path / "run")
    assert validate_run_dir(tmp_path / "run").ok
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    true = summary[field]
    summary[field] = true + 1
    path.write_text(json.dumps(summary))
    report = validate_run_dir(tmp_path / "run")
    assert [v.kind for v in report.violations] == ["summary"]
    msg = report.violations[0].message
    assert field in msg and f"{true + 1:.12g}" in msg and f"{true:.12g}" in msg


def test_a_system_derived_from_the_trace_header_is_derived_again(tmp_path):
    path = str(trace("KTH-SP2-1996-2.1-cln.swf.gz"))
    system = resolve_system("from-trace", path)
    r = simulate(system, load_workload(path, system, SwfOptions(max_jobs=60)), "easy")
    write_result(r, tmp_path / "run")
    assert validate_run_dir(tmp_path / "run").ok
    toml = (tmp_path / "run" / "system.toml").read_text()
    (tmp_path / "run" / "system.toml").write_text(toml.replace("core = 1", "core = 2"))
    report = validate_run_dir(tmp_path / "run")
    assert any(
        v.kind == "system" and "SWF header" in v.message and "core = 2" in v.message
        for v in report.violations
    )


def test_tables_as_frames_and_as_columns_get_the_same_verdict(tables):
    """A result in memory is validated from its numpy columns (no pandas), a run directory
    from its frames: the same broken schedule gets the same violations either way (broken
    here several ways: capacity, a start before its submission, a non-integer node, a
    rejection without a reason)."""
    system, wl, jobs, allocs = tables
    jobs, allocs = jobs.copy(), allocs.copy()
    allocs.loc[allocs.job_id == 3, "node"] = 0
    allocs.loc[allocs.job_id == 2, "node"] = 0
    jobs.loc[jobs.job_id == 2, ["start", "end"]] = [0.5, 5.5]
    allocs["node"] = allocs["node"].astype(float)
    allocs.loc[allocs.index[0], "node"] = 0.5
    jobs["reject_reason"] = jobs["reject_reason"].astype(object)
    jobs.loc[jobs.job_id == 1, ["status", "start", "end", "reject_reason"]] = [
        "rejected",
        np.nan,
        np.nan,
        None,
    ]
    as_frames = validate_tables(system, wl, jobs, allocs, dispatcher_tags={"rejects": True})
    as_columns = validate_tables(
        system,
        {c: wl[c].to_numpy() for c in wl.columns},
        {c: jobs[c].to_numpy() for c in jobs.columns},
        {c: allocs[c].to_numpy() for c in allocs.columns},
        dispatcher_tags={"rejects": True},
    )
    kinds = {v.kind for v in as_frames.violations}
    assert {"capacity", "early", "row", "rejected"} <= kinds, kinds
    assert [(v.time, v.kind, v.message) for v in as_frames.violations] == [
        (v.time, v.kind, v.message) for v in as_columns.violations
    ]


@pytest.mark.parametrize(
    "missing", [None, np.nan, np.float32("nan"), "   ", b" ", "pd.NA", "pd.NA[pyarrow]", "Decimal"]
)
def test_a_rejection_without_a_reason_is_caught_whatever_stands_for_missing(tables, missing):
    """A reason that is missing in any of the forms frames and columns hold it (None, NaN of
    any kind, pandas' NA in its string types, blank text) is no reason: the rejection is
    reported, from a frame and from numpy columns alike; a real reason is accepted."""
    from decimal import Decimal

    system, wl, jobs, allocs = tables
    jobs = jobs.copy()
    allocs = allocs[allocs.job_id != 1]
    jobs.loc[jobs.job_id == 1, ["status", "start", "end"]] = ["rejected", np.nan, np.nan]
    reasons = pd.Series(["", "", ""], dtype=object)
    if missing == "Decimal":
        reasons[0] = Decimal("nan")
    elif missing in ("pd.NA", "pd.NA[pyarrow]"):
        reasons = pd.Series(
            [pd.NA, "", ""], dtype="string[pyarrow]" if "pyarrow" in missing else "string"
        )
    else:
        reasons[0] = missing
    jobs["reject_reason"] = reasons.to_numpy() if reasons.dtype == object else reasons.array
    tags = {"rejects": True}
    from_frame = validate_tables(system, wl, jobs, allocs, dispatcher_tags=tags)
    rejected = [v.message for v in from_frame.violations if v.kind == "rejected"]
    assert rejected == [
        "job 1 (submitted at 0) is rejected without a reason (every rejection carries the "
        "dispatcher's reason)"
    ], from_frame.describe()
    if reasons.dtype == object or missing == "pd.NA":
        as_columns = {c: jobs[c].to_numpy() for c in jobs.columns}
        if (
            missing == "pd.NA"
        ):  # (pandas' NA itself in an object column, as a caller may hand it over)
            as_columns["reject_reason"] = np.array([pd.NA, "", ""], dtype=object)
        from_columns = validate_tables(
            system,
            {c: wl[c].to_numpy() for c in wl.columns},
            as_columns,
            {c: allocs[c].to_numpy() for c in allocs.columns},
            dispatcher_tags=tags,
        )
        assert [v.message for v in from_columns.violations if v.kind == "rejected"] == rejected
    jobs["reject_reason"] = pd.Series(["queue full", "", ""], dtype=object).to_numpy()
    assert not [
        v
        for v in validate_tables(system, wl, jobs, allocs, dispatcher_tags=tags).violations
        if v.kind == "rejected"
    ]


def _one_deadline_job(run_for: float, behaviour: int = 0, status: str = "completed"):
    """One whole-node deadline job (run time 100 s, 16 processes, type ``behaviour``) on node 0
    of two 8-core nodes, started at 0 and ended after ``run_for`` seconds."""
    system = cores_system(2, 8)
    workload = {
        "job_id": np.array([1]),
        "submit": np.array([0.0]),
        "run_time": np.array([100.0]),
        "wall_time": np.array([1000.0]),
        "units": np.array([1]),
        "unit_core": np.array([8]),
        "max_units_per_node": np.array([0]),
        "earliest_start": np.array([0.0]),
        "deadline": np.array([500.0]),
        "whole_nodes": np.array([True]),
        "behaviour": np.array([behaviour]),
        "processes": np.array([16]),
    }
    jobs = {
        "job_id": np.array([1]),
        "start": np.array([0.0]),
        "end": np.array([run_for]),
        "status": np.array([status], dtype=object),
        "killed": np.array([False]),
        "cancel_reason": np.array([None], dtype=object),
    }
    allocs = {
        "job_id": np.array([1]),
        "from": np.array([0.0]),
        "to": np.array([run_for]),
        "node": np.array([0]),
        "units": np.array([1]),
        "segment": np.array([0]),
        "core": np.array([8]),
    }
    return validate_tables(system, workload, jobs, allocs, dispatcher_tags={"rejects": False})


def test_a_completed_deadline_job_runs_at_least_its_lower_bound():
    """Hand-computed: 16 processes of a static job on the 8 cores it held time-share two per
    core, so its 100 s of nominal run time take at least 100 x (1 - 0.5) x ceil(16 / 8) =
    100 s; a dynamic job (type 2) is bounded by 100 x 0.5 = 50 s."""
    assert _one_deadline_job(100.0).ok
    short = _one_deadline_job(99.0)
    assert [v.kind for v in short.violations] == ["duration"], short.describe()
    assert (
        "job 1" in short.violations[0].message and "at least 100 s" in short.violations[0].message
    )
    assert _one_deadline_job(50.0, behaviour=2).ok
    assert not _one_deadline_job(49.0, behaviour=2).ok
