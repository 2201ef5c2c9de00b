"""Per-decision record of the decisions that reach the solver in one pcp20-R run on whole LLNL-Atlas.

Written to find out why pcp20 falls back to the rule ("no solution (unknown)") in 8-11
decisions per LLNL-Atlas run (docs/RESULTS-CP.md). One JSON line per solver decision, then
a summary line:

    nice -n 10 python benchmarks/cp_pcp20_fallbacks.py > benchmarks/results/cp/pcp20_llnl_solver_decisions.jsonl
"""

import json
from pathlib import Path

from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import load_workload, resolve_system
from hpcdispatch.workload.swf import SwfOptions

path = str(
    Path(__file__).resolve().parents[2] / "shared" / "traces" / "LLNL-Atlas-2006-2.1-cln.swf.gz"
)
system = resolve_system("auto", path)
wl = load_workload(path, system, SwfOptions())
out = run_simulation(system, wl, "pcp20-R", options=SimulationOptions())
infos = out.result.decisions["info"]
el = out.result.decisions["elapsed"]
solved = [(i, e) for i, e in zip(infos, el) if "variables" in i]
for i, e in solved:
    keys = (
        "status",
        "fallback",
        "variables",
        "in_model",
        "queued",
        "unhinted_jobs",
        "attempts",
        "build_s",
        "solve_s",
        "watchdog",
    )
    print(json.dumps({k: i.get(k) for k in keys} | {"elapsed": e}))
print(
    json.dumps(
        {
            "valid": out.validation.ok,
            "wait_mean": out.summary["wait_mean"],
            "bsld_mean": out.summary["bounded_slowdown_mean"],
        }
    )
)
