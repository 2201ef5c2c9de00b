"""Issue 37's bar, end to end: ``hpcdispatch simulate`` with conservative backfilling against
the same command with EASY, whole processes as a user waits (imports, workload, simulation,
validation, outputs), the two alternated run by run, medians and the ratio of the medians.

    python benchmarks/conservative_vs_easy.py                    # load 0.9 (the default's)
    python benchmarks/conservative_vs_easy.py --load 0.7 --runs 7
    python benchmarks/conservative_vs_easy.py --cold --runs 3    # first run after an install

``--cold`` gives every run an empty numba cache (``NUMBA_CACHE_DIR``), so conservative's
profile kernels are compiled in it, as on the first run after an install; EASY on 2,000 jobs
runs on the Python engine and compiles nothing. CPU seconds are the children's user + system
time (``resource.getrusage``): on a shared machine they move less than wall seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(
    dispatcher: str, workload: str, system: str, out: str, cold: bool
) -> tuple[float, float]:
    """(wall s, CPU s) of one ``hpcdispatch simulate`` process."""
    env = dict(os.environ)
    cache = None
    if cold:
        cache = tempfile.mkdtemp(prefix="numba-cold-")
        env["NUMBA_CACHE_DIR"] = cache
    cmd = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "simulate",
        "-q",
        "-w",
        workload,
        "-s",
        system,
        "-d",
        dispatcher,
        "-o",
        out,
        "--force",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--system", default="machine-s")
    ap.add_argument(
        "--runs", type=int, default=5, help="counted runs of each (after one warm-up each)"
    )
    ap.add_argument(
        "--cold", action="store_true", help="an empty numba cache for every run (no warm-up)"
    )
    args = ap.parse_args()
    workload = f"synthetic:lublin,jobs={args.jobs},seed={args.seed},load={args.load}"
    names = ("conservative", "easy")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.cold:
            for name in names:  # warm-up: the numba cache, the file system
                one_run(name, workload, args.system, os.path.join(tmp, name), False)
        for _ in range(args.runs):
            for name in names:
                times[name].append(
                    one_run(name, workload, args.system, os.path.join(tmp, name), args.cold)
                )
    print(
        f"{workload} on {args.system}, {args.runs} runs each, alternated{', cold numba cache' if args.cold else ''}"
    )
    med = {}
    for name in names:
        walls = [w for w, _ in times[name]]
        cpus = [c for _, c in times[name]]
        med[name] = (statistics.median(walls), statistics.median(cpus))
        print(
            f"  {name:13s} wall s median {med[name][0]:6.2f} (min {min(walls):.2f}, max {max(walls):.2f})"
            f"   CPU s median {med[name][1]:6.2f}"
        )
    print(
        f"  conservative / easy: wall {med['conservative'][0] / med['easy'][0]:.2f}x,"
        f" CPU {med['conservative'][1] / med['easy'][1]:.2f}x  (bar: <= 3x)"
    )


if __name__ == "__main__":
    main()
