"""CP-SAT parameters A/B on real dispatching instances, taken from a campaign's decision journal.

1. ``dump``: replay a decision journal of ``cp_traces.py`` (a whole-trace run) up to given
   decisions and write each one's dispatching instance as JSON (the replay applies the
   recorded decisions, so reaching decision 80,000 takes seconds); ``--sample N`` picks N
   decisions that reached the solver, stratified by model size (small <= 300 variables,
   mid <= 2,000, big), with a fixed seed.
   ``--fallbacks`` picks the decisions that fell back to the priority rule instead.
2. ``hints``: for every dumped instance, whether the model accepts the rule's schedule (its
   hint, every hinted variable fixed) and pcp20's unhinted jobs, then the dispatcher's own
   decision: status, fallback, time. Run it with an older checkout on ``PYTHONPATH`` to see
   what a rule fix changed on the same instances.
3. ``compare``: solve every instance with the dispatcher as configured and with extra solver
   parameters, alternating which goes first, and print decision time, status and objective
   per instance and in total (one run, so both sides see the same machine load).

    python benchmarks/cp_solver_params.py dump --journal /work/cp-journals/SDSC-SP2__pcp20-R_version1.jsonl \\
        --trace SDSC-SP2-1998-4.2-cln.swf.gz --spec pcp20-R:version=1 --sample 70 --out /tmp/pcp20-inst
    python benchmarks/cp_solver_params.py hints /tmp/pcp20-inst --spec pcp20:version=1
    python benchmarks/cp_solver_params.py compare /tmp/pcp20-inst --spec pcp20:version=1 \\
        --param max_alldiff_domain_size=256

(The dispatchers have set ``max_alldiff_domain_size=1`` since 2026-11-28, so ``256``, CP-SAT's
default, is now the other side of that A/B.)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from hpcdispatch.cp.instance import DispatchInstance
from hpcdispatch.cp.policy import Policy
from hpcdispatch.cp.rule import horizon_units, rule_schedule
from hpcdispatch.cp.solve import hint_is_solution
from hpcdispatch.dispatchers import cp as cp_dispatchers
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.instance_eval import system_of_instance
from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import load_workload, resolve_system

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


class _Reached(Exception):
    pass


def solver_decisions(journal: Path) -> list[tuple[int, int]]:
    """``(k, variables)`` of the journal's decisions that built a model."""
    out = []
    with journal.open() as f:
        next(f)
        for line in f:
            rec = json.loads(line)
            info = rec.get("info") or {}
            if "variables" in info:
                out.append((rec["k"], info["variables"]))
    return out


def fallback_decisions(journal: Path) -> list[int]:
    """The journal's decisions that fell back to the priority rule."""
    with journal.open() as f:
        next(f)
        return [rec["k"] for rec in map(json.loads, f) if (rec.get("info") or {}).get("fallback")]


def sample(decisions: list[tuple[int, int]], n: int, seed: int = 7) -> list[int]:
    strata = [
        [d for d in decisions if d[1] <= 300],
        [d for d in decisions if 300 < d[1] <= 2000],
        [d for d in decisions if d[1] > 2000],
    ]
    rng = random.Random(seed)
    share = [n * 4 // 10, n * 4 // 10, n - 2 * (n * 4 // 10)]
    picked = []
    for group, k in zip(strata, share):
        picked += rng.sample(group, min(k, len(group)))
    return sorted(k for k, _ in picked)


def dump(journal: Path, trace: Path, spec: str, decisions: list[int], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    system = resolve_system("auto", str(trace))
    workload = load_workload(str(trace), system)
    real_decide = cp_dispatchers.CPDispatcher.decide
    try:
        for k in decisions:
            target = out / f"instance-{k:07d}.json"
            head = out / f".replay-{k}.jsonl"
            with journal.open() as src, head.open("w") as dst:  # the journal up to decision k
                for line in src:
                    rec = json.loads(line)
                    if rec.get("k", 0) >= k:
                        break
                    dst.write(line)

            def grab(self, inst, target=target):
                inst.dump(target)
                raise _Reached

            cp_dispatchers.CPDispatcher.decide = grab
            try:
                run_simulation(system, workload, spec, options=SimulationOptions(), journal=head)
            except _Reached:
                print(f"decision {k}: {target}", file=sys.stderr)
            finally:
                for p in (head, head.with_name(head.name + ".lock")):
                    p.unlink(missing_ok=True)
    finally:
        cp_dispatchers.CPDispatcher.decide = real_decide


def _params(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = json.loads(value) if value not in ("", None) else True
    return out


def hints(directory: Path, spec: str) -> None:
    """Per instance: does the model accept the rule's schedule, and what does the dispatcher decide."""
    accepted = fallbacks = 0
    files = sorted(directory.glob("instance-*.json"))
    for f in files:
        inst = DispatchInstance.load(f)
        d = make_dispatcher(spec)
        d.setup(system_of_instance(inst))
        policy = Policy(inst, d.settings, d.flavour)
        node_level = d.node_level
        jobs = d.model_jobs(inst, policy, node_level)
        if not jobs or d.MODEL is None:
            print(f"| {f.stem} | no model | | | | |")
            continue
        d_max = max(j.duration for j in jobs)
        rule = d.hint_rule(
            rule_schedule(inst, policy, jobs, d._best_fit, node_level, d_max), jobs, policy, d_max
        )
        built = d.build_model(inst, policy, jobs, rule, d_max, horizon_units(policy, inst, jobs))
        ok = hint_is_solution(built.model, time_limit=10.0)
        accepted += ok is True
        t0 = time.perf_counter()
        _, info = d.decide(inst)
        fallbacks += bool(info.get("fallback"))
        print(
            f"| {f.stem} | {built.size()[0]} | {ok} | {built.notes.get('unhinted_jobs', '')} | "
            f"{info.get('status')} {info.get('fallback', '')} | {time.perf_counter() - t0:.1f} |"
        )
    print(
        f"hint accepted on {accepted} of {len(files)} instances; {fallbacks} decisions fell back to the rule"
    )


def compare(directory: Path, spec: str, extra: dict, baseline: dict) -> None:
    files = sorted(directory.glob("instance-*.json"))
    totals: dict[str, list[float]] = {"baseline": [], "with params": []}
    better = worse = 0
    for n, f in enumerate(files):
        inst = DispatchInstance.load(f)
        row = {}
        for side in ["baseline", "with params"] if n % 2 == 0 else ["with params", "baseline"]:
            d = make_dispatcher(spec)
            d.setup(system_of_instance(inst))
            d.SOLVER_PARAMS = {**d.SOLVER_PARAMS, **(baseline if side == "baseline" else extra)}
            t0 = time.perf_counter()
            _, info = d.decide(inst)
            took = time.perf_counter() - t0
            totals[side].append(took)
            row[side] = (
                took,
                info.get("status"),
                info.get("objective", info.get("rule_objective")),
                info.get("fallback", ""),
                info.get("variables"),
            )
        b, w = row["baseline"], row["with params"]
        if b[2] is not None and w[2] is not None:
            better += w[2] < b[2]
            worse += w[2] > b[2]
        print(
            f"| {f.stem} | {b[4]} | {b[0]:.2f} | {b[1]} {b[3]} | {w[0]:.2f} | {w[1]} {w[3]} | {b[2]} | {w[2]} |"
        )
    for side, xs in totals.items():
        print(
            f"{side}: total {sum(xs):.1f} s, median {statistics.median(xs):.3f} s over {len(xs)} instances"
        )
    print(f"objective with params: better on {better}, worse on {worse} instances")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--journal", type=Path, required=True)
    d.add_argument("--trace", required=True, help="file name in ../shared/traces or a path")
    d.add_argument(
        "--spec", required=True, help="the journal's dispatcher spec, e.g. pcp20-R:version=1"
    )
    d.add_argument("--decisions", default="", help="comma-separated decision numbers")
    d.add_argument(
        "--sample", type=int, default=0, help="or: this many solver decisions, by model size"
    )
    d.add_argument(
        "--fallbacks", action="store_true", help="or: every decision that fell back to the rule"
    )
    d.add_argument("--out", type=Path, required=True)
    h = sub.add_parser("hints")
    h.add_argument("directory", type=Path)
    h.add_argument(
        "--spec", required=True, help="e.g. pcp20:version=1 (the instance holds the predictions)"
    )
    c = sub.add_parser("compare")
    c.add_argument("directory", type=Path)
    c.add_argument("--spec", required=True)
    c.add_argument("--param", action="append", default=[], help="extra CP-SAT parameter key=value")
    c.add_argument(
        "--baseline-param", action="append", default=[], help="baseline CP-SAT parameter key=value"
    )
    a = ap.parse_args()
    if a.cmd == "dump":
        trace = Path(a.trace) if Path(a.trace).exists() else TRACES / a.trace
        ks = [int(x) for x in a.decisions.split(",") if x] or (
            fallback_decisions(a.journal)
            if a.fallbacks
            else sample(solver_decisions(a.journal), a.sample)
        )
        dump(a.journal, trace, a.spec, ks, a.out)
    elif a.cmd == "hints":
        print("| instance | variables | hint accepted | unhinted jobs | decision | s |")
        print("|---|---:|---|---:|---|---:|")
        hints(a.directory, a.spec)
    else:
        print(
            "| instance | variables | baseline s | baseline status | with params s | status | "
            "baseline objective | objective |"
        )
        print("|---|---:|---:|---|---:|---|---:|---:|")
        compare(a.directory, a.spec, _params(a.param), _params(a.baseline_param))


if __name__ == "__main__":
    main()
