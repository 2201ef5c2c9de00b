"""Output directories: checked before a run, written as a whole, never half overwritten,
readable under the user's umask; a checkpoint outlives a run until its outputs are safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system, job, workload
from hypothesis import given, settings
from hypothesis import strategies as st

import hpcdispatch as h
from hpcdispatch.errors import ConfigError
from hpcdispatch.results import store
from hpcdispatch.results.outdir import (
    WRITING_PREFIX,
    atomic_dir,
    check_output_dir,
    remove_stale_writing_dirs,
)
from hpcdispatch.runner import run_simulation

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        timeout=600,
    )


def small():
    system = cores_system(4, 2)
    return system, workload([job(i, i, 10 + i, units=1 + i % 3) for i in range(1, 15)])


def test_a_bad_output_location_fails_at_once_and_keeps_the_checkpoint(tmp_path):
    blocker = tmp_path / "plain-file"
    blocker.write_text("not a directory")
    checkpoint = tmp_path / "run.ckpt"
    checkpoint.write_bytes(b"the state of an interrupted run")
    t0 = time.monotonic()
    p = cli(
        "simulate",
        "-w",
        "synthetic:lublin,jobs=1000000,seed=1",
        "-d",
        "conservative",
        "-o",
        str(blocker / "out"),
        "--checkpoint",
        str(checkpoint),
        "-q",
    )
    took = time.monotonic() - t0
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{blocker / 'out'}: cannot be created, {blocker} is a file" in " ".join(
        p.stderr.split()
    )
    # before simulating, even before drawing the workload: a million jobs of conservative
    # backfilling would take many minutes (the bound leaves room for a loaded machine)
    assert took < 60.0, took
    assert checkpoint.read_bytes() == b"the state of an interrupted run"


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root may write anywhere: an unwritable directory cannot be made"
)
def test_an_unwritable_parent_fails_before_simulating(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(ConfigError, match="permission denied"):
            check_output_dir(locked / "out")
    finally:
        locked.chmod(0o755)


def test_an_existing_result_is_replaced_only_with_force_and_as_a_whole(tmp_path):
    system, wl = small()
    out = tmp_path / "run"
    run_simulation(system, wl, "fifo", out_dir=out)
    (out / "report").mkdir()
    (out / "report" / "old.md").write_text("a report of the old run")
    with pytest.raises(ConfigError, match="already holds files"):
        run_simulation(system, wl, "easy", out_dir=out)
    assert json.loads((out / "run.json").read_text())["dispatcher"]["name"] == "fifo"
    run_simulation(system, wl, "easy", out_dir=out, force=True)
    assert json.loads((out / "run.json").read_text())["dispatcher"]["name"] == "easy"
    assert not (out / "report").exists()  # nothing of the old run stays beside the new one
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(WRITING_PREFIX)]
    # (a workload built in memory cannot be re-derived: no violation, but never "valid")
    report = h.validate(out)
    assert not report.violations and report.verdict == "unverified", report.describe()


def test_an_interrupted_write_leaves_the_old_result_whole(tmp_path, monkeypatch):
    system, wl = small()
    out = tmp_path / "run"
    run_simulation(system, wl, "fifo", out_dir=out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = store.write_json

    def crash_on_summary(path, data):
        if path.name == "summary.json":
            raise KeyboardInterrupt  # Ctrl-C in the middle of writing the new run
        real(path, data)

    monkeypatch.setattr(store, "write_json", crash_on_summary)
    with pytest.raises(KeyboardInterrupt):
        run_simulation(system, wl, "easy", out_dir=out, force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(WRITING_PREFIX)]


def test_validation_beside_the_writing_is_in_the_summary_and_its_failure_keeps_the_old_result(
    tmp_path, monkeypatch
):
    # the runner validates on a second thread while the tables are written (results.store):
    # its verdict is in summary.json, and an error there is raised and writes nothing
    system, wl = small()
    out = tmp_path / "run"
    first = run_simulation(system, wl, "fifo", out_dir=out)
    assert first.validation.ok and json.loads((out / "summary.json").read_text())["valid"] is True
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    threads = []

    def broken_validator(result):

        threads.append(threading.current_thread().name)
        raise RuntimeError("the validator broke")

    monkeypatch.setattr("hpcdispatch.runner.validate_result", broken_validator)
    with pytest.raises(RuntimeError, match="the validator broke"):
        run_simulation(system, wl, "easy", out_dir=out, force=True, validate_beside=True)
    assert threads == ["hpcdispatch-summary"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(WRITING_PREFIX)]
    # not beside (one core, or a sweep worker without a spare one), and without an output
    # directory, the same validation runs on the caller's thread
    for kwargs in ({"out_dir": out, "force": True, "validate_beside": False}, {}):
        with pytest.raises(RuntimeError, match="the validator broke"):
            run_simulation(system, wl, "easy", **kwargs)
        assert threads[-1] == "MainThread"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_failed_table_write_does_not_wait_for_the_validation(tmp_path, monkeypatch):

    system, wl = small()
    release = threading.Event()

    def slow_validator(result):
        from hpcdispatch.validation.validator import ValidationReport

        release.wait(300)  # a validation that would outlast the failed write by far
        return ValidationReport(jobs=len(result.workload))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    summaries = []
    monkeypatch.setattr("hpcdispatch.runner.validate_result", slow_validator)
    monkeypatch.setattr(store, "write_csv_arrow", full_disk)
    monkeypatch.setattr(store, "summarize", lambda result: summaries.append(result) or {})
    t0 = time.monotonic()
    try:
        with pytest.raises(OSError, match="No space left"):
            run_simulation(
                system, wl, "fifo", out_dir=tmp_path / "run", validate_beside=True, csv=True
            )
        assert time.monotonic() - t0 < 60  # (300 s if the write waited for the validation)
    finally:
        release.set()
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(WRITING_PREFIX)]
    deadline = time.monotonic() + 30
    while (
        any(t.name == "hpcdispatch-summary" for t in threading.enumerate())
        and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    assert summaries == []  # the validation under way finished on its own; the summary was skipped


@pytest.mark.slow
def test_a_process_whose_write_failed_exits_without_waiting_for_the_validation(tmp_path):
    # the thread is a daemon: a script that catches the failed write and ends does not wait
    # for a validation that is still running
    script = f"""
import time
from helpers import cores_system, job, workload
from hpcdispatch.results import store
from hpcdispatch.runner import run_simulation
import hpcdispatch.runner as runner
runner.validate_result = lambda result: time.sleep(600)
def full_disk(*a, **k):
    raise OSError(28, "No space left on device")
store.write_csv_arrow = full_disk
try:
    run_simulation(cores_system(4, 2), workload([job(1, 1, 10)]), "fifo", out_dir={str(tmp_path / "run")!r},
                   validate_beside=True, csv=True)
except OSError:
    print("write failed", flush=True)
"""
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
            ),
        },
    )
    assert p.returncode == 0 and "write failed" in p.stdout, p.stderr
    assert time.monotonic() - t0 < 120  # (600 s if the exit waited for the validation)


def test_the_checkpoint_is_removed_only_once_the_outputs_are_written(tmp_path, monkeypatch):
    system, wl = small()
    checkpoint = tmp_path / "run.ckpt"

    def failing_write(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("hpcdispatch.runner.write_result", failing_write)
    with pytest.raises(OSError, match="No space left"):
        run_simulation(
            system,
            wl,
            "conservative",
            out_dir=tmp_path / "run",
            checkpoint=checkpoint,
            checkpoint_every=0.0,
        )
    assert checkpoint.is_file()  # the run can be finished from it
    monkeypatch.undo()
    done = run_simulation(
        system, wl, "conservative", out_dir=tmp_path / "run", checkpoint=checkpoint
    )
    assert done.result.notes.checkpoint.resumed_at is not None and done.validation.ok
    assert not checkpoint.exists()


@pytest.mark.slow
@pytest.mark.parametrize("mask, others_read", [(0o022, True), (0o077, False)])
def test_outputs_follow_the_umask(tmp_path, mask, others_read):
    system, wl = small()
    old = os.umask(mask)
    try:
        out = tmp_path / "run"
        run_simulation(system, wl, "easy", out_dir=out)
        from hpcdispatch.report import write_report

        write_report(out, allow_unverified=True)  # (a workload built in memory)
    finally:
        os.umask(old)
    paths = [out, *out.rglob("*")]
    assert len(paths) > 10
    for path in paths:
        mode = path.stat().st_mode
        assert bool(mode & 0o004) == others_read, (path, oct(mode))
        assert bool(mode & 0o040) == (mask == 0o022), (path, oct(mode))
        if path.is_dir():
            assert bool(mode & 0o001) == others_read, (path, oct(mode))


@pytest.mark.slow
def test_a_report_replaces_the_previous_one_as_a_whole(tmp_path):
    system, wl = small()
    out = tmp_path / "run"
    run_simulation(system, wl, "easy", out_dir=out)
    from hpcdispatch.report import write_report

    write_report(out, allow_unverified=True)  # (a workload built in memory)
    (out / "report" / "stale.png").write_bytes(b"from an older version")
    html = write_report(out, allow_unverified=True)
    assert html == out / "report" / "report.html" and html.is_file()
    assert not (out / "report" / "stale.png").exists()


def test_atomic_dir_removes_what_it_wrote_on_failure_and_stale_dirs_of_dead_writers(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "x") as tmp:
            (tmp / "half").write_text("half")
            raise RuntimeError("disk full")
    assert not (tmp_path / "x").exists() and list(tmp_path.iterdir()) == []
    # a writer killed before it could clean up: found by host and pid, removed once dead
    import socket

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f"{WRITING_PREFIX}{socket.gethostname()}-{int(dead.stdout)}-abc"
    stale.mkdir()
    mine = tmp_path / f"{WRITING_PREFIX}{socket.gethostname()}-{os.getpid()}-def"
    mine.mkdir()
    assert remove_stale_writing_dirs(tmp_path) == [stale]
    assert mine.exists()


def test_missing_values_are_empty_cells_and_nulls(tmp_path):
    """Jobs that never started (rejected, cancelled) have no start and no end: an empty cell in
    jobs.csv and a null in jobs.parquet, as pandas writes NaN; text columns are strings."""
    import pyarrow.parquet as pq

    system = h.load_system("hlrn2-grid")
    wl = h.load_workload("synthetic:deadline,jobs=60,seed=1,load=very-heavy,types=0", system)
    out = tmp_path / "o"
    outcome = run_simulation(system, wl, "manhattan", out_dir=out, csv=True)
    assert outcome.validation.ok
    status = outcome.result.jobs_frame()["status"].tolist()
    gone = [
        i
        for i, s in enumerate(status)
        if s in ("rejected", "cancelled") and np.isnan(outcome.result.start[i])
    ]
    assert gone, "the run rejects some jobs (very heavy load)"
    table = pq.read_table(out / "jobs.parquet")
    assert (
        table.column("start").null_count == int(np.isnan(outcome.result.start).sum()) >= len(gone)
    )
    assert table.column("end").null_count == int(np.isnan(outcome.result.end).sum())
    assert str(table.schema.field("status").type) == "string"
    import csv

    with open(out / "jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(status)
    for i in gone:
        assert rows[i]["start"] == "" and rows[i]["end"] == "", rows[i]
        assert rows[i]["status"] == status[i]
    assert not any(value.lower() == "nan" for row in rows for value in row.values())
    started = next(i for i, s in enumerate(status) if s == "completed")
    assert float(rows[started]["start"]) == outcome.result.start[started]


@pytest.mark.slow
@settings(deadline=None, max_examples=80)
@given(
    st.lists(
        st.lists(
            st.lists(
                st.tuples(
                    st.one_of(st.integers(0, 3), st.integers(0, 5000)),
                    st.one_of(st.integers(1, 2), st.integers(1, 300)),
                ),
                min_size=1,
                max_size=3,
            ),
            min_size=1,
            max_size=3,
        ),
        max_size=8,
    ),
    st.integers(0, 3),
    st.randoms(use_true_random=False),
)
def test_allocation_text_is_every_row_written_out(jobs, n_without, rng):
    """The jobs' allocation texts, built by Arrow from tables of node and unit texts (small
    values) or by casting (node ids beyond the column's length), read as Python writes them:
    ``node:units`` rows joined by " ", segments by " | ", "" for a job without rows. The rows
    come in start order (a job's rows together, jobs in any order; job order is a shortcut)."""
    from hpcdispatch.sim.result import allocation_text_array
    from hpcdispatch.sim.segments import AllocationRows

    job, segment, node, units, expected = [], [], [], [], []
    start_order = list(range(len(jobs)))
    if rng.random() < 0.5:
        rng.shuffle(start_order)
    for j in start_order:
        for s, rows in enumerate(jobs[j]):
            for n, u in rows:
                job.append(j)
                segment.append(s)
                node.append(n)
                units.append(u)
    expected = [
        " | ".join(" ".join(f"{n}:{u}" for n, u in rows) for rows in segments) for segments in jobs
    ]
    expected += [""] * n_without
    i64 = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    rows = AllocationRows(
        i64(job), i64(segment), i64(node), i64(units), np.zeros(len(job)), np.ones(len(job))
    )
    assert allocation_text_array(rows, len(expected)).to_pylist() == expected


def test_jobs_csv_and_the_allocation_text_are_written_on_request(tmp_path):
    """`simulate` writes the Parquet tables; jobs.csv and the jobs' allocation text only with
    --csv (issue 54). 4 cores: job 1 (3 cores) runs on cores 0-2, job 2 (2 cores) after it."""
    import pyarrow.parquet as pq

    from hpcdispatch.cli.main import main

    swf = tmp_path / "t.swf"
    swf.write_text(
        "1 0 -1 10 3 -1 -1 3 10 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 1 -1 5 2 -1 -1 2 5 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    system = tmp_path / "s.toml"
    system.write_text(
        'name = "two"\nresources = ["core"]\n'
        'node_types = [{ name = "n", count = 2, capacity = { core = 2 } }]\n'
    )
    common = ["simulate", "-w", str(swf), "-s", str(system), "-d", "fifo", "--units", "processor"]
    for flag, out in (([], tmp_path / "plain"), (["--csv"], tmp_path / "with")):
        try:
            main([*common, *flag, "-q", "-o", str(out)])
        except SystemExit as e:
            assert not e.code
    assert not (tmp_path / "plain" / "jobs.csv").exists()
    plain = pq.read_table(tmp_path / "plain" / "jobs.parquet")
    assert "allocation" not in plain.column_names
    assert plain.column("start").to_pylist() == [0.0, 10.0]
    with_csv = pq.read_table(tmp_path / "with" / "jobs.parquet")
    assert with_csv.column("allocation").to_pylist() == ["0:2 1:1", "0:2"]
    lines = (tmp_path / "with" / "jobs.csv").read_text().splitlines()
    assert len(lines) == 3 and lines[1].endswith('"0:2 1:1"')
    assert (tmp_path / "plain" / "allocations.parquet").is_file()
