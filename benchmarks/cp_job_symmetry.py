"""What job symmetry breaking buys the CP models, on the same dumped instances.

Interchangeable jobs (same shape, model duration and weight; models/common.py) make many
equivalent schedules; ``job_symmetry=true`` (the default) orders their starts. This script

1. dumps the dispatching instances of a trace prefix with ``cp-rule`` (no solver, so the
   instances do not depend on the model under test) and a duration predictor;
2. decides every ``--stride``-th instance that needs a model, with each model, once with
   ``job_symmetry=false`` and once with it, both under CP-SAT's *deterministic* limit
   (``deterministic=true``: the comparison does not depend on the machine's load);
3. prints per model: instances, how many were proved optimal, the solver time, objective
   better / worse / equal, and how often the jobs started now differ.

    python benchmarks/cp_job_symmetry.py --trace SDSC-SP2 --jobs 8000 --predictor walltime
    python benchmarks/cp_job_symmetry.py --trace SDSC-SP2 --predictor oracle --models hcp,cp-hybrid
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from hpcdispatch.cp.instance import DispatchInstance
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.instance_eval import system_of_instance
from hpcdispatch.runner import run_simulation
from hpcdispatch.workload import load_workload, resolve_system
from hpcdispatch.workload.swf import SwfOptions

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
FILES = {
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "LLNL-Atlas": "LLNL-Atlas-2006-2.1-cln.swf.gz",
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
}


def dump(trace: str, jobs: int, predictor: str, directory: Path) -> None:
    path = TRACES / FILES.get(trace, trace)
    system = resolve_system("auto", str(path))
    wl = load_workload(str(path), system, SwfOptions(max_jobs=jobs))
    run_simulation(
        system, wl, f"cp-rule:dump_instances={directory}", predictor=predictor, validate=False
    )


def decide_all(files: list[Path], model: str, job_symmetry: bool, limit: int) -> dict[str, dict]:
    """Decide the instances; only those where the dispatcher built a model are kept."""
    rows: dict[str, dict] = {}
    disp = None
    for f in files:
        inst = DispatchInstance.load(f)
        if len(inst.queued) < 2:
            continue
        if disp is None:
            disp = make_dispatcher(model, deterministic=True, job_symmetry=job_symmetry)
            disp.setup(system_of_instance(inst))
        t0 = time.perf_counter()
        placed, info = disp.decide(inst)
        if "variables" not in info:
            continue
        rows[f.name] = {
            "status": info.get("status"),
            "solve_s": info.get("solve_s", 0.0),
            "wall_s": time.perf_counter() - t0,
            "objective": info.get("objective", info["rule_objective"]),
            "fallback": info.get("fallback"),
            "pairs": info.get("job_symmetry_pairs", 0),
            "now": sorted(i for i, _ in placed),
        }
        if len(rows) >= limit:
            break
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--jobs", type=int, default=8000, help="first N jobs of the trace")
    ap.add_argument("--predictor", default="walltime")
    ap.add_argument("--models", default="hcp,cp-hybrid,pcp20,pcp19")
    ap.add_argument("--instances", type=int, default=150, help="instances with a model, per model")
    ap.add_argument("--stride", type=int, default=7, help="take every N-th dumped instance")
    ap.add_argument(
        "--dump-dir", type=Path, default=None, help="reuse (or keep) the dumped instances here"
    )
    ap.add_argument(
        "--json", type=Path, default=None, help="append the summary rows to this JSON-lines file"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dump_dir or Path(tmp) / "instances"
        if not any(directory.glob("instance-*.json")):
            directory.mkdir(parents=True, exist_ok=True)
            dump(args.trace, args.jobs, args.predictor, directory)
        files = sorted(directory.glob("instance-*.json"))[:: args.stride]
        print(
            f"{args.trace}@{args.jobs}, predictor {args.predictor}: {len(files)} instances considered "
            f"(every {args.stride}-th), CP-SAT deterministic limit, 1 worker\n"
        )
        print(
            "| model | instances | mean sym. pairs | proved optimal: off / on | solver s: off / on | ratio "
            "| objective better / worse / equal (on vs off) | start-now differs | fallbacks off / on |"
        )
        print("|---|---:|---:|---|---|---:|---|---:|---|")
        for model in args.models.split(","):
            off = decide_all(files, model, False, args.instances)
            on = decide_all(files, model, True, args.instances)
            common = [k for k in off if k in on]
            n = len(common)
            if not n:
                print(f"| {model} | 0 | | | | | | | |")
                continue
            opt_off = sum(off[k]["status"] == "optimal" for k in common)
            opt_on = sum(on[k]["status"] == "optimal" for k in common)
            s_off = sum(off[k]["solve_s"] for k in common)
            s_on = sum(on[k]["solve_s"] for k in common)
            better = sum(on[k]["objective"] < off[k]["objective"] for k in common)
            worse = sum(on[k]["objective"] > off[k]["objective"] for k in common)
            differs = sum(on[k]["now"] != off[k]["now"] for k in common)
            pairs = sum(on[k]["pairs"] for k in common) / n
            fb = (
                sum(bool(off[k]["fallback"]) for k in common),
                sum(bool(on[k]["fallback"]) for k in common),
            )
            print(
                f"| {model} | {n} | {pairs:.2f} | {opt_off} / {opt_on} | {s_off:.1f} / {s_on:.1f} | "
                f"{s_on / s_off:.2f} | {better} / {worse} / {n - better - worse} | {differs} | {fb[0]} / {fb[1]} |",
                flush=True,
            )
            if args.json:
                with args.json.open("a") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "trace": args.trace,
                                "jobs": args.jobs,
                                "predictor": args.predictor,
                                "model": model,
                                "instances": n,
                                "optimal_off": opt_off,
                                "optimal_on": opt_on,
                                "solve_s_off": s_off,
                                "solve_s_on": s_on,
                                "better": better,
                                "worse": worse,
                                "start_now_differs": differs,
                                "pairs_mean": pairs,
                            }
                        )
                        + "\n"
                    )


if __name__ == "__main__":
    main()
