"""HCP'19's iterations between its two stages on a Eurora-like workload (issue 36).

Runs ``hcp`` on ``synthetic:eurora`` (the ``eurora`` preset) twice: as the papers describe it
(a job best fit cannot place is postponed and the scheduling stage solved again, the default)
and with the re-solve off (``on_unplaced=postpone``: the job is only postponed to the next
decision, what ``hcp`` did before), and prints the decisions, how many solved a model, the scheduling-stage solves and
re-iterated decisions, decision times and QoS.

    python3 benchmarks/hcp_iterations.py --jobs 2000 --load 0.9 --predictor oracle
"""

from __future__ import annotations

import argparse
import time

from hpcdispatch.runner import run_simulation
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--predictor", default="oracle")
    ap.add_argument("--dispatcher", default="hcp")
    args = ap.parse_args()
    system = load_system("eurora")
    spec = f"synthetic:eurora,jobs={args.jobs},seed={args.seed},load={args.load:g}"
    workload = load_workload(spec, system)
    print(f"{spec} on eurora, {args.dispatcher} -p {args.predictor}")
    for resolve in (True, False):
        t0 = time.perf_counter()
        spec_d = f"{args.dispatcher}:on_unplaced={'resolve' if resolve else 'postpone'}"
        out = run_simulation(system, workload, spec_d, predictor=args.predictor)
        wall = time.perf_counter() - t0
        s = out.summary
        info = out.result.decisions["info"]
        solved = sum(1 for v in info.column("solve_s") if v is not None)
        postponed = sum(v for v in info.column("postponed_at_allocation") if v is not None)
        print(
            f"re-solve {'on ' if resolve else 'off'}: valid {out.validation.ok}, wall {wall:.1f} s, "
            f"decisions {s['decisions']}, with a model {solved}, "
            f"stage solves {s.get('allocation_iterations_total', solved)}, "
            f"re-iterated {s.get('decisions_reiterated', 0)} (max {s.get('allocation_iterations_max', 1)}), "
            f"postponed by allocation {s.get('postponed_by_allocation_total', postponed)}, "
            f"decision mean {1000 * s['decision_time_mean_s']:.2f} ms p95 {1000 * s['decision_time_p95_s']:.2f} ms "
            f"max {1000 * s['decision_time_max_s']:.0f} ms, wait mean {s['wait_mean']:.0f} s, "
            f"bsld mean {s['bounded_slowdown_mean']:.3f}, slowdown mean {s['slowdown_mean']:.3f}"
        )


if __name__ == "__main__":
    main()
