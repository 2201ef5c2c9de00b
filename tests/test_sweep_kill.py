"""Kill test: a sweep SIGKILLed after some cells finished, restarted with the same command,
ends with every cell exactly once in the Parquet summary; the cells finished before the kill
are neither run again nor changed, and every cell's files are intact."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest
from sweeps import records, summary, write_spec

from hpcdispatch.results.store import read_run
from hpcdispatch.sweep import deterministic_columns, load_sweep
from hpcdispatch.sweep.store import read_record

SPEC = """
name = "kill"
systems = ["machine-s"]
dispatchers = ["fifo", "easy", "sjf", "easy:allocator=best-fit"]

[[workloads]]
generator = "lublin"
jobs = 300
load = 0.9
seeds = [1, 2]

[[workloads]]
generator = "lublin"
jobs = 250
load = 1.1
seeds = [4, 5]
"""


def _digest(cell_dir) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(cell_dir.iterdir())}


def _complete(out, ids) -> list[str]:
    return [cid for cid in ids if read_record(out / "cells" / cid) is not None]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The summary of the same sweep run without interruption."""
    from hpcdispatch.sweep import LocalExecutor, run_sweep

    d = tmp_path_factory.mktemp("uninterrupted")
    return run_sweep(load_sweep(write_spec(d, SPEC)), d / "out", LocalExecutor(2)).summary


@pytest.mark.slow
@pytest.mark.parametrize(
    "whole_group", [False, True], ids=["kill-main-process", "kill-process-group"]
)
def test_sigkill_then_rerun(tmp_path, whole_group, uninterrupted):
    spec_path = write_spec(tmp_path, SPEC)
    ids = load_sweep(spec_path).cell_ids()
    assert len(ids) == 16
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "sweep",
        "run",
        str(spec_path),
        "--out",
        str(out),
        "-j",
        "2",
        "-q",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 300  # (a generous bound: a loaded machine may be slow)
    while len(_complete(out, ids) if (out / "cells").is_dir() else []) < 3:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "3 cells did not finish in 300 s"
        time.sleep(0.02)
    workers = psutil.Process(proc.pid).children(recursive=True)
    if whole_group:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers die at once
    else:
        os.kill(proc.pid, signal.SIGKILL)  # only the sweep process: its workers must not live on
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    # (the workers look for their parent every 0.5 s; room for a loaded machine)
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive, f"orphaned worker processes survived the sweep: {alive}"

    finished = _complete(out, ids)
    assert 3 <= len(finished) < len(ids), "the kill came too late to test anything"
    before = {cid: _digest(out / "cells" / cid) for cid in finished}
    if (
        out / "summary.parquet"
    ).is_file():  # whatever the summary says at the kill, it is never ahead of the cells
        at_kill = summary(out)
        assert at_kill["cell_id"].is_unique and set(at_kill["cell_id"]) <= set(finished)

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert (
        f"{len(finished)} already done" in rerun.stdout
        and f"running {len(ids) - len(finished)}" in rerun.stdout
    )

    final = summary(out)
    assert final["cell_id"].tolist() == ids  # every cell exactly once, in the spec's order
    assert (final["status"] == "done").all() and final["valid"].all()
    for cid, digest in before.items():
        assert _digest(out / "cells" / cid) == digest, (
            f"cell {cid} finished before the kill was rewritten"
        )
    recs = records(out)
    assert sorted(recs) == sorted(ids)
    cols = deterministic_columns(final)
    for _, row in final.iterrows():
        run = read_run(out / "cells" / row["cell_id"])  # every file is readable
        assert len(run.jobs) == run.summary["jobs"] == row["jobs"]
        assert recs[row["cell_id"]]["summary"]["wait_mean"] == row["wait_mean"]
        assert all(
            row[k] == run.summary[k]
            for k in ("makespan", "bounded_slowdown_mean", "decisions")
            if k in cols
        )
    assert not [p.name for p in (out / "cells").iterdir() if p.name.startswith(".")]
    # and the result is the one an uninterrupted sweep gives
    cols = [c for c in cols if c != "config"]
    pd.testing.assert_frame_equal(final[cols], uninterrupted[cols], check_exact=True)
