"""Train the numpy REINFORCE example on Lublin-1 until it beats FCFS, then evaluate it.

1. ``examples/rl/train_reinforce.py`` on ``lublin_256.swf.gz`` (rlscheduler cleaning,
   ``--jobs`` jobs per episode, no backfilling): the policy, its learning curve (CSV) and
   the figure (``docs/img/rl-reinforce-lublin.png``);
2. RLScheduler's protocol (``hpcdispatch rl evaluate``, 10 x 1,024 jobs, seed 1) for
   ``fcfs, f1`` and the trained policy;
3. ``hpcdispatch compare -d "fcfs,f1,policy:path=..."`` on the first 2,000 jobs of the trace
   (the project's own reader and machine preset) into a temporary directory, and every run
   directory validated again with ``validate_run_dir``.

Writes ``benchmarks/results/rl_train_lublin.json``. A report, not a gate.

    nice -n 10 python benchmarks/rl_train_lublin.py --batches 60
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TRACE = HERE.parent / "shared" / "traces" / "lublin_256.swf.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--out-dir", type=Path, default=HERE / "benchmarks" / "results" / "rl")
    ap.add_argument(
        "--figure", type=Path, default=HERE / "docs" / "img" / "rl-reinforce-lublin.png"
    )
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    policy = args.out_dir / "lublin_policy.npz"
    spec = importlib.util.spec_from_file_location(
        "train_reinforce", HERE / "examples" / "rl" / "train_reinforce.py"
    )
    assert spec and spec.loader
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    t0 = time.perf_counter()
    rows = ex.train(
        ex.parse(
            [
                "--trace",
                str(TRACE),
                "--jobs",
                str(args.jobs),
                "--batches",
                str(args.batches),
                "--episodes",
                str(args.episodes),
                "--lr",
                str(args.lr),
                "--out",
                str(policy),
                "--plot",
                str(args.figure),
            ]
        )
    )
    train_s = time.perf_counter() - t0

    from hpcdispatch.rl.evaluate import evaluate

    t0 = time.perf_counter()
    table = evaluate(TRACE, ["fcfs", "f1", f"policy:path={policy}"], backfill="off")
    eval_s = time.perf_counter() - t0
    tmp = tempfile.TemporaryDirectory(prefix="rl-compare-")
    cmp_dir = Path(tmp.name) / "compare"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpcdispatch",
            "compare",
            "-w",
            str(TRACE),
            "--max-jobs",
            "2000",
            "-d",
            f"fcfs,f1,policy:path={policy}",
            "-o",
            str(cmp_dir),
        ],
        capture_output=True,
        text=True,
    )
    from hpcdispatch.validation import validate_run_dir

    verdicts = {
        d.name: validate_run_dir(d).ok
        for d in sorted(cmp_dir.iterdir())
        if (d / "run.json").exists()
    }
    tmp.cleanup()
    report = {
        "train": {
            "batches": args.batches,
            "episodes_per_batch": args.episodes,
            "jobs_per_episode": args.jobs,
            "seconds": train_s,
            "curve": [{"batch": b, "policy_bsld": p, "fcfs_bsld": f} for b, p, f in rows],
        },
        "rlscheduler_protocol": {
            "seconds": eval_s,
            "rows": [
                {
                    "dispatcher": r.dispatcher,
                    "bsld": r.mean_bounded_slowdown,
                    "utilization": r.utilization,
                }
                for r in table
            ],
        },
        "compare": {"exit_code": proc.returncode, "valid": verdicts, "table": proc.stdout[-3000:]},
    }
    out = HERE / "benchmarks" / "results" / "rl_train_lublin.json"
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["rlscheduler_protocol"], indent=1))
    print(proc.stdout[-2500:])
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
