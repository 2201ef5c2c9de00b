"""CP dispatchers at the papers' scale (issue 36): the KIT ForHLR II-like and Eurora-like
workloads, end to end, one run at a time (docs/RESULTS-CP.md, "At the papers' scale").

Each cell is one ``hpcdispatch simulate`` command, as a user runs it (interpreter, workload
generation, simulation, validation, outputs), in its own subprocess; one JSON line per finished
cell is appended to ``--out`` and cells already there are skipped, so a killed campaign resumes
with the same command. ``--report`` prints the markdown tables (the second one, waits per job
class and prediction quality, for the cells that recorded them).

    nice -n 10 python benchmarks/cp_scale.py --out benchmarks/results/cp/cp_scale.jsonl \\
        --cells "kit:hcp-W;kit:cp-hybrid-W"
    python benchmarks/cp_scale.py --report --out benchmarks/results/cp/cp_scale.jsonl

A cell is ``WORKLOAD:DISPATCHER-PREDICTOR``: WORKLOAD is ``kit`` (100,000 jobs, the paper's
arrival rate), ``kit85`` (the same at load 0.85, the stress of the issue), ``eurora`` (50,000
jobs) or ``eurora85``; DISPATCHER any spec without a predictor suffix (``hcp``,
``pcp20:budget=stall,stall=0.01``); PREDICTOR ``W``, ``L2``, ``D`` or ``R``. ``--jobs`` shrinks
every workload (a probe).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

PREDICTORS = {"W": "walltime", "L2": "last-two", "D": "data-driven", "R": "oracle"}
WORKLOADS = {
    "kit": ("synthetic:kit,jobs={jobs},seed=1", "kit-forhlr2", 100_000),
    "kit85": ("synthetic:kit,jobs={jobs},seed=1,load=0.85", "kit-forhlr2", 100_000),
    "eurora": ("synthetic:eurora,jobs={jobs},seed=1", "eurora", 50_000),
    "eurora85": ("synthetic:eurora,jobs={jobs},seed=1,load=0.85", "eurora", 50_000),
}
DEFAULT_CELLS = (
    [f"kit:{d}-W" for d in ("hcp", "cp-hybrid")]
    + [f"kit:{d}-R" for d in ("easy", "hcp", "cp-hybrid", "pcp20", "pcp19")]
    + [
        f"eurora:{d}-{p}"
        for p in ("R", "L2", "D")
        for d in ("easy", "cp-rule", "hcp", "cp-hybrid", "pcp20", "pcp19")
    ]
)


def parse_cell(cell: str, jobs: int | None) -> tuple[str, str, str, str, int]:
    """``kit:hcp-W`` -> (workload spec, system, dispatcher spec, predictor, jobs)."""
    wl, _, rest = cell.partition(":")
    dispatcher, _, pred = rest.rpartition("-")
    if wl not in WORKLOADS or pred not in PREDICTORS or not dispatcher:
        raise SystemExit(
            f"cell '{cell}': expected WORKLOAD:DISPATCHER-PREDICTOR with WORKLOAD one of "
            f"{', '.join(WORKLOADS)} and PREDICTOR one of {', '.join(PREDICTORS)}"
        )
    spec, system, default_jobs = WORKLOADS[wl]
    n = jobs or default_jobs
    return spec.format(jobs=n), system, dispatcher, PREDICTORS[pred], n


def decision_stats(run_dir: Path) -> dict:
    import pandas as pd

    dec = pd.read_parquet(run_dir / "decisions.parquet", columns=["elapsed_s", "info"])
    elapsed = dec["elapsed_s"].to_numpy()
    infos = [json.loads(t) if t else {} for t in dec["info"]]
    return {
        "decision_p99_ms": float(1000 * np.percentile(elapsed, 99)) if len(elapsed) else 0.0,
        "decision_max_ms": float(1000 * elapsed.max()) if len(elapsed) else 0.0,
        "models": sum("solve_s" in i for i in infos),
        # the decision time of the decisions that built a model (the rest is the rule's)
        "model_decision_time_s": float(sum(e for e, i in zip(elapsed, infos) if "solve_s" in i)),
        "fallbacks": sum(bool(i.get("fallback")) for i in infos),
        "fallback_reasons": dict(Counter(str(i["fallback"]) for i in infos if i.get("fallback"))),
    }


#: a "large" accelerator job asks for at least this many units (half of one accelerator half
#: of the Eurora preset, 32 GPU and 32 MIC nodes): the jobs that wait for that half to drain
LARGE_UNITS = 16
JOB_CLASSES = ("cpu", "accel_small", "accel_large")


def job_class_stats(run_dir: Path) -> dict:
    """Jobs, mean and max wait per class: ``cpu`` (no GPU or MIC), ``accel_small`` (GPUs or
    MICs, fewer than :data:`LARGE_UNITS` units), ``accel_large`` (the rest); jobs that never
    started are left out. Keys ``jobs_<class>``, ``wait_mean_<class>``, ``wait_max_<class>``."""
    import pandas as pd

    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    jobs = jobs[jobs["start"].notna()]
    accel_cols = [
        c for c in jobs.columns if c.startswith("unit_") and c not in ("unit_core", "unit_mem")
    ]
    accel = (
        (jobs[accel_cols] > 0).any(axis=1).to_numpy()
        if accel_cols
        else np.zeros(len(jobs), dtype=bool)
    )
    large = jobs["units"].to_numpy() >= LARGE_UNITS
    wait = (jobs["start"] - jobs["submit"]).to_numpy(dtype=np.float64)
    out: dict = {}
    for name, mask in zip(JOB_CLASSES, (~accel, accel & ~large, accel & large)):
        out[f"jobs_{name}"] = int(mask.sum())
        out[f"wait_mean_{name}"] = float(wait[mask].mean()) if mask.any() else None
        out[f"wait_max_{name}"] = float(wait[mask].max()) if mask.any() else None
    return out


def run(cells: list[str], out: Path, jobs: int | None, time_limit: float) -> None:
    done = {(r["cell"], r["jobs"]) for r in read(out) if r.get("ok")}
    for cell in cells:
        workload, system, dispatcher, predictor, n = parse_cell(cell, jobs)
        if (cell, n) in done:
            continue
        record = {
            "cell": cell,
            "workload": workload,
            "system": system,
            "dispatcher": dispatcher,
            "predictor": predictor,
            "jobs": n,
        }
        tmp = Path(tempfile.mkdtemp(prefix="cp-scale-"))
        run_dir = tmp / "run"
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "hpcdispatch",
                    "simulate",
                    "-w",
                    workload,
                    "-s",
                    system,
                    "-d",
                    dispatcher,
                    "-p",
                    predictor,
                    "-o",
                    str(run_dir),
                    "-q",
                ],
                capture_output=True,
                text=True,
                timeout=time_limit,
            )
            record["wall_s"] = time.perf_counter() - t0
            if proc.returncode == 0:
                s = json.loads((run_dir / "summary.json").read_text())
                record.update(
                    {
                        k: s.get(k)
                        for k in (
                            "valid",
                            "decisions",
                            "decision_time_mean_s",
                            "decision_time_total_s",
                            "sim_wall_s",
                            "wait_mean",
                            "wait_p95",
                            "wait_max",
                            "wait_std",
                            "bounded_slowdown_mean",
                            "slowdown_mean",
                            "slowdown_ratio_mean",
                            "slowdown_ratio_std",
                            "utilization_core",
                            "utilization_paper",
                            "queue_length_mean",
                            "queue_length_max",
                            "allocation_iterations_total",
                            "decisions_reiterated",
                            "postponed_by_allocation_total",
                        )
                    }
                )
                # the solver's stop reasons, and how good the predictions were (metrics.prediction)
                record.update(
                    {k: v for k, v in s.items() if k.startswith(("stop_", "prediction_"))}
                )
                record.update(decision_stats(run_dir), **job_class_stats(run_dir), ok=True)
            else:
                record.update(
                    ok=False,
                    error=(
                        proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
                    )[0],
                )
        except subprocess.TimeoutExpired:
            record.update(
                ok=False, wall_s=time.perf_counter() - t0, error=f"timeout after {time_limit:g} s"
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(
            cell,
            n,
            "ok" if record["ok"] else record["error"],
            f"{record['wall_s']:.0f} s",
            flush=True,
        )


def read(out: Path) -> list[dict]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def report(out: Path) -> None:
    short = {v: k for k, v in PREDICTORS.items()}
    print(
        "| workload | jobs | dispatcher | pred. | valid | wall | decisions | models | mean ms | p99 ms | max ms "
        "| fallbacks | HCP iterations | wait s (mean +- sd) | slowdown (mean +- sd) | mean bsld | util. |"
    )
    print("|---" * 17 + "|")
    for r in read(out):
        if not r.get("ok"):
            print(
                f"| {r['workload']} | {r['jobs']:,} | {r['dispatcher']} | {short[r['predictor']]} | - "
                f"| {r['wall_s']:.0f} s | {r['error']} |" + " |" * 10
            )
            continue
        note = (
            f" {r['cell'].partition(' ')[2]}".rstrip()
        )  # a renamed superseded cell: "kit:pcp20-R (before X)"
        print(
            f"| {r['workload'].split(',')[0]}{',load=0.85' if 'load=' in r['workload'] else ''} | {r['jobs']:,} "
            f"| {r['dispatcher']}{note} | {short[r['predictor']]} | {'yes' if r['valid'] else 'NO'} "
            f"| {r['wall_s']:,.0f} s | {r['decisions']:,} | {r['models']:,} "
            f"| {1000 * r['decision_time_mean_s']:.1f} | {r['decision_p99_ms']:.0f} | {r['decision_max_ms']:,.0f} "
            f"| {fallbacks(r)} | {r.get('allocation_iterations_total') or 0} "
            f"| {r['wait_mean']:,.0f} +- {r['wait_std']:,.0f} "
            f"| {r['slowdown_ratio_mean']:.2f} +- {r['slowdown_ratio_std']:.2f} | {r['bounded_slowdown_mean']:.2f} "
            f"| {100 * r['utilization_core']:.1f} % |"
        )


def class_report(out: Path) -> None:
    """Waits per job class (:func:`job_class_stats`), for the cells that recorded them, with
    the prediction quality (mean absolute error, share within 25 %)."""
    rows = [r for r in read(out) if r.get("ok") and "jobs_accel_large" in r]
    if not rows:
        return
    short = {v: k for k, v in PREDICTORS.items()}
    print(
        "\n| workload | dispatcher | pred. | prediction MAE s | A in [0.75, 1.25] | "
        + " | ".join(f"{c} jobs / mean / max wait s" for c in JOB_CLASSES)
        + " |"
    )
    print("|---" * (5 + len(JOB_CLASSES)) + "|")
    for r in rows:
        waits = " | ".join(
            f"{r[f'jobs_{c}']:,} / {r[f'wait_mean_{c}'] or 0:,.0f} / {r[f'wait_max_{c}'] or 0:,.0f}"
            for c in JOB_CLASSES
        )
        print(
            f"| {r['workload'].split(',')[0]} | {r['dispatcher']} | {short[r['predictor']]} "
            f"| {r.get('prediction_mae_s', float('nan')):,.0f} | {r.get('prediction_within_25pct', float('nan')):.3f} "
            f"| {waits} |"
        )


def fallbacks(r: dict) -> str:
    """``3 (no solution (UNKNOWN) 2, rule better 1)``: the rule's decision was used, and why."""
    if not r["fallbacks"]:
        return "0"
    return f"{r['fallbacks']} ({', '.join(f'{k} {v}' for k, v in sorted(r['fallback_reasons'].items()))})"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cells", help="';'-separated cells (default: the matrix of issue 36)")
    ap.add_argument(
        "--jobs", type=int, help="jobs per workload (default: 100,000 KIT-like, 50,000 Eurora-like)"
    )
    ap.add_argument("--out", type=Path, default=Path("cp_scale.jsonl"))
    ap.add_argument("--time-limit", type=float, default=7200.0, help="seconds per run")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    if a.report:
        report(a.out)
        class_report(a.out)
    else:
        run(a.cells.split(";") if a.cells else DEFAULT_CELLS, a.out, a.jobs, a.time_limit)


if __name__ == "__main__":
    main()
