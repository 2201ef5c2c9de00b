"""Slurm's node selection for a linear node order (select/cons_tres without a topology plugin).

Slurm's documentation: "SLURM's native mode of resource selection is to consider the nodes as
a one-dimensional array. Jobs are allocated resources on a best-fit basis. For larger jobs,
this minimizes the number of sets of consecutive nodes allocated to the job." This module
follows the consumable-resource plugin's ``_eval_nodes`` / ``_choose_nodes`` / ``cr_dist``
steps, in units of the job model (a Slurm CPU = one unit of the job: one core for ``-n``
jobs, one node's share for ``--ntasks-per-node`` jobs); the steps are in the docs page below.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

import numpy as np

from hpcdispatch.allocators.base import Allocator
from hpcdispatch.system.allocation import Allocation, node_units, runs_of


def _eval_nodes(
    avail: np.ndarray,
    units: int,
    min_nodes: int,
    max_nodes: int,
    contiguous: bool,
    cpus: np.ndarray | None = None,
) -> list[tuple[int, int]] | None:
    """Slurm's ``_eval_nodes`` on per-node available units; ``[(node, units)]`` or ``None``.

    ``cpus`` (optional, the ``cons_res_sets`` variant): the free CPUs of every node; sets are
    then compared by their free CPUs, as Slurm's ``consec_cpus``, and a set that is not
    sufficient replaces the best one whenever it has more CPUs, even when the best one is
    sufficient -- Slurm's condition taken literally (see :func:`slurm_select`)."""
    usable = avail > 0
    if int(usable.sum()) < min_nodes:
        return None
    starts, ends = runs_of(usable)
    if len(starts) == 0:
        return None
    cs = np.concatenate(([0], np.cumsum(avail)))
    set_units = (cs[ends] - cs[starts]).tolist()
    literal = cpus is not None
    if literal:
        cc = np.concatenate(([0], np.cumsum(np.where(usable, cpus, 0))))
        set_measure = (cc[ends] - cc[starts]).tolist()
    else:
        set_measure = set_units
    set_nodes = (ends - starts).tolist()
    starts_l, ends_l = starts.tolist(), ends.tolist()
    rem_units, rem_nodes = units, min_nodes
    chosen: list[tuple[int, int]] = []
    alive = [True] * len(starts_l)
    avail_l = None
    while max_nodes > 0:
        best = -1
        best_units = 0
        best_sufficient = False
        for i in range(len(starts_l)):
            if not alive[i]:
                continue
            sufficient = set_units[i] >= rem_units and set_nodes[i] >= rem_nodes
            m = set_measure[i]
            if (
                best < 0
                or (sufficient and not best_sufficient)
                or (sufficient and m < best_units)
                or (not sufficient and (literal or not best_sufficient) and m > best_units)
            ):
                best, best_units, best_sufficient = i, m, sufficient
        if best < 0:
            return None
        if contiguous and not best_sufficient:
            return None  # no hole large enough
        if avail_l is None:
            avail_l = avail.tolist()
        first, last = starts_l[best], ends_l[best]
        nodes = range(first, last)
        if rem_nodes <= 1:  # best fit single node: fewest available units that hold the rest
            single = -1
            for n in nodes:
                a = avail_l[n]
                if a >= rem_units and (single < 0 or a < avail_l[single]):
                    single = n
                    if a == rem_units:
                        break
            if single >= 0:
                nodes = (single,)
        for n in nodes:
            if max_nodes <= 0 or (rem_nodes <= 0 and rem_units <= 0):
                break
            a = avail_l[n]
            take = min(a, max(rem_units - max(rem_nodes - 1, 0), 1))
            chosen.append((n, take))
            rem_units -= take
            rem_nodes -= 1
            max_nodes -= 1
        if rem_nodes <= 0 and rem_units <= 0:
            return chosen
        if contiguous:
            return None
        alive[best] = False
    return None


def slurm_select(
    avail: np.ndarray,
    units: int,
    node_count: int = 0,
    contiguous: bool = False,
    cpus: np.ndarray | None = None,
) -> Allocation | None:
    """Slurm's choice for a job needing ``units`` units (exactly ``node_count`` nodes when given)
    on nodes with ``avail`` available units each (0 = unusable).

    ``cpus`` (the ``cons_res_sets`` variant of SLURM/BF): the free CPUs of every node. Slurm's
    cons_res counts a node's free CPUs in ``consec_cpus`` (capped at ``--ntasks-per-node`` only
    for jobs that share resources) and its best-fit test ``!sufficient && consec_cpus >
    best_fit_cpus`` does not check that the best set is insufficient, so a too-small set with
    many free CPUs displaces a sufficient one and the job is split. Without ``cpus`` (default)
    sets are compared by the job's units and only an insufficient best is displaced."""
    n = len(avail)
    min_nodes = node_count if node_count else 1
    max_nodes = node_count if node_count else min(units, n)
    if min_nodes > n:
        return None
    avail = np.asarray(avail, dtype=np.int64)
    if int(avail.sum()) < units or int(np.count_nonzero(avail)) < min_nodes:
        return None  # cannot succeed: not enough units or usable nodes at all
    chosen = _eval_nodes(avail, units, min_nodes, max_nodes, contiguous, cpus)
    if chosen is None:
        most = int(avail.max()) if n else 0
        work = avail.copy()
        for count in range(1, most):  # Slurm's _choose_nodes: drop the nodes with few units, retry
            drop = (work > 0) & (work <= count)
            if not drop.any():
                continue
            work[drop] = 0
            chosen = _eval_nodes(work, units, min_nodes, max_nodes, contiguous, cpus)
            if chosen is not None:
                break
    if chosen is None:
        return None
    chosen.sort()
    nodes = np.fromiter((c[0] for c in chosen), dtype=np.int64, count=len(chosen))
    counts = np.fromiter((c[1] for c in chosen), dtype=np.int64, count=len(chosen))
    return Allocation.trusted(nodes, counts)


class SlurmLinear(Allocator):
    """Slurm's select/cons_tres node selection on the linear node order (best-fit sets of
    consecutive nodes); see the module docstring for the steps and simplifications."""

    name = "slurm-linear"
    prefix_monotone = False

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
        avail = node_units(free, unit_request, max_per_node, per_node)
        if max_per_node == 1 and not node_count:
            node_count = units  # one unit per node: the node count is the unit count
        return slurm_select(avail, units, node_count, contiguous)
