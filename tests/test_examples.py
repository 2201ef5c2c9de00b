"""The files in examples/ work as examples/README.md says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # (each runs the command line on a whole example)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args], capture_output=True, text=True, timeout=900
    )


def test_example_jobs_csv_simulates_and_validates(tmp_path):
    out = tmp_path / "jobs"
    p = run(
        "simulate",
        "-w",
        str(EXAMPLES / "jobs.csv"),
        "-s",
        "machine-s",
        "-d",
        "slurm-bf",
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 10 and summary["started"] == 10  # every request of the file is read
    workload = pd.read_parquet(out / "workload.parquet").set_index("job_id")
    # Slurm's conventions: 01:00:00 is an hour, a bare 30 is 30 minutes, 1-00:00:00 a day
    assert workload.loc[1, "wall_time"] == 3600 and workload.loc[2, "wall_time"] == 1800
    assert workload.loc[5, "wall_time"] == 86400
    # -N 2 --ntasks-per-node=8 --gres=gpu:2: two units of (8 cores, 2 GPUs)
    assert (
        workload.loc[2, "units"],
        workload.loc[2, "unit_core"],
        workload.loc[2, "unit_gpu"],
    ) == (2, 8, 2)
    v = run("validate", str(out))
    assert v.returncode == 0 and "schedule valid" in v.stdout, v.stdout + v.stderr


def test_example_sweep_runs_and_reports(tmp_path):
    out = tmp_path / "sweep"
    p = run("sweep", "run", str(EXAMPLES / "sweep.toml"), "-o", str(out), "-q")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = pd.read_parquet(out / "summary.parquet")
    assert len(summary) == 12 and (summary["status"] == "done").all()
    r = run("report", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report" / "report.html").is_file()
