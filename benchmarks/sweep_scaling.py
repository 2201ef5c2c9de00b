"""Sweep speed-up: the same 24-cell sweep with 1 and with 2 local worker processes.

The sweep: FIFO, SJF, EASY and EASY + best fit x three Lublin-Feitelson workloads
(loads 0.8, 0.9, 1.0) x two seeds, on machine-s; every cell simulates, validates and writes
its outputs. Each run starts from an empty output directory and includes starting the
worker processes. ``--repeat N`` alternates the two configurations N times (1, 2, 1, 2, ...)
and reports every time and the ratio of the medians. ``--dask`` adds a Dask LocalCluster of
2 workers (cluster start-up included).

    python benchmarks/sweep_scaling.py [--jobs 3000] [--repeat 1] [--dask] [--out sweep_scaling.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hpcdispatch.sweep import (
    DaskExecutor,
    LocalExecutor,
    deterministic_columns,
    load_sweep,
    run_sweep,
)

SPEC = """
name = "scaling"
systems = ["machine-s"]
dispatchers = ["fifo", "sjf", "easy", "easy:allocator=best-fit"]

[[workloads]]
generator = "lublin"
jobs = {jobs}
load = 0.8
seeds = [1, 2]

[[workloads]]
generator = "lublin"
jobs = {jobs}
load = 0.9
seeds = [1, 2]

[[workloads]]
generator = "lublin"
jobs = {jobs}
load = 1.0
seeds = [1, 2]
"""


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=3000, help="jobs per workload")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--dask", action="store_true", help="also time a Dask LocalCluster of 2 workers"
    )
    ap.add_argument("--out", type=Path, default=Path("sweep_scaling.json"))
    args = ap.parse_args()
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="hpcdispatch-scaling-"))
    spec_path = work / "scaling.toml"
    spec_path.write_text(SPEC.format(jobs=args.jobs))
    spec = load_sweep(spec_path)
    assert len(spec.cells) == 24
    times: dict[str, list[float]] = {"1 local worker": [], "2 local workers": []}
    summaries = {}
    cpu_s: dict[str, list[float]] = {}
    configs = [
        ("1 local worker", lambda: LocalExecutor(1)),
        ("2 local workers", lambda: LocalExecutor(2)),
    ]
    if args.dask:
        times["Dask LocalCluster, 2 workers"] = []
        configs.append(("Dask LocalCluster, 2 workers", lambda: DaskExecutor("local:2")))
    for rep in range(args.repeat):
        for name, make in configs:
            out = work / f"{name.replace(' ', '_').replace(',', '')}-{rep}"
            with console.status(f"{name}, run {rep + 1} ..."):
                load = os.getloadavg()[0]
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                outcome = run_sweep(spec, out, make())
                wall = time.perf_counter() - t0
                cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            assert outcome.done == 24, outcome.failed_labels
            times[name].append(wall)
            summaries[name] = outcome.summary
            # CPU time of the worker processes (local executors: they are children, joined at the end)
            cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
            cpu_s.setdefault(name, []).append(cpu)
            console.print(
                f"{name}: {wall:.2f} s wall, workers' CPU {cpu:.2f} s, 1-min load average before: {load:.2f}"
            )
    ref = summaries["1 local worker"]
    cols = deterministic_columns(ref)
    identical = all(s[cols].equals(ref[cols]) for s in summaries.values())
    base = statistics.median(times["1 local worker"])
    table = Table(title=f"24-cell sweep, {args.jobs} jobs per workload")
    for col in ("executor", "wall s (each run)", "median s", "vs 1 worker"):
        table.add_column(col, justify="right" if col != "executor" else "left")
    result = {"jobs": args.jobs, "cells": 24, "identical_summaries": identical, "runs": {}}
    for name, ts in times.items():
        med = statistics.median(ts)
        table.add_row(name, ", ".join(f"{t:.2f}" for t in ts), f"{med:.2f}", f"{med / base:.3f}")
        result["runs"][name] = {
            "seconds": ts,
            "median_s": med,
            "ratio_vs_1_worker": med / base,
            "workers_cpu_s": cpu_s.get(name, []),
        }
    console.print(table)
    console.print(f"deterministic summary columns identical across executors: {identical}")
    sim = float(ref["sim_wall_s"].sum())
    console.print(f"simulation time inside the cells (1 worker): {sim:.2f} s of {base:.2f} s")
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"written {args.out}")


if __name__ == "__main__":
    main()
