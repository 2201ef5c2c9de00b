"""The AUCSCHED paper's Tables 5-7: workloads I-V x contiguous fraction (.1 .2 .3) x seeds,
AUCSCHED vs SLURM/BF, on machine-s / machine-m (machine-l on request).

Every run is simulated in this process (single core: run it under ``nice``), validated, and
appended as one row to ``<out>/runs.csv``; rows already there are skipped, so an interrupted
campaign resumes where it stopped. After every run the aggregated table (mean over seeds;
the ``±`` values are per-run standard deviations over jobs, averaged over seeds, as in the
paper) is rewritten to ``<out>/table.csv`` and ``<out>/table.md``.

    python benchmarks/aucsched_tables.py                          # the paper's protocol
    python benchmarks/aucsched_tables.py --seeds 2 --runtime-h 1 --time-limit 1   # scaled down
    python benchmarks/aucsched_tables.py --aucsched slurm_bids=False,max_bids=15 --out x  # Table 8 variants
    python benchmarks/aucsched_tables.py --report                 # only rewrite the tables
    python benchmarks/aucsched_tables.py --step-check 10          # machine-l, 100-job window: step times

The paper's protocol: 7 seeds, theoretical runtime 4 h, CP-SAT limit 5 s, step 5 s,
MAXBIDSPERJOB 5 with SLURM bids.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload

WORKLOADS = ("I", "II", "III", "IV", "V")
VERSIONS = (1, 2, 3)
CONTIG = {1: "0%", 2: "50%", 3: "100%"}
METHODS = {"AUCSCHED": "aucsched", "SLURM/BF": "slurm-bf"}
FIELDS = [
    "machine",
    "workload",
    "version",
    "seed",
    "method",
    "spec",
    "runtime_h",
    "jobs",
    "valid",
    "theo_runtime_h",
    "runtime_h_actual",
    "util",
    "wait_h",
    "wait_std_h",
    "frag",
    "frag_std",
    "slowdown",
    "spread",
    "spread_std",
    "sim_wall_s",
    "steps",
    "solves",
    "build_s_mean",
    "solve_s_mean",
    "step_s_max",
    "fallbacks",
    "not_optimal",
]
KEY = ("machine", "workload", "version", "seed", "method", "spec", "runtime_h")


def run_one(
    machine: str, workload: str, version: int, seed: int, method: str, spec: str, runtime_h: float
) -> dict:
    system = load_system(machine)
    wl = load_workload(
        f"synthetic:aucsched,workload={workload},version={version},seed={seed},runtime_h={runtime_h:g}",
        system,
    )
    out = run_simulation(system, wl, spec, options=SimulationOptions())
    s = out.summary
    infos = out.result.decisions["info"]
    solves = [i for i in infos if i and "solve_s" in i]
    steps = [i for i in infos if i and "window" in i]
    elapsed = np.asarray(out.result.decisions["elapsed"], dtype=float)
    return {
        "machine": machine,
        "workload": workload,
        "version": version,
        "seed": seed,
        "method": method,
        "spec": spec,
        "runtime_h": runtime_h,
        "jobs": len(wl),
        "valid": bool(out.validation.ok),
        "theo_runtime_h": s["theoretical_runtime_s"] / 3600,
        "runtime_h_actual": s["makespan"] / 3600,
        "util": s["utilization_paper"],
        "wait_h": s["wait_mean"] / 3600,
        "wait_std_h": s["wait_std"] / 3600,
        "frag": s["fragmentation_mean"],
        "frag_std": s["fragmentation_std"],
        "slowdown": s["slowdown_ratio_mean"],
        "spread": s["spread_mean"],
        "spread_std": s["spread_std"],
        "sim_wall_s": out.wall_seconds,
        "steps": len(steps),
        "solves": len(solves),
        "build_s_mean": float(np.mean([i["build_s"] for i in solves])) if solves else "",
        "solve_s_mean": float(np.mean([i["solve_s"] for i in solves])) if solves else "",
        "step_s_max": float(elapsed.max()) if len(elapsed) else 0.0,
        "fallbacks": sum(1 for i in solves if i.get("fallback")),
        "not_optimal": sum(1 for i in solves if i.get("status") != "OPTIMAL"),
    }


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def row_key(row: dict) -> tuple:
    return tuple(str(row[k]) if k != "runtime_h" else f"{float(row[k]):g}" for k in KEY)


def _f(rows: list[dict], key: str) -> float:
    vals = [float(r[key]) for r in rows if r.get(key) not in ("", None)]
    return statistics.fmean(vals) if vals else math.nan


def aggregate(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["machine"], r["workload"], int(r["version"]), r["method"]), []).append(
            r
        )
    out = []
    order = {m: i for i, m in enumerate(["machine-s", "machine-m", "machine-l"])}
    for (machine, workload, version, method), rs in sorted(
        groups.items(),
        key=lambda kv: (
            order.get(kv[0][0], 9),
            WORKLOADS.index(kv[0][1]),
            kv[0][2],
            list(METHODS).index(kv[0][3]) if kv[0][3] in METHODS else 9,
        ),
    ):
        out.append(
            {
                "machine": machine,
                "row": f"{workload}.{version}",
                "contiguous": CONTIG[version],
                "method": method,
                "seeds": len(rs),
                "jobs": _f(rs, "jobs"),
                "valid": all(r["valid"] in ("True", True) for r in rs),
                **{
                    k: _f(rs, k)
                    for k in (
                        "theo_runtime_h",
                        "runtime_h_actual",
                        "util",
                        "wait_h",
                        "wait_std_h",
                        "frag",
                        "frag_std",
                        "slowdown",
                        "spread",
                        "spread_std",
                        "sim_wall_s",
                        "build_s_mean",
                        "solve_s_mean",
                        "step_s_max",
                    )
                },
                "fallbacks": sum(int(r["fallbacks"] or 0) for r in rs),
            }
        )
    return out


def write_tables(rows: list[dict], out: Path, note: str = "") -> list[dict]:
    agg = aggregate(rows)
    if not agg:
        return agg
    with (out / "table.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(agg[0]))
        w.writeheader()
        w.writerows(agg)
    lines = []
    if note:
        lines += [note, ""]
    machine = None
    for a in agg:
        if a["machine"] != machine:
            machine = a["machine"]
            lines += [
                "",
                f"### {machine}",
                "",
                "| Row | Contig. | theo. (h) | Method | Util | Runtime (h) | Waiting (h) | Fragmentation | "
                "Slowdown | Spread | seeds | jobs |",
                "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
        lines.append(
            f"| {a['row']} | {a['contiguous']} | {a['theo_runtime_h']:.2f} | {a['method']} | {a['util']:.0%} | "
            f"{a['runtime_h_actual']:.2f} | {a['wait_h']:.2f} ± {a['wait_std_h']:.2f} | "
            f"{a['frag']:.2f} ± {a['frag_std']:.2f} | {a['slowdown']:.2f} | {a['spread']:.2f} ± "
            f"{a['spread_std']:.2f} | "
            f"{a['seeds']} | {a['jobs']:.0f} |"
        )
    (out / "table.md").write_text("\n".join(lines).lstrip() + "\n")
    write_comparison(agg, out)
    return agg


def step_check(
    machine: str,
    states: int,
    time_limit: float,
    window: int,
    console: Console,
    priority: str = "basic",
) -> list[dict]:
    """The issue's bar: one AUCSCHED step (bids + IP build + CP-SAT solve) with ``window`` queued
    jobs of workload V.2 on ``machine``, on ``states`` random fragmented free states (each node
    busy with probability 1/2, then a random share of its cores and GPUs taken)."""
    from hpcdispatch.dispatchers import Aucsched
    from hpcdispatch.protocol.view import DispatchView
    from hpcdispatch.workload.job import Workload

    system = load_system(machine)
    wl_all = load_workload(
        "synthetic:aucsched,workload=V,version=2,seed=1,runtime_h=12", system
    )  # >= 20 windows
    out = []
    for k in range(states):
        rng = np.random.default_rng(k)
        jobs = [j._replace(index=-1) for j in wl_all.jobs[k * window : (k + 1) * window]]
        wl = Workload(jobs, system.resources)
        cap = np.asarray(system.capacity)
        busy = rng.random(len(cap)) < 0.5
        free = cap - (busy[:, None] * np.floor(rng.random(cap.shape) * (cap + 1))).astype(np.int64)
        view = DispatchView(
            system,
            free,
            list(free.sum(axis=0)),
            {j.index: j for j in wl.jobs},
            {},
            [float(j.wall_time) for j in wl.jobs],
            wl.unit_requests,
            True,
        )
        view.new_jobs = tuple(wl.jobs)
        disp = Aucsched(time_limit=time_limit, window=window, priority=priority)
        disp.setup(system)
        t0 = time.perf_counter()
        dec = disp.dispatch(view)
        total = time.perf_counter() - t0
        info = dec.info
        row = {
            "state": k,
            "jobs": info.get("window"),
            "bids": info.get("bids"),
            "variables": info.get("variables"),
            "constraints": info.get("constraints"),
            "bid_s": info.get("bid_time_s"),
            "build_s": info.get("build_s"),
            "solve_s": info.get("solve_s"),
            "total_s": total,
            "status": info.get("status"),
            "winners": info.get("winners"),
        }
        console.print(row)
        out.append(row)
    return out


PAPER = Path(__file__).with_name("aucsched_paper.csv")


def read_paper() -> dict[tuple, dict]:
    with PAPER.open() as f:
        lines = [line for line in f if not line.startswith("#")]
    return {(r["machine"], r["row"], r["method"]): r for r in csv.DictReader(lines)}


def write_comparison(agg: list[dict], out: Path) -> None:
    """``comparison.md``: the paper's Tables 5/6 next to ours, row by row, and the shape checks."""
    paper = read_paper()
    ours = {(a["machine"], a["row"], a["method"]): a for a in agg}
    lines = []
    checks = {"aucsched_util_ge": [0, 0], "aucsched_spread_lt": [0, 0], "bf_frag_lt": [0, 0]}
    for machine in dict.fromkeys(a["machine"] for a in agg):
        lines += [
            "",
            f"### {machine}: paper / ours",
            "",
            "| Row | Method | Util | Runtime (h) | Waiting (h) | Fragmentation | Slowdown | Spread |",
            "|---|---|---|---|---|---|---|---|",
        ]
        rows = list(dict.fromkeys(a["row"] for a in agg if a["machine"] == machine))
        for row in rows:
            for method in METHODS:
                o = ours.get((machine, row, method))
                pp = paper.get((machine, row, method))
                if o is None:
                    continue

                def pair(pk, ok, fmt="{:.2f}", pp=pp, o=o):
                    pv = fmt.format(float(pp[pk])) if pp else "-"
                    return f"{pv} / {fmt.format(o[ok])}"

                lines.append(
                    f"| {row} | {method} | {pair('util', 'util', '{:.0%}')} | "
                    f"{pair('runtime_h', 'runtime_h_actual')} | {pair('wait_h', 'wait_h')} | "
                    f"{pair('frag', 'frag')} | {pair('slowdown', 'slowdown')} | {pair('spread', 'spread')} |"
                )
            a, b = ours.get((machine, row, "AUCSCHED")), ours.get((machine, row, "SLURM/BF"))
            if a and b:
                checks["aucsched_util_ge"][1] += 1
                checks["aucsched_util_ge"][0] += a["util"] >= b["util"] - 1e-9
                if not row.endswith(".3"):
                    checks["aucsched_spread_lt"][1] += 1
                    checks["aucsched_spread_lt"][0] += a["spread"] < b["spread"]
                    checks["bf_frag_lt"][1] += 1
                    checks["bf_frag_lt"][0] += b["frag"] < a["frag"]
    head = [
        "Shape checks over the rows measured so far:",
        "",
        f"- AUCSCHED utilization >= SLURM/BF: {checks['aucsched_util_ge'][0]} of {checks['aucsched_util_ge'][1]} rows",
        f"- AUCSCHED spread < SLURM/BF (.1/.2 rows): {checks['aucsched_spread_lt'][0]} of "
        f"{checks['aucsched_spread_lt'][1]}",
        f"- SLURM/BF fragmentation < AUCSCHED (.1/.2 rows): {checks['bf_frag_lt'][0]} of {checks['bf_frag_lt'][1]}",
        "- .3 rows (all contiguous): fragmentation and spread exactly 1.00 for both: "
        + (
            "yes"
            if all(a["frag"] == 1.0 and a["spread"] == 1.0 for a in agg if a["row"].endswith(".3"))
            else "NO"
        ),
    ]
    (out / "comparison.md").write_text("\n".join(head + lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--machines", default="machine-s,machine-m")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--versions", default="1,2,3")
    p.add_argument("--seeds", type=int, default=7, help="seeds 1..N (the paper: 7)")
    p.add_argument(
        "--runtime-h",
        type=float,
        default=4.0,
        help="theoretical runtime per workload (the paper: ~4 h)",
    )
    p.add_argument(
        "--time-limit", type=float, default=5.0, help="CP-SAT limit per step (the paper: 5 s)"
    )
    p.add_argument(
        "--aucsched", default="", help="extra AUCSCHED options, e.g. slurm_bids=False,max_bids=15"
    )
    p.add_argument("--slurm-bf", default="", help="extra SLURM/BF options, e.g. bf_interval=30")
    p.add_argument(
        "--priority",
        default="basic",
        choices=["basic", "age", "multifactor"],
        help="Slurm job priorities (both schedulers; see dispatchers/slurm_priority.py)",
    )
    p.add_argument("--methods", default="AUCSCHED,SLURM/BF")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/aucsched"))
    p.add_argument(
        "--report", action="store_true", help="only rewrite table.csv / table.md from runs.csv"
    )
    p.add_argument(
        "--step-check",
        type=int,
        metavar="STATES",
        default=0,
        help="instead: time single AUCSCHED steps (100-job window) on machine-l for STATES free states",
    )
    args = p.parse_args(argv)
    console = Console(stderr=True)
    if args.step_check:
        rows = step_check(
            "machine-l", args.step_check, args.time_limit, 100, console, args.priority
        )
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "step_check.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        for key in ("bid_s", "build_s", "solve_s", "total_s"):
            vals = [
                r[key] for r in rows if r[key] is not None
            ]  # None: a state where no job had a bid
            console.print(f"{key}: mean {np.mean(vals):.3f} s, max {np.max(vals):.3f} s")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "runs.csv"
    rows = read_rows(runs_path)
    bf_prio = (
        "priority=multifactor" if args.priority == "multifactor" else ""
    )  # basic and age: FIFO alike
    bf_opts = ",".join(x for x in (bf_prio, args.slurm_bf) if x)
    specs = {
        "AUCSCHED": f"aucsched:time_limit={args.time_limit:g},priority={args.priority}"
        + (f",{args.aucsched}" if args.aucsched else ""),
        "SLURM/BF": "slurm-bf" + (f":{bf_opts}" if bf_opts else ""),
    }
    note = (
        f"Scale: theoretical runtime {args.runtime_h:g} h, seeds 1..{args.seeds}, CP-SAT limit "
        f"{args.time_limit:g} s per step, step 5 s; specs: {specs['AUCSCHED']} and {specs['SLURM/BF']}."
    )

    def current(rs: list[dict]) -> list[dict]:
        """The rows of this configuration (runs.csv may hold others: other options, scales)."""
        return [
            r
            for r in rs
            if r["method"] in specs
            and r["spec"] == specs[r["method"]]
            and f"{float(r['runtime_h']):g}" == f"{args.runtime_h:g}"
            and int(r["seed"]) <= args.seeds
            and r["machine"] in args.machines.split(",")
        ]

    if args.report:
        write_tables(current(rows), args.out, note)
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in specs:
            p.error(f"unknown method '{m}' (available: {', '.join(specs)})")
    plan = [
        (machine, wl, int(v), seed, m)
        for machine in args.machines.split(",")
        for wl in args.workloads.split(",")
        for v in args.versions.split(",")
        for seed in range(1, args.seeds + 1)
        for m in methods
    ]
    done = {row_key(r) for r in rows}
    todo = [
        x for x in plan if row_key(dict(zip(KEY, (*x, specs[x[4]], args.runtime_h)))) not in done
    ]
    console.print(
        f"{len(plan)} runs planned, {len(plan) - len(todo)} already in {runs_path}, {len(todo)} to do"
    )
    new_file = not runs_path.exists()
    t_start = time.perf_counter()
    with (
        runs_path.open("a", newline="") as f,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
        ) as progress,
    ):
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        task = progress.add_task("runs", total=len(todo))
        for machine, wl, v, seed, m in todo:
            progress.update(task, description=f"{machine} {wl}.{v} seed {seed} {m}")
            row = run_one(machine, wl, v, seed, m, specs[m], args.runtime_h)
            if not row["valid"]:
                console.print(f"[red]INVALID schedule: {machine} {wl}.{v} seed {seed} {m}")
            writer.writerow(row)
            f.flush()
            rows.append({k: str(v_) for k, v_ in row.items()})
            write_tables(current(rows), args.out, note)
            progress.advance(task)
    console.print(
        f"done in {time.perf_counter() - t_start:.0f} s; tables in {args.out}/table.md and table.csv"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
