"""Running sweeps locally: failures recorded per cell, resuming, retrying, crashes pinned on
their cell, incomplete directories never counted, the command line."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
from helpers import trace
from sweeps import SMALL, cli, records, summary, write_spec

from hpcdispatch.dispatchers import DISPATCHERS
from hpcdispatch.errors import ConfigError
from hpcdispatch.results.store import read_run
from hpcdispatch.sweep import (
    LocalExecutor,
    deterministic_columns,
    load_sweep,
    make_executor,
    run_sweep,
    sweep_status,
)
from hpcdispatch.sweep.store import SweepStore

GOOD_SWF = "".join(
    f"{j} {10 * j} 0 {50 + j} 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\n" for j in range(1, 21)
)

MIXED = """
name = "mixed"
systems = ["machine-s"]
dispatchers = ["fifo", "easy"]

[[workloads]]
generator = "lublin"
jobs = 60
seed = 1

[[workloads]]
trace = "bad.swf"

[[workloads]]
trace = "missing.swf"
"""


def _check_cells_intact(out, frame):
    """Every done row's directory reads back and its summary.json matches the Parquet row."""
    cols = deterministic_columns(frame)
    for _, row in frame[frame["status"] == "done"].iterrows():
        run = read_run(out / "cells" / row["cell_id"])
        assert len(run.jobs) == run.summary["jobs"]
        for key, value in run.summary.items():
            if key in cols and key != "label" and not isinstance(value, dict | list):
                same = row[key] == value or (
                    pd.isna(row[key]) and (value is None or value != value)
                )
                assert same, (key, row[key], value)


@pytest.mark.slow
def test_failures_are_recorded_and_a_rerun_skips_finished_cells(tmp_path):
    (tmp_path / "bad.swf").write_text("this is\nnot an SWF trace\n")
    spec = load_sweep(write_spec(tmp_path, MIXED))
    out = tmp_path / "out"
    first = run_sweep(spec, out, LocalExecutor(2))
    assert (first.cells, first.done, first.failed, first.pending, first.ran) == (6, 2, 4, 0, 6)
    frame = summary(out)
    assert sorted(frame["cell_id"]) == sorted(spec.cell_ids()) and frame["cell_id"].is_unique
    assert frame["cell_id"].tolist() == spec.cell_ids()  # rows in the spec's order
    by_label = frame.set_index("label")
    assert by_label.loc["machine-s/lublin-60j/seed1/easy", "status"] == "done"
    bad = by_label.loc["machine-s/bad/fifo"]
    assert bad["status"] == "failed" and bad["error_type"] == "HpcDispatchError"
    assert (
        "has no job that can run" in bad["error"]
        and "malformed" in bad["error"]
        and "line 1" in bad["error"]
    )
    missing = by_label.loc["machine-s/missing/easy"]
    assert (
        missing["error_type"] == "TraceFormatError"
        and "missing.swf: file does not exist" in missing["error"]
    )
    _check_cells_intact(out, frame)

    st = sweep_status(out)
    assert (len(st.done), len(st.failed), len(st.pending), st.running) == (2, 4, 0, [])

    before = records(out)
    again = run_sweep(spec, out, LocalExecutor(2))
    assert (again.ran, again.skipped_done, again.skipped_failed, again.done, again.failed) == (
        0,
        2,
        4,
        2,
        4,
    )
    assert records(out) == before  # nothing was re-run or rewritten
    pd.testing.assert_frame_equal(summary(out), frame)

    # fix the trace: --retry-failed runs the failed cells again; the missing file still fails
    (tmp_path / "bad.swf").write_text(GOOD_SWF)
    retry = run_sweep(spec, out, LocalExecutor(2), retry_failed=True)
    assert (retry.ran, retry.done, retry.failed) == (4, 4, 2)
    frame = summary(out)
    assert frame["cell_id"].tolist() == spec.cell_ids()
    assert frame.set_index("label").loc["machine-s/bad/easy", "jobs"] == 20
    after = records(out)
    for cid, rec in before.items():
        if rec["status"] == "done":
            assert after[cid] == rec  # done cells untouched by the retry
    _check_cells_intact(out, frame)
    assert not [p for p in (out / "cells").iterdir() if p.name.startswith(".")]


PLUGIN = """
import os

from hpcdispatch.dispatchers import dispatcher_function


@dispatcher_function("crash-plugin")
def crash(view, scratch):
    os._exit(7)  # the worker process dies, as on a segfault or the out-of-memory killer


@dispatcher_function("raise-plugin")
def fail(view, scratch):
    raise RuntimeError("solver exploded")
"""


@pytest.mark.slow
def test_a_crashing_worker_fails_only_its_own_cell(tmp_path):
    (tmp_path / "bad_policies.py").write_text(PLUGIN)
    text = textwrap.dedent("""
        plugins = ["bad_policies.py"]
        systems = ["machine-s"]
        dispatchers = ["fifo", "crash-plugin", "raise-plugin", "sjf"]
        [[workloads]]
        generator = "lublin"
        jobs = 40
        seeds = [1, 2]
    """)
    try:
        spec = load_sweep(write_spec(tmp_path, text))
        out = tmp_path / "out"
        outcome = run_sweep(spec, out, LocalExecutor(2))
    finally:
        DISPATCHERS.pop("crash-plugin", None)
        DISPATCHERS.pop("raise-plugin", None)
    frame = summary(out)
    assert len(frame) == 8 and frame["cell_id"].is_unique
    status = dict(zip(frame["run_label"] + "/" + frame["seed"].astype(str), frame["status"]))
    assert status == {
        f"{d}/{s}": ("done" if d in ("fifo", "sjf") else "failed")
        for d in ("fifo", "crash-plugin", "raise-plugin", "sjf")
        for s in (1, 2)
    }
    errors = frame[frame["status"] == "failed"].set_index("run_label")
    assert set(errors.loc["crash-plugin", "error_type"]) == {"WorkerDied"}
    assert set(errors.loc["raise-plugin", "error_type"]) == {"RuntimeError"}
    assert all("solver exploded" in e for e in errors.loc["raise-plugin", "error"])
    rec = next(r for r in records(out).values() if r["labels"]["dispatcher"] == "raise-plugin")
    assert (
        "Traceback" in rec["error"]["traceback"] and "bad_policies.py" in rec["error"]["traceback"]
    )
    assert (outcome.done, outcome.failed) == (4, 4)
    _check_cells_intact(out, frame)


@pytest.mark.slow
def test_incomplete_cell_directories_are_never_counted(tmp_path):
    spec = load_sweep(
        write_spec(
            tmp_path,
            'systems = ["machine-s"]\ndispatchers = ["fifo", "easy", "sjf"]\n'
            '[[workloads]]\ngenerator = "lublin"\njobs = 40\nseed = 3\n',
        )
    )
    out = tmp_path / "out"
    run_sweep(spec, out, LocalExecutor(1))
    reference = summary(out)
    a, b, c = spec.cell_ids()
    cells = out / "cells"
    (cells / a / "cell.json").unlink()  # a directory without its record
    with open(
        cells / b / "jobs.parquet", "r+b"
    ) as fh:  # a file cut short after the record was written
        fh.truncate(100)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = cells / f".tmp-{c}-{int(dead.stdout)}-deadbeef@{socket.gethostname()}"
    stale.mkdir()
    (stale / "jobs.parquet").write_text("half")
    alive = cells / f".tmp-{a}-{os.getpid()}-cafe0000@{socket.gethostname()}"
    alive.mkdir()  # a writer that is still running (this process)
    store = SweepStore(out)
    scan = store.scan(spec.cell_ids())
    assert (sorted(scan.pending), list(scan.done)) == (sorted([a, b]), [c])
    # status tells the dead writer's directory from a live one's (it said "being written" of both)
    st = sweep_status(out)
    host = socket.gethostname()
    assert (st.running, st.abandoned) == ([(a, os.getpid(), host)], [(c, int(dead.stdout), host)])
    alive.rmdir()
    outcome = run_sweep(spec, out, LocalExecutor(1))
    assert (outcome.ran, outcome.done, sorted(outcome.set_aside)) == (2, 3, sorted([a, b]))
    frame = summary(out)
    cols = [k for k in deterministic_columns(frame) if k != "config"]
    pd.testing.assert_frame_equal(frame[cols], reference[cols])
    assert not stale.exists()
    _check_cells_intact(out, frame)


@pytest.mark.slow
def test_writers_tell_live_cells_from_those_left_by_dead_processes(tmp_path):
    """This host: the process decides, whatever the directory's age (a live cell's directory
    keeps the mtime of its start, and a cell may run for days); another host: 24 h of silence."""
    spec = load_sweep(
        write_spec(
            tmp_path,
            'systems = ["machine-s"]\ndispatchers = ["fifo"]\n'
            '[[workloads]]\ngenerator = "lublin"\njobs = 10\nseed = 3\n',
        )
    )
    out = tmp_path / "out"
    run_sweep(spec, out, LocalExecutor(1))
    cells = out / "cells"
    host = socket.gethostname()
    dead = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
        ).stdout
    )
    day_ago = time.time() - 25 * 3600
    made = {}
    for name, pid, h, old in (
        ("live-old", os.getpid(), host, True),
        ("dead-new", dead, host, False),
        ("far-new", 1, "elsewhere", False),
        ("far-old", 1, "elsewhere", True),
    ):
        d = cells / f".tmp-{name.replace('-', '')}-{pid}-0000beef@{h}"
        d.mkdir()
        if old:
            os.utime(d, (day_ago, day_ago))
        made[name] = d
    live, stale = SweepStore(out).writers()
    assert sorted(p.name for p, *_ in live) == sorted([made["live-old"].name, made["far-new"].name])
    assert sorted(p.name for p, *_ in stale) == sorted(
        [made["dead-new"].name, made["far-old"].name]
    )
    removed = SweepStore(out).clean_stale()
    assert sorted(p.name for p in removed) == sorted([made["dead-new"].name, made["far-old"].name])
    assert made["live-old"].exists() and made["far-new"].exists()


def test_command_line(tmp_path):
    spec_path = write_spec(
        tmp_path,
        MIXED.replace(
            'trace = "bad.swf"', f'trace = "{trace("KTH-SP2-1996-2.1-cln.swf.gz")}"\nmax_jobs = 200'
        ),
    )
    out = tmp_path / "out"
    plan = cli("sweep", "plan", str(spec_path))
    assert (
        plan.returncode == 0
        and "6 cells" in plan.stdout
        and "machine-s/missing/easy" in plan.stdout
    )
    p = cli("sweep", "run", str(spec_path), "--out", str(out), "-j", "2")
    assert p.returncode == 1, p.stderr  # some cells failed: exit code 1, the others are done
    assert "4 done" in p.stdout and "2 failed" in p.stdout
    assert "failed machine-s/missing/fifo" in p.stdout
    # not a terminal (a pipe here): plain progress lines, none of the bar's redraws
    assert "sweep mixed: 6 / 6 cells finished (100 %)" in p.stdout and "ETA" not in p.stdout, (
        p.stdout
    )
    # on a terminal: the bar (done and failed counts, ETA) and the failures, no plain lines
    shown = cli(
        "sweep",
        "run",
        str(spec_path),
        "--out",
        str(tmp_path / "out-terminal"),
        "-j",
        "1",
        terminal=True,
    )
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.stdout)  # (colours and cursor moves)
    assert shown.returncode == 1 and "ETA" in text and "cells finished" not in text, text
    assert "failed machine-s/missing/fifo" in text
    st = cli("sweep", "status", str(out))
    assert (
        st.returncode == 0
        and "4 done" in st.stdout
        and "2 failed" in st.stdout
        and "0 pending" in st.stdout
    )
    assert "TraceFormatError" in st.stdout
    # a longer spec into the same directory: the new cells are pending, the old ones kept
    bigger = write_spec(
        tmp_path,
        MIXED.replace('"fifo", "easy"', '"fifo", "easy", "sjf"').replace(
            'trace = "bad.swf"', f'trace = "{trace("KTH-SP2-1996-2.1-cln.swf.gz")}"\nmax_jobs = 200'
        ),
        "bigger.toml",
    )
    SweepStore(out).write_manifest(load_sweep(bigger))
    st = cli("sweep", "status", str(out), "--all")
    assert "4 done" in st.stdout and "2 failed" in st.stdout and "3 pending" in st.stdout
    rows = [line for line in st.stdout.splitlines() if "machine-s/" in line]
    assert (
        len(rows) == 9
        and sum(" pending " in r for r in rows) == 3
        and sum(" done " in r for r in rows) == 4
    )
    assert any("machine-s/lublin-60j/seed1/sjf" in r and " pending " in r for r in rows)
    p = cli("sweep", "run", str(bigger), "--out", str(out), "-q", "--workers", "1")
    assert (
        p.returncode == 1
        and "running 3" in p.stdout
        and "6 done" in p.stdout
        and "3 failed" in p.stdout
    )
    assert len(summary(out)) == 9
    errors = [
        (
            cli("sweep", "run", str(tmp_path / "nope.toml"), "--out", str(out)),
            "does not exist (a sweep file was expected)",
        ),
        (cli("sweep", "status", str(tmp_path)), "not a sweep output directory"),
    ]
    for proc, expected in errors:
        assert (
            proc.returncode == 2 and expected in proc.stderr and "Traceback" not in proc.stderr
        ), proc.stderr
    with pytest.raises(ConfigError, match="not both"):
        make_executor(workers=2, dask="local:1")
    with pytest.raises(ConfigError, match="positive number of workers"):
        make_executor(dask="local:x")
    with pytest.raises(ConfigError, match="at least 1"):
        make_executor(workers=0)
    manifest = json.loads((out / "sweep.json").read_text())
    assert len(manifest["cells"]) == 9 and (out / "sweep.toml").read_text() == bigger.read_text()


# ---- one sweep per output directory: the lock ---------------------------------------------


def _lock_of(pid: int, host: str | None = None, start: int | None = None) -> str:
    from hpcdispatch.sweep.store import _process_start

    return json.dumps(
        {
            "host": host or socket.gethostname(),
            "pid": pid,
            "process_start": _process_start(pid) if start is None else start,
            "since": "2026-01-01T00:00:00+0000",
        }
    )


def test_the_sweep_lock_names_host_and_pid_and_refuses_a_live_holder(tmp_path):
    from hpcdispatch.sweep.store import LOCK, SweepLocked, sweep_lock

    notes: list[str] = []
    with sweep_lock(tmp_path / "out", notes.append) as path:
        assert path == tmp_path / "out" / LOCK
        held = json.loads(path.read_text())
        assert (held["host"], held["pid"]) == (socket.gethostname(), os.getpid())
        with sweep_lock(tmp_path / "out"):  # (this process again: run_sweep inside the CLI's)
            pass
        assert path.exists()
    assert not path.exists() and notes == []  # released

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "out" / LOCK).write_text(_lock_of(other.pid))
        with pytest.raises(SweepLocked) as err, sweep_lock(tmp_path / "out"):
            pass
        assert str(err.value) == (
            f"{tmp_path / 'out'} is in use by another sweep (pid {other.pid} on "
            f"{socket.gethostname()}, since 2026-01-01T00:00:00+0000): two sweeps on one "
            f"directory compute the same cells twice; wait for it to end or stop it (kill "
            f"{other.pid})"
        )
        assert json.loads((tmp_path / "out" / LOCK).read_text())["pid"] == other.pid  # left
        # the same pid, but a process started at another time (the pid was reused): stale
        (tmp_path / "out" / LOCK).write_text(_lock_of(other.pid, start=1))
        with sweep_lock(tmp_path / "out", notes.append) as path:
            assert json.loads(path.read_text())["pid"] == os.getpid()
        assert len(notes) == 1 and "took over" in notes[0]
    finally:
        other.kill()
        other.wait()


def test_a_dead_sweeps_lock_is_taken_over_and_another_hosts_is_refused(tmp_path):
    from hpcdispatch.sweep.store import LOCK, SweepLocked, sweep_lock

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # (a pid no process has now)
    lock = tmp_path / LOCK
    lock.write_text(_lock_of(dead.pid, start=123))
    notes: list[str] = []
    with sweep_lock(tmp_path, notes.append):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert notes == [
        f"note: took over {lock} from a sweep that died (pid {dead.pid} on "
        f"{socket.gethostname()}, since 2026-01-01T00:00:00+0000); its unfinished cells run again"
    ]
    assert not lock.exists() and not list(tmp_path.iterdir())  # nothing set aside left over

    lock.write_text(_lock_of(dead.pid, host="elsewhere.example"))
    with pytest.raises(SweepLocked) as err, sweep_lock(tmp_path):
        pass
    assert f"locked by a sweep on another host (pid {dead.pid} on elsewhere.example" in str(
        err.value
    )
    assert str(err.value).endswith(f"remove {lock} and run again")
    assert lock.exists()
    lock.write_text("{half")
    with pytest.raises(SweepLocked, match=r"cannot be read; if no sweep runs .* remove it"):
        with sweep_lock(tmp_path):
            pass


@pytest.mark.slow
def test_a_second_sweep_run_on_the_same_directory_refuses(tmp_path):
    spec_path = write_spec(tmp_path, SMALL.format(jobs=300))
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "hpcdispatch", "sweep", "run", str(spec_path), "--out", str(out)]
        + ["-j", "1", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "sweep.lock").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = cli("sweep", "run", str(spec_path), "--out", str(out), "-j", "1")
        still_running = first.poll() is None
        _, err = first.communicate(timeout=600)
    finally:
        first.kill()
    assert still_running, "the first sweep ended before the second started: nothing tested"
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    assert f"is in use by another sweep (pid {first.pid} on {socket.gethostname()}" in (
        second.stderr
    )
    assert first.returncode == 0, err
    assert not (out / "sweep.lock").exists()
    assert (summary(out)["status"] == "done").all()
