"""hpcdispatch against a minimal C simulator of the same FIFO and EASY rules, in one run.

``benchmarks/c_reference/sim.c`` (written for this benchmark) reads the SWF trace with zlib,
cleans and sorts it as hpcdispatch's reader does and simulates FIFO or EASY with
hpcdispatch's rules for ``--units processor --no-walltime-kill --allocator first-fit``. It is
compiled here with the system's ``gcc -O2 ... -lz -lm``. Each repetition runs, per policy
and alternating: the C program; ``hpcdispatch simulate`` with its phases timed in-process
(start-up, read, simulate -- and inside it the compiled loop, ``run_steps`` --, validate and
write); and the plain ``hpcdispatch simulate`` command (whole, timed from outside), each in a
fresh process whose peak RSS is read with ``os.wait4``. The parsed-trace cache lives in a
temporary directory (``HPCDISPATCH_TRACE_CACHE``), emptied before each cold run ("whole
command") and filled by it for the cached one.

Prints the phases side by side (medians over ``--repeats``; the ratio hpcdispatch / C) and
checks that the mean waits agree to 6 decimals (FIFO must; EASY is reported and checked too).

    python benchmarks/engine_vs_c.py --trace /path/HPC2N-2002-2.2-cln.swf.gz --system hpc2n
    python benchmarks/engine_vs_c.py --trace RICC-2010-2.swf.gz --system ricc --policies easy

Exit status 1 when the mean waits differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "c_reference" / "sim.c"

#: run inside the phase-timed hpcdispatch process: wraps the command's phases, then runs it
PHASED = r"""
import json, sys, time
t_start = time.perf_counter()
import hpcdispatch.cli.main as M
import hpcdispatch.runner as R
import hpcdispatch.compiled.runner as CR
phases = {"startup_s": 0.0, "read_s": 0.0, "simulate_s": 0.0, "loop_s": 0.0, "write_validate_s": 0.0}
class Timed:  # keeps the wrapped object's attributes (numba's run_steps.signatures)
    def __init__(self, inner, key):
        self.inner, self.key = inner, key
    def __call__(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return self.inner(*a, **k)
        finally:
            phases[self.key] += time.perf_counter() - t0
    def __getattr__(self, name):
        return getattr(self.inner, name)
def timed(module, name, key):
    setattr(module, name, Timed(getattr(module, name), key))
timed(M, "load_inputs", "read_s")
timed(R, "simulate", "simulate_s")
_engine_loop = CR.engine_loop  # the loop it runs: the ahead-of-time engine, or numba's
CR.engine_loop = lambda st: Timed(_engine_loop(st), "loop_s")
timed(R, "write_result", "write_validate_s")
out, argv = sys.argv[1], sys.argv[2:]
phases["startup_s"] = time.perf_counter() - t_start  # plus the interpreter's own, see below
try:
    M.main(argv)
except SystemExit as e:
    if e.code:
        raise
phases["numba_imported"] = "numba" in sys.modules
with open(out, "w") as f:
    json.dump(phases, f)
"""


def run_measured(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str, str]:
    """Wall seconds, peak RSS (bytes), stdout and stderr of ``cmd`` in a fresh process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd[:4])} ... failed (exit {p.returncode}):\n{stdout[-1500:]}\n{stderr[-1500:]}"
        )
    return wall, usage.ru_maxrss * 1024, stdout, stderr


def compile_reference(workdir: Path) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("gcc not found: the C reference cannot be built")
    exe = workdir / "sim"
    r = subprocess.run(
        [gcc, "-O2", "-o", str(exe), str(SOURCE), "-lz", "-lm"], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise SystemExit(f"gcc failed (is zlib's header installed?):\n{r.stderr[-2000:]}")
    return exe


def system_shape(name: str) -> tuple[int, int]:
    from hpcdispatch.system import load_system

    system = load_system(name)
    cap = system.capacity
    if cap.shape[1] != 1 or len({int(c) for c in cap[:, 0]}) != 1:
        raise SystemExit(f"system {name}: the C reference handles identical core-only nodes only")
    return int(cap.shape[0]), int(cap[0, 0])


def command(trace: Path, system: str, policy: str, out: Path, csv: bool) -> list[str]:
    cmd = [
        "simulate",
        "-w",
        str(trace),
        "-s",
        system,
        "-d",
        policy,
        "--units",
        "processor",
        "--no-walltime-kill",
        "--allocator",
        "first-fit",
        "-q",
        "-o",
        str(out),
    ]
    return cmd + (["--csv"] if csv else [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--system", required=True)
    ap.add_argument("--policies", default="fifo,easy")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--csv", action="store_true", help="hpcdispatch also writes jobs.csv (if it has the flag)"
    )
    args = ap.parse_args()
    nodes, cores = system_shape(args.system)
    has_csv_flag = (
        "--csv"
        in subprocess.run(
            [sys.executable, "-m", "hpcdispatch", "simulate", "--help"],
            capture_output=True,
            text=True,
        ).stdout
    )
    work = Path(tempfile.mkdtemp(prefix="engine-vs-c-"))
    cache = work / "cache"
    env = dict(os.environ, HPCDISPATCH_TRACE_CACHE=str(cache))
    if env.get("PYTHONPATH"):  # the runs start in a temporary directory: absolute paths
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    exe = compile_reference(work)
    failed = False
    try:
        for policy in args.policies.split(","):
            c_runs, h_runs, h_cached, whole_cold, whole_cached = [], [], [], [], []
            for rep in range(args.repeats):
                wall, rss, stdout, _ = run_measured(
                    [
                        str(exe),
                        str(args.trace),
                        policy,
                        str(nodes),
                        str(cores),
                        str(work / "c.csv"),
                    ],
                    env,
                    work,
                )
                c = json.loads(stdout)
                c_runs.append({**c, "whole_s": wall, "rss": rss})
                hd = [sys.executable, "-m", "hpcdispatch"]
                csv = args.csv and has_csv_flag
                for cached in (False, True):  # the trace cache emptied, then filled by it
                    if not cached:
                        shutil.rmtree(cache, ignore_errors=True)
                    out = work / f"w-{policy}-{rep}"
                    wall, rss, _, _ = run_measured(
                        hd + command(args.trace, args.system, policy, out, csv), env, work
                    )
                    summary = json.loads((out / "summary.json").read_text())
                    runs = whole_cached if cached else whole_cold
                    runs.append({"whole_s": wall, "rss": rss, "wait": summary["wait_mean"]})
                    shutil.rmtree(out)
                for cached in (False, True):
                    if not cached:
                        shutil.rmtree(cache, ignore_errors=True)
                    out = work / f"p-{policy}-{rep}"
                    phases_file = work / "phases.json"
                    wall, rss, _, _ = run_measured(
                        [sys.executable, "-c", PHASED, str(phases_file)]
                        + command(args.trace, args.system, policy, out, csv),
                        env,
                        work,
                    )
                    ph = json.loads(phases_file.read_text())
                    inside = ph["read_s"] + ph["simulate_s"] + ph["write_validate_s"]
                    ph["other_s"] = wall - inside  # interpreter, imports, summary, printing
                    ph["whole_s"] = wall
                    ph["rss"] = rss
                    (h_cached if cached else h_runs).append(ph)
                    shutil.rmtree(out)

            def med(runs: list[dict], key: str) -> float:
                return statistics.median(r[key] for r in runs)

            c_wait, h_wait = c_runs[0]["mean_wait"], whole_cold[0]["wait"]
            agree = f"{c_wait:.6f}" == f"{h_wait:.6f}"
            failed |= not agree
            print(
                f"\n{policy.upper()} on {args.trace.name} ({c_runs[0]['jobs']:,} jobs, {args.system}), "
                f"medians of {args.repeats} (seconds; hpcdispatch / C)"
            )
            print(f"{'phase':<34}{'C':>10}{'hpcdispatch':>13}{'ratio':>8}")
            rows = [
                ("read (parse, clean, sort)", med(c_runs, "read_s"), med(h_runs, "read_s")),
                ("read, trace cached", med(c_runs, "read_s"), med(h_cached, "read_s")),
                ("simulate: the loop", med(c_runs, "simulate_s"), med(h_runs + h_cached, "loop_s")),
                (
                    "simulate: whole phase",
                    med(c_runs, "simulate_s"),
                    med(h_runs + h_cached, "simulate_s"),
                ),
                (
                    "write (+ validate for hpcdispatch)",
                    med(c_runs, "write_s"),
                    med(h_runs + h_cached, "write_validate_s"),
                ),
                ("start-up, imports, summary", 0.0, med(h_runs + h_cached, "other_s")),
                ("whole command", med(c_runs, "whole_s"), med(whole_cold, "whole_s")),
                (
                    "whole command, trace cached",
                    med(c_runs, "whole_s"),
                    med(whole_cached, "whole_s"),
                ),
            ]
            for label, a, b in rows:
                ratio = f"{b / a:7.1f}x" if a > 0 else ""
                print(f"{label:<34}{a:>10.3f}{b:>13.3f}{ratio:>8}")
            crss = max(r["rss"] for r in c_runs) / 1e6
            for label, runs in (("", whole_cold), (", trace cached", whole_cached)):
                hrss = max(r["rss"] for r in runs) / 1e6
                hmed = med(runs, "rss") / 1e6
                print(
                    f"{'peak RSS (MB, max; median)' + label:<34}{crss:>10.1f}{hrss:>13.1f}"
                    f"  ({hmed:.1f})"
                )
            numba = sorted({str(r["numba_imported"]) for r in h_runs + h_cached})
            print(f"numba imported by hpcdispatch's runs: {', '.join(numba)}")
            print(
                f"mean wait: C {c_wait:,.6f} s, hpcdispatch {h_wait:,.6f} s -- "
                + ("agree to 6 decimals" if agree else "DIFFER")
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
