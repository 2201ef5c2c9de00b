"""Shape searches over a free-node mask (system/partition.py): Hilbert first and best fit
(design note U2), the Manhattan-median greedy partitions on an empty 8 x 16 grid (U3) and the
property that it finds a partition iff a free 4-connected component is large enough (U4)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcdispatch.system.grid import grid_of
from hpcdispatch.system.partition import (
    free_components,
    hilbert_best_fit,
    hilbert_first_fit,
    leak_grow,
    manhattan_grow,
    manhattan_partition,
    snake_first_free,
)

PROPS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mask(n: int, busy: list[int]) -> np.ndarray:
    m = np.ones(n, dtype=bool)
    m[busy] = False
    return m


# ---- U2: Hilbert first fit and best fit ---------------------------------------------------

CURVE_4X4 = [0, 4, 5, 1, 2, 3, 7, 6, 10, 11, 15, 14, 13, 9, 8, 12]


def test_hilbert_first_fit_by_hand():
    order = grid_of(4, 4).hilbert_order
    assert order.tolist() == CURVE_4X4
    # busy 4 (position 1) and 11 (position 9): free runs at positions [0], [2..8] (7), [10..15] (6)
    free = mask(16, [4, 11])
    assert hilbert_first_fit(free, order, 1).tolist() == [0]
    assert hilbert_first_fit(free, order, 3).tolist() == [5, 1, 2]
    assert hilbert_first_fit(free, order, 6).tolist() == [5, 1, 2, 3, 7, 6]
    assert hilbert_first_fit(free, order, 7).tolist() == [5, 1, 2, 3, 7, 6, 10]
    # 14 nodes are free, but no 8 of them are consecutive on the curve: rejected
    assert hilbert_first_fit(free, order, 8) is None
    assert hilbert_first_fit(np.ones(16, dtype=bool), order, 16).tolist() == CURVE_4X4
    assert hilbert_first_fit(np.zeros(16, dtype=bool), order, 1) is None


def test_hilbert_first_fit_on_the_hlrn2_grid():
    # the curve's first 16 positions fill rows 0-3 x columns 0-3 (U1 starts), then rows 4-7
    order = grid_of(8, 16).hilbert_order
    assert order[:17].tolist() == [0, 16, 17, 1, 2, 3, 19, 18, 34, 35, 51, 50, 49, 33, 32, 48, 64]
    free = mask(128, [17, 35])  # positions 2 and 9 busy: runs [0, 1], [3..8] (6), [10..127]
    assert hilbert_first_fit(free, order, 2).tolist() == [0, 16]
    assert hilbert_first_fit(free, order, 4).tolist() == [1, 2, 3, 19]
    assert hilbert_first_fit(free, order, 6).tolist() == [1, 2, 3, 19, 18, 34]
    assert hilbert_first_fit(free, order, 7).tolist() == [51, 50, 49, 33, 32, 48, 64]
    assert hilbert_best_fit(free, order, 3).tolist() == [1, 2, 3]
    assert hilbert_first_fit(free, order, 119) is None  # 126 free, the longest run is 118


def test_hilbert_best_fit_takes_the_smallest_run_that_holds_the_job():
    order = grid_of(4, 4).hilbert_order
    free = mask(16, [4, 11])
    assert hilbert_best_fit(free, order, 1).tolist() == [0]  # the run of 1 at position 0
    assert hilbert_best_fit(free, order, 6).tolist() == [
        15,
        14,
        13,
        9,
        8,
        12,
    ]  # 6 < 7: the later run
    assert hilbert_best_fit(free, order, 3).tolist() == [15, 14, 13]
    assert hilbert_best_fit(free, order, 7).tolist() == [5, 1, 2, 3, 7, 6, 10]
    assert hilbert_best_fit(free, order, 8) is None
    # equal runs: the earlier one
    free = mask(16, [5, 6, 13])  # runs [0, 1], [3..6] (4), [8..11] (4), [13..15] (3)
    assert hilbert_best_fit(free, order, 4).tolist() == [1, 2, 3, 7]


@PROPS
@given(st.integers(1, 8), st.integers(1, 8), st.data())
def test_hilbert_fits_are_consecutive_free_curve_positions(rows, cols, data):
    g = grid_of(rows, cols)
    free = np.array(
        data.draw(st.lists(st.booleans(), min_size=g.n_nodes, max_size=g.n_nodes)), dtype=bool
    )
    k = data.draw(st.integers(1, g.n_nodes))
    order = g.hilbert_order
    on_curve = free[order]
    runs = [i for i in range(g.n_nodes - k + 1) if on_curve[i : i + k].all()]
    got = hilbert_first_fit(free, order, k)
    if not runs:
        assert got is None and hilbert_best_fit(free, order, k) is None
        return
    assert got.tolist() == order[runs[0] : runs[0] + k].tolist()
    best = hilbert_best_fit(free, order, k)
    pos = g.hilbert_position[best]
    assert free[best].all() and (np.diff(pos) == 1).all()


def test_bad_arguments_are_named():
    order = grid_of(2, 2).hilbert_order
    with pytest.raises(ValueError, match="k must be a positive number of nodes"):
        hilbert_first_fit(np.ones(4, dtype=bool), order, 0)
    with pytest.raises(ValueError, match="boolean array of 4 nodes"):
        hilbert_first_fit(np.ones(5, dtype=bool), order, 1)
    with pytest.raises(ValueError, match="boolean array of 4 nodes"):
        manhattan_partition(np.ones(4, dtype=int), (2, 2), 1)


# ---- U3: Manhattan-median greedy partitions on the empty 8 x 16 grid ----------------------


@pytest.mark.parametrize(
    ("k", "nodes", "pairwise"),
    [
        (1, [0], 0),
        (2, [0, 1], 1),
        (3, [0, 1, 2], 4),  # 2, 16, 17 all add 3: the lowest id
        (4, [0, 1, 2, 17], 9),  # 17 adds 5, 3 / 16 / 18 add 6
        (5, [0, 1, 2, 16, 17], 16),
        (8, [0, 1, 2, 16, 17, 18, 32, 33], 54),
    ],
)
def test_manhattan_greedy_on_the_empty_hlrn2_grid(k, nodes, pairwise):
    g = grid_of(8, 16)
    got = manhattan_partition(np.ones(128, dtype=bool), (8, 16), k)
    assert sorted(got.tolist()) == nodes and g.pairwise_sum(got) == pairwise
    assert got[0] == 0


def test_manhattan_greedy_growth_order_by_hand():
    got = manhattan_partition(np.ones(128, dtype=bool), (8, 16), 5)
    assert got.tolist() == [0, 1, 2, 17, 16]  # 16 and 18 both add 7 after 17: the lower id


# brute-force optimum of the sum of pairwise distances of k nodes on a large grid, k = 1..8
OPTIMUM = [0, 1, 4, 8, 16, 25, 38, 54]


def test_greedy_from_an_interior_node_is_optimal_but_for_k4():
    g = grid_of(8, 16)
    free = np.ones(128, dtype=bool)
    got = [g.pairwise_sum(manhattan_grow(free, g, g.node(3, 7), k)) for k in range(1, 9)]
    assert got == [0, 1, 4, 9, 16, 25, 38, 54]  # k = 4: an L (9), not the 2 x 2 square (8)
    assert [a - b for a, b in zip(got, OPTIMUM)] == [0, 0, 0, 1, 0, 0, 0, 0]


def test_optimum_table_by_brute_force_on_a_5x5_grid():
    g = grid_of(5, 5)
    d = g.distance_matrix
    for k in range(1, 6):  # C(25, 5) = 53,130 sets
        best = min(int(d[np.ix_(c, c)].sum()) // 2 for c in map(list, combinations(range(25), k)))
        assert best == OPTIMUM[k - 1]


def test_manhattan_skips_start_nodes_whose_component_is_too_small():
    # 4 x 4, busy column 1: {0, 4, 8, 12} (4 nodes) and columns 2-3 (8 nodes)
    free = mask(16, [1, 5, 9, 13])
    assert manhattan_partition(free, (4, 4), 4).tolist() == [0, 4, 8, 12]
    # from 2: 3 and 6 add 1 (3, the lower); then 6 and 7 add 3 (6); 7 adds 4, 10 adds 6; 10 and 11 add 8
    assert manhattan_partition(free, (4, 4), 5).tolist() == [2, 3, 6, 7, 10]
    assert manhattan_partition(free, (4, 4), 9) is None  # 12 free nodes, no component of 9
    assert manhattan_grow(free, (4, 4), 0, 5) is None and manhattan_grow(free, (4, 4), 1, 1) is None


def test_torus_wrap_joins_components():
    free = mask(16, [1, 5, 9, 13])  # on a torus, column 0 touches column 3 through the wrap
    assert free_components(free, (4, 4), torus=True).max() == 0
    assert free_components(free, (4, 4)).tolist()[:4] == [0, -1, 1, 1]
    got = manhattan_partition(free, (4, 4), 5, torus=True)
    assert got[0] == 0 and 3 in got.tolist()


# ---- U4: found iff a free 4-connected component holds k nodes ------------------------------


def components_by_flood_fill(free: np.ndarray, rows: int, cols: int, torus: bool) -> list[set[int]]:
    seen: set[int] = set()
    out = []
    for s in range(rows * cols):
        if not free[s] or s in seen:
            continue
        comp, stack = {s}, [s]
        while stack:
            u = stack.pop()
            r, c = divmod(u, cols)
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                rr, cc = r + dr, c + dc
                if torus and rows >= 3:
                    rr %= rows
                if torus and cols >= 3:
                    cc %= cols
                v = rr * cols + cc
                if 0 <= rr < rows and 0 <= cc < cols and free[v] and v not in comp:
                    comp.add(v)
                    stack.append(v)
        seen |= comp
        out.append(comp)
    return out


def connected(nodes: list[int], rows: int, cols: int, torus: bool) -> bool:
    inside = np.zeros(rows * cols, dtype=bool)
    inside[nodes] = True
    return len(components_by_flood_fill(inside, rows, cols, torus)) == 1


@PROPS
@given(st.integers(1, 7), st.integers(1, 7), st.booleans(), st.data())
def test_manhattan_accepts_iff_a_free_component_is_large_enough(rows, cols, torus, data):
    n = rows * cols
    free = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    k = data.draw(st.integers(1, n))
    comps = components_by_flood_fill(free, rows, cols, torus)
    got = manhattan_partition(free, (rows, cols), k, torus=torus)
    large = [c for c in comps if len(c) >= k]
    assert (got is not None) == bool(large)
    if got is None:
        return
    nodes = got.tolist()
    assert len(set(nodes)) == k and free[got].all()
    assert connected(nodes, rows, cols, torus)
    assert nodes[0] == min(
        min(c) for c in large
    )  # the first start node (in node order) that can grow
    # every node added was the frontier node (a free neighbour of the partition) whose sum of
    # distances to the partition is least, the lowest id on ties
    g = grid_of(rows, cols, torus)
    for i in range(1, k):
        frontier = [
            v for v in range(n) if free[v] and v not in nodes[:i] and g.adjacent(v, nodes[:i]).any()
        ]
        assert nodes[i] == min(frontier, key=lambda v: (int(g.distance(v, nodes[:i]).sum()), v))
    labels = free_components(free, (rows, cols), torus)
    assert sorted(
        {frozenset(np.flatnonzero(labels == i).tolist()) for i in range(labels.max() + 1)}, key=min
    ) == sorted((frozenset(c) for c in comps), key=min)


# ---- U5: Figure 11 (the leak's first node and growth) -------------------------------------


def test_figure_11_replayed():
    # 4 x 4: row 0 busy; (1,3), (1,1), (2,3) busy; (1,2), (2,2), (2,1), (3,2) free; the rest busy
    free = np.zeros(16, dtype=bool)
    free[[6, 10, 9, 14]] = True
    first = snake_first_free(free, (4, 4), 0)
    assert first == 6  # row 0 busy, row 1 right to left: (1,3) busy, (1,2) free (tile 1)
    # its only free neighbour is below (tiles 2-3), then two at once (tiles 4-5)
    assert leak_grow(free, (4, 4), first, 4).tolist() == [6, 10, 9, 14]
    assert leak_grow(free, (4, 4), first, 3).tolist() == [6, 10, 9]  # a layer cut: lowest ids
    assert leak_grow(free, (4, 4), first, 6).tolist() == [6, 10, 9, 14]  # partial: all in reach
    assert snake_first_free(np.zeros(16, dtype=bool), (4, 4), 0) is None
    with pytest.raises(ValueError, match="first node 0 is not free"):
        leak_grow(free, (4, 4), 0, 2)


def test_non_contiguous_leak_jumps_along_the_snake():
    free = mask(16, [n for n in range(16) if n not in (0, 1, 10, 15)])
    assert leak_grow(free, (4, 4), 0, 4).tolist() == [0, 1]  # contiguous: stuck after 1
    # snake from 0: 0 1 2 3 7 6 5 4 8 9 10 11 15 14 13 12 -> 10, then 15
    assert leak_grow(free, (4, 4), 0, 4, jump=True).tolist() == [0, 1, 10, 15]
    assert leak_grow(free, (4, 4), 0, 3, jump=True, snake_start=12).tolist() == [
        0,
        1,
        15,
    ]  # 12 13 14 15


@PROPS
@given(st.integers(1, 7), st.integers(1, 7), st.booleans(), st.data())
def test_leak_growth_properties(rows, cols, jump, data):
    n = rows * cols
    free = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if not free.any():
        return
    first = int(data.draw(st.sampled_from(np.flatnonzero(free).tolist())))
    k = data.draw(st.integers(1, n))
    got = leak_grow(free, (rows, cols), first, k, jump=jump)
    nodes = got.tolist()
    assert nodes[0] == first and len(set(nodes)) == len(nodes) <= k and free[got].all()
    comp = next(c for c in components_by_flood_fill(free, rows, cols, False) if first in c)
    if jump:
        assert len(nodes) == min(k, int(free.sum()))
    else:
        assert (
            len(nodes) == min(k, len(comp))
            and set(nodes) <= comp
            and connected(nodes, rows, cols, False)
        )


# ---- manhattan_partition(starts=...): the MM-like centred readings ---------------------------


def test_manhattan_starts_all_and_median_by_hand():
    # free: row 0 columns 0-7 (a corridor, the first component in node order) and the 2 x 2
    # block rows 2-3 x columns 0-1 (nodes 32, 33, 48, 49); everything else busy. k = 4:
    # first -> the corridor from node 0, [0, 1, 2, 3], pairwise sum 1+2+3+1+2+1 = 10;
    # all -> the block from node 32: 33 (tie with 48: lowest id), then 48, 49: the square, sum 8;
    # median -> corridor median node 3 (cols 3 and 4 tie: lowest id) grows to a line (10),
    # block median node 32 grows the square (8): the square wins
    free = np.zeros(128, dtype=bool)
    free[0:8] = True
    free[[32, 33, 48, 49]] = True
    g = grid_of(8, 16)
    first = manhattan_partition(free, g, 4)
    assert first.tolist() == [0, 1, 2, 3]
    assert manhattan_partition(free, g, 4, starts="all").tolist() == [32, 33, 48, 49]
    assert manhattan_partition(free, g, 4, starts="median").tolist() == [32, 33, 48, 49]
    # k = 5: only the corridor holds it; median starts at node 3, all finds the same sum as first
    # from node 3: 2 (tie with 4), then 1 (1+2 = 3, tie with 4: 2+1), then 0 (6, tie with 4), then 4
    assert manhattan_partition(free, g, 5, starts="median").tolist() == [3, 2, 1, 0, 4]
    assert manhattan_partition(free, g, 5, starts="all").tolist() == [
        0,
        1,
        2,
        3,
        4,
    ]  # sum 20, ties: lowest start
    assert manhattan_partition(free, g, 9, starts="all") is None
    with pytest.raises(ValueError, match="starts must be one of first, all, median"):
        manhattan_partition(free, g, 4, starts="centre")


@PROPS
@given(st.integers(1, 7), st.integers(1, 7), st.booleans(), st.data())
def test_manhattan_starts_all_is_never_less_compact(rows, cols, torus, data):
    n = rows * cols
    free = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    k = data.draw(st.integers(1, n))
    g = grid_of(rows, cols, torus)
    got = {
        s: manhattan_partition(free, (rows, cols), k, torus=torus, starts=s)
        for s in ("first", "all", "median")
    }
    assert len({p is None for p in got.values()}) == 1  # all accept iff a component holds k nodes
    if got["first"] is None:
        return
    sums = {s: int(g.distance(p[:, None], p[None, :]).sum()) for s, p in got.items()}
    assert sums["all"] <= sums["first"] and sums["all"] <= sums["median"]
    for p in got.values():
        assert (
            len(set(p.tolist())) == k and free[p].all() and connected(p.tolist(), rows, cols, torus)
        )


def test_manhattan_strict_growth_stops_at_a_busy_best_neighbour():
    """Fig. 8 lines 10-18 as written (``growth=strict``) by hand, 3 x 4 mesh, node 5 busy,
    k = 4 (node ids row-major)::

        0 1 2 3
        4 x 6 7
        8 9 10 11

    From 0: 1 (cost 1, ties 4: lowest id), 2 (cost 3, ties 4 and 5), then the least added
    distance is node 5 alone (2 + 1 + 2 = 5): busy, so this start fails; starts 1 and 2 end
    the same way, at the same partition {0, 1, 2}. From 3: 2, 1, then 6 (2 + 1 + 2 = 5, the
    only least) -- free: {3, 2, 1, 6}. The bending growth (``growth=bend``, the first build's)
    takes from node 0 the least of the *free* neighbours instead: {0, 1, 2, 3}, a line."""
    from hpcdispatch.system.partition import manhattan_grow

    free = np.ones(12, bool)
    free[5] = False
    grid = (3, 4)
    assert manhattan_grow(free, grid, 0, 4, strict=True) is None
    assert manhattan_grow(free, grid, 3, 4, strict=True).tolist() == [3, 2, 1, 6]
    assert manhattan_partition(free, grid, 4, growth="strict").tolist() == [3, 2, 1, 6]
    assert manhattan_partition(free, grid, 4, growth="bend").tolist() == [0, 1, 2, 3]
    assert manhattan_partition(free, grid, 4).tolist() == [0, 1, 2, 3]  # (the function's default)
    # k = 3: the first start succeeds
    assert manhattan_partition(free, grid, 3, growth="strict").tolist() == [0, 1, 2]
    # the busy centre of a 3 x 3 mesh: every start meets it for k = 4, bend goes round it
    free9 = np.ones(9, bool)
    free9[4] = False
    assert manhattan_partition(free9, (3, 3), 4, growth="strict") is None
    assert manhattan_partition(free9, (3, 3), 4, growth="bend").tolist() == [0, 1, 2, 3]
    # starts=all with strict growth: the least pairwise sum over the starts that succeed --
    # 3, 7, 10 and 11 (sums 9, 8, 9, 9; 0-2, 4, 6, 8, 9 meet node 5): from 7, the square
    # {7, 3, 2, 6} (7: 3 then 2 by lowest id, then 6 alone at 1 + 2 + 1)
    got = manhattan_partition(free, grid, 4, growth="strict", starts="all")
    assert got.tolist() == [7, 3, 2, 6]
    with pytest.raises(ValueError, match="growth must be one of strict, bend"):
        manhattan_partition(free, grid, 4, growth="round")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_strict_growth_is_connected_free_and_never_more_than_bend(data):
    """Strict growth returns k free 4-connected nodes or None, and finds a partition only
    when the bending growth does (it can only fail more often)."""
    rows, cols = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    n = rows * cols
    free = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    k = data.draw(st.integers(1, n))
    strict = manhattan_partition(free, (rows, cols), k, growth="strict")
    bend = manhattan_partition(free, (rows, cols), k, growth="bend")
    if strict is not None:
        assert bend is not None
        assert len(set(strict.tolist())) == k and free[strict].all()
        labels = free_components(free, (rows, cols))
        assert len(set(labels[strict].tolist())) == 1
