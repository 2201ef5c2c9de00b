"""The CP decision budget's QoS / decision-time trade-off (issue 36; docs/RESULTS-CP.md,
"A decision budget").

Runs (dispatcher, predictor, budget) cells on the first N jobs of a trace, one at a time,
each in its own subprocess (under ``nice`` when asked), appends one JSON line per finished
run to ``--out`` and skips the runs already there; ``--report`` prints the table (markdown)
and draws the plot: mean bounded slowdown against mean and p99 decision time, one colour per
budget (mean bounded slowdown relative to the same dispatcher and predictor with budget
``none``, so that W and R share one axis). Each run also records how many decisions fell back
to the rule for each reason (``fallback_kinds``: the decisions' ``info["fallback"]`` texts,
e.g. "decision limit", "rule better", "no solution (unknown)") and ``decision_limit_fired``
(those whose fallback is "decision limit"); runs recorded before these fields lack them.

    nice -n 10 python benchmarks/cp_budget.py --max-jobs 3000 --out benchmarks/results/cp/cp_budget.jsonl
    python benchmarks/cp_budget.py --report --out benchmarks/results/cp/cp_budget.jsonl \\
        --plot docs/img/cp-budget-sdsc-sp2.png --plot-jobs 3000

A cell's budget is a spec suffix: ``none`` (the papers' settings: delta 1 s doubling to
16 s), ``stall=S`` (``budget=stall,stall=S``), ``gap=G`` (``budget=gap,gap=G``); ``+charge``
runs it with ``--charge-dispatch-time`` (a decision's wall-clock time delays its starts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SHORT = {"walltime": "W", "oracle": "R", "last-two": "L2"}
TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz"

#: in the order run (the measurement had 15 minutes: hcp's matrix first, then pcp20's slower
#: runs, the budget before the reference so that a time-out costs the reference)
DEFAULT_CELLS = [
    f"hcp-{p}:{b}" for p in ("W", "R") for b in ("none", "stall=0.05", "stall=0.01", "gap=0.5")
] + [
    "pcp20-R:stall=0.01",
    "pcp20-R:none",
    "hcp-W:none+charge",
    "hcp-W:stall=0.01+charge",
    "pcp20-W:stall=0.01",
    "pcp20-W:none",
    "pcp20-R:stall=0.05",
    "pcp20-W:stall=0.05",
    "pcp20-R:gap=0.5",
]

WORKER = r"""
import collections, json, sys, time
import numpy as np
from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import load_workload, resolve_system
from hpcdispatch.workload.swf import SwfOptions
path, spec, predictor, max_jobs, charge = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
system = resolve_system("auto", path)
wl = load_workload(path, system, SwfOptions(max_jobs=max_jobs))
t0 = time.perf_counter()
out = run_simulation(system, wl, spec, predictor=predictor, options=SimulationOptions(charge_dispatch_time=charge))
wall = time.perf_counter() - t0
infos = out.result.decisions["info"]
dt = out.result.decisions["elapsed"]
s = out.summary
kinds = collections.Counter(str(i["fallback"]) for i in infos if i.get("fallback"))
print(json.dumps({
    "jobs": len(wl), "wall_s": wall, "valid": out.validation.ok, "decisions": int(len(dt)),
    "decision_mean_ms": float(1000 * dt.mean()), "decision_p99_ms": float(1000 * np.percentile(dt, 99)),
    "decision_max_ms": float(1000 * dt.max()), "decision_total_s": float(dt.sum()),
    "solved": sum("solve_s" in i for i in infos),
    "stops": {k[5:]: v for k, v in s.items() if k.startswith("stop_")},
    "fallbacks": sum(bool(i.get("fallback")) for i in infos),
    "fallback_kinds": dict(sorted(kinds.items())),
    "decision_limit_fired": kinds.get("decision limit", 0),
    "mean_wait": s["wait_mean"], "mean_bsld": s["bounded_slowdown_mean"],
}))
"""


def parse_cell(cell: str) -> tuple[str, str, str, bool]:
    """``hcp-W:stall=0.05+charge`` -> (dispatcher spec, predictor name, budget label, charge)."""
    head, _, budget = cell.partition(":")
    budget, charge = (budget[:-7], True) if budget.endswith("+charge") else (budget, False)
    name, _, pred = head.rpartition("-")
    predictor = {"W": "walltime", "R": "oracle", "L2": "last-two"}[pred]
    if budget == "none":
        spec = name
    else:
        kind, _, value = budget.partition("=")
        spec = f"{name}:budget={kind},{kind}={value}"
    return spec, predictor, budget, charge


def run(cells: list[str], out: Path, max_jobs: int, time_limit: float, again: bool = False) -> None:
    """Run each cell not yet finished in ``out`` (every cell with ``again``: a repeat appends
    a second line, e.g. to see whether a later version of the code takes the same
    trajectory)."""
    done = set() if again else {(r["cell"], r["max_jobs"]) for r in read(out) if r.get("ok")}
    for cell in cells:
        if (cell, max_jobs) in done:
            continue
        spec, predictor, budget, charge = parse_cell(cell)
        t0 = time.perf_counter()
        record = {
            "cell": cell,
            "spec": spec,
            "predictor": predictor,
            "budget": budget,
            "charge": charge,
            "max_jobs": max_jobs,
            "trace": TRACE.name,
        }
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    WORKER,
                    str(TRACE),
                    spec,
                    predictor,
                    str(max_jobs),
                    "1" if charge else "0",
                ],
                capture_output=True,
                text=True,
                timeout=time_limit,
            )
            if proc.returncode == 0:
                record.update(json.loads(proc.stdout.strip().splitlines()[-1]), ok=True)
            else:
                record.update(ok=False, error=proc.stderr.strip().splitlines()[-1:])
        except subprocess.TimeoutExpired:
            record.update(ok=False, error=f"timeout after {time_limit:g} s")
        record["elapsed_s"] = time.perf_counter() - t0
        record["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(
            cell,
            "ok" if record["ok"] else record["error"],
            f"{record['elapsed_s']:.0f} s",
            flush=True,
        )


def read(out: Path) -> list[dict]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def report(out: Path, plot: Path | None, plot_jobs: int | None = None) -> None:
    """Print the table of every finished run; plot the runs on the first ``plot_jobs`` jobs
    (all of them when None: the markers do not tell prefixes apart)."""
    rows = [r for r in read(out) if r.get("ok")]
    base = {
        (r["spec"].split(":")[0], r["predictor"], r["charge"], r["max_jobs"]): r["mean_bsld"]
        for r in rows
        if r["budget"] == "none"
    }
    print(
        "| dispatcher | pred. | budget | charged | jobs | wall s | decisions | solved | mean ms | p99 ms | max ms "
        "| stops (optimal / limit / stall / gap) | fallbacks | mean wait s | mean bsld | bsld vs none |"
    )
    print("|---" * 16 + "|")
    for r in rows:
        st = r["stops"]
        ref = base.get((r["spec"].split(":")[0], r["predictor"], r["charge"], r["max_jobs"]))
        rel = f"{100 * (r['mean_bsld'] / ref - 1):+.1f} %" if ref else "-"
        print(
            f"| {r['spec'].split(':')[0]} | {SHORT[r['predictor']]} | {r['budget']} | {'yes' if r['charge'] else 'no'} "
            f"| {r['jobs']:,} | {r['wall_s']:.0f} | {r['decisions']:,} | {r['solved']:,} | {r['decision_mean_ms']:.1f} "
            f"| {r['decision_p99_ms']:.0f} | {r['decision_max_ms']:,.0f} "
            f"| {st.get('optimal', 0)} / {st.get('limit', 0)} / {st.get('stall', 0)} / {st.get('gap', 0)} "
            f"| {r['fallbacks']} | {r['mean_wait']:,.0f} | {r['mean_bsld']:.2f} | {rel} |"
        )
    recorded = [r for r in rows if "fallback_kinds" in r]
    if recorded:
        print(
            "\nfallback kinds (runs that recorded them; decision limit fired = fallback 'decision limit'):"
        )
        for r in recorded:
            kinds = ", ".join(f"{k}: {v}" for k, v in r["fallback_kinds"].items()) or "none"
            print(
                f"- {r['cell']} ({r['max_jobs']:,} jobs): decision limit fired {r['decision_limit_fired']}; {kinds}"
            )
    if plot is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted({r["budget"] for r in rows}, key=lambda b: (b != "none", b))
    colours = {b: f"C{i}" for i, b in enumerate(budgets)}
    markers = {
        ("hcp", "walltime"): "o",
        ("hcp", "oracle"): "s",
        ("pcp20", "walltime"): "^",
        ("pcp20", "oracle"): "D",
    }
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    skipped, shown = [], set()
    plotted = [r for r in rows if plot_jobs is None or r["max_jobs"] == plot_jobs]
    for ax, key, label in (
        (axes[0], "decision_mean_ms", "mean decision time (ms)"),
        (axes[1], "decision_p99_ms", "p99 decision time (ms)"),
    ):
        for r in plotted:
            if r["charge"]:
                continue
            d = r["spec"].split(":")[0]
            ref = base.get((d, r["predictor"], False, r["max_jobs"]))
            if ref is None:
                skipped.append(r["cell"])
                continue
            shown.add((r["budget"], d, r["predictor"]))
            ax.scatter(
                r[key],
                100 * (r["mean_bsld"] / ref - 1),
                color=colours[r["budget"]],
                marker=markers.get((d, r["predictor"]), "x"),
                s=42,
                edgecolor="black",
                linewidth=0.4,
            )
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label)
        ax.axvline(
            20 if key == "decision_mean_ms" else 500, color="grey", linestyle=":", linewidth=1
        )
        ax.axhspan(-2, 2, color="grey", alpha=0.12, linewidth=0)
    if skipped:
        print(
            f"not plotted (no budget=none run to compare with): {', '.join(sorted(set(skipped)))}"
        )
    axes[0].set_ylabel("mean bsld vs the same dispatcher, budget none (%)")
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=colours[b], marker="o", linestyle="", label=f"budget {b}")
        for b in budgets
        if any(b == sb for sb, _, _ in shown)
    ]
    handles += [
        Line2D(
            [],
            [],
            color="black",
            marker=m,
            linestyle="",
            markerfacecolor="white",
            label=f"{d}-{SHORT[p]}",
        )
        for (d, p), m in markers.items()
        if any((d, p) == (sd, sp) for _, sd, sp in shown)
    ]
    axes[1].legend(handles=handles, fontsize=8, loc="best")
    jobs = sorted({r["max_jobs"] for r in plotted})
    fig.suptitle(
        f"CP decision budget on the first {', '.join(f'{j:,}' for j in jobs)} jobs of SDSC-SP2 "
        "(dotted / shaded: the bar, 20 ms mean, 0.5 s p99, bsld within 2 %)",
        fontsize=10,
    )
    fig.tight_layout()
    plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot, dpi=110)
    print(f"plot written to {plot}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cells", help="';'-separated cells (default: the whole matrix)")
    ap.add_argument("--max-jobs", type=int, default=3000)
    ap.add_argument("--out", type=Path, default=Path("cp_budget.jsonl"))
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per run")
    ap.add_argument(
        "--again",
        action="store_true",
        help="run the cells even if --out has a finished run of them",
    )
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--plot", type=Path)
    ap.add_argument(
        "--plot-jobs", type=int, help="plot only the runs on this many jobs (default: all)"
    )
    a = ap.parse_args()
    if a.report:
        report(a.out, a.plot, a.plot_jobs)
    else:
        run(
            a.cells.split(";") if a.cells else DEFAULT_CELLS,
            a.out,
            a.max_jobs,
            a.time_limit,
            a.again,
        )


if __name__ == "__main__":
    main()
