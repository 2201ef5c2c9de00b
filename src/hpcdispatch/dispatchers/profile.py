"""Availability profile: free capacity per node over future time (a step function).

The one structure that reservations need (conservative backfilling, advance reservations,
deadline checks, Slurm-like backfill windows): it answers "earliest time at which ``k`` units
of this shape fit, on which nodes, for ``d`` seconds" and records reservations.

Segment ``k`` covers ``[times[k], times[k+1])`` (the last one extends forever) and holds the
free matrix ``frees[k]`` (n_nodes x n_resources) and its pooled totals ``totals[k]``. The
pooled totals are a necessary condition checked first: a window that fails them at one
segment fails for every start that covers that segment, so the search skips past it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

from hpcdispatch.allocators.base import Allocator
from hpcdispatch.sim.allocation import Allocation


class AvailabilityProfile:
    def __init__(self, now: float, free: np.ndarray, releases: Iterable[tuple[float, np.ndarray, np.ndarray]]):
        """``releases``: ``(time, nodes, amounts)`` of resources that become free at ``time``."""
        self.times: list[float] = [now]
        base = np.array(free, dtype=np.int64, order="F")
        self.frees: list[np.ndarray] = [base]
        self.totals: list[list[int]] = [base.sum(axis=0).tolist()]
        by_time: dict[float, list[tuple[np.ndarray, np.ndarray]]] = {}
        for t, nodes, amounts in releases:
            by_time.setdefault(max(float(t), now), []).append((nodes, amounts))
        current = base
        for t in sorted(by_time):
            if t == now:
                for nodes, amounts in by_time[t]:
                    current[nodes] += amounts
                self.totals[0] = current.sum(axis=0).tolist()
                continue
            current = current.copy(order="F")
            for nodes, amounts in by_time[t]:
                current[nodes] += amounts
            self.times.append(t)
            self.frees.append(current)
            self.totals.append(current.sum(axis=0).tolist())

    def __len__(self) -> int:
        return len(self.times)

    def advance(self, now: float) -> None:
        """Drop segments that ended before ``now``; the first segment starts at ``now``."""
        k = bisect.bisect_right(self.times, now) - 1
        if k > 0:
            del self.times[:k], self.frees[:k], self.totals[:k]
        self.times[0] = max(self.times[0], now)

    def free_at(self, t: float) -> np.ndarray:
        return self.frees[max(bisect.bisect_right(self.times, t) - 1, 0)]

    def _window_min(self, k: int, j: int) -> np.ndarray:
        if j == k + 1:
            return self.frees[k]
        m = np.minimum(self.frees[k], self.frees[k + 1])
        for q in range(k + 2, j):
            np.minimum(m, self.frees[q], out=m)
        return m

    def earliest(
        self,
        units: int,
        unit_request: np.ndarray,
        duration: float,
        allocator: Allocator,
        max_per_node: int = 0,
        not_before: float | None = None,
    ) -> tuple[float, Allocation] | None:
        """Earliest start (a segment boundary) where the units fit for ``duration``, and where."""
        need = [int(a) * units for a in unit_request]
        times, totals = self.times, self.totals
        n_seg = len(times)
        k = 0 if not_before is None else max(bisect.bisect_right(times, not_before) - 1, 0)
        while k < n_seg:
            start = times[k] if not_before is None else max(times[k], not_before)
            end = start + duration
            j = k
            failed = -1
            while j < n_seg and (j == k or times[j] < end):
                tot = totals[j]
                for r, amount in enumerate(need):
                    if amount and tot[r] < amount:
                        failed = j
                        break
                if failed >= 0:
                    break
                j += 1
            if failed >= 0:
                k = failed + 1
                continue
            window = self._window_min(k, j)
            alloc = allocator.allocate(units, unit_request, window, max_per_node)
            if alloc is not None:
                return start, alloc
            k += 1
        return None

    def _split(self, t: float) -> int:
        """Make ``t`` a segment boundary; return the index of the segment starting at ``t``."""
        pos = bisect.bisect_left(self.times, t)
        if pos < len(self.times) and self.times[pos] == t:
            return pos
        self.times.insert(pos, t)
        self.frees.insert(pos, self.frees[pos - 1].copy(order="F"))
        self.totals.insert(pos, list(self.totals[pos - 1]))
        return pos

    def reserve(self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray) -> None:
        """Take ``amounts`` on ``nodes`` during ``[start, end)``."""
        k = self._split(start)
        j = self._split(end) if end != float("inf") else len(self.times)
        delta = amounts.sum(axis=0).tolist()
        for q in range(k, j):
            self.frees[q][nodes] -= amounts
            tot = self.totals[q]
            for r, a in enumerate(delta):
                tot[r] -= a
