"""How much work the deadline generator offers against the machine (docs/RESULTS-DEADLINE.md,
"Fig 14 against Fig 17").

    PYTHONPATH=src python3 benchmarks/deadline_offered_load.py [--seeds 1-10]

Per load: requested node-time ``sum(nodes x R)`` of the 1,000 jobs over the machine's
node-time (128 nodes) from the first submission to the last one, and to the last deadline;
median and range over the seeds. No simulation: the workloads alone (the generator's common
random numbers make sizes and R the same for every type mix).
"""

from __future__ import annotations

import argparse

import numpy as np

from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-10", help="FIRST-LAST")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    system = load_system("hlrn2-grid")
    for load in ("normal", "heavy", "very-heavy"):
        to_last_submit, to_last_deadline = [], []
        for seed in range(first, last + 1):
            w = load_workload(f"synthetic:deadline,jobs=1000,load={load},seed={seed}", system)
            work = float(sum(j.units * j.run_time for j in w.jobs))
            submit = np.array([j.submit for j in w.jobs], dtype=float)
            deadline = np.array([j.deadline for j in w.jobs], dtype=float)
            to_last_submit.append(work / (system.n_nodes * (submit.max() - submit.min() + 1)))
            to_last_deadline.append(work / (system.n_nodes * (deadline.max() - submit.min())))
        print(
            f"{load:10s} offered / machine node-time, to the last submission: median "
            f"{np.median(to_last_submit):.1f} (range {min(to_last_submit):.1f}-{max(to_last_submit):.1f}); "
            f"to the last deadline: median {np.median(to_last_deadline):.2f} "
            f"(range {min(to_last_deadline):.2f}-{max(to_last_deadline):.2f})"
        )


if __name__ == "__main__":
    main()
