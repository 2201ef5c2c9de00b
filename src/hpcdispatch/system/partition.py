"""Shape searches on a 2-D grid: which free nodes form a job's partition.

Pure functions over a boolean free-node mask (``free_mask[i]``: node ``i`` is free for the
whole window a job would run in), for the deadline-oriented strategies of Linnert, De Rose
and Heiss (2024). They live in the system layer, next to the geometry (``grid.py``), and not
in ``allocators/``: an :class:`~hpcdispatch.allocators.base.Allocator` places *units* on a
free-capacity matrix and honours Slurm's per-node constraints, while these place *whole
nodes* with a shape rule. The deadline strategies (advance reservation, the leak) call them
on the min-free mask of a booking window; an allocator wrapping them can follow.

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

import numpy as np

from hpcdispatch._util import LazyModule
from hpcdispatch.system.grid import Grid, grid_of

# imported when first used (a run without a grid never pays for scipy; a Ctrl-C during the
# import is held back and delivered after it, like OR-Tools')
_ndimage = LazyModule("scipy.ndimage")
_sparse = LazyModule("scipy.sparse")
_csgraph = LazyModule("scipy.sparse.csgraph")


def _mask(free_mask: np.ndarray, n: int) -> np.ndarray:
    mask = np.asarray(free_mask)
    if mask.dtype != bool or mask.shape != (n,):
        raise ValueError(
            f"free_mask must be a boolean array of {n} nodes, got {mask.dtype} {mask.shape}"
        )
    return mask


def _count(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive number of nodes, got {k!r}")
    return int(k)


def _free_runs(free_on_curve: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the maximal runs of True."""
    padded = np.concatenate([[False], free_on_curve, [False]]).astype(np.int8)
    edges = np.diff(padded)
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return starts, ends - starts


def _runs_holding(
    free_mask: np.ndarray, order: np.ndarray, k: int
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """``(order, k, starts, lengths, fits)``: the runs of free consecutive positions of
    ``order`` (their starts and lengths) and which of them hold ``k`` nodes."""
    order = np.asarray(order, dtype=np.int64)
    free_on_curve = _mask(free_mask, len(order))[order]
    k = _count(k)
    starts, lengths = _free_runs(free_on_curve)
    return order, k, starts, lengths, np.flatnonzero(lengths >= k)


def hilbert_first_fit(free_mask: np.ndarray, order: np.ndarray, k: int) -> np.ndarray | None:
    """The nodes at the first ``k`` consecutive positions of ``order`` (a curve: position ->
    node, e.g. ``Grid.hilbert_order``) that are all free, in curve order; ``None`` when no run
    of ``k`` free positions exists (even when ``k`` nodes are free in total)."""
    order, k, starts, lengths, fits = _runs_holding(free_mask, order, k)
    if len(fits) == 0:
        return None
    s = int(starts[fits[0]])
    return order[s : s + k].copy()


def hilbert_best_fit(free_mask: np.ndarray, order: np.ndarray, k: int) -> np.ndarray | None:
    """Slurm's best fit on a curve: the shortest run of free consecutive positions holding
    ``k`` nodes (ties: the earliest run), its first ``k`` nodes in curve order; else ``None``."""
    order, k, starts, lengths, fits = _runs_holding(free_mask, order, k)
    if len(fits) == 0:
        return None
    best = fits[np.argmin(lengths[fits])]  # argmin: the first of equal lengths
    s = int(starts[best])
    return order[s : s + k].copy()


def _grid(shape: tuple[int, int] | Grid, torus: bool) -> Grid:
    """``shape`` as a :class:`Grid`: a Grid is taken as it is (its own ``torus`` wins)."""
    if isinstance(shape, Grid):
        return shape
    rows, cols = shape
    return grid_of(rows, cols, torus)


def free_components(
    free_mask: np.ndarray, shape: tuple[int, int] | Grid, torus: bool = False
) -> np.ndarray:
    """``(n,)`` int64: the free 4-connected component of every node (numbered in the order of
    their lowest node), ``-1`` for busy nodes."""
    grid = _grid(shape, torus)
    mask = _mask(free_mask, grid.n_nodes)
    labels = np.full(grid.n_nodes, -1, dtype=np.int64)
    free = np.flatnonzero(mask)
    if len(free) == 0:
        return labels
    if not grid.torus:
        # a mesh: image labelling (4-connectivity, the default structure) numbers components in
        # raster order, i.e. by their lowest node id, as required; ~20x cheaper than the graph
        image, _ = _ndimage.label(mask.reshape(grid.rows, grid.cols))
        labels[free] = image.reshape(-1)[free] - 1
        return labels
    indptr, indices = grid.neighbour_csr
    src = np.repeat(np.arange(grid.n_nodes), np.diff(indptr))
    keep = mask[src] & mask[indices]
    local = np.full(grid.n_nodes, -1, dtype=np.int64)
    local[free] = np.arange(len(free))
    adj = _sparse.csr_matrix(
        (np.ones(int(keep.sum()), dtype=np.int8), (local[src[keep]], local[indices[keep]])),
        shape=(len(free), len(free)),
    )
    _, comp = _csgraph.connected_components(adj, directed=False)
    # renumber: component of the lowest free node first (connected_components already labels
    # in order of first appearance, which for increasing node ids is the same; made explicit)
    _, first = np.unique(comp, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    labels[free] = rank[comp]
    return labels


def manhattan_grow(
    free_mask: np.ndarray,
    shape: tuple[int, int] | Grid,
    start: int,
    k: int,
    torus: bool = False,
    strict: bool = False,
) -> np.ndarray | None:
    """Greedy least-Manhattan-increase growth from ``start`` (see the module docstring): ``k``
    node ids in the order they were added, or ``None`` when it fails (``start`` busy, ...).

    ``strict=False`` (``growth=bend``): the candidates are the **free** 4-neighbours of the
    partition, so the growth bends around busy nodes and fails only when no free neighbour is
    left (the start node's free component is smaller than ``k``).

    ``strict=True`` (``growth=strict``, Fig. 8 lines 10-18 as written): the candidates are
    **all** 4-neighbours of the partition, free or busy; the ones of least added distance are
    "selected" (l.11) and a free one of them is added (lowest id first); when every selected
    node is busy (l.18: it goes to ``nodes_checked``, which ends the loop of l.10) the growth
    from this start node fails."""
    grid = _grid(shape, torus)
    mask = _mask(free_mask, grid.n_nodes)
    k = _count(k)
    if not mask[start]:
        return None
    if strict and grid.n_nodes <= 1024:
        return _grow_strict(mask.tolist(), grid, int(start), k)
    indptr, indices = grid.neighbour_csr
    taken = np.zeros(grid.n_nodes, dtype=bool)
    frontier = np.zeros(grid.n_nodes, dtype=bool)
    cost = np.zeros(grid.n_nodes, dtype=np.int64)  # sum of distances to the partition's nodes
    # distance rows from the cached matrix (8 MB at 1,024 nodes) on small machines, else computed
    rows = grid.distance_matrix if grid.n_nodes <= 1024 else None
    every = np.arange(grid.n_nodes, dtype=np.int64)
    chosen = [int(start)]
    node = int(start)
    big = np.iinfo(np.int64).max
    while True:
        taken[node] = True
        frontier[node] = False
        nb = indices[indptr[node] : indptr[node + 1]]
        frontier[nb[~taken[nb]] if strict else nb[mask[nb] & ~taken[nb]]] = True
        if len(chosen) == k:
            return np.asarray(chosen, dtype=np.int64)
        cost += rows[node] if rows is not None else grid.distance(node, every)
        if not frontier.any():
            return None
        masked = np.where(frontier, cost, big)
        if strict:
            best = masked == masked.min()
            free_best = np.flatnonzero(best & mask)
            if len(free_best) == 0:
                return None  # the selected neighbours are all busy (Fig. 8 l.18)
            node = int(free_best[0])
        else:
            node = int(np.argmin(masked))  # argmin: lowest id on ties
        chosen.append(node)


MANHATTAN_GROWTHS = ("strict", "bend")

_LISTS: dict[int, tuple[Grid, list[list[int]], list[list[int]]]] = {}


def _grid_lists(grid: Grid) -> tuple[list[list[int]], list[list[int]]]:
    """``grid``'s neighbours and distance rows as Python lists (built once per grid): the strict
    growth takes a few nodes at a time, where list arithmetic beats numpy's per-call cost."""
    hit = _LISTS.get(id(grid))
    if hit is None or hit[0] is not grid:
        indptr, indices = grid.neighbour_csr
        nbrs = [indices[indptr[v] : indptr[v + 1]].tolist() for v in range(grid.n_nodes)]
        hit = _LISTS[id(grid)] = (grid, nbrs, grid.distance_matrix.tolist())
    return hit[1], hit[2]


def _grow_strict(mask: list[bool], grid: Grid, start: int, k: int) -> np.ndarray | None:
    """:func:`manhattan_grow` with ``strict=True`` in plain Python (the same rule: the
    neighbours of least added distance, free or busy; the lowest free one of them is added;
    all busy: ``None``). Costs are kept for the frontier only."""
    nbrs, dist = _grid_lists(grid)
    chosen = [start]
    taken = {start}
    frontier: dict[int, int] = {}  # node -> sum of distances to the partition
    node = start
    while True:
        row = dist[node]
        for f in frontier:
            frontier[f] += row[f]
        for v in nbrs[node]:
            if v not in taken and v not in frontier:
                dv = dist[v]
                frontier[v] = sum(dv[x] for x in chosen)
        if len(chosen) == k:
            return np.asarray(chosen, dtype=np.int64)
        if not frontier:
            return None
        best = min(frontier.values())
        free_best = [v for v, c in frontier.items() if c == best and mask[v]]
        if not free_best:
            return None  # the selected neighbours are all busy (Fig. 8 l.18)
        node = min(free_best)
        del frontier[node]
        taken.add(node)
        chosen.append(node)


MANHATTAN_STARTS = ("first", "all", "median")


def _pair_sum(grid: Grid, nodes: np.ndarray) -> int:
    d = grid.distance(nodes[:, None], nodes[None, :])
    return int(np.asarray(d).sum()) // 2


def manhattan_partition(
    free_mask: np.ndarray,
    shape: tuple[int, int] | Grid,
    k: int,
    torus: bool = False,
    starts: str = "first",
    growth: str = "bend",
) -> np.ndarray | None:
    """The Manhattan-median partition of ``k`` free nodes (Fig. 8): ``None`` when none is
    found. Node ids in the order they were added. ``shape`` is ``(rows, cols)`` (``torus`` for
    wrap-around) or a :class:`Grid` (which says itself whether it wraps; ``torus`` is then
    ignored).

    ``growth`` is how the partition grows from a start node (:func:`manhattan_grow`):
    ``strict`` is Fig. 8 lines 10-18 as written (it stops at a busy best neighbour, and the
    next start node is tried); ``bend`` grows around busy nodes (design note A22, the first
    build's reading, the function's default for callers that predate the option; the
    ``manhattan`` strategy's default is ``strict``). A start node can only succeed when its
    free 4-connected component holds ``k`` nodes, so only such nodes are tried.

    ``starts`` says where the greedy growth may begin (the first free node is the paper's
    adaptation, sec. 3.2 and Fig. 8 lines 4-9; the other two centre it as the MM algorithm of
    Bender et al. does, which evaluates candidate medians):

    - ``first`` (default): start nodes in node order; the first growth that succeeds (with
      ``bend`` that is the first node of a large enough component);
    - ``all``: every free node of every large enough component; the partition with the least
      pairwise Manhattan sum wins (ties: the lowest start node) -- MM's "centre at every
      processor" with the greedy growth, one growth per free node;
    - ``median``: per large enough component, the free node nearest (Manhattan, ties: lowest
      id) to the component's coordinate-wise median; the least sum over components wins
      (ties: the lowest component) -- one growth per component."""
    if starts not in MANHATTAN_STARTS:
        raise ValueError(f"starts must be one of {', '.join(MANHATTAN_STARTS)}, got {starts!r}")
    if growth not in MANHATTAN_GROWTHS:
        raise ValueError(f"growth must be one of {', '.join(MANHATTAN_GROWTHS)}, got {growth!r}")
    strict = growth == "strict"
    grid = _grid(shape, torus)
    k = _count(k)
    labels = free_components(free_mask, grid)
    sizes = np.bincount(labels[labels >= 0], minlength=1)
    big_enough = np.flatnonzero((labels >= 0) & (sizes[np.maximum(labels, 0)] >= k))
    if len(big_enough) == 0:
        return None
    if starts == "first":
        if not strict:
            return manhattan_grow(free_mask, grid, int(big_enough[0]), k)
        for start in big_enough.tolist():
            nodes = manhattan_grow(free_mask, grid, start, k, strict=True)
            if nodes is not None:
                return nodes
        return None
    if starts == "all":
        candidates = big_enough.tolist()
    else:
        candidates = []
        for comp in dict.fromkeys(labels[big_enough].tolist()):
            members = np.flatnonzero(labels == comp)
            rows, cols = members // grid.cols, members % grid.cols
            mr, mc = np.median(rows), np.median(cols)
            dist = np.abs(rows - mr) + np.abs(cols - mc)
            candidates.append(int(members[np.argmin(dist)]))  # argmin: lowest id on ties
    best, best_sum = None, None
    for start in candidates:
        nodes = manhattan_grow(free_mask, grid, start, k, strict=strict)
        if nodes is None:  # strict: a busy best neighbour (bend: cannot happen)
            continue
        total = _pair_sum(grid, nodes)
        if best_sum is None or total < best_sum:
            best, best_sum = nodes, total
    return best


def snake_first_free(
    free_mask: np.ndarray, shape: tuple[int, int] | Grid, start: int = 0, torus: bool = False
) -> int | None:
    """The first free node of ``Grid.snake_order(start)``, or ``None`` when none is free."""
    grid = _grid(shape, torus)
    snake = grid.snake_order(start)
    hits = np.flatnonzero(_mask(free_mask, grid.n_nodes)[snake])
    return int(snake[hits[0]]) if len(hits) else None


def leak_grow(
    free_mask: np.ndarray,
    shape: tuple[int, int] | Grid,
    first: int,
    k: int,
    jump: bool = False,
    snake_start: int = 0,
    torus: bool = False,
) -> np.ndarray:
    """Up to ``k`` free nodes grown from the free node ``first`` by breadth-first layers over
    free 4-neighbours (lowest ids first within a layer), in the order taken. With ``jump``
    (the non-contiguous leak) an empty layer is followed by the next free node along
    ``Grid.snake_order(snake_start)``, which grows in turn. Fewer than ``k`` nodes come back
    when no more are free (contiguous: in reach); the leak may start such a partial job."""
    grid = _grid(shape, torus)
    mask = _mask(free_mask, grid.n_nodes)
    k = _count(k)
    if not mask[first]:
        raise ValueError(f"the first node {first} is not free")
    indptr, indices = grid.neighbour_csr
    taken = np.zeros(grid.n_nodes, dtype=bool)
    chosen: list[int] = []
    layer = np.array([first], dtype=np.int64)
    snake = grid.snake_order(snake_start) if jump else None
    while len(chosen) < k:
        if len(layer) == 0:
            if snake is None:
                break
            rest = snake[mask[snake] & ~taken[snake]]
            if len(rest) == 0:
                break
            layer = rest[:1]
        layer = layer[: k - len(chosen)]
        taken[layer] = True
        chosen.extend(layer.tolist())
        nb = np.concatenate([indices[indptr[u] : indptr[u + 1]] for u in layer.tolist()])
        layer = np.unique(nb[mask[nb] & ~taken[nb]])
    return np.asarray(chosen, dtype=np.int64)
