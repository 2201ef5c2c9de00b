"""EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001), node-level.

1. Start queued jobs in FIFO order while they fit.
2. The first job that does not fit (the *head*) gets a reservation: the *shadow time* is the
   earliest expected end of running jobs (including the ones just started) after which the
   head fits, node by node; ``free_at_shadow`` is the free capacity then.
3. Every later job, in queue order, may start now (backfill) if it fits now and either ends
   (by its planned duration) no later than the shadow time, or leaves enough of
   ``free_at_shadow`` for the head to still fit. Jobs that would delay the head are refused.

Expected ends of running jobs are ``max(planned_end, now + 1)``: a job that outlived its
prediction (possible without wall-time kills or with predictors) is expected to need at
least one more second, and the reservation is recomputed at every call.

The implementation takes exactly the decisions of that single pass (a reference
implementation in the tests checks it on random workloads) but avoids most of its work (how: the docs page below).

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass

import numpy as np

from hpcdispatch.allocators.base import Allocator
from hpcdispatch.dispatchers.queue_index import ShapeIndex
from hpcdispatch.protocol import (
    Decision,
    Dispatcher,
    DispatchView,
    KernelSpec,
    Scratch,
    Start,
    Tags,
    register,
)
from hpcdispatch.system.allocation import held_amounts, job_fits
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job


def shadow_time(view: DispatchView, scratch: Scratch, head: Job) -> tuple[float, np.ndarray]:
    """Earliest expected time the head fits (node-level) and the free capacity at that time.

    Releases -- running jobs at ``max(planned end, now + 1)`` and the jobs just started at
    ``now + planned duration`` -- are applied group by group (equal expected ends form a
    group); the shadow time is the end of the first group after which the head fits. Fitting
    only gets easier as capacity is released, so the search works on the flattened release
    rows (:meth:`DispatchView.release_arrays`): pooled totals at every group boundary by
    cumulative sums over jobs, then a galloping search over the boundaries where the pooled
    totals suffice, each probe adding only the rows released since the last failing one.
    """
    req = view.requests[head.index]
    free = scratch.free
    ends, lengths, totals, nodes, amounts = view.release_arrays()
    ends = np.maximum(ends, view.now + 1.0)
    if scratch.starts:
        ends, lengths, totals, nodes, amounts = _with_started(
            view, scratch.starts, ends, lengths, totals, nodes, amounts
        )
    k = len(ends)
    if k == 0:
        return math.inf, np.array(free, order="F")
    last = np.flatnonzero(ends[1:] != ends[:-1])  # the last job of every group but the final one
    last = np.append(last, k - 1)
    ok = None
    for r, a in enumerate(head.unit_request):
        if a:
            short = a * head.units - scratch.total[r]
            if short > 0:
                enough = np.cumsum(totals[r])[last] >= short
                ok = enough if ok is None else (ok & enough)
    lo = 0 if ok is None else int(np.argmax(ok)) if ok.any() else -1
    if lo >= 0:
        cut = np.cumsum(lengths)[last]  # rows released after each group
        found = _first_fitting(free, nodes, amounts, cut, lo, head, req)
        if found is not None:
            b, future = found
            return float(ends[last[b]]), future
    return math.inf, _released(free, nodes, amounts, len(nodes))


def _with_started(view: DispatchView, started: list[Start], ends, lengths, totals, nodes, amounts):
    """The release arrays with the jobs just started merged in at ``now + planned duration``."""
    now = view.now
    items = sorted((now + view.planned_duration(s.job), s.job.index, s) for s in started)
    new_ends = np.asarray([it[0] for it in items], dtype=np.float64)
    new_nodes = [it[2].allocation.nodes for it in items]
    held = np.concatenate(
        [
            held_amounts(
                it[2].allocation, view.requests[it[2].job.index], it[2].job.per_node_request
            )
            for it in items
        ]
    )
    new_lengths = np.asarray([len(n) for n in new_nodes], dtype=np.int64)
    pos = np.searchsorted(ends, new_ends, side="right")
    row_start = np.concatenate(([0], np.cumsum(lengths)))
    row_pos = np.repeat(row_start[pos], new_lengths)
    job_of_row = np.repeat(np.arange(len(items)), new_lengths)
    new_totals = [
        np.bincount(job_of_row, weights=held[:, r], minlength=len(items)).astype(np.int64)
        for r in range(held.shape[1])
    ]
    return (
        np.insert(ends, pos, new_ends),
        np.insert(lengths, pos, new_lengths),
        [np.insert(t, pos, new_totals[r]) for r, t in enumerate(totals)],
        np.insert(nodes, row_pos, np.concatenate(new_nodes)),
        [np.insert(a, row_pos, held[:, r]) for r, a in enumerate(amounts)],
    )


def _released(
    free: np.ndarray, nodes: np.ndarray, amounts: list[np.ndarray], rows: int
) -> np.ndarray:
    """``free`` plus the first ``rows`` holdings (a new column-major matrix)."""
    return _add_rows(np.array(free, order="F"), nodes, amounts, 0, rows)


def _add_rows(
    future: np.ndarray, nodes: np.ndarray, amounts: list[np.ndarray], lo: int, hi: int
) -> np.ndarray:
    """Add holdings rows ``lo:hi`` to ``future`` in place and return it."""
    if hi > lo:
        n_nodes = future.shape[0]
        part = nodes[lo:hi]
        for r, column in enumerate(amounts):
            piece = column[lo:hi]
            if piece.any():
                future[:, r] += np.bincount(part, weights=piece, minlength=n_nodes).astype(np.int64)
    return future


def _first_fitting(free, nodes, amounts, cut: np.ndarray, lo: int, head: Job, req: np.ndarray):
    """The first boundary ``b >= lo`` (index into ``cut``) after which ``head`` fits, with the
    free capacity then; ``None`` when it fits at none.

    Galloping, then bisection; every probe starts from the free capacity at the last boundary
    known not to fit and adds only the rows released since, so the work is proportional to
    the rows up to the answer, not to the number of probes times the rows."""
    n = len(cut)
    bad, bad_rows, bad_future = lo - 1, 0, free  # ``bad_future``: free after ``bad_rows`` rows

    def probe(b: int) -> np.ndarray:
        return _add_rows(np.array(bad_future, order="F"), nodes, amounts, bad_rows, int(cut[b]))

    step = 1
    b = lo
    good = good_future = None
    while True:
        future = probe(b)
        if job_fits(future, head, req):
            good, good_future = b, future
            break
        bad, bad_rows, bad_future = b, int(cut[b]), future
        if b == n - 1:
            return None
        b = min(lo + 2 * step - 1, n - 1)
        step *= 2
    while good - bad > 1:
        mid = (good + bad) // 2
        future = probe(mid)
        if job_fits(future, head, req):
            good, good_future = mid, future
        else:
            bad, bad_rows, bad_future = mid, int(cut[mid]), future
    return good, good_future


@dataclass(frozen=True)
class Reservation:
    """The head's reservation as a backfill pass left it: shadow time, free capacity at the
    shadow time (less what long backfilled jobs took from it) and what is spare then.

    It stays exact at later calls while the head is the same, every job that ended since was
    planned to end before the shadow time, no prediction was revised (a revised end may
    move a release past the shadow time) and the shadow time is more than a second away:

    - a job planned to end before the shadow time is among the releases the shadow time
      counts, so its ending early moves its capacity from "released by then" to "free now"
      and leaves the capacity at the shadow time unchanged; at every earlier instant the
      capacity is at most what it was at some earlier instant of the old computation, where
      the head did not fit, so the head cannot fit earlier either;
    - jobs started since end by the shadow time (short) or were charged to the reservation
      (long), and new submissions release nothing;
    - as ``now`` grows, overdue jobs' expected ends ``max(planned end, now + 1)`` move later
      but stay before a shadow time more than a second away.

    With the dispatch time charged, the jobs a call starts begin a little after the call's
    time, so they end later than the pass assumed: the reservation is then dropped too.

    The tests check every reservation a pass uses, computed or kept, against a brute-force
    shadow time."""

    head: int  # job index
    shadow: float
    at_shadow: np.ndarray
    spare: tuple[int, ...]

    def still_holds(self, view: DispatchView) -> bool:
        head = view.queue.head()
        return (
            head is not None
            and head.index == self.head
            and self.shadow > view.now + 1.0
            and not view.revised_running
            and all(rj.planned_end < self.shadow for rj in view.ended_running)
        )


def _base(job: Job) -> tuple:
    """Memo key of a job's request shape without its unit count."""
    if job.node_count or job.contiguous or job.per_node_request:
        return (
            job.unit_request,
            job.max_units_per_node,
            job.node_count,
            job.per_node_request,
            job.contiguous,
        )
    return (job.unit_request, job.max_units_per_node)


# outcomes of looking at one candidate
TOOK, DEAD, LONG_BLOCKED, LONG_REFUSED = 0, 1, 2, 3


class _BackfillPass:
    """The state of one backfill pass: shadow time, capacity left at it, failure memos."""

    __slots__ = (
        "view",
        "scratch",
        "head",
        "prefix",
        "shadow",
        "at_shadow",
        "spare",
        "now",
        "no_fit",
        "hurts",
        "backfilled",
        "kept",
        "computed",
    )

    def __init__(self, view: DispatchView, scratch: Scratch, head: Job, allocator: Allocator):
        self.view = view
        self.scratch = scratch
        self.head = head
        self.prefix = allocator.prefix_monotone
        self.shadow = math.nan
        self.at_shadow: np.ndarray | None = None
        self.spare: list[int] = []
        self.now = view.now
        self.no_fit: dict[
            tuple, int
        ] = {}  # (req, maxpn) -> fewest units that did not fit now (whole call)
        self.hurts: dict[
            tuple, int
        ] = {}  # (req, maxpn) -> fewest units refused for the head (until a start)
        self.backfilled = 0
        self.kept: Reservation | None = None  # the previous calls' reservation, when it still holds
        self.computed = False  # whether this pass computed its shadow time (not kept)

    def reserve(self) -> np.ndarray:
        """The head's shadow time and the capacity then: kept from earlier calls or computed;
        returns the capacity (``at_shadow``)."""
        kept = self.kept
        if kept is not None and kept.head == self.head.index and not self.scratch.starts:
            self.shadow, self.at_shadow, self.spare = kept.shadow, kept.at_shadow, list(kept.spare)
            return kept.at_shadow
        self.shadow, at_shadow = shadow_time(self.view, self.scratch, self.head)
        self.at_shadow = at_shadow
        need = [a * self.head.units for a in self.head.unit_request]
        self.spare = [t - k for t, k in zip(at_shadow.sum(axis=0).tolist(), need)]
        self.computed = True
        return at_shadow

    def reservation(self) -> Reservation | None:
        if self.at_shadow is None:
            return None
        return Reservation(self.head.index, self.shadow, self.at_shadow, tuple(self.spare))

    def _known(self, memo: dict[tuple, int], base: tuple, units: int) -> bool:
        bound = memo.get(base)
        # unit-count monotonicity holds for plain shapes only (len(base) == 2); shapes with node
        # constraints are remembered for their exact unit count
        return bound is not None and (
            units >= bound if self.prefix and len(base) == 2 else units == bound
        )

    def _remember(self, memo: dict[tuple, int], base: tuple, units: int) -> None:
        bound = memo.get(base)
        memo[base] = (
            units if bound is None or not (self.prefix and len(base) == 2) else min(units, bound)
        )

    def _long_blocked(self, base: tuple, units: int) -> bool:
        req = base[0]
        if any(a and s < a * units for s, a in zip(self.spare, req)):
            return True  # it would eat into what the head needs at the shadow time
        return self._known(self.hurts, base, units)

    def start_now(self, now: float) -> None:
        """Re-use this pass at a later time (same state): only the short/long split moves."""
        self.now = now

    def is_short(self, job: Job) -> bool:
        # ``now + planned <= shadow`` exactly as the shadow time itself is computed (a just
        # started job ends at ``now + planned``): ``planned <= shadow - now`` can differ by
        # one rounding and call a job long that ends exactly at the shadow time
        return self.now + self.view.planned_duration(job) <= self.shadow

    def evaluate(self, job: Job) -> int:
        """Look at one candidate as the single pass would; start it if it may go."""
        scratch = self.scratch
        units = job.units
        base = _base(job)
        if not scratch.pooled_ok(job) or self._known(self.no_fit, base, units):
            return DEAD
        if (
            self.at_shadow is not None
            and not self.is_short(job)
            and self._long_blocked(base, units)
        ):
            return LONG_BLOCKED
        alloc = scratch.allocate(job)
        if alloc is None:
            self._remember(self.no_fit, base, units)
            return DEAD
        view = self.view
        at_shadow = self.at_shadow
        if at_shadow is None:
            at_shadow = self.reserve()
            if not self.is_short(job) and self._long_blocked(base, units):
                return LONG_BLOCKED
        if self.is_short(job):
            scratch.take(job, alloc)
        else:
            head = self.head
            amounts = held_amounts(alloc, view.requests[job.index], job.per_node_request)
            trial = at_shadow.copy(order="F")
            trial[alloc.nodes] -= amounts
            if not job_fits(trial, head, view.requests[head.index]):
                self._remember(self.hurts, base, units)
                return LONG_REFUSED
            scratch.take(job, alloc)
            self.at_shadow = trial
            self.spare = [s - a for s, a in zip(self.spare, amounts.sum(axis=0).tolist())]
        self.backfilled += 1
        self.hurts.clear()
        return TOOK


@register
class EASY(Dispatcher):
    """EASY backfilling: FIFO plus backfilling that never delays the first waiting job."""

    name = "easy"
    tags = Tags(memoryless=True)  # the kept reservation is an exact cache

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    def kernel(self) -> KernelSpec | None:
        if type(self) is not EASY:  # a subclass may decide differently
            return None
        return KernelSpec(
            "easy",
            info=("shadow", "head", "backfilled"),
            info_jobs=("head",),
            info_ints=("backfilled",),
        )

    def _setup(self, system: System) -> None:
        self._index = ShapeIndex()
        self._started: list[Job] = []
        self._idle: _BackfillPass | None = None  # the last pass, when it started nothing
        self._reservation: Reservation | None = None  # the head's, kept while it holds
        self._called_at = -math.inf  # time of the last call (its starts begin then, unless delayed)
        self.incremental_calls = 0
        self.shadow_times = {"computed": 0, "kept": 0}

    def _dispatch(self, view: DispatchView) -> Decision:
        self._index.sync(view, self._started)
        idle, self._idle = self._idle, None
        kept = self._reservation
        if kept is not None and (not kept.still_holds(view) or self._starts_delayed(view)):
            kept = self._reservation = None
        self._called_at = view.now
        info: dict[str, object] = {}
        if (
            idle is not None
            and not view.ended_jobs
            and not view.revised_running
            and idle.head is view.queue.head()
            and not self._overdue(view)
        ):
            # same state as the last call: only the new jobs can change anything
            self.incremental_calls += 1
            idle.view = view
            idle.start_now(view.now)
            idle.kept = kept
            scratch = idle.scratch
            had_shadow = idle.at_shadow is not None
            for job in view.new_jobs:
                if idle.evaluate(job) == TOOK and scratch.nothing_free():
                    break
            starts = scratch.starts
            if not starts:
                self._idle = idle
            self._started = [s.job for s in starts]
            if idle.at_shadow is not None:
                info.update(shadow=idle.shadow, head=idle.head.id, backfilled=len(starts))
                if not had_shadow:
                    self._count(idle)
                self._reservation = idle.reservation()
            return Decision(list(starts), info=info)

        scratch = Scratch(view, self._allocator)
        head: Job | None = None
        for job in view.queue:
            if scratch.try_start(job) is None:
                head = job
                break
        if head is not None and not scratch.nothing_free():
            bf = _BackfillPass(view, scratch, head, self._allocator)
            bf.kept = kept
            self._backfill(bf)
            if bf.at_shadow is not None:
                info.update(shadow=bf.shadow, head=head.id, backfilled=bf.backfilled)
                self._count(bf)
                self._reservation = bf.reservation()
            if not scratch.starts:
                self._idle = bf
        elif head is not None and not scratch.starts:
            self._idle = _BackfillPass(
                view, scratch, head, self._allocator
            )  # nothing free: all fail
        self._started = [s.job for s in scratch.starts]
        return Decision(scratch.starts, info=info)

    def _starts_delayed(self, view: DispatchView) -> bool:
        """Whether a job the last call started began after that call's time (the simulator
        charged the dispatch time): the pass planned it to end earlier than it will."""
        for job in self._started:
            rj = view.running.get(job.index)
            if rj is not None and rj.start != self._called_at:
                return True
        return False

    def _count(self, bf: _BackfillPass) -> None:
        self.shadow_times["computed" if bf.computed else "kept"] += 1

    @staticmethod
    def _overdue(view: DispatchView) -> bool:
        """A running job past its planned end makes the shadow time depend on ``now``."""
        order = view.running_end_order()
        return bool(order) and order[0][0] <= view.now + 1.0

    def _backfill(self, bf: _BackfillPass) -> None:
        """The single pass, visiting request-shape groups merged by job index.

        A group is dropped as soon as its shape cannot fit now. When a group's *long* jobs
        cannot go, its pointer jumps to its next short job; a later start may make long jobs
        possible again, so every such group is rewound to just after that start -- exactly
        the jobs a single pass in queue order would still look at.
        """
        scratch = bf.scratch
        started = {s.job.index for s in scratch.starts}
        started.add(bf.head.index)
        total = scratch.total
        groups: list[dict[int, Job]] = []
        keys: list[tuple] = []
        # per group, once looked at: its jobs in queue order, their indices (list, array)
        members: list[tuple[list[Job], list[int], np.ndarray] | None] = []
        heap: list[tuple[int, int, int, int]] = []  # (job index, group, position, version)
        for key, group in self._index.fitting(total[0]):
            req, units = key[0], key[2]
            if any(a and t < a * units for t, a in zip(total, req)):
                continue
            n = len(groups)
            groups.append(group)
            keys.append(key)
            members.append(None)
            for pos, job in enumerate(group.values()):
                if job.index not in started:
                    heap.append((job.index, n, pos, 0))
                    break
        if not heap:
            return
        heapq.heapify(heap)

        def group_of(g: int) -> tuple[list[Job], list[int], np.ndarray]:
            got = members[g]
            if got is None:
                got = members[g] = self._index.members(keys[g])
            return got

        def jobs_of(g: int) -> list[Job]:
            got = members[g]
            if got is None:
                got = members[g] = self._index.members(keys[g])
            return got[0]

        version = [0] * len(groups)
        long_dead: set[int] = set()  # groups whose long jobs cannot go until the next start
        dropped: set[int] = set()
        short_pos: dict[int, np.ndarray] = {}  # group -> positions of its short jobs
        planned_all = bf.view.planned_durations

        def skip_to_next_short(g: int, pos: int, ver: int) -> None:
            jobs = jobs_of(g)
            shorts = short_pos.get(g)
            if shorts is None:
                shorts = short_pos[g] = np.flatnonzero(
                    bf.now + planned_all[group_of(g)[2]] <= bf.shadow
                )
            k = int(np.searchsorted(shorts, pos + 1))
            while k < len(shorts) and jobs[shorts[k]].index in started:
                k += 1
            if k < len(shorts):
                nxt = int(shorts[k])
                heapq.heappush(heap, (jobs[nxt].index, g, nxt, ver))

        while heap:
            idx, n, pos, ver = heapq.heappop(heap)
            if ver != version[n] or n in dropped:
                continue  # stale entry
            if (
                pos == 0 and members[n] is None
            ):  # a group's first job: no need to list the group yet
                job = next(iter(groups[n].values()))
            else:
                job = jobs_of(n)[pos]
            if n in long_dead and bf.at_shadow is not None and not bf.is_short(job):
                skip_to_next_short(n, pos, ver)
                continue
            outcome = bf.evaluate(job)
            if outcome == DEAD:
                dropped.add(n)  # every job of this group would fail the same way
                continue
            if outcome in (LONG_BLOCKED, LONG_REFUSED):
                long_dead.add(n)  # only this group's short jobs may go now: skip to the next one
                skip_to_next_short(n, pos, ver)
                continue
            started.add(idx)
            if scratch.nothing_free():
                break
            for g in long_dead:  # their skipped long jobs after this start are candidates again
                if g in dropped or g == n:
                    continue
                jobs = jobs_of(g)
                p = bisect.bisect_right(group_of(g)[1], idx)
                while p < len(jobs) and jobs[p].index in started:
                    p += 1
                version[g] += 1
                if p < len(jobs):
                    heapq.heappush(heap, (jobs[p].index, g, p, version[g]))
            long_dead.clear()
            jobs = jobs_of(n)
            nxt = pos + 1
            while nxt < len(jobs) and jobs[nxt].index in started:
                nxt += 1
            if nxt < len(jobs):
                heapq.heappush(heap, (jobs[nxt].index, n, nxt, version[n]))
