"""Availability profile: free capacity per node over future time (a step function).

The one structure that reservations need (conservative backfilling, advance reservations,
deadline checks, Slurm-like backfill windows): it answers "earliest time at which ``k`` units
of this shape fit, on which nodes, for ``d`` seconds" and records reservations.

Segment ``k`` covers ``[times[k], times[k+1])`` (the last one extends forever) and holds the
free capacity of every node and resource. All segments live in one contiguous array
``(segments, nodes, resources)`` so that a reservation over many segments is one numpy
operation and the search is vectorised:

1. pooled filter: a segment is *feasible* when its pooled free totals cover the job's total
   request (a necessary condition); a start ``k`` is a *candidate* when every segment of its
   window ``[times[k], times[k] + d)`` is feasible (prefix sums of infeasible segments);
2. node-level check, candidates in time order: the element-wise minimum of the window's
   free matrices is handed to the allocator; the first window where the units fit wins.

Segment boundaries are inserted in place (the tail is shifted; most insertions happen near
the end of the horizon) and dropped from the front as time advances.

With ``node_level=False`` only the pooled totals are kept: exact when any free unit of
capacity can host any unit of any job (one resource, 1-unit requests, no per-node limit),
and then a search costs ``O(segments)`` instead of ``O(segments x nodes)``; ``earliest``
returns no allocation (the caller places the job when it starts).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from hpcdispatch.allocators.base import Allocator
from hpcdispatch.sim.allocation import Allocation


_ZERO_NODE = np.zeros(1, dtype=np.int64)
_ZERO_NODE.flags.writeable = False


class AvailabilityProfile:
    def __init__(
        self,
        now: float,
        free: np.ndarray,
        releases: Iterable[tuple[float, np.ndarray, np.ndarray]],
        node_level: bool = True,
    ):
        """``releases``: ``(time, nodes, amounts)`` of resources that become free at ``time``."""
        free = np.asarray(free)
        self.node_level = node_level
        if not node_level:  # keep one "node": the pooled totals
            free = free.sum(axis=0, keepdims=True)
            releases = [(t, _ZERO_NODE, amounts.sum(axis=0, keepdims=True)) for t, _, amounts in releases]
        n_nodes, n_res = free.shape
        rel = list(releases)
        times = sorted({max(float(t), now) for t, _, _ in rel} - {now})
        n_seg = 1 + len(times)
        cap = max(16, 2 * n_seg)
        self._times = np.full(cap, math.inf)
        self._free = np.zeros((cap, n_nodes, n_res), dtype=np.int64)
        self._totals = np.zeros((cap, n_res), dtype=np.int64)
        self._times[0] = now
        self._times[1:n_seg] = times
        deltas = np.zeros((n_seg, n_nodes, n_res), dtype=np.int64)
        deltas[0] = free
        if rel:
            pos = np.searchsorted(self._times[:n_seg], [max(float(t), now) for t, _, _ in rel], side="left")
            for k, (_, nodes, amounts) in zip(pos.tolist(), rel):
                deltas[k, nodes] += amounts
        np.cumsum(deltas, axis=0, out=self._free[:n_seg])
        self._totals[:n_seg] = self._free[:n_seg].sum(axis=1)
        self.lo = 0
        self.hi = n_seg

    # ---- views -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.hi - self.lo

    @property
    def times(self) -> np.ndarray:
        return self._times[self.lo : self.hi]

    @property
    def totals(self) -> np.ndarray:
        return self._totals[self.lo : self.hi]

    def free_at(self, t: float) -> np.ndarray:
        k = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
        return self._free[self.lo + k]

    # ---- maintenance ---------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Drop segments that ended before ``now``; the first segment then starts at ``now``."""
        k = int(np.searchsorted(self.times, now, side="right")) - 1
        if k > 0:
            self.lo += k
        if self._times[self.lo] < now:
            self._times[self.lo] = now

    def _grow(self) -> None:
        n = self.hi - self.lo
        cap = len(self._times)
        if self.lo > 0 and n + 2 < cap * 3 // 4:
            # compact to the front
            self._times[:n] = self._times[self.lo : self.hi]
            self._free[:n] = self._free[self.lo : self.hi]
            self._totals[:n] = self._totals[self.lo : self.hi]
            self._times[n:] = math.inf
        else:
            new_cap = 2 * cap
            times = np.full(new_cap, math.inf)
            free = np.zeros((new_cap,) + self._free.shape[1:], dtype=self._free.dtype)
            totals = np.zeros((new_cap, self._totals.shape[1]), dtype=self._totals.dtype)
            times[:n] = self._times[self.lo : self.hi]
            free[:n] = self._free[self.lo : self.hi]
            totals[:n] = self._totals[self.lo : self.hi]
            self._times, self._free, self._totals = times, free, totals
        self.lo, self.hi = 0, n

    def _split(self, t: float) -> int:
        """Make ``t`` a segment boundary; return the absolute index of the segment starting at ``t``."""
        pos = self.lo + int(np.searchsorted(self.times, t, side="left"))
        if pos < self.hi and self._times[pos] == t:
            return pos
        assert self.hi < len(self._times), "_apply() makes room before splitting"
        if pos < self.hi:
            self._times[pos + 1 : self.hi + 1] = self._times[pos : self.hi]
            self._free[pos + 1 : self.hi + 1] = self._free[pos : self.hi]
            self._totals[pos + 1 : self.hi + 1] = self._totals[pos : self.hi]
        self._times[pos] = t
        self._free[pos] = self._free[pos - 1]
        self._totals[pos] = self._totals[pos - 1]
        self.hi += 1
        return pos

    def _apply(self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray, sign: int) -> None:
        if not self.node_level:
            nodes, amounts = _ZERO_NODE, amounts.sum(axis=0, keepdims=True)
        start = max(start, float(self._times[self.lo]))
        if end <= start:
            return
        if self.hi + 2 > len(self._times):
            self._grow()  # both boundaries fit without moving the segments again
        k = self._split(start)
        j = self._split(end) if end != math.inf else self.hi
        signed = amounts if sign > 0 else -amounts
        self._free[k:j, nodes] -= signed
        self._totals[k:j] -= signed.sum(axis=0)

    def reserve(self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray) -> None:
        """Take ``amounts`` on ``nodes`` during ``[start, end)``."""
        self._apply(start, end, nodes, amounts, +1)

    def release(self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray) -> None:
        """Give ``amounts`` on ``nodes`` back during ``[start, end)`` (undo a reservation)."""
        self._apply(start, end, nodes, amounts, -1)

    # ---- search ------------------------------------------------------------------------------
    def candidate_starts(
        self,
        need: np.ndarray,
        duration: float,
        before: float = math.inf,
        credit: tuple[float, float, np.ndarray] | None = None,
        not_before: float = -math.inf,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Relative segment indices ``k`` whose window passes the pooled filter, and window ends ``j``.

        ``credit = (start, end, totals)`` counts ``totals`` as free during ``[start, end)``:
        a reservation the caller is about to take out and move.
        """
        times = self.times
        totals = self.totals
        if credit is not None:
            c_start, c_end, c_tot = credit
            inside = (times >= c_start) & (times < c_end)
            totals = totals + inside[:, None] * c_tot[None, :]
        infeasible = ~(totals >= need).all(axis=1)
        bad = np.concatenate(([0], np.cumsum(infeasible)))
        n = len(times)
        ks = np.arange(n)
        j = np.searchsorted(times, times + duration, side="left")
        np.maximum(j, ks + 1, out=j)
        ok = bad[j] == bad[ks]
        if before != math.inf:
            ok &= times < before
        if not_before != -math.inf:
            ok &= times >= not_before
        cand = np.flatnonzero(ok)
        return cand, j[cand]

    def earliest(
        self,
        units: int,
        unit_request: np.ndarray,
        duration: float,
        allocator: Allocator,
        max_per_node: int = 0,
        before: float = math.inf,
        candidates: tuple[np.ndarray, np.ndarray] | None = None,
        node_count: int = 0,
        per_node: np.ndarray | None = None,
        contiguous: bool = False,
        not_before: float = -math.inf,
    ) -> tuple[float, Allocation | None] | None:
        """Earliest segment start where the units fit for ``duration``, and on which nodes
        (``None`` for a pooled profile: any nodes will do).

        With ``before``, only starts strictly earlier than ``before`` are considered (schedule
        compression); ``None`` when there is none. ``candidates`` may pass the result of
        :meth:`candidate_starts` computed for the current state (it is not recomputed).
        ``node_count``, ``per_node`` and ``contiguous`` are Slurm-style constraints passed on to
        the allocator (a pooled profile cannot honour them: use ``node_level=True``).
        """
        constrained = bool(node_count or contiguous or per_node is not None)
        if constrained and not self.node_level:
            raise ValueError("a pooled availability profile cannot place jobs with node constraints")
        if candidates is None:
            need = np.asarray(unit_request, dtype=np.int64) * units
            candidates = self.candidate_starts(need, duration, before, not_before=not_before)
        cand, ends = candidates
        if not self.node_level:
            return (float(self._times[self.lo + int(cand[0])]), None) if len(cand) else None
        lo = self.lo
        for k, j in zip(cand.tolist(), ends.tolist()):
            window = self._free[lo + k] if j == k + 1 else self._free[lo + k : lo + j].min(axis=0)
            if constrained:
                alloc = allocator.allocate(units, unit_request, window, max_per_node, node_count, per_node, contiguous)
            else:
                alloc = allocator.allocate(units, unit_request, window, max_per_node)
            if alloc is not None:
                return float(self._times[lo + k]), alloc
        return None
