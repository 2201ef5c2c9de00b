"""Paired compactness of the Hilbert first fit and the Manhattan partition: the same job size
on the same free mask (docs/DEADLINE.md, "Measured"; design note F10).

    PYTHONPATH=src python3 benchmarks/deadline_compactness.py --masks 2000 --seed 1

Masks: the 8 x 16 mesh of ``hlrn2-grid`` with a random share of busy nodes (uniform in
[0, 0.7]), busy nodes as random rectangles (what bookings leave behind); sizes: node counts of
the deadline generator's jobs (``ceil(processes / 4)``). For every pair where both strategies
find a partition, prints the share where Manhattan's pairwise hop sum is lower, equal, higher,
and the mean ratio Manhattan / Hilbert.
"""

from __future__ import annotations

import argparse

import numpy as np

from hpcdispatch.metrics.deadline import pairwise_hops
from hpcdispatch.system.io import load_system
from hpcdispatch.system.partition import hilbert_first_fit, manhattan_partition
from hpcdispatch.workload.deadline import DeadlineWorkloadParams, deadline_columns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--masks", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    grid = load_system("hlrn2-grid").topology.grid
    rng = np.random.default_rng(args.seed)
    sizes = -(-deadline_columns(DeadlineWorkloadParams(jobs=args.masks, seed=args.seed))["processes"] // 4)
    sizes = sizes[(sizes >= 2) & (sizes <= 64)]
    lower = equal = higher = 0
    ratios = []
    for k in sizes.tolist():
        busy = np.zeros((grid.rows, grid.cols), dtype=bool)
        target = rng.uniform(0.0, 0.7)
        while busy.mean() < target:
            r, c = rng.integers(0, grid.rows), rng.integers(0, grid.cols)
            h, w = rng.integers(1, 4), rng.integers(1, 5)
            busy[r:r + h, c:c + w] = True
        free = ~busy.ravel()
        a = hilbert_first_fit(free, grid.hilbert_order, k)
        b = manhattan_partition(free, (grid.rows, grid.cols), k)
        if a is None or b is None:
            continue
        ha, hb = pairwise_hops(grid, a), pairwise_hops(grid, b)
        lower += hb < ha
        equal += hb == ha
        higher += hb > ha
        ratios.append(hb / ha)
    n = lower + equal + higher
    print(f"{n} pairs: manhattan lower {lower / n:.1%}, equal {equal / n:.1%}, higher {higher / n:.1%}; "
          f"mean ratio manhattan / hilbert {np.mean(ratios):.3f}")


if __name__ == "__main__":
    main()
