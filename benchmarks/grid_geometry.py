"""Speed of the 2-D grid geometry and shape searches (system/grid.py, system/partition.py).

Run: ``PYTHONPATH=src python3 benchmarks/grid_geometry.py`` (a few seconds). Prints the mean
time per call of: building every cached array of a grid (8 x 16; 64 x 64 without the
``n x n`` distance matrix), the Hilbert
first fit of 16 nodes, the Manhattan-median partition of 16 nodes on random 60 %-free masks
and of 32 nodes on the empty grid, and the XY routes of 1,000 random messages (8 x 16).
Numbers go to docs/DEADLINE.md ("Topology").
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from hpcdispatch.system.grid import Grid, grid_of
from hpcdispatch.system.partition import hilbert_first_fit, manhattan_partition


def per_call_us(f: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    for shape in ((8, 16), (64, 64)):

        def build(shape: tuple[int, int] = shape) -> None:
            g = Grid(*shape)  # uncached on purpose
            _ = g.hilbert_order, g.neighbour_csr, g.links, g.snake_order(0)
            if g.n_nodes <= 1024:  # n^2 int64: 8 MB at 1,024 nodes, 134 MB at 4,096
                _ = g.distance_matrix

        print(
            f"grid {shape[0]} x {shape[1]}: every array built in {per_call_us(build, 20):8.0f} us"
        )
    g = grid_of(8, 16)
    rng = np.random.default_rng(1)
    masks = [rng.random(g.n_nodes) < 0.6 for _ in range(500)]
    it = iter(masks)
    print(
        "hilbert first fit, k = 16:                "
        f"{per_call_us(lambda: hilbert_first_fit(next(it), g.hilbert_order, 16), 500):8.0f} us"
    )
    it = iter(masks)
    print(
        "manhattan partition, k = 16, 60 % free:   "
        f"{per_call_us(lambda: manhattan_partition(next(it), g, 16), 500):8.0f} us"
    )
    empty = np.ones(g.n_nodes, dtype=bool)
    print(
        "manhattan partition, k = 32, empty:       "
        f"{per_call_us(lambda: manhattan_partition(empty, g, 32), 200):8.0f} us"
    )
    src, dst = rng.integers(0, g.n_nodes, 1000), rng.integers(0, g.n_nodes, 1000)
    print(
        f"XY routes of 1,000 messages:              {per_call_us(lambda: g.routes(src, dst), 200):8.0f} us"
    )


if __name__ == "__main__":
    main()
