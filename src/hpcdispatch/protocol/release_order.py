"""What running jobs will give back, flattened into numpy rows in planned-end order.

Planning policies (EASY's shadow time, reservations) ask again and again "how much is free
on every node once the first *k* running jobs have ended?". Walking the running jobs one by
one in Python costs microseconds per job and per call; with a thousand running jobs and a
call at every event that dominates a whole-trace simulation. :class:`ReleaseOrder` keeps the
holdings of all running jobs as four arrays in ascending planned end:

- ``ends[k]``: planned end of the k-th running job, ``jobs[k]`` its job index and
  ``lengths[k]`` its number of rows;
- ``totals[r][k]``: what the k-th job holds of resource ``r`` in all;
- ``nodes[i]`` / ``amounts[r][i]``: one row per (job, node) held, the rows of one job
  consecutive.

Then "free after the first k jobs" is ``free + bincount(nodes[:rows], amounts[r][:rows])``
and pooled totals of every prefix are one cumulative sum over ``totals``. The simulator reports every start,
end and growth (:meth:`add` / :meth:`remove`); the arrays are patched lazily, once per
:meth:`arrays` call, with one delete and one insert for all changes since the last call, so
the policies that never ask pay only for recording the changes. Jobs with the same planned
end keep no particular order among themselves.
"""

from __future__ import annotations

import numpy as np

Segments = list[tuple[np.ndarray, np.ndarray]]

#: more removals than this at once are applied with one mask instead of slice by slice
_MANY = 16


class ReleaseOrder:
    """The running jobs' holdings in planned-end order (per resource and node), kept up to date
    as jobs start and end."""

    def __init__(self, n_resources: int):
        self.n_resources = n_resources
        self._ends = np.zeros(0, dtype=np.float64)
        self._jobs = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._totals = [np.zeros(0, dtype=np.int64) for _ in range(n_resources)]
        self._nodes = np.zeros(0, dtype=np.int64)
        self._amounts = [np.zeros(0, dtype=np.int64) for _ in range(n_resources)]
        self._added: dict[int, tuple[float, Segments]] = {}  # not yet in the arrays
        self._removed: set[int] = set()  # in the arrays, to be dropped

    def add(self, job_index: int, planned_end: float, segments: Segments) -> None:
        """A job started (or grew: :meth:`remove` it first) holding ``segments``."""
        self._added[job_index] = (planned_end, segments)

    def remove(self, job_index: int) -> None:
        """A job ended (or is about to be re-added after growing)."""
        if self._added.pop(job_index, None) is None:
            self._removed.add(job_index)

    def __len__(self) -> int:
        return len(self._ends) - len(self._removed) + len(self._added)

    def arrays(
        self,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray, list[np.ndarray]]:
        """``(ends, lengths, totals, nodes, amounts)`` of the running jobs in ascending planned
        end: per job its planned end, its number of rows and (``totals[r]``) what it holds of
        resource ``r`` in all; per row a node and (``amounts[r]``) what the job holds there.
        Read-only by convention: do not modify them."""
        if self._removed:
            self._drop()
        if self._added:
            self._insert()
        return self._ends, self._lengths, self._totals, self._nodes, self._amounts

    # Between two calls typically one or two jobs ended and one or two started, so both
    # patches cut and splice slices (whole-array masks, ``np.isin`` and ``np.insert`` cost
    # tens of microseconds each on thousands of rows). Resources are kept as separate 1-D
    # columns: 2-D fancy indexing and cumulative sums are several times slower.
    def _drop(self) -> None:
        removed = self._removed
        if len(removed) > _MANY:  # many at once (e.g. the first call after a long pause)
            keep = ~np.isin(self._jobs, np.fromiter(removed, dtype=np.int64, count=len(removed)))
            rows = np.repeat(keep, self._lengths)
            self._ends, self._jobs, self._lengths = (
                self._ends[keep],
                self._jobs[keep],
                self._lengths[keep],
            )
            self._totals = [t[keep] for t in self._totals]
            self._nodes = self._nodes[rows]
            self._amounts = [a[rows] for a in self._amounts]
            removed.clear()
            return
        positions = sorted(
            (int(np.flatnonzero(self._jobs == idx)[0]) for idx in removed), reverse=True
        )
        removed.clear()
        for pos in positions:  # from the back, so earlier positions stay valid
            length = int(self._lengths[pos])
            row = int(self._lengths[:pos].sum())
            self._ends = _cut(self._ends, pos, pos + 1)
            self._jobs = _cut(self._jobs, pos, pos + 1)
            self._lengths = _cut(self._lengths, pos, pos + 1)
            self._totals = [_cut(t, pos, pos + 1) for t in self._totals]
            self._nodes = _cut(self._nodes, row, row + length)
            self._amounts = [_cut(a, row, row + length) for a in self._amounts]

    def _insert(self) -> None:
        items = sorted((end, idx, segs) for idx, (end, segs) in self._added.items())
        self._added.clear()
        positions = np.searchsorted(self._ends, [it[0] for it in items], side="right").tolist()
        for (end, idx, segs), pos in zip(reversed(items), reversed(positions)):  # from the back
            if len(segs) == 1:
                seg_nodes, seg_amounts = segs[0]
            else:
                seg_nodes = np.concatenate([n for n, _ in segs])
                seg_amounts = np.concatenate([a for _, a in segs])
            row = int(self._lengths[:pos].sum())
            self._ends = _splice(self._ends, pos, (end,))
            self._jobs = _splice(self._jobs, pos, (idx,))
            self._lengths = _splice(self._lengths, pos, (len(seg_nodes),))
            sums = seg_amounts.sum(axis=0).tolist()
            self._totals = [_splice(t, pos, (sums[r],)) for r, t in enumerate(self._totals)]
            self._nodes = _splice(self._nodes, row, seg_nodes)
            self._amounts = [
                _splice(a, row, seg_amounts[:, r]) for r, a in enumerate(self._amounts)
            ]


def _cut(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.concatenate((a[:lo], a[hi:]))


def _splice(a: np.ndarray, at: int, values) -> np.ndarray:
    return np.concatenate((a[:at], values, a[at:]))
