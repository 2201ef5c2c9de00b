"""Conservative backfilling: the compiled profile search and compression against the Python
code, in one run, on the same workloads (the schedules must be identical).

    python benchmarks/conservative_speed.py                      # README default + RICC prefixes
    python benchmarks/conservative_speed.py --ricc-jobs 8000 --skip-node-level
    python benchmarks/conservative_speed.py --ricc-jobs 60000 --skip-node-level --compiled-only

``--compiled-only`` times the compiled path alone (the Python code would take hours on long
RICC prefixes) and prints the mean wait and bounded slowdown as a fingerprint of the
schedule: run it on two commits, one after the other, to compare a change to the kernels.

Workloads: the README's default (2,000 Lublin jobs on machine-s, node-level profile: 8 cores
and 2 GPUs per node); the first ``--ricc-jobs`` jobs of RICC with one unit per processor
(pooled profile, the processor-count formulation); the first ``--ricc-node-jobs`` jobs of
RICC with the default unit mapping (8-core units: node-level profile on 1,024 nodes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import hpcdispatch.planning.profile as profile_module
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.metrics import summarize
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.validation import validate_result
from hpcdispatch.workload import SwfOptions, UnitMapping, load_workload, resolve_system

RICC = Path(__file__).resolve().parents[2] / "shared" / "traces" / "RICC-2010-2.swf.gz"


def timed(system, workload, compiled: bool):
    profile_module.COMPILED = compiled
    dispatcher = make_dispatcher("conservative")
    t0 = time.perf_counter()
    result = Simulator(
        system, workload, dispatcher, options=SimulationOptions(record_decisions=False)
    ).run()
    return time.perf_counter() - t0, result, dispatcher


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ricc", type=Path, default=RICC)
    ap.add_argument("--ricc-jobs", type=int, default=8000)
    ap.add_argument("--ricc-node-jobs", type=int, default=1200)
    ap.add_argument(
        "--skip-node-level", action="store_true", help="leave out the RICC node-level case"
    )
    ap.add_argument(
        "--compiled-only",
        action="store_true",
        help="time the compiled path only (no Python run, no ratio)",
    )
    args = ap.parse_args()

    cases = []
    system = resolve_system("machine-s", None)
    cases.append(
        (
            "default compare (2,000 Lublin, machine-s)",
            system,
            load_workload("synthetic:lublin,jobs=2000,seed=1,load=0.9", system),
        )
    )
    if args.ricc.exists():
        ricc = resolve_system("auto", str(args.ricc))
        cases.append(
            (
                f"RICC first {args.ricc_jobs:,}, units=processor (pooled)",
                ricc,
                load_workload(
                    str(args.ricc),
                    ricc,
                    SwfOptions(max_jobs=args.ricc_jobs, units=UnitMapping(mode="processor")),
                ),
            )
        )
        if not args.skip_node_level:
            cases.append(
                (
                    f"RICC first {args.ricc_node_jobs:,}, units=divisor (node-level)",
                    ricc,
                    load_workload(str(args.ricc), ricc, SwfOptions(max_jobs=args.ricc_node_jobs)),
                )
            )
    timed(cases[0][1], cases[0][2], True)  # load the compiled code once before timing

    if args.compiled_only:
        table = Table(title="conservative backfilling, compiled profile")
        for col in ("workload", "compressions", "compiled s", "valid", "mean wait s", "mean bsld"):
            table.add_column(col, justify="left" if col == "workload" else "right")
        for name, system, workload in cases:
            tc, rc, dc = timed(system, workload, True)
            summary = summarize(rc)
            table.add_row(
                name,
                f"{dc.compressions:,}",
                f"{tc:.1f}",
                "yes" if validate_result(rc).ok else "NO",
                f"{summary['wait_mean']:,.1f}",
                f"{summary['bounded_slowdown_mean']:.3f}",
            )
        Console(width=160).print(table)
        return
    table = Table(title="conservative backfilling: compiled profile vs Python")
    for col in (
        "workload",
        "compressions",
        "compiled s",
        "python s",
        "ratio",
        "same schedule",
        "valid",
        "mean bsld",
    ):
        table.add_column(col, justify="left" if col == "workload" else "right")
    for name, system, workload in cases:
        tc, rc, dc = timed(system, workload, True)
        tp, rp, _ = timed(system, workload, False)
        same = bool(np.array_equal(rc.start, rp.start) and np.array_equal(rc.end, rp.end))
        table.add_row(
            name,
            f"{dc.compressions:,}",
            f"{tc:.1f}",
            f"{tp:.1f}",
            f"{tp / tc:.1f}x",
            "yes" if same else "NO",
            "yes" if validate_result(rc).ok else "NO",
            f"{summarize(rc)['bounded_slowdown_mean']:.2f}",
        )
    profile_module.COMPILED = True
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
