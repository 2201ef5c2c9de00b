"""AUCSCHED: the auction-based scheduler of Soner and Özturan (PRACE whitepaper), on OR-Tools CP-SAT.

At every scheduling step (every ``step`` seconds; 5 s in the paper) a window of jobs from the
front of the queue (priority order) bids for the currently free resources, and an integer
program picks at most one bid per job so that the sum of the winners' priorities (plus a
small preference for unfragmented bids) is maximal. Winners start now on the nodes their bid
names; losers wait for the next step. Nothing is reserved.

A step runs three small steps, each testable alone: :meth:`Aucsched.build_program` builds an
:class:`AuctionProgram` (bids of types A, B, C and the SLURM bid from each job's nodesets, the
CP-SAT model, the greedy hint), :func:`solve_program` solves it within ``time_limit`` (with
``deterministic=true``, in CP-SAT's deterministic time: a run then repeats on a loaded
machine) and :func:`decode` reads the winners' nodes and units back. Priorities are Slurm's
(``priority``: ``basic``, ``age`` or ``multifactor``;
:mod:`hpcdispatch.dispatchers.slurm_priority`). When the solver ends without a solution the
greedy one is used (``info["fallback"]``).

Design notes, decisions and measurements: docs/RESULTS-AUCSCHED.md,
"From the module docstrings".
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hpcdispatch._util import LazyModule
from hpcdispatch.allocators.base import capacity_weights
from hpcdispatch.cp.solve import solve_interruptibly
from hpcdispatch.dispatchers.slurm_bf import slurm_allocate
from hpcdispatch.dispatchers.slurm_priority import PRIORITY_CONSTRAINTS, SlurmPriority
from hpcdispatch.protocol import (
    Allocation,
    Boolean,
    Decision,
    Dispatcher,
    DispatchView,
    Interval,
    ParamConstraint,
    Start,
    Tags,
    register,
)
from hpcdispatch.system.allocation import held_amounts, node_units, per_node_array, runs_of
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job

_cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)
if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = _cp_model

#: Table 3: (k1, k2, k3) per job type group (1 / 2-3) and bid type
K_CONSTANTS = {
    (1, "A"): (0.0, 0.25, 0.0),
    (1, "B"): (0.25, 0.25, 0.0),
    (1, "C"): (0.5, 0.25, 0.25),
    (2, "A"): (0.0, 0.0, 0.0),
    (2, "B"): (0.5, 0.0, 0.0),
    (2, "C"): (0.5, 0.0, 0.5),
    (1, "S"): (0.0, 0.0, 0.0),
    (2, "S"): (0.0, 0.0, 0.0),
}
OBJECTIVE_SCALE = 1000
KIND_ORDER = {"A": 0, "B": 1, "C": 2, "S": 3}
#: largest objective coefficient aimed at: sums of 100 winners stay exact in a double (< 2**53)
COEF_LIMIT = 2**45


def objective_scale(p_max: int, n_bids: int) -> int:
    """``S`` of the integer objective ``P_j (|B|+1) S + round(P_min F_jc S)`` (eq. 1 times
    ``(|B|+1) S``, alpha of eq. 10): ``OBJECTIVE_SCALE`` unless Slurm-sized priorities (about
    4.29e9 with ``priority/basic``) would make the coefficients exceed ``COEF_LIMIT``; then
    smaller, at least 1 (``P_min F`` is then rounded to a unit of about 4e9, still far finer
    than the gaps between F values)."""
    s = OBJECTIVE_SCALE
    if p_max * (n_bids + 1) * s > COEF_LIMIT:
        s = max(1, COEF_LIMIT // (p_max * (n_bids + 1)))
    return s


def preference(
    job_type: int, kind: str, n_nodes_bid: int, n_nodes: int, runs_bid: int, runs_total: int
) -> float:
    """Eq. 12 with Table 3's constants (``job_type`` 1, 2 or 3; ``kind`` A, B, C or S)."""
    k1, k2, k3 = K_CONSTANTS[(1 if job_type == 1 else 2, kind)]
    return 1.0 - k1 - k2 * n_nodes_bid / (n_nodes + 1) - k3 * runs_bid / (runs_total + 1)


@dataclass
class Bid:
    """A bid of one job on a class of nodes."""

    kind: str  # A, B, C or S (SLURM)
    nodes: np.ndarray  # the class N_c, ascending
    r_node: int  # nodes the job uses among N_c (R^node_jc)
    runs: int  # |S_c|: nodesets the class spans
    pref: float = 0.0  # F_jc

    @property
    def key(self) -> tuple:
        return (self.r_node, self.nodes.tobytes())


@dataclass
class JobBids:
    job: Job
    fit: np.ndarray  # units of the job that fit on each node alone
    n_runs: int
    bids: list[Bid] = field(default_factory=list)
    slurm: Allocation | None = (
        None  # the SLURM bid's allocation (units per node as Slurm gives them)
    )


def paper_nodesets(
    free: np.ndarray, core: int = 0, gpu: int | None = 1, gpus: tuple[int, ...] = (0, 1, 2)
) -> list[tuple[int, int, int, int]]:
    """The paper's nodesets ``(n_i, n_j, c, g)`` (section 4): for every ``g``, the maximal runs
    of nodes with free cores and at least ``g`` free GPUs; ``c`` = free cores of the run.
    Node indices are 0-based and ``n_j`` is the last node of the run (inclusive)."""
    out = []
    cores = free[:, core]
    for g in gpus:
        ok = cores > 0
        if gpu is not None:
            ok &= free[:, gpu] >= g
        elif g > 0:
            continue
        starts, ends = runs_of(ok)
        for a, b in zip(starts.tolist(), ends.tolist()):
            out.append((a, b - 1, int(cores[a:b].sum()), g))
    return out


# ---------------------------------------------------------------------------------------
# bid generation
# ---------------------------------------------------------------------------------------


def generate_bids(
    job: Job, fit: np.ndarray, score: np.ndarray, max_bids: int, contiguous_only: bool
) -> tuple[list[Bid], int]:
    """The A, B and C bids of ``job`` on nodes with ``fit`` units each (``score``: remaining
    capacity of every node, for best-fit tie-breaks); returns ``(bids, number of nodesets)``."""
    starts, ends = runs_of(fit > 0)
    n_runs = len(starts)
    if n_runs == 0:
        return [], 0
    U = job.units
    N = job.exact_nodes
    jtype = job.slurm_type
    cs = np.concatenate(([0], np.cumsum(fit)))
    run_units = cs[ends] - cs[starts]
    run_len = ends - starts
    a_bids: list[tuple[tuple, Bid]] = []
    b_bids: list[tuple[tuple, Bid]] = []
    c_bids: list[tuple[tuple, Bid]] = []
    rng = np.arange

    if jtype == 1:
        for r in np.flatnonzero(run_units >= U).tolist():
            a, e = int(starts[r]), int(ends[r])
            spare = int(run_units[r] - U)
            b = int(np.searchsorted(cs, cs[a] + U, side="left"))
            a_bids.append(((spare, a, 0), Bid("A", rng(a, b), b - a, 1)))
            s2 = int(np.searchsorted(cs, cs[e] - U, side="right")) - 1
            a_bids.append(((spare, a, 1), Bid("A", rng(s2, e), e - s2, 1)))
            # B: the shortest windows strictly inside the nodeset, least left-over first
            s = rng(a + 1, e)
            if len(s):
                bb = np.searchsorted(cs, cs[s] + U, side="left")
                inside = bb < e
                if inside.any():
                    s, bb = s[inside], bb[inside]
                    length = bb - s
                    surplus = cs[bb] - cs[s] - U
                    k = int(np.lexsort((s, surplus, length))[0])
                    b_bids.append(
                        (
                            (int(length[k]), int(surplus[k]), int(s[k])),
                            Bid("B", rng(int(s[k]), int(bb[k])), int(bb[k] - s[k]), 1),
                        )
                    )
        if not (job.contiguous or contiguous_only):
            run_cs = np.concatenate(([0], np.cumsum(run_units)))
            for k in range(n_runs - 1):
                m = int(np.searchsorted(run_cs, run_cs[k] + U, side="left")) - 1  # runs k..m hold U
                m = max(m, k + 1)
                if m >= n_runs:
                    break
                nodes = np.concatenate([rng(int(starts[i]), int(ends[i])) for i in range(k, m + 1)])
                if len(nodes) > U:  # more nodes than units: the shortest prefix that holds U
                    pc = np.cumsum(fit[nodes])
                    cut = int(np.searchsorted(pc, U, side="left")) + 1
                    nodes = nodes[:cut]
                    if nodes[-1] < starts[k + 1]:
                        continue  # inside one nodeset: an A bid
                spanned = int(np.searchsorted(starts, nodes[-1], side="right")) - k
                c_bids.append(
                    ((spanned, int(fit[nodes].sum()) - U, k), Bid("C", nodes, len(nodes), spanned))
                )
    else:
        exact_units = jtype == 3
        for r in np.flatnonzero(run_len >= N).tolist():
            a, e = int(starts[r]), int(ends[r])
            spare = int(run_units[r] - U)
            if cs[a + N] - cs[a] >= U:
                a_bids.append(((spare, a, 0), Bid("A", rng(a, a + N), N, 1)))
            if cs[e] - cs[e - N] >= U and e - N != a:
                a_bids.append(((spare, a, 1), Bid("A", rng(e - N, e), N, 1)))
            s = rng(a + 1, e - N)  # windows not touching either end
            if len(s):
                sums = cs[s + N] - cs[s]
                ok = sums >= U
                if ok.any():
                    s, sums = s[ok], sums[ok]
                    if exact_units:  # every node holds one unit: the tightest remaining capacity
                        sc = np.concatenate(([0.0], np.cumsum(score)))
                        tight = sc[s + N] - sc[s]
                        k = int(np.lexsort((s, tight))[0])
                    else:
                        k = int(np.lexsort((s, sums - U))[0])
                    b_bids.append(
                        (
                            (int(sums[k] - U), int(s[k])),
                            Bid("B", rng(int(s[k]), int(s[k]) + N), N, 1),
                        )
                    )
        if not (job.contiguous or contiguous_only):
            usable_before = np.concatenate(([0], np.cumsum(run_len)))
            for k in range(n_runs):
                if exact_units:
                    # the first N usable nodes from nodeset k on, spanning at least two nodesets
                    if usable_before[-1] - usable_before[k] < N or run_len[k] >= N:
                        continue
                    m = int(np.searchsorted(usable_before, usable_before[k] + N, side="left")) - 1
                    nodes = np.concatenate(
                        [rng(int(starts[i]), int(ends[i])) for i in range(k, m + 1)]
                    )[:N]
                    c_bids.append(((m - k + 1, 0, k), Bid("C", nodes, N, m - k + 1)))
                else:
                    # nodesets k..m (m >= k minimal) among which N nodes hold U units; the program picks them
                    found = None
                    for m in range(k, n_runs):
                        if usable_before[m + 1] - usable_before[k] < N:
                            continue
                        vals = fit[int(starts[k]) : int(ends[m])]
                        vals = vals[vals > 0]
                        top = np.partition(vals, len(vals) - N)[len(vals) - N :]
                        if int(top.sum()) >= U:
                            found = m
                            break
                    if found is None:
                        break  # no later start can do better than the union up to the last nodeset
                    nodes = np.concatenate(
                        [rng(int(starts[i]), int(ends[i])) for i in range(k, found + 1)]
                    )
                    c_bids.append(
                        ((found - k + 1, len(nodes), k), Bid("C", nodes, N, found - k + 1))
                    )
    chosen: list[Bid] = []
    seen: set[tuple] = set()
    for group in (a_bids, b_bids, c_bids):
        for _, bid in sorted(group, key=lambda kb: kb[0]):
            if len(chosen) >= max_bids:
                break
            if bid.key in seen:
                continue
            seen.add(bid.key)
            chosen.append(bid)
    return chosen, n_runs


# ---------------------------------------------------------------------------------------
# the integer program: build -> solve -> decode
# ---------------------------------------------------------------------------------------

#: a winning bid: (job position, bid position in the job's bids, nodes, units per node)
Winner = tuple[int, int, np.ndarray, np.ndarray]
#: node -> [(variable, amounts per resource when the variable is 1 (per unit for r), largest value)]
NodeTerms = dict[int, list[tuple["cp_model.IntVar", np.ndarray, int]]]


@dataclass
class BidPlan:
    """One job's variables in the program and how its units are read back.

    The units job ``j`` places on node ``n`` are ``u_jn + r_jn``. ``b``: the bid booleans
    ``b_jc``, one per bid of the job, in its bid order. ``exact``: every class of the job has
    exactly ``R^node`` nodes, so ``u_jn`` is the sum of the job's bids containing ``n`` and has
    no variable (``u`` stays empty). ``fixed`` (exact jobs only, one per bid): the bid's nodes
    hold exactly the job's units, so a winning fixed bid puts ``fit_jn`` units on each of its
    nodes and uses no ``r``. ``r``: node -> ``r_jn``, the units beyond the first (eq. 7), only on
    nodes where more than one unit fits (for exact jobs: nodes of bids that are not fixed).
    ``u``: node -> the boolean ``u_jn`` (node used, eq. 3), for jobs that are not exact.
    """

    b: list[cp_model.IntVar]
    exact: bool
    fixed: list[bool] = field(default_factory=list)
    r: dict[int, cp_model.IntVar] = field(default_factory=dict)
    u: dict[int, cp_model.IntVar] = field(default_factory=dict)


@dataclass
class AuctionProgram:
    """The integer program of one scheduling step (eqs. 1-8), built by
    :meth:`Aucsched.build_program`: the CP-SAT ``model`` (objective and hint set), the window's
    ``job_bids`` and their ``plans`` (same order), the greedy solution given as the ``hint``
    (also the fallback when the solver finds nothing) and the build time ``build_s``
    (priorities, variables, constraints, greedy solution and hint)."""

    model: cp_model.CpModel
    job_bids: list[JobBids]
    plans: list[BidPlan]
    hint: list[Winner]
    build_s: float

    @property
    def n_bids(self) -> int:
        return sum(len(jb.bids) for jb in self.job_bids)

    @property
    def n_variables(self) -> int:
        return len(self.model.proto.variables)

    @property
    def n_constraints(self) -> int:
        return len(self.model.proto.constraints)


def add_bid_plan(
    model: cp_model.CpModel, jb: JobBids, req: np.ndarray, extra: np.ndarray, node_terms: NodeTerms
) -> BidPlan:
    """One job's bid booleans with (2) and its units: (3), (4) and (7); adds the job's terms of
    (5)/(6) to ``node_terms`` (``req``: amounts per unit, ``extra``: per node)."""
    b = [model.new_bool_var("") for _ in jb.bids]
    if len(b) > 1:
        model.add_at_most_one(b)  # (2)
    plan = BidPlan(b, exact=all(bid.r_node == len(bid.nodes) for bid in jb.bids))
    if plan.exact:
        add_exact_units(model, jb, plan, req, extra, node_terms)
    else:
        add_chosen_nodes(model, jb, plan, req, extra, node_terms)
    return plan


def add_exact_units(
    model: cp_model.CpModel,
    jb: JobBids,
    plan: BidPlan,
    req: np.ndarray,
    extra: np.ndarray,
    node_terms: NodeTerms,
) -> None:
    """A job whose bids use all their nodes: ``u_jn`` is the sum of the bids containing ``n``;
    bids without slack fix their units (``fit_jn`` per node); the others share ``r`` variables
    with (7) and (4)."""
    LE = cp_model.LinearExpr
    job, fit, bs = jb.job, jb.fit, plan.b
    U = job.units
    plan.fixed = fixed = [int(fit[bid.nodes].sum()) == U for bid in jb.bids]
    flex_nodes: dict[int, list[int]] = {}
    for c, bid in enumerate(jb.bids):
        nodes = bid.nodes.tolist()
        if fixed[c]:
            for n, fn in zip(nodes, fit[bid.nodes].tolist()):
                node_terms.setdefault(n, []).append((bs[c], fn * req + extra, 1))
        else:
            for n in nodes:
                node_terms.setdefault(n, []).append((bs[c], req + extra, 1))
                flex_nodes.setdefault(n, []).append(c)
    n_flex = sum(1 for f in fixed if not f)
    r_list = []
    for n, cs in flex_nodes.items():
        ub = min(int(fit[n]) - 1, U - 1)
        if ub <= 0:
            continue
        r = model.new_int_var(0, ub, "")
        plan.r[n] = r
        r_list.append(r)
        node_terms[n].append((r, req, ub))
        if len(cs) != n_flex:  # (7): r only on nodes of the chosen class
            model.add(r <= ub * (bs[cs[0]] if len(cs) == 1 else LE.sum([bs[c] for c in cs])))
    flex = [c for c in range(len(bs)) if not fixed[c]]
    need = [U - len(jb.bids[c].nodes) for c in flex]
    if r_list:  # (4): the flexible bids' remaining units
        model.add(LE.sum(r_list) == LE.weighted_sum([bs[c] for c in flex], need))
    elif any(need):
        raise AssertionError(f"aucsched: job {job.id} has a bid that cannot hold its units")


def add_chosen_nodes(
    model: cp_model.CpModel,
    jb: JobBids,
    plan: BidPlan,
    req: np.ndarray,
    extra: np.ndarray,
    node_terms: NodeTerms,
) -> None:
    """A job with a bid that uses only ``R^node`` of its class's nodes (type 2 C bids): a
    ``u_jn`` boolean on every node of its classes, with (3), (4) and (7)."""
    LE = cp_model.LinearExpr
    job, fit, bs = jb.job, jb.fit, plan.b
    U = job.units
    containing: dict[int, list[int]] = {}
    for c, bid in enumerate(jb.bids):
        for n in bid.nodes.tolist():
            containing.setdefault(n, []).append(c)
    u_list, r_list = [], []
    for n, cs in containing.items():
        u = model.new_bool_var("")
        model.add(u <= (bs[cs[0]] if len(cs) == 1 else LE.sum([bs[c] for c in cs])))  # (3)
        plan.u[n] = u
        u_list.append(u)
        node_terms.setdefault(n, []).append((u, req + extra, 1))
        ub = min(int(fit[n]) - 1, U - 1)
        if ub > 0:
            r = model.new_int_var(0, ub, "")
            model.add(r <= ub * u)  # (7)
            plan.r[n] = r
            r_list.append(r)
            node_terms[n].append((r, req, ub))
    model.add(LE.sum(u_list) == LE.weighted_sum(bs, [bid.r_node for bid in jb.bids]))  # (3)
    model.add(LE.sum(u_list + r_list) == LE.weighted_sum(bs, [U] * len(bs)))  # (4)


def add_capacity_constraints(
    model: cp_model.CpModel, node_terms: NodeTerms, free: np.ndarray
) -> None:
    """(5)/(6): per node and resource, only where the window's classes could overflow it."""
    LE = cp_model.LinearExpr
    for n, terms in node_terms.items():
        if len(terms) < 2:
            continue
        for res in range(free.shape[1]):
            vs, cs = [], []
            worst = 0
            for v, amounts, vmax in terms:
                a = int(amounts[res])
                if a:
                    vs.append(v)
                    cs.append(a)
                    worst += a * vmax
            if worst <= free[n, res]:
                continue
            model.add(LE.weighted_sum(vs, cs) <= int(free[n, res]))


def add_symmetry_cuts(
    model: cp_model.CpModel, job_bids: list[JobBids], plans: list[BidPlan], prio: list[int]
) -> None:
    """Symmetry breaking: of two jobs with the same request, the same A/B/C bids and priorities
    ``P_j1 >= P_j2``, ``j2`` wins with an A/B/C bid only if ``j1`` wins (swapping them otherwise
    keeps feasibility and does not lower the objective)."""
    LE = cp_model.LinearExpr
    groups: dict[tuple, list[int]] = {}
    for jp, jb in enumerate(job_bids):
        job = jb.job
        key = (
            job.unit_request,
            job.max_units_per_node,
            job.units,
            job.node_count,
            job.per_node_request,
            job.contiguous,
            tuple(b.key for b in jb.bids if b.kind != "S"),
        )
        groups.setdefault(key, []).append(jp)
    for members in groups.values():
        members.sort(key=lambda jp: -prio[jp])
        for j1, j2 in zip(members, members[1:]):
            abc = [b for b, bid in zip(plans[j2].b, job_bids[j2].bids) if bid.kind != "S"]
            if abc:
                model.add(LE.sum(abc) <= LE.sum(plans[j1].b))


def add_aggregate_cut(
    model: cp_model.CpModel,
    job_bids: list[JobBids],
    plans: list[BidPlan],
    requests: np.ndarray,
    free: np.ndarray,
    class_nodes: Collection[int],
) -> None:
    """Implied cut: the winners' total need fits the free capacity of all the classes' nodes
    (lets the LP relaxation see that "one more job" cannot fit)."""
    LE = cp_model.LinearExpr
    all_nodes = np.fromiter(class_nodes, dtype=np.int64, count=len(class_nodes))
    room = free[all_nodes].sum(axis=0)
    for res in range(free.shape[1]):
        vs, cs = [], []
        for jb, plan in zip(job_bids, plans):
            job = jb.job
            q = int(requests[job.index][res]) * job.units
            p = int(job.per_node_request[res]) if job.per_node_request else 0
            for b, bid in zip(plan.b, jb.bids):
                need = q + p * bid.r_node
                if need:
                    vs.append(b)
                    cs.append(need)
        if vs and sum(cs) > room[res]:
            model.add(LE.weighted_sum(vs, cs) <= int(room[res]))


def set_objective(
    model: cp_model.CpModel, job_bids: list[JobBids], plans: list[BidPlan], prio: list[int]
) -> None:
    """(1) with eq. 10's alpha, scaled to integers: ``P_j (|B|+1) S + round(P_min F_jc S)``."""
    n_bids = sum(len(jb.bids) for jb in job_bids)
    p_min = min(prio)
    scale = objective_scale(max(prio), n_bids)
    big = (n_bids + 1) * scale
    obj_vars, obj_coefs = [], []
    for jp, (jb, plan) in enumerate(zip(job_bids, plans)):
        for b, bid in zip(plan.b, jb.bids):
            obj_vars.append(b)
            obj_coefs.append(prio[jp] * big + int(round(p_min * bid.pref * scale)))
    model.maximize(cp_model.LinearExpr.weighted_sum(obj_vars, obj_coefs))


def set_hint(model: cp_model.CpModel, plans: list[BidPlan], hint: list[Winner]) -> None:
    """``hint`` (a feasible solution) as CP-SAT's solution hint, complete: every variable gets a
    value (``r_jn`` = units beyond the first, ``u_jn`` = node used)."""
    by_job = {jp: (bp, nodes, units) for jp, bp, nodes, units in hint}
    h_vars: list[int] = []
    h_vals: list[int] = []
    for jp, plan in enumerate(plans):
        chosen = by_job.get(jp)
        for bp, b in enumerate(plan.b):
            h_vars.append(b.index)
            h_vals.append(int(chosen is not None and chosen[0] == bp))
        units_at = {} if chosen is None else dict(zip(chosen[1].tolist(), chosen[2].tolist()))
        fixed_win = chosen is not None and plan.exact and plan.fixed[chosen[0]]
        for n, r in plan.r.items():
            h_vars.append(r.index)
            h_vals.append(0 if fixed_win else max(units_at.get(n, 0) - 1, 0))
        for n, u in plan.u.items():
            h_vars.append(u.index)
            h_vals.append(int(n in units_at))
    model.proto.solution_hint.vars.extend(h_vars)
    model.proto.solution_hint.values.extend(h_vals)


def solve_program(
    program: AuctionProgram,
    time_limit: float,
    workers: int,
    seed: int,
    probing_level: int,
    started_at: float | None = None,
    deterministic: bool = False,
) -> tuple[cp_model.CpSolverStatus, cp_model.CpSolver, float]:
    """Solve ``program`` with CP-SAT within ``time_limit`` seconds counted from ``started_at``
    (``time.perf_counter()``; default: now), at least 0.05 s; ``workers`` search workers,
    ``seed``, presolve probing ``probing_level`` (-1: CP-SAT's default). With
    ``deterministic``, ``time_limit`` is in units of CP-SAT's deterministic time instead and
    the wall clock bounds nothing (but a watchdog against hangs at ``100 time_limit + 60`` s),
    so that with one worker the same program gets the same answer on a loaded machine too.
    Returns ``(status, solver, solve seconds)``."""
    if started_at is None:
        started_at = time.perf_counter()
    solver = cp_model.CpSolver()
    params = solver.parameters
    watchdog_s = None
    if deterministic:
        params.max_deterministic_time = time_limit
        watchdog_s = time_limit * 100 + 60.0
    else:
        params.max_time_in_seconds = max(0.05, time_limit - (time.perf_counter() - started_at))
    params.num_workers = workers
    params.random_seed = seed
    if probing_level >= 0:
        params.cp_model_probing_level = probing_level
    t1 = time.perf_counter()
    status, _ = solve_interruptibly(solver, program.model, watchdog_s=watchdog_s)
    return status, solver, time.perf_counter() - t1


def decode(program: AuctionProgram, solver: cp_model.CpSolver) -> list[Winner]:
    """The winners of a solved ``program``: per job with a winning bid, the nodes it uses
    and its units on each (``u_jn + r_jn``: one, plus ``r_jn``; ``fit_jn`` on a fixed bid)."""
    winners = []
    for jp, (jb, plan) in enumerate(zip(program.job_bids, program.plans)):
        bp = next((i for i, b in enumerate(plan.b) if solver.boolean_value(b)), None)
        if bp is None:
            continue
        nodes, units = [], []
        for n in jb.bids[bp].nodes.tolist():
            if plan.exact and plan.fixed[bp]:
                k = int(jb.fit[n])
            else:
                if not plan.exact and not solver.boolean_value(plan.u[n]):
                    continue
                r = plan.r.get(n)
                k = 1 + (solver.value(r) if r is not None else 0)
            nodes.append(n)
            units.append(k)
        winners.append((jp, bp, np.asarray(nodes, np.int64), np.asarray(units, np.int64)))
    return winners


# ---------------------------------------------------------------------------------------
# the dispatcher
# ---------------------------------------------------------------------------------------


@register
class Aucsched(Dispatcher):
    """AUCSCHED: a window of jobs bids for nodesets; an integer program (CP-SAT) picks winners."""

    name = "aucsched"
    tags = Tags(uses_solver=True, deterministic=False)  # a wall-clock solver limit
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "step": Interval(float, 0, None, closed="neither", unit="seconds"),
        "window": Interval(int, 1, None),
        "max_bids": Interval(int, 1, None),
        "max_total_bids": Interval(int, 0, None),
        "slurm_bids": Boolean(),
        "contiguous_only": Boolean(),
        "time_limit": Interval(float, 0, None, closed="neither", unit="seconds"),
        "workers": Interval(int, 1, None),
        **PRIORITY_CONSTRAINTS,
        # eq. 10 divides by the smallest priority
        "priority_base": Interval(float, 1, None),
        "seed": Interval(int, None, None),
        "aggregate_cut": Boolean(),
        "symmetry_cuts": Boolean(),
        "probing_level": Interval(int, -1, None),  # -1: CP-SAT's default
        "deterministic": Boolean(),
    }
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {"deterministic": False}

    def __init__(
        self,
        step: float = 5.0,
        window: int = 100,
        max_bids: int = 5,
        max_total_bids: int = 0,
        slurm_bids: bool = True,
        contiguous_only: bool = False,
        time_limit: float = 5.0,
        workers: int = 1,
        priority: str = "basic",
        priority_base: float = 1.0,
        weight_age: float = 1000.0,
        weight_size: float = 1000.0,
        max_age: float = 604800.0,
        favor_small: bool = False,
        seed: int = 0,
        aggregate_cut: bool = True,
        symmetry_cuts: bool = True,
        probing_level: int = 0,
        allocator: str = "first-fit",
        deterministic: bool = False,
    ):
        self.step = step
        self.window = window
        self.max_bids = max_bids
        self.max_total_bids = max_total_bids
        self.slurm_bids = slurm_bids
        self.contiguous_only = contiguous_only
        self.time_limit = time_limit
        self.workers = workers
        self.priority = priority
        self.priority_base = priority_base
        self.weight_age = weight_age
        self.weight_size = weight_size
        self.max_age = max_age
        self.favor_small = favor_small
        self.seed = seed
        self.aggregate_cut = aggregate_cut
        self.symmetry_cuts = symmetry_cuts
        self.probing_level = probing_level
        self.allocator = allocator
        #: ``time_limit`` in units of CP-SAT's deterministic time, the wall clock bounding
        #: nothing (:func:`solve_program`): with one worker, decisions that do not depend on
        #: the machine's load (the tests compare solutions this way)
        self.deterministic = deterministic

    def get_tags(self) -> Tags:
        # a wall-clock time limit makes decisions depend on the machine's load; the
        # deterministic limit with one worker does not
        return replace(self.tags, deterministic=bool(self.deterministic) and int(self.workers) == 1)

    def simulation_hints(self) -> dict:
        # the paper's plug-in runs a scheduling step every `step` seconds and only then
        return {"dispatch_interval": float(self.step), "dispatch_on_events": False}

    def _setup(self, system: System) -> None:
        _cp_model.load()  # (OR-Tools here, not inside the first timed scheduling step)
        self._prio = SlurmPriority(
            self.priority,
            system,
            priority_base=self.priority_base,
            weight_age=self.weight_age,
            weight_size=self.weight_size,
            max_age=self.max_age,
            favor_small=self.favor_small,
        )
        self.n_nodes = system.n_nodes
        self._weights = capacity_weights(system.max_node_capacity)  # remaining capacity, exact
        self._idle_state = False
        self.steps = self.solves = self.skipped = self.fallbacks = 0

    # ---- bids ----------------------------------------------------------------------------
    def build_bids(self, view: DispatchView, window: list[Job]) -> list[JobBids]:
        free = np.asarray(view.free)
        score = free @ self._weights
        requests = view.requests
        out: list[JobBids] = []
        slurm_free = free.copy() if self.slurm_bids else None
        cache: dict[tuple, tuple[np.ndarray, list[Bid], int]] = {}
        total = 0
        for job in window:
            req = requests[job.index]
            shape = (
                job.unit_request,
                job.max_units_per_node,
                job.units,
                job.node_count,
                job.per_node_request,
                job.contiguous,
            )
            hit = cache.get(shape)
            if hit is None:
                fit = node_units(
                    free, req, job.max_units_per_node, per_node_array(job.per_node_request)
                )
                bids, n_runs = generate_bids(job, fit, score, self.max_bids, self.contiguous_only)
                hit = cache[shape] = (fit, bids, n_runs)
            fit, bids, n_runs = hit
            jb = JobBids(job, fit, n_runs, [Bid(b.kind, b.nodes, b.r_node, b.runs) for b in bids])
            if slurm_free is not None:
                alloc = slurm_allocate(job, req, slurm_free)
                if alloc is not None and not (
                    self.contiguous_only
                    and alloc.nodes[-1] - alloc.nodes[0] + 1 != len(alloc.nodes)
                ):
                    slurm_free[alloc.nodes] -= held_amounts(alloc, req, job.per_node_request)
                    jb.slurm = alloc
                    runs = int((np.diff(alloc.nodes) > 1).sum()) + 1
                    sbid = Bid("S", alloc.nodes, len(alloc.nodes), runs)
                    same = next((b for b in jb.bids if b.key == sbid.key), None)
                    if same is not None:
                        same.kind = (
                            "S"  # identical class: it keeps the SLURM bid's preference (F = 1)
                        )
                    else:
                        jb.bids.append(sbid)
            if (
                self.max_total_bids
            ):  # the plug-in's MAX_BID_COUNT: later jobs of the window get no bid
                room = self.max_total_bids - total
                if room <= 0:
                    break
                del jb.bids[room:]
            for b in jb.bids:
                b.pref = preference(
                    job.slurm_type, b.kind, len(b.nodes), self.n_nodes, b.runs, n_runs
                )
            if jb.bids:
                total += len(jb.bids)
                out.append(jb)
        return out

    # ---- the step ------------------------------------------------------------------------
    def _dispatch(self, view: DispatchView) -> Decision:
        self.steps += 1
        if self._idle_state and not view.ended_jobs and not view.new_jobs:
            self.skipped += 1
            return Decision(info={"skipped": True})
        t0 = time.perf_counter()
        window = self._prio.order(view.queue.as_list(), view.now)[: self.window]
        job_bids = self.build_bids(view, window)
        t_bids = time.perf_counter() - t0
        if not job_bids:
            self._idle_state = True
            return Decision(info={"window": len(window), "bids": 0, "bid_time_s": t_bids})
        self._idle_state = False
        starts, info = self.solve(view, job_bids, deadline_start=t0)
        info.update(window=len(window), bid_time_s=t_bids)
        return Decision(starts, info=info)

    def priorities(self, view: DispatchView, jobs: list[Job]) -> list[int]:
        """``P_j`` of eq. 1 (:mod:`hpcdispatch.dispatchers.slurm_priority`, option ``priority``)."""
        return self._prio.of_all(jobs, view.now)

    def greedy(self, view: DispatchView, job_bids: list[JobBids]) -> list[Winner]:
        """A feasible solution, the documented fallback: first the SLURM bids (jointly feasible
        by construction), then, in priority order, each job left out takes its first bid that
        still fits (its roomiest nodes of the class). ``[(job pos, bid pos, nodes, units)]``."""
        free = np.array(view.free)
        requests = view.requests
        out = []
        taken = set()
        for jp, jb in enumerate(job_bids):
            if jb.slurm is not None:
                bp = next(
                    i
                    for i, b in enumerate(jb.bids)
                    if b.kind == "S" and b.key == (len(jb.slurm.nodes), jb.slurm.nodes.tobytes())
                )
                free[jb.slurm.nodes] -= held_amounts(
                    jb.slurm, requests[jb.job.index], jb.job.per_node_request
                )
                out.append((jp, bp, jb.slurm.nodes, jb.slurm.units))
                taken.add(jp)
        for jp, jb in enumerate(job_bids):
            if jp in taken:
                continue
            job = jb.job
            req = requests[job.index]
            pn = per_node_array(job.per_node_request)
            for bp, bid in enumerate(jb.bids):
                room = node_units(free[bid.nodes], req, job.max_units_per_node, pn)
                usable = np.flatnonzero(room > 0)
                if len(usable) < bid.r_node:
                    continue
                pick = np.sort(usable[np.argsort(-room[usable], kind="stable")[: bid.r_node]])
                cap = room[pick]
                if int(cap.sum()) < job.units:
                    continue
                units = np.ones(len(pick), dtype=np.int64)
                need = job.units - len(pick)
                for i in range(len(pick)):
                    add = min(need, int(cap[i]) - 1)
                    units[i] += add
                    need -= add
                nodes = bid.nodes[pick]
                free[nodes] -= held_amounts(
                    Allocation.trusted(nodes, units), req, job.per_node_request
                )
                out.append((jp, bp, nodes, units))
                break
        return out

    # ---- the integer program ----------------------------------------------------------
    def build_program(self, view: DispatchView, job_bids: list[JobBids]) -> AuctionProgram:
        """The integer program of eqs. 1-8 for the bids: per job its :class:`BidPlan`, then
        (5)/(6), the symmetry cuts (``symmetry_cuts``), the aggregate cut (``aggregate_cut``),
        the objective with the jobs' priorities (:meth:`priorities`) and the greedy solution
        (:meth:`greedy`) as the hint.

        Two exact simplifications keep the model small: when every class of a job has exactly
        ``R^node`` nodes, ``u_jn`` is the sum of the job's bids containing ``n`` (no variable);
        and a bid whose nodes hold exactly the job's units (no slack: ``sum fit = U``) fixes the
        units on each of its nodes to ``fit_jn``, so ``r_jn`` is needed only on nodes of bids
        with slack.
        """
        t0 = time.perf_counter()
        model = cp_model.CpModel()
        requests = view.requests
        free = np.asarray(view.free)
        n_res = free.shape[1]
        prio = self.priorities(view, [jb.job for jb in job_bids])
        node_terms: NodeTerms = {}
        plans: list[BidPlan] = []
        for jb in job_bids:
            job = jb.job
            extra = (
                np.zeros(n_res, np.int64)
                if not job.per_node_request
                else np.asarray(job.per_node_request, np.int64)
            )
            plans.append(add_bid_plan(model, jb, requests[job.index], extra, node_terms))
        add_capacity_constraints(model, node_terms, free)
        if self.symmetry_cuts:
            add_symmetry_cuts(model, job_bids, plans, prio)
        if self.aggregate_cut:
            add_aggregate_cut(model, job_bids, plans, requests, free, node_terms.keys())
        set_objective(model, job_bids, plans, prio)
        hint = self.greedy(view, job_bids)
        set_hint(model, plans, hint)
        return AuctionProgram(model, job_bids, plans, hint, time.perf_counter() - t0)

    def solve(
        self, view: DispatchView, job_bids: list[JobBids], deadline_start: float | None = None
    ) -> tuple[list[Start], dict]:
        """Build the integer program for the bids (:meth:`build_program`), solve it within
        ``time_limit`` counted from ``deadline_start`` (default: now; :func:`solve_program`) and
        read the winners back (:func:`decode`), or take the greedy hint when the solver found
        no solution. Returns the winners' starts and the step's ``info``."""
        started_at = deadline_start if deadline_start is not None else time.perf_counter()
        program = self.build_program(view, job_bids)
        status, solver, solve_s = solve_program(
            program,
            self.time_limit,
            self.workers,
            self.seed,
            self.probing_level,
            started_at=started_at,
            deterministic=bool(self.deterministic),
        )
        self.solves += 1
        info: dict[str, object] = {
            "jobs": len(job_bids),
            "bids": program.n_bids,
            "variables": program.n_variables,
            "constraints": program.n_constraints,
            "build_s": program.build_s,
            "solve_s": solve_s,
            "status": solver.status_name(status),
        }
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            info["objective"] = solver.objective_value
            winners = decode(program, solver)
        else:
            self.fallbacks += 1
            info["fallback"] = (
                "greedy: SLURM bids, then first fitting bids"
                if self.slurm_bids
                else "greedy: first fitting bids"
            )
            winners = program.hint
        starts = []
        kinds = []
        for jp, bp, nodes, units in winners:
            jb = job_bids[jp]
            starts.append(Start(jb.job, Allocation(nodes, units)))
            kinds.append(jb.bids[bp].kind)
        info["winners"] = len(starts)
        info["winning_kinds"] = "".join(kinds)
        return starts, info
