"""What every job held and when: allocation segments, recorded compactly as they happen.

A job's first segment is the allocation it started with; a job that grows gets one more
segment per grant (held from the grant to the job's end). The simulator appends every
segment to a :class:`SegmentLog` -- typed arrays, about 80 bytes per job on a whole trace
instead of about 550 for a dict of lists of ``Allocation`` objects -- and the result turns
it into :class:`AllocationRows`, the flat columns every table, metric and the validator use.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from hpcdispatch.sim.allocation import Allocation
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

    def __len__(self) -> int:
        return len(self.job)

    def held(self, workload: Workload, resource: int) -> np.ndarray:
        """Amount of ``resource`` every row holds: units x per-unit request (+ per-node request)."""
        amount = self.units * workload.unit_requests[self.job, resource]
        if workload.has_constraints:
            amount = amount + workload.per_node_requests[self.job, resource]
        return amount


class SegmentLog:
    """Append-only record of allocation segments: per segment the job index, its number
    (0 = first), start time and row count; per row a node and the units held there."""

    __slots__ = ("job", "number", "t_from", "lengths", "node", "units")

    def __init__(self) -> None:
        self.job = array("q")
        self.number = array("q")
        self.t_from = array("d")
        self.lengths = array("q")
        self.node = array("q")
        self.units = array("q")

    def add(self, job_index: int, number: int, t_from: float, allocation: Allocation) -> None:
        nodes = allocation.nodes
        self.job.append(job_index)
        self.number.append(number)
        self.t_from.append(t_from)
        self.lengths.append(len(nodes))
        self.node.frombytes(np.ascontiguousarray(nodes, dtype=np.int64).tobytes())
        self.units.frombytes(np.ascontiguousarray(allocation.units, dtype=np.int64).tobytes())

    def __len__(self) -> int:
        return len(self.job)

    def rows(self, end: np.ndarray) -> AllocationRows:
        """The segments as :class:`AllocationRows` (``end``: every job's end time)."""
        job = np.array(self.job, dtype=np.int64)
        number = np.array(self.number, dtype=np.int64)
        t_from = np.array(self.t_from, dtype=np.float64)
        lengths = np.array(self.lengths, dtype=np.int64)
        node = np.array(self.node, dtype=np.int64)
        units = np.array(self.units, dtype=np.int64)
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
        return AllocationRows(
            job=row_job,
            segment=np.repeat(number, lengths),
            node=node,
            units=units,
            t_from=np.repeat(t_from, lengths),
            t_to=np.asarray(end, dtype=np.float64)[row_job],
        )

    def by_job(self) -> dict[int, list[tuple[float, Allocation]]]:
        """``job index -> [(from, Allocation)]`` in segment order, jobs in start order."""
        out: dict[int, list[tuple[float, Allocation]]] = {}
        node = np.array(self.node, dtype=np.int64)
        units = np.array(self.units, dtype=np.int64)
        row = 0
        for idx, t, m in zip(self.job, self.t_from, self.lengths):
            alloc = Allocation.trusted(node[row:row + m], units[row:row + m])
            row += m
            out.setdefault(idx, []).append((t, alloc))
        return out
