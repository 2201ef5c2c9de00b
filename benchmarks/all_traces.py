"""Correctness and speed at trace scale: every SWF trace x every baseline dispatcher.

Each (trace, dispatcher) pair runs in its own subprocess (so its peak RSS is its own and a
time limit can stop it): the trace is read onto its preset system (``--system auto``), the
whole trace is simulated, and the schedule is checked by the independent validator.

    python benchmarks/all_traces.py                       # everything (hours: conservative is slow)
    python benchmarks/all_traces.py --dispatchers fifo,easy --traces HPC2N,RICC
    python benchmarks/all_traces.py --max-jobs 5000 --out /tmp/prefix.json
    python benchmarks/all_traces.py --dispatchers conservative --traces RICC --units processor \
        --checkpoint-dir ckpt --time-limit 10000   # run again to go on where it stopped

Prints a table (trace, dispatcher, jobs, load s, simulate s, jobs/s, peak RSS MiB, valid,
mean wait, mean bounded slowdown) and writes it as JSON and markdown.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
DEFAULT_TRACES = HERE.parents[1] / "shared" / "traces"

WORKER = r"""
import json, resource, sys, time
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.engine import simulate
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.validation import validate_result
from hpcdispatch.workload import SwfOptions, UnitMapping, load_workload, resolve_system
from hpcdispatch.metrics import summarize

path, disp, max_jobs, units = sys.argv[1], sys.argv[2], (int(sys.argv[3]) or None), sys.argv[4]
checkpoint, every = (sys.argv[5] or None), float(sys.argv[6])
t0 = time.perf_counter()
system = resolve_system("auto", path)
wl = load_workload(path, system, SwfOptions(max_jobs=max_jobs, units=UnitMapping(mode=units)))
t1 = time.perf_counter()
last = [0.0]
def progress(done, n, t):  # one line a minute on stderr (the checkpoint's log file)
    if time.perf_counter() - last[0] >= 60:
        last[0] = time.perf_counter()
        print(f"{time.strftime('%H:%M:%S')} t={t:,.0f} s, {done:,} of {n:,} jobs done", file=sys.stderr, flush=True)
res = simulate(system, wl, make_dispatcher(disp), options=SimulationOptions(record_decisions=False),
               checkpoint=checkpoint, checkpoint_every=every, progress=progress if checkpoint else None)
t2 = time.perf_counter()
resumed = (res.notes.checkpoint.resumed_at if res.notes.checkpoint else None) or {}
report = validate_result(res)
t3 = time.perf_counter()
s = summarize(res)
print(json.dumps({
    "system": system.name, "jobs": len(wl), "skipped": wl.report.n_skipped,
    "load_s": t1 - t0, "sim_s": t2 - t1 + resumed.get("wall_s", 0.0), "validate_s": t3 - t2,
    "resumed_at_t": resumed.get("t"), "earlier_processes_s": resumed.get("wall_s"),
    "valid": report.ok, "first_violation": None if report.ok else report.first().message,
    "wait_mean": s["wait_mean"], "bsld_mean": s["bounded_slowdown_mean"],
    "utilization": s.get("utilization_core"), "killed": s["killed"],
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def run_one(
    path: Path,
    dispatcher: str,
    max_jobs: int,
    limit: float,
    units: str = "divisor",
    checkpoint_dir: Path | None = None,
    every: float = 600.0,
) -> dict:
    """One run in a subprocess. With ``checkpoint_dir`` the simulation saves a checkpoint
    there every ``every`` s and resumes from it when started again (after a time limit or an
    interruption), and logs its progress next to it (``<run>.log``)."""
    checkpoint = log = None
    if checkpoint_dir is not None:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        name = f"{path.name}__{dispatcher}__{units}__{max_jobs or 'all'}".replace(":", "_")
        checkpoint = checkpoint_dir / f"{name}.ckpt"
        log = (checkpoint_dir / f"{name}.log").open("a")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                WORKER,
                str(path),
                dispatcher,
                str(max_jobs or 0),
                units,
                str(checkpoint or ""),
                str(every),
            ],
            stdout=subprocess.PIPE,
            stderr=log or subprocess.PIPE,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return {
            "status": f"stopped after {limit:.0f} s"
            + (f" (checkpoint {checkpoint})" if checkpoint else "")
        }
    finally:
        if log is not None:
            log.close()
    if proc.returncode != 0:
        if log is not None:
            return {"status": "error", "error": f"see {log.name}"}
        return {
            "status": "error",
            "error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "?",
        }
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["status"] = "ok"
    out["wall_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--traces-dir", type=Path, default=DEFAULT_TRACES)
    ap.add_argument(
        "--traces", default="", help="comma-separated file-name prefixes (default: all)"
    )
    ap.add_argument("--dispatchers", default="fifo,sjf,easy,conservative")
    ap.add_argument(
        "--max-jobs", type=int, default=0, help="only the first N jobs of each trace (0: all)"
    )
    ap.add_argument("--time-limit", type=float, default=4 * 3600.0, help="seconds per run")
    ap.add_argument(
        "--units",
        default="divisor",
        choices=["divisor", "processor", "node"],
        help="processors -> units mapping (processor: 1-core units; conservative then plans pooled)",
    )
    ap.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        help="save each run's simulation state here every --checkpoint-every s; run the same "
        "command again to resume runs that were stopped (time limit, end of session)",
    )
    ap.add_argument("--checkpoint-every", type=float, default=600.0)
    ap.add_argument("--out", type=Path, default=Path("all_traces.json"))
    args = ap.parse_args()

    paths = sorted(args.traces_dir.glob("*.swf*"))
    if args.traces:
        wanted = [p.strip() for p in args.traces.split(",")]
        paths = [p for p in paths if any(p.name.startswith(w) for w in wanted)]
    dispatchers = [d.strip() for d in args.dispatchers.split(",") if d.strip()]
    console = Console()
    rows = []
    for path in paths:
        for disp in dispatchers:
            console.print(f"{path.name} / {disp} ...", end=" ")
            r = run_one(
                path,
                disp,
                args.max_jobs,
                args.time_limit,
                args.units,
                args.checkpoint_dir,
                args.checkpoint_every,
            )
            r.update(trace=path.name, dispatcher=disp, units=args.units)
            rows.append(r)
            console.print(
                r["status"]
                if r["status"] != "ok"
                else f"{r['jobs']} jobs in {r['sim_s']:.1f} s, valid={r['valid']}"
            )
            args.out.write_text(json.dumps(rows, indent=2))

    table = Table(
        title=f"all traces, units={args.units}{'' if not args.max_jobs else f', first {args.max_jobs} jobs'}"
    )
    cols = [
        "trace",
        "dispatcher",
        "jobs",
        "load s",
        "simulate s",
        "jobs/s",
        "peak RSS MiB",
        "valid",
        "mean wait s",
        "mean bsld",
    ]
    for c in cols:
        table.add_column(c, justify="left" if c in ("trace", "dispatcher") else "right")
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        if r["status"] != "ok":
            cells = [r["trace"], r["dispatcher"], "", "", r["status"], "", "", "", "", ""]
        else:
            cells = [
                r["trace"],
                r["dispatcher"],
                f"{r['jobs']:,}",
                f"{r['load_s']:.1f}",
                f"{r['sim_s']:.1f}",
                f"{r['jobs'] / max(r['sim_s'], 1e-9):,.0f}",
                f"{r['peak_rss_mib']:.0f}",
                "yes" if r["valid"] else f"NO: {r['first_violation']}",
                f"{r['wait_mean']:,.0f}",
                f"{r['bsld_mean']:,.1f}",
            ]
        table.add_row(*cells)
        md.append("| " + " | ".join(cells) + " |")
    console.print(table)
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    console.print(f"written {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
