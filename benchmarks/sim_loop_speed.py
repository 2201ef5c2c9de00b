"""The Python engine's loop speed against another checkout of hpcdispatch, in one run.

Every case (dispatcher, predictor, options) runs the Python event loop on the same generated
workload, once per repetition in each source tree, alternating the trees (A B A B ...), each
run in a fresh process; the timed span is ``Simulator(...).run()`` (the workload is built
before the timer). Prints per case the median and the spread of both trees and the ratio of
the medians and of the minimums (this tree / the baseline): above 1 is slower. On a noisy
machine the minimum is the steadier estimate of what the code itself costs.

    git worktree add /tmp/hpcdispatch-base 8aa5cf0     # the code before the change
    python benchmarks/sim_loop_speed.py --baseline /tmp/hpcdispatch-base --repeats 7
    python benchmarks/sim_loop_speed.py --baseline /tmp/hpcdispatch-base --instructions --jobs 5000

(the baseline checkout needs no install: its ``src`` is put first on ``PYTHONPATH``).

``--instructions`` counts instructions instead of seconds (valgrind's callgrind, about 50x
slower, so ``--jobs`` scales the workloads down): the loop's count is that of a process that
builds the simulation and runs it minus that of one that only builds it. Instruction counts
are repeatable whatever else the machine does; they do not see cache misses.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

WORKER = r"""
import gc, json, sys, time
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.predictors import make_predictor
from hpcdispatch.sim.simulator import SimulationOptions, Simulator
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload
system_name, workload_spec, dispatcher, predictor, options, run = sys.argv[1:7]
system = load_system(system_name)
workload = load_workload(workload_spec, system)
opts = SimulationOptions(engine="python", **json.loads(options))
sim = Simulator(system, workload, make_dispatcher(dispatcher), make_predictor(predictor), opts)
gc.collect()
if run == "0":
    raise SystemExit(0)
t0 = time.perf_counter()
result = sim.run()
took = time.perf_counter() - t0
print(json.dumps({"seconds": took, "decisions": int(len(result.decisions["time"])),
                  "started": int((result.start == result.start).sum())}))
"""

#: (label, system, workload, dispatcher, predictor, simulation options)
CASES = [
    ("fifo W", "machine-s", "synthetic:lublin,jobs=20000,seed=1,load=0.9", "fifo", "walltime", {}),
    ("sjf W", "machine-s", "synthetic:lublin,jobs=20000,seed=1,load=0.9", "sjf", "walltime", {}),
    ("easy W", "machine-s", "synthetic:lublin,jobs=20000,seed=1,load=0.9", "easy", "walltime", {}),
    (
        "easy L2 + ladder",
        "machine-s",
        "synthetic:lublin,jobs=20000,seed=1,load=0.9",
        "easy",
        "last-two",
        {"prediction_correction": "ladder"},
    ),
    (
        "conservative W",
        "machine-s",
        "synthetic:lublin,jobs=5000,seed=1,load=0.9",
        "conservative",
        "walltime",
        {},
    ),
]


def run_once(src: Path, case: tuple) -> dict:
    _, system, workload, dispatcher, predictor, options = case
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            WORKER,
            system,
            workload,
            dispatcher,
            predictor,
            json.dumps(options),
            "1",
        ],
        capture_output=True,
        text=True,
        env=_env(src),
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{src}: {case[0]} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def instructions(src: Path, case: tuple, run: bool) -> int:
    """Instructions of a process that builds the case's simulation (and runs it, ``run``)."""
    _, system, workload, dispatcher, predictor, options = case
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            WORKER,
            system,
            workload,
            dispatcher,
            predictor,
            json.dumps(options),
            "1" if run else "0",
        ],
        capture_output=True,
        text=True,
        env=_env(src),
        check=False,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"{src}: {case[0]} under callgrind failed:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def _env(src: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}


def scaled(case: tuple, jobs: int | None) -> tuple:
    """The case with ``jobs`` jobs (its workload spec's ``jobs=`` replaced)."""
    if jobs is None:
        return case
    label, system, workload, *rest = case
    return (label, system, re.sub(r"jobs=\d+", f"jobs={jobs}", workload), *rest)


def instruction_table(trees: dict[str, Path], cases: list[tuple]) -> None:
    print("| case | jobs | baseline loop instructions | this loop instructions | this / baseline |")
    print("|---|---:|---:|---:|---:|")
    for case in cases:
        loop = {
            tree: instructions(src, case, True) - instructions(src, case, False)
            for tree, src in trees.items()
        }
        jobs = case[2].split("jobs=")[1].split(",")[0]
        print(
            f"| {case[0]} | {int(jobs):,} | {loop['baseline']:,} | {loop['this']:,} | "
            f"{loop['this'] / loop['baseline']:.3f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, required=True, help="a checkout of the code to compare with"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="", help="comma-separated labels (default: all)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions (callgrind) instead of seconds",
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="jobs per workload instead of the cases' own"
    )
    args = parser.parse_args()
    trees = {"this": HERE / "src", "baseline": args.baseline.resolve() / "src"}
    wanted = [
        scaled(c, args.jobs) for c in CASES if not args.cases or c[0] in args.cases.split(",")
    ]
    if args.instructions:
        print(
            f"this tree: {trees['this']}\nbaseline:  {trees['baseline']}\ninstructions (callgrind)\n"
        )
        instruction_table(trees, wanted)
        return
    print(
        f"this tree: {trees['this']}\nbaseline:  {trees['baseline']}\nrepeats: {args.repeats}, alternating\n"
    )
    print(
        "| case | jobs | decisions | baseline median s (min-max) | this median s (min-max) | this / baseline, "
        "medians | minimums |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in wanted:
        times: dict[str, list[float]] = {"this": [], "baseline": []}
        seen: dict[str, dict] = {}
        for _ in range(args.repeats):
            for tree in ("baseline", "this"):
                rec = run_once(trees[tree], case)
                times[tree].append(rec["seconds"])
                seen[tree] = rec
        if (
            seen["this"]["decisions"] != seen["baseline"]["decisions"]
            or seen["this"]["started"] != seen["baseline"]["started"]
        ):
            raise SystemExit(f"{case[0]}: the two trees ran different simulations: {seen}")
        b, t = statistics.median(times["baseline"]), statistics.median(times["this"])
        jobs = case[2].split("jobs=")[1].split(",")[0]
        print(
            f"| {case[0]} | {int(jobs):,} | {seen['this']['decisions']:,} | {b:.2f} ({min(times['baseline']):.2f}-"
            f"{max(times['baseline']):.2f}) | {t:.2f} ({min(times['this']):.2f}-{max(times['this']):.2f}) | "
            f"{t / b:.3f} | {min(times['this']) / min(times['baseline']):.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
