"""Straightforward reference implementations the optimized dispatchers are checked against.

``ReferenceEASY`` is textbook EASY written as plainly as possible: one pass over the queue,
node-level shadow time by releasing every running job in order of expected end. The
production :class:`hpcdispatch.dispatchers.easy.EASY` must take exactly the same decisions.

It is independent of the code it checks: it reads the view (free capacity, queue, running
jobs, planned durations) and answers with ``Start``\\ s, and everything in between -- its copy
of the free capacity (plain lists), the fit test, first fit and best fit -- is its own plain
Python, written from the definitions rather than from the production code:

- a job's units fit on a node ``min_r free[r] // unit_request[r]`` times (over the resources
  it asks for), at most ``max_units_per_node`` (when > 0); it fits when the nodes hold its
  units in total;
- first fit: nodes in index order, each taking as many of the units as fit;
- best fit (``BestFit``'s docstring): nodes in ascending order of remaining capacity
  ``sum_r free[n, r] / maxcap[r]`` (``maxcap[r]``: the largest capacity of resource ``r`` on
  any node; resources no node has are left out), ties by lower index, each taking as many
  units as fit.

It handles plain jobs and the one Slurm-style constraint the property tests generate,
``max_units_per_node``; it declares ``node_constraints=False``, so the simulator refuses a
workload with node counts, per-node extras or contiguity for it.

Remaining capacity is summed exactly (fractions): mathematically equal scores are ties and go
to the lower index, as the docstring says (with ``maxcap = (6 cores, 2 GPUs)`` the free vectors
(4, 1) and (1, 2) both score 7/6; floating point once made the production allocator prefer
the higher node).
"""

from __future__ import annotations

import math
from fractions import Fraction

from hpcdispatch.protocol import Decision, Dispatcher, DispatchView, Start, Tags
from hpcdispatch.system.allocation import Allocation

UNBOUNDED = 1 << 40  # units that fit on a node when a unit needs nothing (and no per-node limit)


def units_on_node(free_row: list[int], unit_request, max_per_node: int) -> int:
    """How many units of ``unit_request`` fit in ``free_row``, at most ``max_per_node`` (> 0)."""
    n = None
    for have, need in zip(free_row, unit_request):
        if need > 0:
            k = have // need
            if n is None or k < n:
                n = k
    if n is None:
        n = UNBOUNDED
    if max_per_node > 0 and n > max_per_node:
        n = max_per_node
    return max(n, 0)


def fits(free: list[list[int]], job) -> bool:
    total = 0
    for row in free:
        total += units_on_node(row, job.unit_request, job.max_units_per_node)
        if total >= job.units:
            return True
    return False


def remaining(row: list[int], maxcap: list[int]) -> Fraction:
    score = Fraction(0)
    for have, most in zip(row, maxcap):
        if most > 0:
            score += Fraction(have, most)
    return score


def place(
    free: list[list[int]], job, allocator: str, maxcap: list[int]
) -> list[tuple[int, int]] | None:
    """``[(node, units)]`` (nodes ascending) for ``job`` on ``free``, or ``None``."""
    room = [units_on_node(row, job.unit_request, job.max_units_per_node) for row in free]
    order = [n for n in range(len(free)) if room[n] > 0]
    if allocator == "best-fit":
        order.sort(
            key=lambda n: remaining(free[n], maxcap)
        )  # stable: ties keep the lower index first
    need = job.units
    chosen = []
    for n in order:
        if need == 0:
            break
        take = min(room[n], need)
        chosen.append((n, take))
        need -= take
    if need > 0:
        return None
    return sorted(chosen)


def add(free: list[list[int]], job, pairs: list[tuple[int, int]], sign: int) -> None:
    for n, u in pairs:
        for r, a in enumerate(job.unit_request):
            free[n][r] += sign * u * a


class ReferenceEASY(Dispatcher):
    name = "reference-easy"  # not registered
    tags = Tags(node_constraints=False)

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    def _setup(self, system) -> None:
        if self.allocator not in ("first-fit", "best-fit"):
            raise ValueError(f"reference EASY knows first-fit and best-fit, not {self.allocator}")
        capacity = [[int(x) for x in row] for row in system.capacity.tolist()]
        self.maxcap = [max(row[r] for row in capacity) for r in range(len(system.resources))]

    def _dispatch(self, view: DispatchView) -> Decision:
        free = [[int(x) for x in row] for row in view.free.tolist()]
        now = view.now
        started: list[tuple[object, list[tuple[int, int]]]] = []

        def start(job, pairs):
            add(free, job, pairs, -1)
            started.append((job, pairs))

        queue = view.queue.as_list()
        head_pos = None
        for pos, job in enumerate(queue):
            pairs = place(free, job, self.allocator, self.maxcap)
            if pairs is None:
                head_pos = pos
                break
            start(job, pairs)
        if head_pos is not None:
            head = queue[head_pos]
            # releases: running jobs at max(planned end, now + 1), the jobs just started at
            # now + planned duration; the shadow time is the first release after which the head fits
            releases = [
                (max(rj.planned_end, now + 1.0), rj.job, rj.allocation.pairs())
                for rj in view.running.values()
            ]
            releases += [(now + view.planned_duration(job), job, pairs) for job, pairs in started]
            releases.sort(key=lambda rel: rel[0])
            future = [list(row) for row in free]
            shadow, at_shadow = math.inf, None
            k = 0
            while k < len(releases):
                t = releases[k][0]
                while k < len(releases) and releases[k][0] == t:
                    add(future, releases[k][1], releases[k][2], +1)
                    k += 1
                if fits(future, head):
                    shadow, at_shadow = t, future
                    break
            if at_shadow is None:
                at_shadow = future
            # backfill: a later job starts if it fits now and ends by the shadow time or leaves
            # the head room at the shadow time
            for job in queue[head_pos + 1 :]:
                pairs = place(free, job, self.allocator, self.maxcap)
                if pairs is None:
                    continue
                if now + view.planned_duration(job) <= shadow:
                    start(job, pairs)
                    continue
                trial = [list(row) for row in at_shadow]
                add(trial, job, pairs, -1)
                if fits(trial, head):
                    start(job, pairs)
                    at_shadow = trial
        return Decision(
            [
                Start(job, Allocation([n for n, _ in pairs], [u for _, u in pairs]))
                for job, pairs in started
            ]
        )
