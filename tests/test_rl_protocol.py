"""RLScheduler's protocol (cleaning profile, sampling, ``rl evaluate``) and the training
example (two short batches, its gradient, its policy through ``compare``)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hpcdispatch.cli.main import cli
from hpcdispatch.dispatchers.policy import NumpyPolicy, load_policy
from hpcdispatch.rl.sequences import job_slice, load_rlscheduler, rlscheduler_starts

ROOT = Path(__file__).resolve().parents[1]

SWF = """; MaxNodes: 4
; MaxProcs: 8
5 30 -1 100 2 -1 -1 3 -1 -1 1 1 1 1 1 1 -1 -1
1 0 -1 50 4 -1 -1 -1 60 -1 1 1 1 1 1 1 -1 -1
2 10 -1 0 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1
3 20 -1 -7 1 -1 -1 2 30 -1 1 1 1 1 1 1 -1 -1
4 25 -1 -1 1 -1 -1 1 -1 -1 1 1 1 1 1 1 -1 -1
6 40 -1 10 9 -1 -1 9 10 -1 1 1 1 1 1 1 -1 -1
"""


def test_the_rlscheduler_cleaning_profile_by_hand(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(SWF)
    system, wl = load_rlscheduler(path)
    assert system.n_nodes == 4 and int(system.capacity[0, 0]) == 2  # 8 procs on 4 nodes
    # job 2: run time 0, dropped; job 6: 9 processors > 8, dropped; the rest in id order
    assert wl.ids.tolist() == [1, 3, 4, 5]
    # processors: max(allocated, requested); 2 per node -> whole nodes
    assert [j.processors for j in wl.jobs] == [4, 2, 1, 3]
    assert wl.units.tolist() == [2, 1, 1, 2]
    # run time -7 -> 10 s; request -1 -> the run time (job 4: -1 before the fix, raised to 1 s)
    assert wl.run_time.tolist() == [50, 10, 10, 100]
    assert wl.wall_time.tolist() == [60, 30, 1, 100]
    assert wl.report.skipped == {"zero-run-time": 1, "too-big": 1}
    assert wl.report.first_lines == {"zero-run-time": [5], "too-big": [8]}  # file lines
    assert wl.report.patched == {"requested time below 1 s raised to 1 s": 1}


def test_rlscheduler_samples_as_gym_0x_seeds():
    # gym 0.14.0's seeding.np_random(1)[0].randint(1024, 10000 - 1024 - 1), three draws,
    # read in a virtual environment with that gym (benchmarks/rl_rlscheduler.py installs it)
    assert rlscheduler_starts(10000, 1024, 3, 1) == [1981, 2756, 4299]


def test_a_job_slice_keeps_submit_times_and_records_its_origin():
    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload

    wl_sys = load_system("lublin-256")
    wl = load_workload("synthetic:lublin,jobs=50,seed=1", wl_sys)
    part = job_slice(wl, 10, 5)
    assert part.submit.tolist() == wl.submit[10:15].tolist()
    assert part.ids.tolist() == wl.ids[10:15].tolist()
    assert part.source.options["first_job"] == 10 and part.source.kind == "synthetic"
    # the window is taken again from its source (what the validator does with a run directory)
    from hpcdispatch.workload.loader import workload_from_source

    again = workload_from_source(part.source.kind, part.source.spec, part.source.options, wl_sys)
    assert again.ids.tolist() == part.ids.tolist() and again.submit.tolist() == part.submit.tolist()


def _trace(tmp_path: Path, n: int = 80) -> Path:
    lines = ["; MaxNodes: 8", "; MaxProcs: 8"]
    for i in range(n):
        lines.append(
            f"{i + 1} {i * 30} -1 {40 + (i * 37) % 200} {1 + (i * 5) % 8} -1 -1 "
            f"{1 + (i * 5) % 8} {60 + (i * 37) % 300} -1 1 1 1 1 1 1 -1 -1"
        )
    path = tmp_path / "trace.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rl_evaluate_writes_the_protocol_table(tmp_path):
    trace = _trace(tmp_path)
    out = tmp_path / "t.csv"
    res = CliRunner().invoke(
        cli,
        [
            "rl",
            "evaluate",
            "-w",
            str(trace),
            "-d",
            "fcfs,sjf,wfp3,unicep,f1",
            "--protocol",
            "rlscheduler",
            "--backfill",
            "on",
            "--iterations",
            "2",
            "--jobs",
            "20",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["dispatcher", "backfill", "mean_bounded_slowdown", "utilization"]
    assert [r["dispatcher"] for r in rows] == ["fcfs", "sjf", "wfp3", "unicep", "f1"]
    assert all(r["backfill"] == "on" and float(r["mean_bounded_slowdown"]) >= 1 for r in rows)

    # the fcfs row by hand: the same two sequences simulated directly
    from hpcdispatch.engine import simulate
    from hpcdispatch.rl.evaluate import sequence_metrics, sequences
    from hpcdispatch.sim import SimulationOptions

    system, seqs, starts = sequences(trace, 20, 2, 1, 0)
    assert starts == rlscheduler_starts(80, 20, 2, 1)
    opts = SimulationOptions(walltime_kill=False)
    b = [
        sequence_metrics(simulate(system, s, "fcfs:backfill=rlscheduler", options=opts), system)
        for s in seqs
    ]
    assert float(rows[0]["mean_bounded_slowdown"]) == pytest.approx(
        np.mean([x[0] for x in b]), rel=1e-5
    )
    assert float(rows[0]["utilization"]) == pytest.approx(np.mean([x[1] for x in b]), rel=1e-5)


def test_rl_evaluate_refuses_a_short_trace_in_one_line(tmp_path):
    trace = _trace(tmp_path, n=30)
    res = CliRunner().invoke(cli, ["rl", "evaluate", "-w", str(trace), "--jobs", "20"])
    assert res.exit_code != 0
    assert "the workload has only 30 jobs" in str(res.exception)


def _example():
    spec = importlib.util.spec_from_file_location(
        "train_reinforce", ROOT / "examples" / "rl" / "train_reinforce.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_examples_gradient_matches_finite_differences():
    ex = _example()
    pol = NumpyPolicy.random(hidden=(4, 3), seed=2)
    x = np.random.default_rng(1).random((6, 5))
    scores, acts = ex.forward(pol, x)
    p = np.exp(scores - scores.max())
    p /= p.sum()
    grads = ex.grad_log_prob(pol, acts, p, 2)

    def logp() -> float:
        s, _ = ex.forward(pol, x)
        return float(s[2] - np.log(np.exp(s).sum()))

    params = [a for pair in zip(pol.weights, pol.biases) for a in pair]
    for param, grad in zip(params, grads):
        idx = (0,) * param.ndim
        old = param[idx]
        param[idx] = old + 1e-6
        up = logp()
        param[idx] = old - 1e-6
        down = logp()
        param[idx] = old
        assert grad[idx] == pytest.approx((up - down) / 2e-6, rel=1e-4, abs=1e-8)


def test_the_example_trains_two_short_batches_and_its_policy_runs_in_compare(tmp_path):
    ex = _example()
    out = tmp_path / "p.npz"
    code = ex.main(
        [
            "--trace",
            "synthetic:lublin,jobs=150,seed=4",
            "--system",
            "lublin-256",
            "--cleaning",
            "none",
            "--jobs",
            "20",
            "--window",
            "16",
            "--batches",
            "2",
            "--episodes",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    pol = load_policy(out)
    assert pol.window == 16
    rows = list(csv.reader((tmp_path / "p.csv").open()))
    assert rows[0] == ["batch", "mean_bounded_slowdown", "fcfs_mean_bounded_slowdown"]
    assert len(rows) == 3
    assert (tmp_path / "p.png").stat().st_size > 1000
    res = CliRunner().invoke(
        cli,
        [
            "compare",
            "-w",
            "synthetic:lublin,jobs=120,seed=5",
            "-s",
            "lublin-256",
            "-d",
            f"fcfs,f1,policy:path={out}",
            "-o",
            str(tmp_path / "cmp"),
        ],
    )
    assert res.exit_code == 0, res.output  # exit code 1 when a schedule is invalid
    from hpcdispatch.validation import validate_run_dir

    runs = [d for d in (tmp_path / "cmp").iterdir() if d.is_dir() and d.name.startswith("policy")]
    assert len(runs) == 1
    report = validate_run_dir(runs[0])
    assert report.ok, report.describe()
