"""Diagnostics behind docs/RESULTS-AUCSCHED.md: why rows differ from the paper.

For each (workload, version, max_cores) on machine-s, seed 1, AUCSCHED vs SLURM/BF: utilization,
makespan, the mean wait of the 10 % largest jobs (by cores) and of the rest, the GPU load
(GPU-seconds requested / (GPUs x theoretical runtime)), and the share of the makespan after the
last job start (the tail where only a few long jobs run). Writes ``<out>/diagnostics.md``.

    python benchmarks/aucsched_diagnostics.py --rows IV.2,V.1 --max-cores 0,64
    python benchmarks/aucsched_diagnostics.py --rows I.1,IV.1 --max-cores 0 \
        --methods "AUCSCHED age=aucsched:priority=age;AUCSCHED basic=aucsched:priority=basic;SLURM/BF=slurm-bf"

``--methods``: ``label=dispatcher spec`` pairs separated by ``;`` (default: AUCSCHED and
SLURM/BF with their default options). Rows are appended to ``<out>/<name>`` (``--name``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hpcdispatch.runner import run_simulation
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload

SPECS = {"AUCSCHED": "aucsched", "SLURM/BF": "slurm-bf"}


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", default="IV.1,IV.3,V.1")
    p.add_argument(
        "--max-cores", default="0,64", help="0 = the generator's default (nodes x cores / 8)"
    )
    p.add_argument("--machine", default="machine-s")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runtime-h", type=float, default=4.0)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/aucsched"))
    p.add_argument(
        "--methods", default="", help="label=spec;label=spec (default: AUCSCHED and SLURM/BF)"
    )
    p.add_argument("--name", default="diagnostics.md", help="output file name in --out")
    args = p.parse_args()
    specs = dict(SPECS)
    if args.methods:
        specs = dict(item.split("=", 1) for item in args.methods.split(";") if item.strip())
    system = load_system(args.machine)
    gi, ci = system.resource_index("gpu"), system.resource_index("core")
    lines = [
        f"machine {args.machine}, seed {args.seed}, theoretical runtime {args.runtime_h:g} h",
        "",
        "| Row | max cores | Method | spec | Util | Makespan (h) | GPU load | wait largest 10 % (h) | wait rest (h) | "
        "tail after last start | Waiting (h) | Slowdown | Fragmentation | Spread | jobs |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in args.rows.split(","):
        wl_name, version = row.split(".")
        for mc in (int(x) for x in args.max_cores.split(",")):
            spec = (
                f"synthetic:aucsched,workload={wl_name},version={version},seed={args.seed},"
                f"runtime_h={args.runtime_h:g}" + (f",max_cores={mc}" if mc else "")
            )
            wl = load_workload(spec, system)
            cores = (
                wl.units * wl.unit_requests[:, ci] + wl.node_counts * wl.per_node_requests[:, ci]
            )
            gpus = (
                wl.units * wl.unit_requests[:, gi]
                + np.maximum(wl.node_counts, 1) * wl.per_node_requests[:, gi]
            )
            theo = float((cores * wl.run_time).sum()) / float(system.total_capacity[ci])
            gpu_load = float((gpus * wl.run_time).sum()) / (float(system.total_capacity[gi]) * theo)
            big = cores >= np.quantile(cores, 0.9)
            for method, dspec in specs.items():
                out = run_simulation(system, wl, dspec)
                r, s = out.result, out.summary
                wait = r.start - wl.submit
                tail = (float(np.nanmax(r.end)) - float(np.nanmax(r.start))) / float(
                    np.nanmax(r.end)
                )
                lines.append(
                    f"| {row} | {mc or system.n_nodes} | {method} | `{dspec}` | {s['utilization_paper']:.1%} | "
                    f"{s['makespan'] / 3600:.2f} | {gpu_load:.2f} | {wait[big].mean() / 3600:.2f} | "
                    f"{wait[~big].mean() / 3600:.2f} | {tail:.1%} | {s['wait_mean'] / 3600:.2f} | "
                    f"{s['slowdown_ratio_mean']:.2f} | {s['fragmentation_mean']:.2f} | {s['spread_mean']:.2f} | "
                    f"{len(wl)} |"
                )
                print(lines[-1], flush=True)
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / args.name).write_text(
                    "\n".join(lines) + "\n"
                )  # after every row: partial results survive


if __name__ == "__main__":
    main()
