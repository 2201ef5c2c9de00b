"""Allocators choose the nodes for a job's units given a free-capacity matrix.

An allocator is a pure function of its inputs: it never modifies ``free`` and it returns
``None`` when the units do not fit. Dispatchers decide *which* jobs start; allocators decide
*where*; any dispatcher works with any allocator.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from hpcdispatch.system.allocation import (
    Allocation,
    contiguous_windows,
    node_units,
    per_node_array,
    units_fit_per_node,
)
from hpcdispatch.system.model import System


class Allocator(ABC):
    """Where a job's units go: a pure function of the free-capacity matrix (see the module)."""

    name: ClassVar[str] = "allocator"
    #: True when the allocation of ``u + 1`` units always contains the allocation of ``u``
    #: units on the same free matrix (nodes are filled in an order that does not depend on
    #: the unit count). Dispatchers use it to reason about failures by unit count.
    prefix_monotone: ClassVar[bool] = False

    def setup(self, system: System) -> None:
        self.system = system

    @abstractmethod
    def allocate(
        self,
        units: int,
        unit_request: np.ndarray,
        free: np.ndarray,
        max_per_node: int = 0,
        node_count: int = 0,
        per_node: np.ndarray | None = None,
        contiguous: bool = False,
    ) -> Allocation | None:
        """Nodes for ``units`` units of ``unit_request`` on ``free``, or ``None``.

        Slurm-style constraints (all optional): exactly ``node_count`` distinct nodes, each
        with at least one unit; ``per_node`` amounts set aside on every used node; ``contiguous``
        node indices. An allocator must honour them (or return ``None`` when they cannot be
        met)."""

    # ---- constrained placement shared by the built-in allocators ------------------------
    def _node_order(self, free: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Preference order of the candidate nodes (first fit: index order)."""
        return candidates

    def _window_key(
        self, free: np.ndarray, fit: np.ndarray, starts: np.ndarray, ends: np.ndarray, units: int
    ) -> np.ndarray:
        """Sort key of feasible contiguous windows (smallest first; ties: lowest start)."""
        return starts

    def _constrained(
        self,
        units: int,
        unit_request: np.ndarray,
        free: np.ndarray,
        max_per_node: int,
        node_count: int,
        per_node: np.ndarray | None,
        contiguous: bool,
    ) -> Allocation | None:
        fit = node_units(free, unit_request, max_per_node, per_node)
        if contiguous:
            starts, ends = contiguous_windows(fit, units, node_count)
            if len(starts) == 0:
                return None
            key = self._window_key(free, fit, starts, ends, units)
            k = int(np.lexsort((starts, key))[0])
            chosen = np.arange(starts[k], ends[k], dtype=np.int64)
            return _spread(chosen, fit[chosen], units)
        candidates = np.flatnonzero(fit > 0)
        if node_count == 0:
            if int(fit[candidates].sum()) < units:
                return None
            return fill_in_order(self._node_order(free, candidates), fit, units)
        if len(candidates) < node_count:
            return None
        order = self._node_order(free, candidates)
        chosen = order[:node_count]
        if int(fit[chosen].sum()) < units:
            # the preferred nodes cannot hold the units: take the roomiest ones (ties: preference order)
            by_room = order[np.argsort(-fit[order], kind="stable")]
            chosen = by_room[:node_count]
            if int(fit[chosen].sum()) < units:
                return None
        chosen = np.sort(chosen)
        return _spread(chosen, fit[chosen], units)


def _spread(nodes: np.ndarray, room: np.ndarray, units: int) -> Allocation:
    """One unit on every node of ``nodes`` (ascending), the rest filled in node order up to ``room``."""
    counts = np.ones(len(nodes), dtype=np.int64)
    extra = np.minimum(room - 1, np.iinfo(np.int64).max // 4)
    need = units - len(nodes)
    if need > 0:
        cs = np.cumsum(extra)
        k = int(np.searchsorted(cs, need))
        counts[:k] += extra[:k]
        counts[k] += need - (int(cs[k - 1]) if k else 0)
    return Allocation.trusted(nodes.astype(np.int64), counts)


def allocate_job(
    allocator: Allocator, job, unit_request: np.ndarray, free: np.ndarray
) -> Allocation | None:
    """``allocator.allocate`` with all of ``job``'s constraints (``unit_request``: its row)."""
    if job.node_count or job.contiguous or job.per_node_request:
        return allocator.allocate(
            job.units,
            unit_request,
            free,
            job.max_units_per_node,
            job.node_count,
            per_node_array(job.per_node_request),
            job.contiguous,
        )
    return allocator.allocate(job.units, unit_request, free, job.max_units_per_node)


def fill_in_order(order: np.ndarray, fits: np.ndarray, units: int) -> Allocation | None:
    """Take nodes in ``order``, each with as many units as fit, until ``units`` are placed."""
    per = fits[order]
    cs = np.cumsum(per)
    if len(cs) == 0 or cs[-1] < units:
        return None
    k = int(np.searchsorted(cs, units))
    chosen = order[: k + 1]
    counts = per[: k + 1].copy()
    counts[-1] -= int(cs[k]) - units
    keep = counts > 0
    chosen, counts = chosen[keep], counts[keep]
    order = np.argsort(chosen)
    return Allocation.trusted(chosen[order], counts[order])


class FirstFit(Allocator):
    """Nodes in their linear order; each takes as many of the job's units as fit.

    With a node count, the first ``node_count`` usable nodes are taken (the roomiest ones when
    those cannot hold the units); with contiguity, the lowest feasible window of consecutive
    nodes. Every used node holds at least one unit, the rest fill the nodes in order."""

    name = "first-fit"
    prefix_monotone = True

    def allocate(
        self,
        units,
        unit_request,
        free,
        max_per_node=0,
        node_count=0,
        per_node=None,
        contiguous=False,
    ):
        if node_count or contiguous or per_node is not None:
            return self._constrained(
                units, unit_request, free, max_per_node, node_count, per_node, contiguous
            )
        if units == 1:  # the common case: the first node where one unit fits
            ok = None
            for r, amount in enumerate(
                unit_request.tolist() if isinstance(unit_request, np.ndarray) else unit_request
            ):
                if amount > 0:
                    m = free[:, r] >= amount
                    ok = m if ok is None else (ok & m)
            if ok is None:
                return Allocation.trusted(_ZERO, _ONE)
            k = int(ok.argmax())
            if not ok[k]:
                return None
            return Allocation.trusted(np.array([k], dtype=np.int64), _ONE)
        # several units: walk the nodes that have room, in order, in Python -- for the few nodes
        # a job needs this beats cumsum + searchsorted + gather over the whole array
        # (every node with room holds at least one unit, so the first ``units`` of them suffice
        # whenever there are that many)
        fits = units_fit_per_node(free, unit_request, max_per_node)
        cand = np.flatnonzero(fits)[:units]
        room = fits[cand].tolist()
        need = units
        for k, f in enumerate(room):
            if f >= need:
                room[k] = need
                return Allocation.trusted(cand[: k + 1], np.array(room[: k + 1], dtype=np.int64))
            need -= f
        return None


class BestFit(Allocator):
    """Each unit goes to the node whose remaining capacity after placement is smallest.

    With a node count, the ``node_count`` fullest usable nodes are taken (the roomiest ones
    when those cannot hold the units); with contiguity, the feasible window of consecutive
    nodes that leaves the least room unused (then the shortest, then the lowest).

    Remaining capacity is measured as ``sum_r free[n, r] / maxcap[r]`` (each resource type
    normalised by the largest per-node capacity of that type, so MiB of memory do not drown
    cores). Placing a unit only lowers its node's remaining capacity, so unit-by-unit best fit
    fills the fullest fitting node first: nodes are taken in ascending order of that score
    (ties: lower node index), each with as many units as fit. The score is computed exactly
    (:func:`capacity_weights`), so equal scores are ties: with ``maxcap = (6, 2)`` the free
    vectors (4, 1) and (1, 2) both score 7/6, which in floating point came out as
    1.1666666666666665 and 1.1666666666666667 and put a job on the higher node.
    """

    name = "best-fit"
    prefix_monotone = True

    def setup(self, system: System) -> None:
        super().setup(system)
        self._weights = capacity_weights(system.max_node_capacity)

    def _node_order(self, free, candidates):
        score = free[candidates] @ self._weights
        return candidates[np.argsort(score, kind="stable")]

    def _window_key(self, free, fit, starts, ends, units):
        # least room left over (in units), then fewest nodes
        cs = np.concatenate(([0], np.cumsum(fit)))
        return (cs[ends] - cs[starts] - units) * (len(fit) + 1) + (ends - starts)

    def allocate(
        self,
        units,
        unit_request,
        free,
        max_per_node=0,
        node_count=0,
        per_node=None,
        contiguous=False,
    ):
        if node_count or contiguous or per_node is not None:
            return self._constrained(
                units, unit_request, free, max_per_node, node_count, per_node, contiguous
            )
        fits = units_fit_per_node(free, unit_request, max_per_node)
        candidates = np.flatnonzero(fits)
        if int(fits[candidates].sum()) < units:
            return None
        score = free[candidates] @ self._weights
        order = candidates[np.argsort(score, kind="stable")]
        return fill_in_order(order, fits, units)


def capacity_weights(maxcap: np.ndarray) -> np.ndarray:
    """Weights ``w`` with ``free @ w`` proportional to ``sum_r free[r] / maxcap[r]`` (0 for a
    resource no node has), exact: ``w[r] = L / maxcap[r]`` with ``L`` the least common multiple
    of the capacities, integers held in float64, whose sums stay exact below 2**53 (the
    compiled engine scores in float64 with the same weights). Capacities whose common
    multiple is too large for that fall back to ``1 / maxcap[r]`` (then scores that should tie
    may differ in their last bit)."""
    caps = [int(v) for v in np.asarray(maxcap).tolist()]
    positive = [c for c in caps if c > 0]
    scale = math.lcm(*positive) if positive else 1
    if positive and scale * max(positive) * len(caps) < 2**53:
        return np.array([scale // c if c > 0 else 0 for c in caps], dtype=np.float64)
    return np.array([1.0 / c if c > 0 else 0.0 for c in caps], dtype=np.float64)


_ONE = np.ones(1, dtype=np.int64)
_ONE.flags.writeable = False
_ZERO = np.zeros(1, dtype=np.int64)
_ZERO.flags.writeable = False
