"""Paired compactness of the Hilbert first fit and the Manhattan partition: the same job size
on the same free mask (docs/DEADLINE.md, "Measured"; design note F10).

    PYTHONPATH=src python3 benchmarks/deadline_compactness.py --masks 2000 --seed 1

Masks: the 8 x 16 mesh of ``hlrn2-grid`` with a random share of busy nodes (uniform in
[0, 0.7]), busy nodes as random rectangles (what bookings leave behind); sizes: node counts of
the deadline generator's jobs (``ceil(processes / 4)``). For every pair where both strategies
find a partition, prints, per reading of where the Manhattan growth starts (``--starts``:
``first``, the paper's adaptation, A22; ``median`` and ``all``, MM-like centring), the share
where Manhattan's pairwise hop sum is lower, equal, higher than Hilbert's, the mean ratio
Manhattan / Hilbert, and each one's mean sum / the best partition of that size on the empty
grid (``metrics.deadline.best_pairwise_sum``).
"""

from __future__ import annotations

import argparse

import numpy as np

from hpcdispatch.metrics.deadline import best_pairwise_sum, pairwise_hops
from hpcdispatch.system.io import load_system
from hpcdispatch.system.partition import hilbert_first_fit, manhattan_partition
from hpcdispatch.workload.deadline import DeadlineWorkloadParams, deadline_columns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--masks", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--starts", default="first,median,all", help="manhattan_partition starts= readings"
    )
    args = parser.parse_args()
    grid = load_system("hlrn2-grid").topology.grid
    rng = np.random.default_rng(args.seed)
    sizes = -(
        -deadline_columns(DeadlineWorkloadParams(jobs=args.masks, seed=args.seed))["processes"] // 4
    )
    sizes = sizes[(sizes >= 2) & (sizes <= 64)]
    starts = args.starts.split(",")
    counts = {s: np.zeros(3, dtype=np.int64) for s in starts}
    ratios: dict[str, list[float]] = {s: [] for s in starts}
    norm: dict[str, list[float]] = {s: [] for s in ["hilbert", *starts]}
    for k in sizes.tolist():
        busy = np.zeros((grid.rows, grid.cols), dtype=bool)
        target = rng.uniform(0.0, 0.7)
        while busy.mean() < target:
            r, c = rng.integers(0, grid.rows), rng.integers(0, grid.cols)
            h, w = rng.integers(1, 4), rng.integers(1, 5)
            busy[r : r + h, c : c + w] = True
        free = ~busy.ravel()
        a = hilbert_first_fit(free, grid.hilbert_order, k)
        parts = {s: manhattan_partition(free, (grid.rows, grid.cols), k, starts=s) for s in starts}
        if a is None or any(p is None for p in parts.values()):
            continue
        ha = pairwise_hops(grid, a)
        best = best_pairwise_sum(grid, k)
        norm["hilbert"].append(ha / best)
        for s, b in parts.items():
            hb = pairwise_hops(grid, b)
            counts[s] += np.array([hb < ha, hb == ha, hb > ha])
            ratios[s].append(hb / ha)
            norm[s].append(hb / best)
    n = int(counts[starts[0]].sum())
    print(
        f"{n} pairs (same size, same mask); hilbert first fit: mean sum / best {np.mean(norm['hilbert']):.3f}"
    )
    for s in starts:
        lower, equal, higher = counts[s] / n
        print(
            f"manhattan starts={s:6s}: lower than hilbert {lower:.1%}, equal {equal:.1%}, higher {higher:.1%}; "
            f"mean ratio manhattan / hilbert {np.mean(ratios[s]):.3f}; mean sum / best {np.mean(norm[s]):.3f}"
        )


if __name__ == "__main__":
    main()
