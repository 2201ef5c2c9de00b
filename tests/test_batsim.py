"""Batsim exchange: workloads (JSON, Batsim 4 and 5 profile names) read and written, and a run
exported as Batsim's jobs.csv that the real Evalys loads, draws and measures as we do."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from helpers import trace as real_trace

from hpcdispatch.engine import simulate
from hpcdispatch.errors import ConfigError
from hpcdispatch.report.series import usage_over_time
from hpcdispatch.results.batsim import (
    BATSIM_COLUMNS,
    batsim_jobs_frame,
    export_batsim,
    interval_set,
)
from hpcdispatch.results.store import read_run, write_result
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.batsim import batsim_workload_text, is_batsim_workload, read_batsim
from hpcdispatch.workload.loader import load_workload
from hpcdispatch.workload.swf import swf_text

matplotlib.use("Agg")


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_interval_sets_by_hand():
    assert interval_set(np.array([0, 1, 2, 3, 8])) == "0-3 8"
    assert interval_set(np.array([8, 3, 2, 2, 0, 1])) == "0-3 8"
    assert interval_set(np.array([5])) == "5"
    assert interval_set(np.array([1, 3, 5, 6])) == "1 3 5-6"
    assert interval_set(np.array([], dtype=np.int64)) == ""


V4 = {
    "nb_res": 16,
    "jobs": [
        {"id": "w0!1", "subtime": 0, "walltime": 100, "res": 4, "profile": "d50"},
        {"id": "w0!2", "subtime": 10, "res": 8, "profile": "seq"},
        {"id": "w0!3", "subtime": 7, "walltime": 100, "res": 4, "profile": "par"},
        {
            "id": "w0!4",
            "subtime": 9.6,
            "walltime": 30,
            "res": 2,
            "profile": "d50",
            "extra_data": '{"user": 3, "color": 1}',
        },
    ],
    "profiles": {
        "d50": {"type": "delay", "delay": 50},
        "seq": {"type": "composed", "repeat": 2, "seq": ["d50", "d50"]},
        "par": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
    },
}


def test_batsim4_workload_by_hand(tmp_path):
    system = load_system("machine-s")
    path = write(tmp_path / "v4.json", V4)
    assert is_batsim_workload(path)
    w = read_batsim(path, system)
    # job 3's parallel task needs the platform model: skipped, named with its type
    # by submission: 0, 10, 10 (9.6 rounded; ties keep the file's order)
    assert [j.id for j in w.jobs] == [1, 2, 4]
    assert [j.run_time for j in w.jobs] == [50, 200, 50]  # the sequence: 2 x (50 + 50)
    assert [j.submit for j in w.jobs] == [0, 10, 10]
    # job 2 has no walltime: the longest in the file (trace-max), counted as patched
    assert [j.wall_time for j in w.jobs] == [100, 200, 30]
    assert w.jobs[2].user == 3
    assert w.report.skipped == {"profile-needs-platform": 1}
    assert w.report.patched == {
        "missing wall-time set by 'trace-max'": 1,
        "times rounded to whole seconds": 1,
    }
    first = next(n for n in w.report.notes if "profile-needs-platform" in n)
    assert "'w0!3'" in first and "parallel_homogeneous" in first and "v4.json" in first
    assert any("color" in n for n in w.report.notes)
    # processors -> units as SWF (divisor mapping, 8 cores per node): 4 = 1 x 4, 8 = 1 x 8
    assert [(j.units, j.unit_request[0]) for j in w.jobs] == [(1, 4), (1, 8), (1, 2)]


def test_batsim5_workload_by_hand_and_simulated(tmp_path):
    system = load_system("machine-s")
    doc = {
        "nb_res": 1024,
        "jobs": [
            {"id": "a", "subtime": 0, "walltime": 60, "res": 1024, "profile": "p30"},
            {"id": "b", "subtime": 1, "walltime": 60, "res": 8, "profile": "p30"},
            {"id": "c", "subtime": 2, "walltime": 60, "res": 8, "profile": "hg"},
        ],
        "profiles": {
            "p30": {"type": "DelayProfile", "delay": 30},
            "hg": {"type": "ParallelTaskHomogeneousProfile", "cpu": 1e6, "com": 0},
        },
    }
    path = write(tmp_path / "v5.json", doc)
    w = load_workload(str(path), system)
    assert [(j.id, j.name) for j in w.jobs] == [(1, "a"), (2, "b")]  # ids are not numbers
    assert w.report.skipped == {"profile-needs-platform": 1}
    r = simulate(system, w, "fifo")
    # job a takes the whole machine (1,024 cores) for 30 s; b starts when it ends
    assert list(r.start) == [0.0, 30.0] and list(r.end) == [30.0, 60.0]


def test_bad_batsim_records_are_named_and_the_rest_kept(tmp_path):
    system = load_system("machine-s")
    doc = {
        "nb_res": 8,
        "jobs": [
            {"id": "1", "subtime": -5, "res": 1, "profile": "d"},
            {"id": "2", "subtime": 0, "res": 0, "profile": "d"},
            {"id": "3", "subtime": 0, "res": 1, "profile": "nope"},
            {"id": "4", "subtime": 0, "res": 1, "profile": "d", "walltime": 0},
            {"id": "5", "subtime": 0, "res": 1, "profile": "d"},
            {"id": "5", "subtime": 1, "res": 1, "profile": "d"},
        ],
        "profiles": {"d": {"type": "delay", "delay": 5}},
    }
    w = read_batsim(write(tmp_path / "bad.json", doc), system)
    assert [j.id for j in w.jobs] == [5]
    assert w.report.skipped == {
        "bad-subtime": 1,
        "bad-res": 1,
        "profile-needs-platform": 1,
        "bad-walltime": 1,
        "duplicate-id": 1,
    }
    assert any("field subtime" in n for n in w.report.notes)
    (tmp_path / "not.json").write_text('{"jobs": [], "profiles": ')
    with pytest.raises(Exception, match="not.json: not JSON"):
        read_batsim(tmp_path / "not.json", system)


def tiny_swf(tmp_path: Path) -> Path:
    lines = ["; Version: 2.2", "; MaxNodes: 128", "; MaxProcs: 1024"]
    rng = np.random.default_rng(5)
    t = 0
    for i in range(1, 301):
        t += int(rng.integers(0, 120))
        procs = int(rng.choice([1, 2, 4, 8, 16, 64, 256]))
        run = int(rng.integers(1, 4000))
        wall = -1 if i % 17 == 0 else run + int(rng.integers(0, 3000))
        if i % 11 == 0:
            wall = max(1, run // 2)  # killed at its wall time
        queue = int(rng.integers(1, 3))
        f = [i, t, -1, run, procs, -1, -1, procs, wall, -1, 1, i % 7, 1, -1, queue, 1, -1, -1]
        lines.append(" ".join(map(str, f)))
    path = tmp_path / "tiny.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def same_schedule(a, b) -> None:
    assert np.array_equal(a.workload.ids, b.workload.ids)
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
    assert np.array_equal(a.status, b.status)
    assert a.allocations_frame().equals(b.allocations_frame())


def test_swf_to_batsim_json_to_simulate_is_the_same_schedule(tmp_path):
    system = load_system("machine-s")
    swf = tiny_swf(tmp_path)
    w = load_workload(str(swf), system)
    out = tmp_path / "tiny.json"
    out.write_text(batsim_workload_text(w, system))
    back = load_workload(str(out), system)
    assert back.source.kind == "batsim"
    for name in ("fifo", "easy"):
        same_schedule(simulate(system, w, name), simulate(system, back, name))


@pytest.mark.slow
def test_whole_trace_round_trip_through_the_cli(tmp_path):
    trace = real_trace("KTH-SP2-1996-2.1-cln.swf.gz")
    out = tmp_path / "kth.json"
    cmd = [sys.executable, "-m", "hpcdispatch", "workload", "convert", str(trace), str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    system = load_system("kth-sp2")
    a = simulate(system, load_workload(str(trace), system), "easy")
    b = simulate(system, load_workload(str(out), system), "easy")
    same_schedule(a, b)


def test_swf_export_keeps_the_cleaning_decisions(tmp_path):
    system = load_system("machine-s")
    swf = tiny_swf(tmp_path)
    with open(swf, "a") as fh:
        fh.write("301 99999 -1 0 4 -1 -1 4 100 -1 1 1 1 -1 1 1 -1 -1\n")  # run time 0: skipped
    w = load_workload(str(swf), system)
    text = swf_text(w, system)
    header = [line for line in text.splitlines() if line.startswith(";")]
    assert "; Note: hpcdispatch read 301 records, skipped 1" in header
    assert any(h.startswith("; Note: skipped 1 x runtime<=0 (first records: 304)") for h in header)
    assert "; Note: patched 16 x missing wall-time set by 'queue-max'" in header
    assert any("missing_walltime=queue-max" in h for h in header)
    # the converted file reads back with the same jobs and no further cleaning
    (tmp_path / "again.swf").write_text(text)
    again = load_workload(str(tmp_path / "again.swf"), system)
    assert len(again) == 300 and again.report.n_skipped == 0 and not again.report.patched


def evalys_load(csv: Path):
    from evalys.jobset import JobSet

    js = JobSet.from_csv(str(csv))
    return js, js.utilisation


@pytest.mark.slow
def test_easy_run_opens_in_evalys_with_our_utilisation(tmp_path):
    # one core per node: Evalys counts allocated nodes, our utilisation counts cores
    system = load_system("kth-sp2")
    w = load_workload(str(tiny_swf(tmp_path)), system)
    w = w.subset(200)
    r = simulate(system, w, "easy")
    write_result(r, tmp_path / "run")
    csv = export_batsim(tmp_path / "run", tmp_path / "batsim")
    frame = pd.read_csv(csv)
    assert tuple(frame.columns) == BATSIM_COLUMNS
    assert set(frame["final_state"]) == {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}
    killed = frame["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert (frame.loc[killed, "success"] == 0).all() and killed.sum() == int(r.killed.sum())
    # stretch is Batsim's unbounded slowdown: turnaround / execution
    np.testing.assert_allclose(
        frame["stretch"], frame["turnaround_time"] / frame["execution_time"], atol=1e-6
    )
    js, util = evalys_load(csv)
    stored = read_run(tmp_path / "run")
    cap = float(system.total_capacity[system.resource_index("core")])
    times, share = usage_over_time(stored.allocations, "core", cap)
    ours = pd.Series(share * cap, index=times).groupby(level=0).last()
    theirs = util["load"].groupby(level=0).last()
    common = ours.index.union(theirs.index)
    ours = ours.reindex(common).ffill().fillna(0)
    theirs = theirs.reindex(common).ffill().fillna(0)
    np.testing.assert_allclose(theirs.to_numpy(), ours.to_numpy())
    # and Evalys draws its Gantt chart of it
    import matplotlib.pyplot as plt
    from evalys.visu import gantt

    gantt.plot_gantt(js, title="EASY")
    fig = plt.gcf()
    assert sum(len(a.patches) for a in fig.axes) >= len(frame)
    plt.close("all")


@pytest.mark.slow
def test_aucsched_run_opens_in_evalys(tmp_path):
    system = load_system("machine-s")
    w = load_workload("synthetic:aucsched,workload=I,seed=1,runtime_h=0.5", system)
    r = simulate(system, w, "aucsched")
    write_result(r, tmp_path / "run")
    csv = export_batsim(tmp_path / "run", tmp_path / "batsim")
    js, util = evalys_load(csv)
    frame = batsim_jobs_frame(read_run(tmp_path / "run"))
    meta = frame["metadata"].map(json.loads)
    assert all("gpu" in m["per_unit"] for m in meta)  # what Batsim has no column for
    # Evalys's load is the nodes held by running jobs; ours, from the allocation rows
    alloc = read_run(tmp_path / "run").allocations
    pairs = alloc.groupby(["job_id", "node"], as_index=False).agg({"from": "min", "to": "max"})
    pairs["held"] = 1.0
    times, held = usage_over_time(pairs, "held", 1.0)
    ours = pd.Series(held, index=times).groupby(level=0).last()
    theirs = util["load"].groupby(level=0).last()
    common = ours.index.union(theirs.index)
    np.testing.assert_allclose(
        theirs.reindex(common).ffill().fillna(0), ours.reindex(common).ffill().fillna(0)
    )
    import matplotlib.pyplot as plt
    from evalys.visu import gantt

    gantt.plot_gantt(js, title="AUCSCHED")
    assert sum(len(a.patches) for a in plt.gcf().axes) >= len(frame)
    plt.close("all")


def test_rejected_and_cancelled_jobs_map_to_batsim_states():
    from hpcdispatch.results.batsim import _final_state

    assert _final_state("completed", "") == "COMPLETED_SUCCESSFULLY"
    assert _final_state("killed", "") == "COMPLETED_WALLTIME_REACHED"
    assert _final_state("rejected", "") == "REJECTED"
    assert _final_state("cancelled", "deadline-running") == "COMPLETED_KILLED"
    assert _final_state("cancelled", "booking-conflict") == "COMPLETED_KILLED"
    assert _final_state("cancelled", "deadline-waiting") == "REJECTED"


@pytest.mark.slow
def test_export_command_refuses_an_existing_result_without_force(tmp_path):
    system = load_system("machine-s")
    r = simulate(system, load_workload("synthetic:lublin,jobs=50,seed=2", system), "fifo")
    write_result(r, tmp_path / "run")
    cmd = [sys.executable, "-m", "hpcdispatch", "export", str(tmp_path / "run")]
    out = str(tmp_path / "x")
    done = subprocess.run([*cmd, "--to", "batsim", "-o", out], capture_output=True, text=True)
    assert done.returncode == 0 and (tmp_path / "x" / "jobs.csv").is_file()
    again = subprocess.run([*cmd, "-o", out], capture_output=True, text=True)
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    forced = subprocess.run([*cmd, "-o", out, "--force"], capture_output=True, text=True)
    assert forced.returncode == 0


def test_batsim_json_writer_refuses_what_batsim_cannot_hold():
    system = load_system("machine-s")
    w = load_workload("synthetic:aucsched,workload=I,seed=1,runtime_h=0.2,version=3", system)
    if not any(j.constrained for j in w.jobs):
        pytest.fail("the AUCSCHED generator's version 3 should give node-constrained jobs")
    with pytest.raises(ConfigError, match="Batsim's workload format has no node counts"):
        batsim_workload_text(w, system)


def test_gzip_is_not_taken_for_batsim(tmp_path):
    path = tmp_path / "x.swf.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n")
    assert not is_batsim_workload(path)
