"""Time the EDF-ordered leak in process (the queue order's own cost, issue 34).

    PYTHONPATH=src python3 benchmarks/leak_edf_timing.py [--spec leak:order=edf] [--runs 5]

Simulates ``synthetic:deadline,load=very-heavy,types=2,seed=1`` on ``hlrn2-grid`` (a long
queue: 1,000 jobs within 17 minutes) with the Python engine ``--runs`` times and prints the
minimum and median wall time of the simulation alone. To compare two versions, run it with
``PYTHONPATH`` pointing at each tree's ``src`` in turn (alternating, on an idle machine).
"""

from __future__ import annotations

import argparse
import statistics
import time

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.sim.options import SimulationOptions
from hpcdispatch.sim.simulator import Simulator
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="leak:order=edf")
    parser.add_argument("--workload", default="synthetic:deadline,load=very-heavy,types=2,seed=1")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    system = load_system("hlrn2-grid")
    workload = load_workload(args.workload, system)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        Simulator(
            system, workload, make_dispatcher(args.spec), None, SimulationOptions(engine="python")
        ).run()
        times.append(time.perf_counter() - t0)
    print(
        f"{args.spec} on {args.workload}: min {min(times):.3f} s, median {statistics.median(times):.3f} s "
        f"over {args.runs} runs"
    )


if __name__ == "__main__":
    main()
