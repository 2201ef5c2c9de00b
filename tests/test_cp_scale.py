"""benchmarks/cp_scale.py: issue 36's KIT-like / Eurora-like campaign, one cell per command."""

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "cp_scale", Path(__file__).resolve().parents[1] / "benchmarks" / "cp_scale.py"
)
cp_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp_scale)


def test_cells_name_workload_dispatcher_and_predictor():
    assert cp_scale.parse_cell("kit:hcp-W", None) == (
        "synthetic:kit,jobs=100000,seed=1",
        "kit-forhlr2",
        "hcp",
        "walltime",
        100_000,
    )
    assert cp_scale.parse_cell("eurora85:pcp20:budget=stall,stall=0.01-D", 300) == (
        "synthetic:eurora,jobs=300,seed=1,load=0.85",
        "eurora",
        "pcp20:budget=stall,stall=0.01",
        "data-driven",
        300,
    )


@pytest.mark.slow
def test_a_cell_runs_validates_and_is_not_run_twice(tmp_path, capsys):
    """A real (tiny) cell: the command's summary and decision log land in one JSON line; the
    same campaign started again skips it (a killed campaign resumes)."""
    out = tmp_path / "scale.jsonl"
    cp_scale.run(["eurora:cp-rule-R"], out, 40, 600)
    cp_scale.run(["eurora:cp-rule-R"], out, 40, 600)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 1
    r = records[0]
    assert r["ok"] and r["valid"] and r["jobs"] == 40
    assert r["workload"] == "synthetic:eurora,jobs=40,seed=1" and r["predictor"] == "oracle"
    assert r["decisions"] >= 40 and r["decision_p99_ms"] <= r["decision_max_ms"]
    assert r["fallbacks"] == sum(r["fallback_reasons"].values())
    assert r["models"] == 0 and r["model_decision_time_s"] == 0.0  # cp-rule builds no model
    # the oracle's predictions are the run times: exact, no error
    assert r["prediction_exact_rate"] == 1.0 and r["prediction_mae_s"] == 0.0
    # the job classes partition the jobs, and their waits average to the run's mean wait
    classes = cp_scale.JOB_CLASSES
    assert sum(r[f"jobs_{c}"] for c in classes) == 40
    weighted = sum(r[f"jobs_{c}"] * r[f"wait_mean_{c}"] for c in classes if r[f"jobs_{c}"])
    assert abs(weighted / 40 - r["wait_mean"]) < 1e-6
    assert max(r[f"wait_max_{c}"] for c in classes if r[f"jobs_{c}"]) == r["wait_max"]
    cp_scale.report(out)
    table = capsys.readouterr().out
    assert "| synthetic:eurora | 40 | cp-rule | R | yes |" in table
    cp_scale.class_report(out)
    assert "| synthetic:eurora | cp-rule | R | 0 | 1.000 |" in capsys.readouterr().out


def test_job_classes_by_accelerators_and_units(tmp_path):
    """Hand-made jobs: a CPU job, a 2-unit GPU job, a 16-unit MIC job (large) and one that
    never started (left out)."""
    import pandas as pd

    pd.DataFrame(
        {
            "submit": [0.0, 10.0, 20.0, 30.0],
            "start": [5.0, 10.0, 120.0, None],
            "units": [32, 2, 16, 1],
            "unit_core": [16, 1, 1, 1],
            "unit_mem": [1024, 1024, 1024, 1024],
            "unit_gpu": [0, 1, 0, 1],
            "unit_mic": [0, 0, 2, 0],
        }
    ).to_parquet(tmp_path / "jobs.parquet")
    assert cp_scale.job_class_stats(tmp_path) == {
        "jobs_cpu": 1,
        "wait_mean_cpu": 5.0,
        "wait_max_cpu": 5.0,
        "jobs_accel_small": 1,
        "wait_mean_accel_small": 0.0,
        "wait_max_accel_small": 0.0,
        "jobs_accel_large": 1,
        "wait_mean_accel_large": 100.0,
        "wait_max_accel_large": 100.0,
    }
