"""The same 3 x 3 x 2 sweep (FIFO/EASY/SJF x three workloads x two seeds) gives identical
results with local processes and with a Dask LocalCluster of 2 workers (started and stopped
here), through the Python API and through ``sweep run --dask ADDRESS``."""

from __future__ import annotations

import pandas as pd
import pytest
from sweeps import cli, summary, write_spec

from hpcdispatch.sweep import (
    DaskExecutor,
    LocalExecutor,
    deterministic_columns,
    load_sweep,
    run_sweep,
)

SPEC = """
name = "three-by-three-by-two"
dispatchers = ["fifo", "easy", "sjf"]

[[workloads]]
generator = "lublin"
name = "lublin-a"
jobs = 150
load = 0.8
seeds = [1, 2]

[[workloads]]
generator = "lublin"
name = "lublin-b"
jobs = 120
load = 1.0
seeds = [1, 2]

[[workloads]]
generator = "lublin"
name = "lublin-batch"
jobs = 100
load = 0.9
interactive = false
seeds = [1, 2]
"""


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    cl = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        yield cl
    finally:
        cl.close()


@pytest.mark.slow
def test_local_and_dask_give_identical_results(tmp_path, cluster):
    from distributed import Client

    spec = load_sweep(write_spec(tmp_path, SPEC))
    assert len(spec.cells) == 18
    local = run_sweep(spec, tmp_path / "local", LocalExecutor(2))
    with Client(cluster) as client:
        dask = run_sweep(spec, tmp_path / "dask", DaskExecutor(client=client))
    p = cli(
        "sweep",
        "run",
        str(tmp_path / "sweep.toml"),
        "--out",
        str(tmp_path / "cli"),
        "--dask",
        cluster.scheduler_address,
        "-q",
    )
    assert p.returncode == 0, p.stderr
    assert "Dask scheduler" in p.stdout and "18 done" in p.stdout

    frames = {name: summary(tmp_path / name) for name in ("local", "dask", "cli")}
    assert (local.done, dask.done) == (18, 18)
    cols = deterministic_columns(frames["local"])
    assert {
        "wait_mean",
        "bounded_slowdown_mean",
        "utilization_core",
        "makespan",
        "decisions",
        "label",
    } <= set(cols)
    for name, frame in frames.items():
        assert frame["cell_id"].tolist() == spec.cell_ids(), name
        assert (frame["status"] == "done").all() and frame["valid"].all(), name
        pd.testing.assert_frame_equal(frame[cols], frames["local"][cols], check_exact=True)
    # the Dask cells really ran on both workers, in other processes than the local ones
    assert frames["dask"]["worker"].nunique() == 2
    assert not set(frames["dask"]["worker"]) & set(frames["local"]["worker"])
    # not only the summaries: every schedule is the same, job by job
    for cid in spec.cell_ids():
        a = pd.read_parquet(tmp_path / "local" / "cells" / cid / "jobs.parquet")
        b = pd.read_parquet(tmp_path / "dask" / "cells" / cid / "jobs.parquet")
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    # the three dispatchers do differ (the comparison is not vacuous)
    waits = frames["local"].groupby("run_label")["wait_mean"].mean()
    assert waits["fifo"] > waits["easy"] and waits.nunique() == 3
