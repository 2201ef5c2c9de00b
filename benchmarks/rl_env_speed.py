"""Environment steps per second with a random masked policy, hpcdispatch's and RLScheduler's.

Lublin-1 (``lublin_256.swf.gz``, rlscheduler cleaning), RLScheduler's 10 evaluation sequences
of 1,024 jobs (seed 1), a uniformly random choice among the valid actions (seeded). For
hpcdispatch/Scheduling-v0: ``SchedulingEnv`` itself and through ``gymnasium.make`` (its
wrappers), each backfilling mode, the fast engine and, for reference, the simulator-driven
one. For RLScheduler's ``HPCEnv`` (installed in a throwaway virtual environment as
``benchmarks/rl_rlscheduler.py`` does): ``step_for_test`` on the same sequences, without and
with its backfilling. Each configuration runs ``--repeats`` times, alternating the two
environments; the median and the best are reported. Only the steps are timed (not
``reset``).

    nice -n 10 python benchmarks/rl_env_speed.py --repeats 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
TRACE = HERE.parent / "shared" / "traces" / "lublin_256.swf.gz"

SPEED_DRIVER = r"""
import json, random, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import HPCSimPickJobs as H
args = json.loads(sys.argv[2])
env = H.HPCEnv(backfil=bool(args["backfill"]), job_score_type=0, batch_job_slice=0, build_sjf=False)
env.my_init(workload_file=args["trace"])
env.seed(1)
rng = np.random.default_rng(0)
random.seed(0)
steps, elapsed = 0, 0.0
for it in range(args["iterations"]):
    env.reset_for_test(args["jobs"], 0)
    o = env.build_observation()
    t0 = time.perf_counter()
    while True:
        valid = [i for i, p in enumerate(env.pairs) if p[0] is not None]
        o, r, d, _ = env.step_for_test(valid[int(rng.integers(len(valid)))])
        steps += 1
        if d:
            break
    elapsed += time.perf_counter() - t0
print(json.dumps({"steps": steps, "seconds": elapsed}))
"""


def ours(mode: str, engine: str, make: bool, starts: list[int], jobs: int) -> dict:
    import gymnasium as gym

    from hpcdispatch.rl import ENV_ID
    from hpcdispatch.rl.env import SchedulingEnv

    kw = dict(workload=str(TRACE), cleaning="rlscheduler", jobs=jobs, backfill=mode, engine=engine)
    env = gym.make(ENV_ID, **kw) if make else SchedulingEnv(**kw)
    rng = np.random.default_rng(0)
    steps, elapsed = 0, 0.0
    for s in starts:
        obs, info = env.reset(seed=0, options={"start": s})
        t0 = time.perf_counter()
        while True:
            valid = np.flatnonzero(info["action_mask"])
            obs, r, term, trunc, info = env.step(valid[int(rng.integers(len(valid)))])
            steps += 1
            if term:
                break
        elapsed += time.perf_counter() - t0
    return {"steps": steps, "seconds": elapsed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1024)
    ap.add_argument(
        "--mirror", type=Path, default=Path("/work/.mirror/DIR-LAB+deep-batch-scheduler/repo")
    )
    ap.add_argument("--no-rlscheduler", action="store_true")
    ap.add_argument(
        "--out", type=Path, default=HERE / "benchmarks" / "results" / "rl_env_speed.json"
    )
    args = ap.parse_args()

    from hpcdispatch.rl.sequences import load_rlscheduler, rlscheduler_starts

    _, wl = load_rlscheduler(TRACE)
    starts = rlscheduler_starts(len(wl), args.jobs, args.iterations, 1)
    configs = [
        ("off", "fast", False),
        ("off", "fast", True),
        ("rlscheduler", "fast", False),
        ("on", "fast", False),
        ("off", "simulator", False),
    ]
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="rlscheduler-speed-") as tmp:
        root = Path(tmp)
        py = None
        if not args.no_rlscheduler:
            spec = importlib.util.spec_from_file_location(
                "rl_rls", HERE / "benchmarks" / "rl_rlscheduler.py"
            )
            assert spec and spec.loader
            rls = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(rls)
            py, _ = rls.make_venv(root, args.mirror)
            plain = root / "lublin_256.swf"
            import gzip
            import shutil

            with gzip.open(TRACE, "rb") as fi, open(plain, "wb") as fo:
                shutil.copyfileobj(fi, fo)
            (root / "speed.py").write_text(SPEED_DRIVER)
        for rep in range(args.repeats):
            for mode, engine, make in configs:
                if engine == "simulator" and rep > 0:
                    continue
                r = ours(mode, engine, make, starts, args.jobs)
                key = f"hpcdispatch backfill={mode} engine={engine}" + (
                    " gymnasium.make" if make else ""
                )
                results.setdefault(key, []).append(r["steps"] / r["seconds"])
            if py is not None:
                for bf in (0, 1):
                    payload = {
                        "trace": str(root / "lublin_256.swf"),
                        "backfill": bf,
                        "iterations": args.iterations,
                        "jobs": args.jobs,
                    }
                    proc = subprocess.run(
                        [
                            str(py),
                            str(root / "speed.py"),
                            str(root / "rlscheduler"),
                            json.dumps(payload),
                        ],
                        capture_output=True,
                        text=True,
                        cwd=root,
                    )
                    if proc.returncode:
                        raise SystemExit(proc.stderr[-2000:])
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    key = f"RLScheduler HPCEnv backfil={bf}"
                    results.setdefault(key, []).append(r["steps"] / r["seconds"])
    summary = {
        k: {"median_steps_per_s": statistics.median(v), "best_steps_per_s": max(v), "runs": v}
        for k, v in results.items()
    }
    for k, v in summary.items():
        print(
            f"{k:55s} median {v['median_steps_per_s']:9.0f}  best {v['best_steps_per_s']:9.0f} steps/s"
        )
    ratios = {}
    for mine, theirs in (
        ("hpcdispatch backfill=off engine=fast", "RLScheduler HPCEnv backfil=0"),
        ("hpcdispatch backfill=rlscheduler engine=fast", "RLScheduler HPCEnv backfil=1"),
    ):
        if mine in summary and theirs in summary:
            ratios[f"{mine} / {theirs}"] = (
                summary[mine]["median_steps_per_s"] / summary[theirs]["median_steps_per_s"]
            )
            print(f"{mine} / {theirs}: {ratios[f'{mine} / {theirs}']:.1f}x")
    load = os.getloadavg()
    out = {"summary": summary, "ratios": ratios, "load_average": load, "sequences": starts}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"load average {load[0]:.1f}; wrote {args.out}")


if __name__ == "__main__":
    main()
