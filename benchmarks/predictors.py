"""Duration predictors on real traces: accuracy, overhead, and what they do to EASY.

For each trace (default HPC2N and SDSC-SP2, whole traces) and each predictor (W, L2, D, R)
it simulates EASY with that predictor (predictions are made on-line at submission, the
knowledge base grows when jobs end) and prints:

- prediction quality: mean absolute error, under- / over-estimation rates, share of jobs
  with accuracy A = real / predicted in [0.75, 1.25];
- prediction overhead: time spent in predict + learn, as a share of the simulation time;
- the QoS EASY reaches with it: mean wait, mean bounded slowdown;
- with ``--corrections none,walltime,ladder``: the same with each prediction correction
  (``hpcdispatch.sim.correction``: what a running job that outlived its prediction is
  expected to need), and how many predictions were revised.

    python benchmarks/predictors.py [--traces HPC2N,SDSC-SP2] [--dispatcher easy] [--max-jobs N]
                                    [--predictors W,L2,D,R] [--corrections none]

``--workloads`` adds workload specs (``;``-separated, e.g. ``synthetic:eurora,jobs=50000,seed=1``)
on their ``auto`` system; ``--traces ""`` leaves the traces out. The synthetic models draw
no users, job names or executables, so there L2 is the mean of the last two jobs to end
anywhere on the machine and D can only match rule 1 (an identical queue, wall-time and
request of any earlier job): this measures what the history predictors degenerate to.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import SwfOptions, load_workload, resolve_system

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--traces", default="HPC2N,SDSC-SP2")
    ap.add_argument("--traces-dir", type=Path, default=TRACES)
    ap.add_argument(
        "--workloads", default="", help="';'-separated workload specs (synthetic:...), system auto"
    )
    ap.add_argument("--predictors", default="W,L2,D,R")
    ap.add_argument("--dispatcher", default="easy")
    ap.add_argument("--max-jobs", type=int, default=0)
    ap.add_argument("--corrections", default="none", help="comma-separated: none, walltime, ladder")
    ap.add_argument("--out", type=Path, default=Path("predictors.json"))
    args = ap.parse_args()
    console = Console()
    rows = []
    sources = []
    for prefix in [p.strip() for p in args.traces.split(",") if p.strip()]:
        path = next(iter(sorted(args.traces_dir.glob(prefix + "*.swf*"))), None)
        if path is None:
            raise SystemExit(f"no trace matching {prefix}* in {args.traces_dir}")
        sources.append((path.name, str(path)))
    sources += [(spec.strip(), spec.strip()) for spec in args.workloads.split(";") if spec.strip()]
    for source_name, source in sources:
        system = resolve_system("auto", source)
        wl = load_workload(source, system, SwfOptions(max_jobs=args.max_jobs or None))
        for pred, corr in [
            (p.strip(), c.strip())
            for p in args.predictors.split(",")
            for c in args.corrections.split(",")
        ]:
            spec = f"{args.dispatcher}-{pred}"
            correction = None if corr == "none" else corr
            label = spec if correction is None else f"{spec} +{correction}"
            with console.status(f"{source_name}: {label} ..."):
                out = run_simulation(
                    system,
                    wl,
                    spec,
                    options=SimulationOptions(
                        record_decisions=False, prediction_correction=correction
                    ),
                )
            s = out.summary
            row = {
                "trace": source_name,
                "jobs": len(wl),
                "dispatcher": label,
                "predictor": s["predictor"],
                "correction": correction,
                "revisions": s.get("prediction_revisions", 0),
                "mae_s": s["prediction_mae_s"],
                "under": s["prediction_under_rate"],
                "over": s["prediction_over_rate"],
                "within_25pct": s["prediction_within_25pct"],
                "prediction_s": s["prediction_time_s"],
                "sim_s": out.wall_seconds,
                "overhead": s["prediction_time_s"] / out.wall_seconds,
                "wait_mean": s["wait_mean"],
                "bsld_mean": s["bounded_slowdown_mean"],
                "valid": out.validation.ok,
            }
            rows.append(row)
            console.print(
                f"{source_name} {label}: MAE {row['mae_s']:,.0f} s, under {row['under']:.3f}, "
                f"bsld {row['bsld_mean']:.2f}, overhead {100 * row['overhead']:.1f} %"
            )
            args.out.write_text(json.dumps(rows, indent=2))
    cols = [
        "trace",
        "dispatcher",
        "MAE s",
        "under-est.",
        "over-est.",
        "A in [0.75,1.25]",
        "predict+learn s",
        "simulation s",
        "overhead",
        "revisions",
        "mean wait s",
        "mean bsld",
        "valid",
    ]
    table = Table(title="duration predictors")
    for c in cols:
        table.add_column(c, justify="left" if c in ("trace", "dispatcher") else "right")
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [
            r["trace"],
            r["dispatcher"],
            f"{r['mae_s']:,.0f}",
            f"{r['under']:.3f}",
            f"{r['over']:.3f}",
            f"{r['within_25pct']:.3f}",
            f"{r['prediction_s']:.2f}",
            f"{r['sim_s']:.1f}",
            f"{100 * r['overhead']:.1f} %",
            f"{r['revisions']:,}",
            f"{r['wait_mean']:,.0f}",
            f"{r['bsld_mean']:.2f}",
            "yes" if r["valid"] else "NO",
        ]
        table.add_row(*cells)
        md.append("| " + " | ".join(cells) + " |")
    console.print(table)
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
