"""What every job held and when: allocation segments, recorded compactly as they happen.

A job's first segment is the allocation it started with; a job that grows gets one more
segment per grant (held from the grant to the job's end). A job that gives a node back while
it runs (a deadline job's join, :mod:`hpcdispatch.sim.execution`) records an explicit end for
that node's row (:meth:`SegmentLog.release`); every other row ends with its job. The simulator appends every
segment to a :class:`SegmentLog` -- typed arrays, about 80 bytes per job on a whole trace
instead of about 550 for a dict of lists of ``Allocation`` objects -- and the result turns
it into :class:`AllocationRows`, the flat columns every table, metric and the validator use.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcdispatch.system.allocation import Allocation
from hpcdispatch.workload.job import Workload


@dataclass(frozen=True)
class AllocationRows:
    """Every allocation segment flattened: one row per (job, segment, node), the rows of one
    job consecutive, its segments in order, jobs in start order. ``job`` holds workload
    indices; a segment holds its nodes from ``t_from`` to the job's end ``t_to``."""

    job: np.ndarray  # int64 workload index
    segment: np.ndarray  # int64, 0 = the allocation the job started with
    node: np.ndarray  # int64
    units: np.ndarray  # int64
    t_from: np.ndarray  # float64
    t_to: np.ndarray  # float64
    #: :meth:`held`'s arrays, by workload and resource (a run's tables and metrics ask for each
    #: several times)
    _held: dict[tuple[int, int], tuple[Workload, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: per row, what a unit's request is divided by (None: 1): a per-core dispatcher's
    #: deadline jobs hold cores, one ``c``-th of their whole-node unit each
    #: (:attr:`~hpcdispatch.protocol.Tags.per_core`)
    unit_divisor: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.job)

    def held(self, workload: Workload, resource: int) -> np.ndarray:
        """Amount of ``resource`` every row holds: units x per-unit request (+ per-node
        request); read only (computed once per workload and resource)."""
        key = (id(workload), resource)
        cached = self._held.get(key)
        if cached is not None and cached[0] is workload:
            return cached[1]
        amount = self.units * workload.unit_requests[self.job, resource]
        if self.unit_divisor is not None:
            amount = amount // self.unit_divisor
        if workload.has_constraints:
            amount = amount + workload.per_node_requests[self.job, resource]
        amount.flags.writeable = False
        self._held[key] = (workload, amount)
        return amount


def raw_bytes(values: Any, dtype: type) -> memoryview:
    """``values`` as ``dtype``, as bytes for ``array.frombytes`` (no copy when they are)."""
    contiguous: Any = np.ascontiguousarray(values, dtype=dtype)
    return memoryview(contiguous).cast("B")


def buffer_view(values: array[Any], dtype: type) -> np.ndarray:
    """A read-only numpy view of an ``array.array``'s buffer."""
    view: np.ndarray = (
        np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)
    )
    view.flags.writeable = False
    return view


class SegmentLog:
    """Append-only record of allocation segments: per segment the job index, its number
    (0 = first), start time and row count; per row a node and the units held there.

    Segments are first kept as references (cheap to append, in the simulator's inner loop)
    and compacted into the typed arrays a batch at a time, so at most one batch of
    ``Allocation`` objects is kept alive by the log."""

    __slots__ = (
        "job",
        "number",
        "t_from",
        "lengths",
        "node",
        "units",
        "_pending",
        "_batch",
        "_grants",
        "rel_job",
        "rel_node",
        "rel_t",
    )

    def __init__(self, batch: int = 4096) -> None:
        self._batch = batch
        self.job = array("q")
        self.number = array("q")
        self.t_from = array("d")
        self.lengths = array("q")
        self.node = array("q")
        self.units = array("q")
        self._pending: list[tuple[int, int, float, Allocation]] = []
        self._grants: dict[int, int] = {}  # job index -> segments granted after its start
        # nodes given back before their job's end: (job, node, time), in time order
        self.rel_job = array("q")
        self.rel_node = array("q")
        self.rel_t = array("d")

    @classmethod
    def from_arrays(
        cls,
        job: np.ndarray,
        t_from: np.ndarray,
        lengths: np.ndarray,
        node: np.ndarray,
        units: np.ndarray,
    ) -> SegmentLog:
        """A log of first segments only, from columns (jobs in start order; ``node`` / ``units``:
        the rows of all of them, job after job)."""
        log = cls()
        # (no bytes object in between: a whole trace's rows are 8 MB a column)
        log.job.frombytes(raw_bytes(job, np.int64))
        log.number.frombytes(raw_bytes(np.zeros(len(job)), np.int64))
        log.t_from.frombytes(raw_bytes(t_from, np.float64))
        log.lengths.frombytes(raw_bytes(lengths, np.int64))
        log.node.frombytes(raw_bytes(node, np.int64))
        log.units.frombytes(raw_bytes(units, np.int64))
        return log

    def start(self, job_index: int, t_from: float, allocation: Allocation) -> None:
        """The allocation a job started with (its segment 0)."""
        self._add(job_index, 0, t_from, allocation)

    def grow(self, job_index: int, t_from: float, allocation: Allocation) -> None:
        """More nodes granted to a running job (its next segment)."""
        number = self._grants[job_index] = self._grants.get(job_index, 0) + 1
        self._add(job_index, number, t_from, allocation)

    def release(self, job_index: int, node: int, t: float) -> None:
        """Job ``job_index`` gave ``node`` back at ``t`` (its row holding it ends then). A node
        is given back at most once per time it was taken, so the ``i``-th release of a
        (job, node) ends the ``i``-th row of that pair."""
        self.rel_job.append(job_index)
        self.rel_node.append(node)
        self.rel_t.append(t)

    def _add(self, job_index: int, number: int, t_from: float, allocation: Allocation) -> None:
        pending = self._pending
        pending.append((job_index, number, t_from, allocation))
        if len(pending) >= self._batch:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self.job.extend([p[0] for p in pending])
        self.number.extend([p[1] for p in pending])
        self.t_from.extend([p[2] for p in pending])
        self.lengths.extend([len(p[3].nodes) for p in pending])
        self.node.frombytes(
            np.concatenate([p[3].nodes for p in pending]).astype(np.int64, copy=False).tobytes()
        )
        self.units.frombytes(
            np.concatenate([p[3].units for p in pending]).astype(np.int64, copy=False).tobytes()
        )
        pending.clear()

    def __len__(self) -> int:
        return len(self.job) + len(self._pending)

    def rows(self, end: np.ndarray) -> AllocationRows:
        """The segments as :class:`AllocationRows` (``end``: every job's end time)."""
        self._flush()
        # the log's own buffers, not copies (read only; while the rows are kept the log takes
        # no more segments: it is complete once a result asks for its rows)
        job = buffer_view(self.job, np.int64)
        number = buffer_view(self.number, np.int64)
        t_from = buffer_view(self.t_from, np.float64)
        lengths = buffer_view(self.lengths, np.int64)
        node = buffer_view(self.node, np.int64)
        units = buffer_view(self.units, np.int64)
        if (number > 0).any():
            # a grown job's later segments were recorded when granted: move them behind the
            # job's first segment (segments keep their order)
            first_at = np.zeros(int(job.max()) + 1, dtype=np.int64)
            firsts = np.flatnonzero(number == 0)
            first_at[job[firsts]] = firsts
            order = np.argsort(first_at[job], kind="stable")
            row_start = np.concatenate(([0], np.cumsum(lengths)))
            row_order = np.concatenate([np.arange(row_start[k], row_start[k + 1]) for k in order])
            job, number, t_from, lengths = job[order], number[order], t_from[order], lengths[order]
            node, units = node[row_order], units[row_order]
        row_job = np.repeat(job, lengths)
        row_from = np.repeat(t_from, lengths)
        t_to = np.asarray(end, dtype=np.float64)[row_job]
        if len(self.rel_job):
            t_to = t_to.copy()
            t_to[self._released_rows(row_job, node, row_from)] = np.array(
                self.rel_t, dtype=np.float64
            )[self._release_order()]
        return AllocationRows(
            job=row_job,
            # (no grown job: zeros, which take no memory until written, and they are only read)
            segment=np.repeat(number, lengths)
            if number.any()
            else np.zeros(len(row_job), np.int64),
            node=node,
            units=units,
            t_from=row_from,
            t_to=t_to,
        )

    def _release_order(self) -> np.ndarray:
        """Releases sorted by (job, node, time)."""
        return np.lexsort((np.array(self.rel_t), np.array(self.rel_node), np.array(self.rel_job)))

    def _released_rows(
        self, row_job: np.ndarray, node: np.ndarray, row_from: np.ndarray
    ) -> np.ndarray:
        """The row each release ends (in :meth:`_release_order`): the ``i``-th release of a
        (job, node) pair ends that pair's ``i``-th row by start time."""
        rj, rn = np.array(self.rel_job, dtype=np.int64), np.array(self.rel_node, dtype=np.int64)
        rel = self._release_order()
        rj, rn = rj[rel], rn[rel]
        rows = np.lexsort((row_from, node, row_job))
        width = int(max(node.max(initial=0), rn.max(initial=0))) + 1
        row_key = row_job[rows] * width + node[rows]
        rel_key = rj * width + rn

        def rank(keys: np.ndarray) -> np.ndarray:  # position within a run of equal (sorted) keys
            first = np.r_[True, keys[1:] != keys[:-1]]
            starts = np.flatnonzero(first)
            return np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))

        # (key, rank) of every row, searched for every release's (key, rank)
        combined_rows = row_key * (len(node) + 1) + rank(row_key)
        combined_rel = rel_key * (len(node) + 1) + rank(rel_key)
        at = np.searchsorted(combined_rows, combined_rel)
        if (at >= len(rows)).any() or (
            combined_rows[np.minimum(at, len(rows) - 1)] != combined_rel
        ).any():
            raise RuntimeError("a node was released that its job did not hold")
        return rows[at]

    def by_job(self) -> dict[int, list[tuple[float, Allocation]]]:
        """``job index -> [(from, Allocation)]`` in segment order, jobs in start order."""
        self._flush()
        out: dict[int, list[tuple[float, Allocation]]] = {}
        node = np.array(self.node, dtype=np.int64)
        units = np.array(self.units, dtype=np.int64)
        row = 0
        for idx, t, m in zip(self.job, self.t_from, self.lengths):
            alloc = Allocation.trusted(node[row : row + m], units[row : row + m])
            row += m
            out.setdefault(idx, []).append((t, alloc))
        return out
