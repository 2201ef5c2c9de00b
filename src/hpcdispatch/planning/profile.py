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

Design notes, decisions and measurements: docs/PERFORMANCE.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from hpcdispatch.allocators.base import Allocator, BestFit, FirstFit
from hpcdispatch.system.allocation import Allocation

#: use the compiled search and compression when numba is importable (tests set it False)
COMPILED = True
_KERNELS: object | None = None


def _kernels():
    """The compiled kernels module, or ``None`` when numba cannot be imported."""
    global _KERNELS
    if _KERNELS is None:
        try:
            from hpcdispatch.compiled import kernels
        except ImportError:  # numba missing or broken: the Python code does the work
            _KERNELS = False
        else:
            _KERNELS = kernels
            from hpcdispatch.compiled.disk_cache import load_compiled, load_numba_registries

            signatures = kernels.entry_signatures()
            for name in (
                "profile_earliest",
                "profile_compress",
            ):  # from disk without numba's registries
                function, signature = getattr(kernels, name), signatures[name]
                if load_compiled(function, signature) or not hasattr(function, "compile"):
                    continue  # loaded from disk; or NUMBA_DISABLE_JIT=1 (plain Python functions)
                # not on disk (a first run, a changed numba, no writable cache): compiled now, a
                # few seconds, and kept on disk when it can be; not inside the first search
                load_numba_registries()
                function.compile(signature)
    return _KERNELS or None


def load_compiled_kernels() -> None:
    """Load the compiled search and compression now, so that a run's first search does not
    pay for it inside a timed decision (once per process: numba's import and the kernels from
    the disk cache, about 0.2 s; a few seconds when they must be compiled). Dispatchers that
    search profiles call it in their ``setup``."""
    if COMPILED:
        _kernels()


def _compiled_allocator(allocator: Allocator) -> tuple[int, np.ndarray] | None:
    """``(kind, weights)`` of the compiled allocator that places exactly like ``allocator``."""
    if type(allocator) is FirstFit:
        return 0, _NO_WEIGHTS
    if type(allocator) is BestFit:
        return 1, np.ascontiguousarray(allocator._weights, dtype=np.float64)
    return None


_NO_WEIGHTS = np.zeros(1, dtype=np.float64)


_ZERO_NODE = np.zeros(1, dtype=np.int64)
_ZERO_NODE.flags.writeable = False


class AvailabilityProfile:
    """Free capacity per node over future time: what is free now plus the planned releases;
    reservation-based policies find the earliest fit in it and book into it."""

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
            releases = [
                (t, _ZERO_NODE, amounts.sum(axis=0, keepdims=True)) for t, _, amounts in releases
            ]
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
            pos = np.searchsorted(
                self._times[:n_seg], [max(float(t), now) for t, _, _ in rel], side="left"
            )
            for k, (_, nodes, amounts) in zip(pos.tolist(), rel):
                deltas[k, nodes] += amounts
        np.cumsum(deltas, axis=0, out=self._free[:n_seg])
        self._totals[:n_seg] = self._free[:n_seg].sum(axis=1)
        self.lo = 0
        self.hi = n_seg
        self._window: np.ndarray | None = None  # scratch of the compiled search
        self._rows: np.ndarray | None = None
        self._suffix: np.ndarray | None = None
        # intervals in which capacity was given back, in order (see :meth:`freed`)
        self._log_a = np.zeros(64)
        self._log_b = np.zeros(64)
        self._log_n = 0
        self._log_base = 0  # the version of _log_a[0] (entries before it were trimmed)

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

    def min_free(self, start: float, end: float) -> np.ndarray:
        """The least free amounts (per node; pooled: one row) at any time in ``[start, end)``."""
        times = self.times
        k0 = max(int(np.searchsorted(times, start, side="right")) - 1, 0)
        k1 = max(int(np.searchsorted(times, end, side="left")), k0 + 1)
        return self._free[self.lo + k0 : self.lo + k1].min(axis=0)

    # ---- maintenance ---------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Drop segments that ended before ``now``; the first segment then starts at ``now``."""
        k = int(np.searchsorted(self.times, now, side="right")) - 1
        if k > 0:
            self.lo += k
        if self._times[self.lo] < now:
            self._times[self.lo] = now

    def _ensure_room(self, extra: int) -> None:
        """Room for ``extra`` more segments after ``hi``: the live segments move to the front
        of the arrays, which double in size unless that leaves a quarter of them free."""
        n = self.hi - self.lo
        if self.hi + extra <= len(self._times):
            return
        cap = len(self._times)
        if n + extra + 16 > cap * 3 // 4:
            cap = max(2 * cap, n + extra + 16)
        times = np.full(cap, math.inf)
        free = np.zeros((cap,) + self._free.shape[1:], dtype=self._free.dtype)
        totals = np.zeros((cap, self._totals.shape[1]), dtype=self._totals.dtype)
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

    def add_boundary(self, t: float) -> None:
        """Make ``t`` a segment boundary (the capacity at every time stays as it is), so that
        searches consider a start at ``t`` even when no reservation begins or ends there."""
        if not self._times[self.lo] < t < math.inf:
            return
        if self.hi + 1 > len(self._times):
            self._ensure_room(1)
        self._split(t)

    def _apply(
        self, start: float, end: float, nodes: np.ndarray, amounts: np.ndarray, sign: int
    ) -> None:
        if not self.node_level:
            nodes, amounts = _ZERO_NODE, amounts.sum(axis=0, keepdims=True)
        start = max(start, float(self._times[self.lo]))
        if end <= start:
            return
        if self.hi + 2 > len(self._times):
            self._ensure_room(2)  # both boundaries fit without moving the segments again
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
        self._log_room(1)
        self._log_a[self._log_n] = start
        self._log_b[self._log_n] = end
        self._log_n += 1

    # ---- the log of freed intervals -----------------------------------------------------------
    @property
    def freed(self) -> int:
        """How many intervals of given-back capacity were logged so far (a version number):
        a request that fitted nowhere before ``t`` at version ``v`` can now fit at a start
        before ``t`` only in a window that overlaps an interval logged since ``v`` (taking
        capacity never helps). :meth:`compress` uses it to search only there."""
        return self._log_base + self._log_n

    def adopt_log(self, other: AvailabilityProfile) -> None:
        """Continue ``other``'s log (a profile rebuilt with the same free capacity)."""
        self._log_a, self._log_b, self._log_n = (
            other._log_a.copy(),
            other._log_b.copy(),
            other._log_n,
        )
        self._log_base = other._log_base

    def trim_log(self, oldest: int) -> None:
        """Forget the log's intervals before version ``oldest`` (no reservation was checked
        earlier than that), when that drops at least half of them: the log otherwise grows by
        every moved reservation for the whole run (RICC: over 8 million intervals after 50,000
        jobs, most of the plan's memory)."""
        drop = oldest - self._log_base
        if drop <= 0 or 2 * drop < self._log_n:
            return
        keep = self._log_n - drop
        self._log_a[:keep] = self._log_a[drop : self._log_n]
        self._log_b[:keep] = self._log_b[drop : self._log_n]
        self._log_n, self._log_base = keep, oldest
        if len(self._log_a) > max(64, 4 * keep):  # give the memory back
            self._log_a, self._log_b = (
                self._log_a[: 2 * keep + 64].copy(),
                self._log_b[: 2 * keep + 64].copy(),
            )

    def _log_room(self, extra: int) -> None:
        if self._log_n + extra > len(self._log_a):
            cap = max(2 * len(self._log_a), self._log_n + extra)
            self._log_a = np.concatenate((self._log_a[: self._log_n], np.zeros(cap - self._log_n)))
            self._log_b = np.concatenate((self._log_b[: self._log_n], np.zeros(cap - self._log_n)))

    # ---- compiled paths ------------------------------------------------------------------------
    def _compiled(self, allocator: Allocator):
        """``(kernels, kind, weights)`` when the compiled search applies, else ``None``."""
        if not COMPILED:
            return None
        kernels = _kernels()
        if kernels is None:
            return None
        spec = _compiled_allocator(allocator) if self.node_level else (0, _NO_WEIGHTS)
        if spec is None:
            return None
        if self._window is None:
            n_nodes, n_res = self._free.shape[1:]
            self._window = np.zeros((n_nodes, n_res), dtype=np.int64)
            self._rows = np.zeros((2, n_nodes), dtype=np.int64)
        if self.node_level and (self._suffix is None or self._suffix.shape != self._free.shape):
            # window minima's scratch, as large as the segments (re-made when they grow)
            self._suffix = np.empty(self._free.shape, dtype=np.int64)
        elif self._suffix is None:  # a pooled search takes no window minima
            self._suffix = np.empty((1, 1, 1), dtype=np.int64)
        return kernels, spec[0], spec[1]

    def compress(
        self,
        q_start: np.ndarray,
        q_end: np.ndarray,
        q_req: np.ndarray,
        q_units: np.ndarray,
        q_mpn: np.ndarray,
        q_checked: np.ndarray,
        allocator: Allocator,
        pins: list[tuple[Allocation, np.ndarray]] | None = None,
    ) -> list[tuple[int, Allocation]] | None:
        """Move reservations as early as they can go, in order, never later (compiled).

        One entry per reservation held in this profile, none of them with node constraints:
        ``q_start`` / ``q_end`` (float64), per-unit request rows ``q_req``, ``q_units``, max
        units per node ``q_mpn``, and ``q_checked``: :attr:`freed` when the reservation was
        last known to be at its earliest possible start; in a node-level profile ``pins``
        gives each one's ``(allocation, amounts per node)`` (a pooled one holds units x
        request of the pooled capacity). Each in turn is taken out, the earliest start
        strictly before its current one is searched (only where capacity was given back since
        its ``checked``), and it moves there (same duration) if one exists, else it is put
        back. ``q_start``, ``q_end`` and ``q_checked`` are updated in place; returns the new
        allocations of the moved reservations of a node-level profile as ``[(position,
        allocation)]`` (empty for a pooled one), or ``None`` altogether when the compiled path
        does not apply (no numba, another allocator, ``COMPILED = False``): the caller then
        does the same in Python with :meth:`candidate_starts`, :meth:`release`,
        :meth:`earliest` and :meth:`reserve`.
        """
        if self._compiled(allocator) is None:
            return None
        n = len(q_start)
        if n == 0:
            return []
        self._ensure_room(2 * n + 2)
        self._log_room(n)
        kernels, kind, weights = self._compiled(allocator)  # scratch sized for the arrays now
        i64 = np.int64
        q_req = np.ascontiguousarray(q_req, dtype=i64)
        q_units = np.ascontiguousarray(q_units, dtype=i64)
        q_mpn = np.ascontiguousarray(q_mpn, dtype=i64)
        if self.node_level:
            assert pins is not None and len(pins) == n
            sizes = np.fromiter((len(alloc.nodes) for alloc, _ in pins), dtype=i64, count=n)
            q_nodes = np.concatenate([alloc.nodes for alloc, _ in pins]).astype(i64, copy=False)
            q_amts = np.concatenate([amounts for _, amounts in pins]).astype(i64, copy=False)
        else:  # one "node" holding the pooled totals, as :meth:`_apply` does
            sizes = np.ones(n, dtype=i64)
            q_nodes = np.zeros(n, dtype=i64)
            q_amts = q_req * q_units[:, None]
        q_off = np.zeros(n + 1, dtype=i64)
        np.cumsum(sizes, out=q_off[1:])
        moved = np.zeros(n, dtype=np.int8)
        out_off = np.zeros(n, dtype=i64)
        out_len = np.zeros(n, dtype=i64)
        n_nodes = self._free.shape[1]
        # a moved reservation writes one row per node it uses: at most min(units, nodes)
        out_rows = np.zeros(
            (2, int(q_units.clip(max=n_nodes).sum()) if self.node_level else 1), dtype=i64
        )
        q_checked -= self._log_base  # the kernel indexes the log arrays
        hi, log_n = kernels.profile_compress(
            self._times,
            self._free,
            self._totals,
            self.lo,
            self.hi,
            self.node_level,
            kind,
            weights,
            q_req,
            q_units,
            q_mpn,
            q_start,
            q_end,
            q_off,
            q_nodes,
            q_amts,
            q_checked,
            self._log_a,
            self._log_b,
            self._log_n,
            moved,
            out_off,
            out_len,
            out_rows,
            self._window,
            self._rows,
            self._suffix,
        )
        q_checked += self._log_base
        self.hi, self._log_n = int(hi), int(log_n)
        if not self.node_level:
            return []
        out = []
        for q in np.flatnonzero(moved).tolist():
            a, b = int(out_off[q]), int(out_off[q] + out_len[q])
            out.append((q, Allocation.trusted(out_rows[0, a:b].copy(), out_rows[1, a:b].copy())))
        return out

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
        With ``not_before``, only starts at or after it are considered; unless ``candidates``
        are passed, ``not_before`` itself is one (it becomes a segment boundary, see
        :meth:`add_boundary`).
        """
        constrained = bool(node_count or contiguous or per_node is not None)
        if constrained and not self.node_level:
            raise ValueError(
                "a pooled availability profile cannot place jobs with node constraints"
            )
        if candidates is None and not constrained and not_before == -math.inf:
            compiled = self._compiled(allocator)
            if compiled is not None:
                kernels, kind, weights = compiled
                # a writable copy of the request: the type the compression kernel passes, so
                # that numba compiles profile_earliest once (a read-only row of the
                # simulator's requests made a second specialisation, ~2 s on a first run)
                k, count = kernels.profile_earliest(
                    self._times,
                    self._free,
                    self._totals,
                    self.lo,
                    self.hi,
                    np.array(unit_request, dtype=np.int64),
                    int(units),
                    int(max_per_node),
                    float(duration),
                    float(before),
                    -math.inf,
                    self.node_level,
                    kind,
                    weights,
                    self._window,
                    self._rows,
                    self._suffix,
                    np.zeros((0, 2, self._totals.shape[1]), dtype=np.int64),
                )
                if k < 0:
                    return None
                if not self.node_level:
                    return float(self._times[k]), None
                return float(self._times[k]), Allocation.trusted(
                    self._rows[0, :count].copy(), self._rows[1, :count].copy()
                )
        if candidates is None:
            if not_before != -math.inf:
                self.add_boundary(not_before)  # the earliest start is a boundary or not_before
            need = np.asarray(unit_request, dtype=np.int64) * units
            candidates = self.candidate_starts(need, duration, before, not_before=not_before)
        cand, ends = candidates
        if not self.node_level:
            return (float(self._times[self.lo + int(cand[0])]), None) if len(cand) else None
        lo = self.lo
        for k, j in zip(cand.tolist(), ends.tolist()):
            window = self._free[lo + k] if j == k + 1 else self._free[lo + k : lo + j].min(axis=0)
            if constrained:
                alloc = allocator.allocate(
                    units, unit_request, window, max_per_node, node_count, per_node, contiguous
                )
            else:
                alloc = allocator.allocate(units, unit_request, window, max_per_node)
            if alloc is not None:
                return float(self._times[lo + k]), alloc
        return None
