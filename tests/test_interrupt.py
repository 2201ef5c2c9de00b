"""Ctrl-C (SIGINT) stops any run at once, exits 130 and leaves its journal resumable.

CP-SAT catches SIGINT by default and only ends the current search, so a CP run used to go
on to its next decision (SIGINT four times over 80 s did not stop `-d pcp20`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest


def started_deciding(journal, calls: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("\n") > calls:
            return
        time.sleep(0.2)
    raise AssertionError(f"no {calls} decisions recorded in {timeout} s")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["pcp20:delta=4,delta_max=8", "aucsched:time_limit=30"])
def test_sigint_stops_a_solver_run_at_once(tmp_path, spec):
    journal = tmp_path / "run.jsonl"
    workload, system = (
        ("synthetic:lublin,jobs=400,seed=3,load=1.2", "machine-s")
        if spec.startswith("pcp20")
        else ("synthetic:aucsched,workload=V,version=2,seed=1,runtime_h=4", "machine-l")
    )
    args = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "simulate",
        "-w",
        workload,
        "-s",
        system,
        "-d",
        spec,
        "-o",
        str(tmp_path / "out"),
        "-q",
    ]
    if spec.startswith("pcp20"):
        args += ["--journal", str(journal)]
    # as from a terminal: SIGINT at its default (a shell's background job -- how CI may start
    # pytest -- hands SIGINT down ignored, and Python then keeps ignoring it)
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        if spec.startswith("pcp20"):
            started_deciding(
                journal, 60
            )  # well into the congested part: decisions solve for seconds
        else:
            time.sleep(8)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    # a run that caught Ctrl-C only in CP-SAT went on to its next decision and never exited
    # 130; this one exits at once (under 2 s on an idle machine: the bound leaves room for a
    # loaded one)
    assert took < 10.0, took
    assert "interrupted" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    if spec.startswith("pcp20"):
        lines = journal.read_text().splitlines()
        assert all(
            json.loads(line) for line in lines
        )  # every record whole: the run resumes from it
        assert json.loads(lines[-1])["k"] == len(lines) - 2


def test_a_ctrl_c_during_a_lazy_import_is_raised_after_it():
    """OR-Tools is imported when the first model is built, in the middle of a run; a Ctrl-C
    that arrives meanwhile must not be swallowed by the extension module's initialisation."""
    import threading

    from hpcdispatch._util import LazyModule

    mod = LazyModule("json")  # (any module not yet imported through this proxy)
    import importlib

    real = importlib.import_module

    def slow_import(name, *a, **k):
        # arrives during the import, in the main thread (os.kill lets the kernel pick any thread
        # of the process, and one busy elsewhere can run the C handler after the import: the
        # test then raced on a loaded machine)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(0.05)
        return real(name, *a, **k)

    importlib.import_module = slow_import
    # Python's own Ctrl-C handler for the test: a process started in the background by a
    # non-interactive shell inherits SIGINT ignored, and then a held Ctrl-C is rightly dropped
    # (below)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _ = mod.dumps
        assert mod._module is not None  # the import ran to its end; the Ctrl-C came after it
        assert mod.dumps([1]) == "[1]"
        # with Ctrl-C ignored, the held one is dropped as the process asked: no exception
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ignored = LazyModule("csv")
        assert ignored.QUOTE_ALL is not None and ignored._module is not None
    finally:
        importlib.import_module = real
        signal.signal(signal.SIGINT, inherited)


# ---- SIGTERM takes Ctrl-C's path: exit 143, "interrupted", journal and checkpoint intact ----


def _hpcdispatch(*args: str) -> list[str]:
    return [sys.executable, "-m", "hpcdispatch", *args]


def _sigterm_once(args: list[str], ready, timeout: float = 180.0, **popen):
    """Start ``args``, send SIGTERM once ``ready()`` holds; (return code, stderr, the
    process's children at the signal)."""
    import psutil

    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"not ready in {timeout} s"
            time.sleep(0.05)
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err, children


def _same_schedule(a, b) -> None:
    import pandas as pd

    ja, jb = pd.read_parquet(a / "jobs.parquet"), pd.read_parquet(b / "jobs.parquet")
    pd.testing.assert_frame_equal(ja, jb)


@pytest.mark.slow
@pytest.mark.parametrize("keep", ["checkpoint", "journal"])
def test_sigterm_stops_simulate_like_ctrl_c_and_the_run_resumes(tmp_path, keep):
    file, out, clean = tmp_path / f"run.{keep}", tmp_path / "out", tmp_path / "clean"
    base = ["simulate", "-w", "synthetic:lublin,jobs=400,seed=3,load=1.1", "-s", "machine-s"]
    base += ["-d", "conservative" if keep == "checkpoint" else "easy", "-q"]
    extra = (
        ["--checkpoint", str(file), "--checkpoint-every", "0"]
        if keep == "checkpoint"
        else ["--journal", str(file)]
    )

    def ready() -> bool:
        if keep == "checkpoint":
            return file.exists()
        return file.exists() and file.read_text().count("\n") > 30

    code, err, _ = _sigterm_once(_hpcdispatch(*base, "-o", str(out), *extra), ready)
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)" and "Traceback" not in err
    assert not out.exists()  # no half-written output
    assert file.exists()
    if keep == "journal":
        lines = file.read_text().splitlines()
        assert all(json.loads(line) for line in lines)  # every record whole
    resumed = subprocess.run(
        _hpcdispatch(*base, "-o", str(out), *extra), capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    said = " ".join(resumed.stdout.split())  # (rich wraps lines at the pipe's width)
    assert ("resumed at t=" if keep == "checkpoint" else " decisions replayed") in said
    subprocess.run(_hpcdispatch(*base, "-o", str(clean)), check=True, timeout=600)
    _same_schedule(out, clean)


@pytest.mark.slow
def test_sigterm_stops_compare_like_ctrl_c(tmp_path):
    out = tmp_path / "out"
    args = _hpcdispatch("compare", "-w", "synthetic:lublin,jobs=3000,seed=3,load=1.1")
    args += ["-s", "machine-s", "-d", "conservative,easy", "-o", str(out), "-q"]
    from hpcdispatch.results.outdir import WRITING_PREFIX

    def running() -> bool:
        # the compare writes into a temporary directory beside OUT once it runs (its SIGTERM
        # handler is in place by then; a loaded machine may take many seconds to get there)
        return any(p.name.startswith(WRITING_PREFIX) for p in tmp_path.iterdir())

    code, err, _ = _sigterm_once(args, running)
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)" and "Traceback" not in err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("whole_group", [False, True], ids=["main-process", "process-group"])
def test_sigterm_stops_a_sweep_like_ctrl_c(tmp_path, whole_group):
    import os

    import psutil
    from sweeps import SMALL, summary, write_spec

    from hpcdispatch.sweep import load_sweep
    from hpcdispatch.sweep.store import read_record

    spec = write_spec(
        tmp_path, SMALL.format(jobs=400).replace("seeds = [1, 2]", "seeds = [1, 2, 3]")
    )
    ids = load_sweep(spec).cell_ids()
    out = tmp_path / "out"
    args = _hpcdispatch("sweep", "run", str(spec), "--out", str(out), "-j", "2", "-q")

    def done() -> list[str]:
        cells = out / "cells"
        return [c for c in ids if cells.is_dir() and read_record(cells / c) is not None]

    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 180
        while len(done()) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no cell finished in 180 s"
            time.sleep(0.05)
        workers = psutil.Process(proc.pid).children(recursive=True)
        if whole_group:
            os.killpg(proc.pid, signal.SIGTERM)  # (a batch system's time limit: every process)
        else:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted (SIGTERM)" and "Traceback" not in err
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, f"worker processes survived the sweep: {alive}"
    assert not (out / "sweep.lock").exists()  # released on the way out
    finished = done()
    assert 2 <= len(finished) < len(ids), "the signal came too late to test anything"
    failed = [c for c in finished if read_record(out / "cells" / c)["status"] != "done"]
    assert not failed, f"cells recorded as failed by the SIGTERM: {failed}"
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(finished)} already done" in rerun.stdout
    final = summary(out)
    assert final["cell_id"].tolist() == ids and (final["status"] == "done").all()
