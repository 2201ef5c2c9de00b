"""Allocations (which nodes, how many units on each) and unit-fit arithmetic."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np


class Allocation:
    """``units[k]`` units of a job on node ``nodes[k]``; nodes unique and sorted ascending."""

    __slots__ = ("nodes", "units")

    def __init__(self, nodes: Sequence[int] | np.ndarray, units: Sequence[int] | np.ndarray):
        nodes_arr = np.asarray(nodes, dtype=np.int64).ravel()
        units_arr = np.asarray(units, dtype=np.int64).ravel()
        if nodes_arr.shape != units_arr.shape:
            raise ValueError(f"allocation: {len(nodes_arr)} nodes but {len(units_arr)} unit counts")
        if len(nodes_arr) > 1 and not (np.diff(nodes_arr) > 0).all():
            order = np.argsort(nodes_arr, kind="stable")
            nodes_arr, units_arr = nodes_arr[order], units_arr[order]
            if not (np.diff(nodes_arr) > 0).all():
                raise ValueError(f"allocation: node listed twice in {nodes_arr.tolist()}")
        nodes_arr.flags.writeable = False
        units_arr.flags.writeable = False
        self.nodes = nodes_arr
        self.units = units_arr

    @classmethod
    def trusted(cls, nodes: np.ndarray, units: np.ndarray) -> Allocation:
        """Fast constructor for allocators: ``nodes`` already unique and ascending, int64.

        The simulator re-checks every allocation it applies, so a wrong one is still caught.
        """
        obj = object.__new__(cls)
        obj.nodes = nodes
        obj.units = units
        return obj

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]]) -> Allocation:
        pairs = list(pairs)
        return cls([p[0] for p in pairs], [p[1] for p in pairs])

    @property
    def total_units(self) -> int:
        return int(self.units.sum())

    def amounts(self, unit_request: np.ndarray) -> np.ndarray:
        """``(len(nodes), n_resources)`` amounts taken on each node."""
        return self.units[:, None] * np.asarray(unit_request, dtype=np.int64)[None, :]

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self.nodes.tolist(), self.units.tolist()))

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self.pairs())

    def __len__(self) -> int:
        return len(self.nodes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Allocation) and self.pairs() == other.pairs()

    def __hash__(self) -> int:
        return hash(tuple(self.pairs()))

    def __repr__(self) -> str:
        return f"Allocation({self.pairs()})"

    def describe(self) -> str:
        """``"3:2 7:1"``: node index, colon, units."""
        return " ".join(f"{n}:{u}" for n, u in self.pairs())


def units_fit_per_node(
    free: np.ndarray, unit_request: Sequence[int] | np.ndarray, max_per_node: int = 0
) -> np.ndarray:
    """How many units of size ``unit_request`` fit on every node of ``free`` (n_nodes, n_res)."""
    out = None
    for r, amount in enumerate(unit_request):
        if amount > 0:
            f = free[:, r] // amount
            out = f if out is None else np.minimum(out, f, out=out)
    if out is None:  # a unit that needs nothing: unbounded, capped by max_per_node
        out = np.full(
            free.shape[0],
            max_per_node if max_per_node > 0 else np.iinfo(np.int64).max // 4,
            dtype=np.int64,
        )
    elif max_per_node > 0:
        np.minimum(out, max_per_node, out=out)
    return out


def fits(
    free: np.ndarray, unit_request: Sequence[int] | np.ndarray, units: int, max_per_node: int = 0
) -> bool:
    """Can ``units`` units be placed somewhere on ``free``?"""
    return int(units_fit_per_node(free, unit_request, max_per_node).sum()) >= units


def pooled_fits(free_total: Sequence[int], unit_request: Sequence[int], units: int) -> bool:
    """Necessary condition: the pooled free capacity covers the job's total request."""
    for tot, amount in zip(free_total, unit_request):
        if amount and tot < amount * units:
            return False
    return True


# ---------------------------------------------------------------------------------------
# Slurm-style constraints: node count, per-node extras, contiguity
# ---------------------------------------------------------------------------------------


def per_node_array(per_node: Sequence[int] | np.ndarray | None) -> np.ndarray | None:
    """``per_node`` as an int64 row, or ``None`` when it asks for nothing."""
    if per_node is None or len(per_node) == 0:
        return None
    arr = np.asarray(per_node, dtype=np.int64)
    return arr if arr.any() else None


def node_units(
    free: np.ndarray,
    unit_request: Sequence[int] | np.ndarray,
    max_per_node: int = 0,
    per_node: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """Units of a job that fit on every node of ``free`` once the node's per-node extras are
    set aside (0 on nodes that cannot hold the extras)."""
    pn = per_node_array(per_node)
    if pn is None:
        return units_fit_per_node(free, unit_request, max_per_node)
    rest = free - pn[None, :]
    ok = (rest >= 0).all(axis=1)
    fit = units_fit_per_node(np.maximum(rest, 0), unit_request, max_per_node)
    fit[~ok] = 0
    return fit


def runs_of(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of ``True`` in a boolean vector: ``(starts, ends)`` with ``ends`` exclusive."""
    m = np.asarray(mask, dtype=np.int8)
    d = np.diff(np.concatenate(([0], m, [0])))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def contiguous_windows(
    fit: np.ndarray, units: int, node_count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Feasible contiguous windows ``[start, end)`` of usable nodes (``fit >= 1``) holding
    ``units`` units: exactly ``node_count`` nodes when it is given, else for every start the
    shortest window (every node of a window holds at least one unit)."""
    n = len(fit)
    cs = np.concatenate(([0], np.cumsum(fit)))
    bad = np.concatenate(([0], np.cumsum(fit <= 0)))
    if node_count:
        if node_count > n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        a = np.arange(n - node_count + 1)
        b = a + node_count
        ok = (bad[b] == bad[a]) & (cs[b] - cs[a] >= units)
        return a[ok], b[ok]
    a = np.arange(n)
    b = np.searchsorted(cs, cs[a] + units, side="left")  # smallest b with cs[b] - cs[a] >= units
    inside = b <= n
    a, b = a[inside], b[inside]
    ok = (bad[b] == bad[a]) & (b > a)
    return a[ok], b[ok]


def request_fits(
    free: np.ndarray,
    unit_request: Sequence[int] | np.ndarray,
    units: int,
    max_per_node: int = 0,
    node_count: int = 0,
    per_node: Sequence[int] | np.ndarray | None = None,
    contiguous: bool = False,
) -> bool:
    """Can the job be placed on ``free`` with all its constraints (exact test)?"""
    fit = node_units(free, unit_request, max_per_node, per_node)
    if contiguous:
        return len(contiguous_windows(fit, units, node_count)[0]) > 0
    if node_count:
        usable = fit[fit > 0]
        if len(usable) < node_count:
            return False
        top = np.partition(usable, len(usable) - node_count)[len(usable) - node_count :]
        return int(top.sum()) >= units
    return int(fit.sum()) >= units


def job_fits(free: np.ndarray, job, unit_request: np.ndarray) -> bool:
    """Exact fit test of ``job`` (any constraints) on ``free``; ``unit_request`` is its row."""
    if job.node_count or job.contiguous or job.per_node_request:
        return request_fits(
            free,
            unit_request,
            job.units,
            job.max_units_per_node,
            job.node_count,
            job.per_node_request,
            job.contiguous,
        )
    return int(units_fit_per_node(free, unit_request, job.max_units_per_node).sum()) >= job.units


def held_amounts(
    allocation: Allocation,
    unit_request: np.ndarray,
    per_node: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """``(len(nodes), n_resources)`` amounts an allocation holds: units x request + per-node extras."""
    amounts = allocation.units[:, None] * np.asarray(unit_request, dtype=np.int64)[None, :]
    pn = per_node_array(per_node)
    if pn is not None:
        amounts = amounts + pn[None, :]
    return amounts


def fragments(nodes: np.ndarray) -> int:
    """Number of blocks of consecutive node indices in a sorted node list."""
    if len(nodes) == 0:
        return 0
    return 1 + int((np.diff(nodes) > 1).sum())
