"""How much of a sweep's time is spent outside simulation (issue 37: under 10 % for 50 cells
on one trace).

The sweep: 5 dispatchers (fifo, sjf, easy, easy with best fit, easy-L2) x 10 perturbed
replicas (``submit_jitter`` seeds) of one real trace (default KTH-SP2, 28,467 jobs) = 50
cells, run by one local worker process (so that the cells' times add up to the wall time:
with one worker nothing overlaps). Every cell reads its workload (cached per worker), simulates,
validates and writes its run directory. Printed: the sweep's wall time as the user waits for
it, the sum of the cells' simulation times (``sim_wall_s``: the engine's own run), the sum of
their whole-cell times, and the shares.

    python benchmarks/sweep_overhead.py [--trace PATH] [--out sweep_overhead.json]

Needs ``../shared/traces`` (or ``--trace``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console

from hpcdispatch.sweep import LocalExecutor, load_sweep, run_sweep

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"

SPEC = """
name = "overhead"
systems = ["auto"]
dispatchers = ["fifo", "sjf", "easy", "easy:allocator=best-fit", "easy-L2"]

[[workloads]]
trace = "{trace}"
submit_jitter = 60
seeds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
"""


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--trace", type=Path, default=TRACES / "KTH-SP2-1996-2.1-cln.swf.gz")
    ap.add_argument("--out", type=Path, default=Path("sweep_overhead.json"))
    args = ap.parse_args()
    if not args.trace.is_file():
        raise SystemExit(f"{args.trace}: no such trace (give --trace)")
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="hpcdispatch-overhead-"))
    spec_path = work / "overhead.toml"
    spec_path.write_text(SPEC.format(trace=args.trace.resolve()))
    t0 = time.perf_counter()
    spec = load_sweep(spec_path)
    assert len(spec.cells) == 50, len(spec.cells)
    outcome = run_sweep(spec, work / "out", LocalExecutor(1))
    wall = time.perf_counter() - t0
    assert outcome.done == 50, outcome.failed_labels
    summary = outcome.summary
    sim = float(summary["sim_wall_s"].sum())
    cells = float(summary["cell_wall_s"].sum())
    result = {
        "trace": str(args.trace),
        "cells": 50,
        "wall_s": wall,
        "sim_s": sim,
        "cells_s": cells,
        "outside_simulation_share": 1 - sim / wall,
        "outside_cells_share": 1 - cells / wall,
    }
    console.print(
        f"50 cells of {args.trace.name}, one worker: {wall:.1f} s wall; simulation {sim:.1f} s; "
        f"whole cells {cells:.1f} s"
    )
    console.print(
        f"outside simulation: {100 * (1 - sim / wall):.1f} % of the wall time "
        f"(outside the cells -- start-up, scheduling, summary: {100 * (1 - cells / wall):.1f} %)"
    )
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"written {args.out}")


if __name__ == "__main__":
    main()
