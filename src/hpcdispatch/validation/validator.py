"""Independent schedule validator.

It replays a schedule from plain tables -- the workload (what each job asked for), the
job outcomes and the allocation rows -- against the system's capacities, sharing no code
with the simulator's bookkeeping. It reports every violation it finds, earliest first:

- a job of the workload missing from the schedule, listed twice, or unknown;
- a job started before its submission, never started (without being rejected), or started
  twice (two first allocation segments);
- a started job whose start or end is not a finite time, an allocation row whose ``from`` or
  ``to`` is not finite or that does not end after it begins (no row leaves the capacity sweep
  unreported: a non-finite ``from`` of a first segment is swept from its job's start, a
  non-finite ``to`` until its job's end);
- a job whose status is not ``completed``, ``killed``, ``rejected`` or ``cancelled`` (every job has one of
  them when a run ends), or disagrees with its times: completed and killed jobs started and
  ended, rejected ones did neither; ``killed`` exactly when the job ran into its wall-time;
- a rejected job without a reason, rejected by a dispatcher whose tags say it never rejects
  (``rejects: false``), or holding allocation rows (tags unknown: said in the notes);
- a job that ran other than ``min(run time, wall-time)`` (or its run time when wall-time kills
  are off), or whose ``killed`` flag disagrees;
- an allocation that does not hold exactly the job's units, amounts other than
  ``units x per-unit request + per-node request``, a node out of range or used twice by one
  segment, more units on a node than ``max_units_per_node``, a negative segment number, a
  node, unit count, segment or amount that is not an integer;
- a later allocation segment (``segment k >= 1``, a growth grant) that no growth request of
  the job's workload entry explains: the ``k``-th granted request (requests in order of
  ``after``; a refused one has no segment) must start the segment at ``start + after`` with
  exactly its units (growth requests unknown: said in the notes);
- Slurm-style constraints: a job with ``node_count`` on another number of distinct nodes, a
  ``contiguous`` job on nodes that are not consecutive indices (the per-node extras are part of
  the amount rule above);
- at any instant, on any node, for any resource, more in use than the node's capacity
  (a job ending at ``t`` releases before a job starting at ``t`` acquires);
- deadline workloads (``earliest_start`` and ``deadline`` columns): a start before
  ``max(submit, earliest start)``, an end after the deadline, a ``cancelled`` job whose end is
  not its deadline (or that had started and would have ended in time), a whole-node job sharing
  a node; and with the dispatcher's bookings: a started job without a booking, not at its
  booked start or not on exactly its booked nodes, or outliving its booking, and two bookings
  overlapping on a node (:func:`_check_deadlines`, :func:`_check_exclusive`,
  :func:`_check_bookings`); with the shape rule of the strategy that booked (``shape``:
  ``hilbert`` or ``manhattan``, from the dispatcher's name), a whole-node job's booked nodes
  that are not consecutive positions of the grid's Hilbert curve, or not one 4-connected
  piece of the grid (:func:`_check_shapes`, which derives the curve and the neighbours itself).

``time_tolerance`` (seconds, default 0): a schedule recorded by a real system rather than
simulated -- a replay on a real Slurm (:mod:`hpcdispatch.slurm.replay`), whose timestamps are
whole seconds, whose jobs start and end with some overhead and whose times are scaled -- may
start a job up to that much before its submission and run it up to that much shorter or longer
than ``min(run time, wall-time)``. Only those two rules use it; capacity, amounts, units and
every other rule stay exact. A run directory gives it in ``run.json``'s ``time_tolerance``
(said in the notes).

A run directory (:func:`validate_run_dir`) is checked against what it can re-derive, not
against its stored copies: the system the run names (a preset, or ``from-trace:...`` derived
again from the trace's SWF header: a stored ``system.toml`` that differs from it is a
violation), the workload re-read from its source (every stored column compared with it; the
schedule is checked against the source), and ``summary.json``'s job counts, mean wait,
slowdown, bounded slowdown and makespan recomputed from the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from hpcdispatch._util import text_or_none
from hpcdispatch.errors import HpcDispatchError, ScheduleValidationError
from hpcdispatch.system.model import System

if (
    TYPE_CHECKING
):  # (pandas for the tables of a run directory; a result in memory is checked without it)
    import pandas as pd

TOL = 1e-6


@dataclass(frozen=True, order=True)
class Violation:
    time: float
    kind: str
    message: str


@dataclass
class ValidationReport:
    jobs: int = 0
    allocation_rows: int = 0
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def add(self, time: float, kind: str, message: str) -> None:
        self.violations.append(
            Violation(float(time) if np.isfinite(time) else float("-inf"), kind, message)
        )

    def first(self) -> Violation | None:
        return min(self.violations) if self.violations else None

    def raise_if_invalid(self) -> ValidationReport:
        if self.violations:
            v = self.first()
            assert v is not None
            more = f" (and {len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            raise ScheduleValidationError(f"schedule invalid: {v.message}{more}")
        return self

    def describe(self) -> str:
        if self.ok:
            return f"valid: {self.jobs} jobs, {self.allocation_rows} allocation rows checked"
        lines = [f"INVALID: {len(self.violations)} violation(s); earliest first:"]
        lines += [f"  t={v.time:.15g} [{v.kind}] {v.message}" for v in sorted(self.violations)[:20]]
        return "\n".join(lines)


def _jobs(values: np.ndarray, limit: int = 5) -> str:
    """``"job 3, job 7 ... (12 in all)"``: messages name every job they are about."""
    vals = [f"job {int(v)}" for v in values[:limit]]
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(vals) + more


def _ids(values: np.ndarray, limit: int = 5) -> str:
    vals = [int(v) for v in values[:limit]]
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(map(str, vals)) + more


#: the statuses a job can have when a run has ended
CONFLICT = "booking-conflict"  # a static deadline job cancelled when the next booking on its nodes begins (A19)
FINAL_STATUSES = ("completed", "killed", "rejected", "cancelled")
#: summary fields recomputed from the tables by :func:`validate_run_dir`
SUMMARY_COUNTS = ("jobs", "started", "rejected", "killed")
SUMMARY_MEANS = ("wait_mean", "slowdown_mean", "bounded_slowdown_mean", "makespan")
SUMMARY_RTOL = 1e-9

Growth = Mapping[int, Sequence[Any]]


def validate_tables(
    system: System,
    workload: Table,
    jobs: Table,
    allocations: Table,
    walltime_kill: bool = True,
    *,
    dispatcher_tags: Mapping[str, Any] | None = None,
    growth: Growth | None = None,
    bookings: Table | None = None,
    time_tolerance: float = 0.0,
    shape: str | None = None,
) -> ValidationReport:
    """Validate a schedule given as tables (see the module docstring for the rules). The
    tables hold their columns' kinds of value, as a result's frames and
    :func:`~hpcdispatch.results.store.read_run` give them (the run reader checks them: ids and
    counts integers, times numbers); integer columns holding NaN or 2.5 are reported per job.

    ``bookings``: the dispatcher's advance reservations, one row per booking and node
    (``job_id, made, start, end, released, node``: ``bookings.parquet``), or ``None`` when it
    made none; deadline workloads carry ``earliest_start`` and ``deadline`` columns
    (:func:`_check_deadlines`). ``shape``: the booking strategy's shape rule, ``"hilbert"``
    or ``"manhattan"`` (:func:`shape_rule` of the dispatcher's identity), or ``None``.

    ``dispatcher_tags``: the tags the dispatcher declared (``run.json``'s ``dispatcher_tags``,
    ``SimulationResult.tags``); ``rejects`` says whether it may reject jobs. ``growth``: job id
    -> its growth requests, each ``(after, units)`` or an object with ``after`` and ``units``
    (jobs without any may be left out). ``None`` for either: unknown, said in the notes when
    the schedule needs it (rejected jobs, later allocation segments); no verdict is invented.
    """
    workload, jobs, allocations = _columns(workload), _columns(jobs), _columns(allocations)
    bookings = None if bookings is None else _columns(bookings)
    report = ValidationReport(jobs=_n_rows(workload), allocation_rows=_n_rows(allocations))
    resources = list(system.resources)
    cap = system.capacity

    # ---- the set of jobs ------------------------------------------------------------------
    # Columns are read through positions of the common job ids (sorted) in each table; when a
    # table already lists exactly those ids in that order nothing is copied (a whole-trace
    # schedule has half a million jobs and a million allocation rows).
    wl_ids = workload["job_id"]
    wl_dup = _duplicated(wl_ids)
    if wl_dup.any():
        report.add(
            -np.inf, "workload", f"duplicate job ids in the workload: {_jobs(wl_ids[wl_dup])}"
        )
    job_ids = jobs["job_id"]
    job_dup = _duplicated(job_ids)
    if job_dup.any():
        report.add(
            -np.inf,
            "twice",
            f"jobs listed more than once in the schedule: {_jobs(job_ids[job_dup])}",
        )
    w_sorted, w_order = _sorted_unique(wl_ids, wl_dup)
    j_sorted, j_order = _sorted_unique(job_ids, job_dup)
    w_in_j = _in_sorted(w_sorted, j_sorted)
    missing = w_sorted[~w_in_j]
    if len(missing):
        report.add(
            -np.inf, "missing", f"jobs of the workload missing from the schedule: {_jobs(missing)}"
        )
    unknown = j_sorted[~_in_sorted(j_sorted, w_sorted)]
    if len(unknown):
        report.add(-np.inf, "unknown", f"schedule lists jobs not in the workload: {_jobs(unknown)}")
    common = w_sorted[w_in_j]
    w_pos = _identity_or(w_order[w_in_j], len(wl_ids))
    j_pos = _identity_or(j_order[np.searchsorted(j_sorted, common)], len(job_ids))

    def w_col(name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(workload[name], dtype)
        return values if w_pos is None else values[w_pos]

    def j_col(name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(jobs[name], dtype)
        return values if j_pos is None else values[j_pos]

    submit = w_col("submit", np.float64)
    start = j_col("start", np.float64)
    end = j_col("end", np.float64)
    status = j_col("status").astype(str)
    run = w_col("run_time", np.float64)
    wall = w_col("wall_time", np.float64)
    ids = common

    def job_name(i: int) -> str:
        return f"job {int(ids[i])}"

    rejected = status == "rejected"
    cancelled = status == "cancelled"
    # jobs with an application model (deadline jobs: whole nodes): their run time is the
    # execution model's output, not checked against the trace's; they may give nodes back
    # before they end, and grow at forks when the dispatcher says it grants them
    app = w_col("whole_nodes", bool) if "whole_nodes" in workload else np.zeros(len(common), bool)
    tags = dispatcher_tags if isinstance(dispatcher_tags, Mapping) else {}
    forks = bool(tags.get("forks", False))
    cancel_why = (
        _texts(j_col("cancel_reason"))
        if "cancel_reason" in jobs
        else np.full(len(common), "", dtype=object)
    )
    never = np.isnan(start) & ~rejected & ~cancelled
    for i in np.flatnonzero(never)[:20]:
        report.add(
            submit[i],
            "never",
            f"job {int(ids[i])} (submitted at {submit[i]:.15g}) never started and was not rejected",
        )
    started = ~np.isnan(start)
    ended = ~np.isnan(end)
    # a started job has a finite start and a finite end (NaN / inf never drop out of a check)
    timed = started & np.isfinite(start) & np.isfinite(end)
    for i in np.flatnonzero(started & ~timed)[:20]:
        report.add(
            start[i],
            "time",
            f"{job_name(i)} has start {start[i]:.15g} and end {end[i]:.15g}: a started job needs "
            "finite start and end times",
        )
    bad_rej = rejected & (started | ended)
    for i in np.flatnonzero(bad_rej)[:20]:
        report.add(
            start[i] if started[i] else end[i],
            "rejected",
            f"job {int(ids[i])} is marked rejected but has a start time {start[i]:.15g} (end {end[i]:.15g})",
        )
    slack = max(TOL, float(time_tolerance))
    early = started & (start < submit - slack)
    for i in np.flatnonzero(early)[:20]:
        report.add(
            start[i],
            "early",
            f"job {int(ids[i])} started at {start[i]:.15g}, before its submission at {submit[i]:.15g}",
        )
    expected = np.minimum(run, wall) if walltime_kill else run
    wrong = (
        timed
        & ~cancelled
        & ~app
        & ~(
            np.abs((end - start) - expected)
            <= np.maximum(TOL * np.maximum(1.0, np.abs(expected)), float(time_tolerance))
        )
    )
    for i in np.flatnonzero(wrong)[:20]:
        report.add(
            start[i],
            "duration",
            f"job {int(ids[i])} ran {end[i] - start[i]:.15g} s ({start[i]:.15g} -> {end[i]:.15g}); it should run "
            f"{expected[i]:.15g} s (run time {run[i]:.15g}, wall-time {wall[i]:.15g}, kills "
            f"{'on' if walltime_kill else 'off'})",
        )
    should_kill = started & (walltime_kill & (run > wall))
    if "killed" in jobs:
        flag = j_col("killed", bool)
        for i in np.flatnonzero(started & ~cancelled & (flag != should_kill))[:20]:
            report.add(
                start[i],
                "killed",
                f"job {int(ids[i])} (started at {start[i]:.15g}): killed flag is {bool(flag[i])}, "
                f"expected {bool(should_kill[i])}",
            )

    # ---- statuses: every job ended the run completed, killed or rejected -------------------
    final = np.isin(status, FINAL_STATUSES)
    for i in np.flatnonzero(~final)[:20]:
        report.add(
            start[i] if started[i] else submit[i],
            "status",
            f"{job_name(i)} ends the run with status '{status[i]}'; every job ends it "
            f"{', '.join(FINAL_STATUSES[:-1])} or {FINAL_STATUSES[-1]}",
        )
    ran_status = (status == "completed") | (status == "killed")
    for i in np.flatnonzero(ran_status & ~(started & ended))[:20]:
        report.add(
            start[i] if started[i] else submit[i],
            "status",
            f"{job_name(i)} is '{status[i]}' but has start {start[i]:.15g} and end {end[i]:.15g} (a {status[i]} job "
            "started and ended)",
        )
    for i in np.flatnonzero(ran_status & started & ((status == "killed") != should_kill))[:20]:
        report.add(
            start[i],
            "status",
            f"{job_name(i)} is '{status[i]}', but it {'ran into' if should_kill[i] else 'did not run into'} its "
            f"wall-time (run time {run[i]:.15g}, wall-time {wall[i]:.15g}, kills {'on' if walltime_kill else 'off'})",
        )

    deadline_rules = "deadline" in workload and "earliest_start" in workload
    if cancelled.any() and not deadline_rules:
        for i in np.flatnonzero(cancelled)[:20]:
            report.add(
                submit[i],
                "cancelled",
                f"{job_name(i)} is cancelled, but the workload has no deadlines",
            )
    if deadline_rules:
        _check_deadlines(
            report,
            ids,
            submit,
            start,
            end,
            started,
            cancelled,
            expected,
            w_col("earliest_start", np.float64),
            w_col("deadline", np.float64),
            app,
            cancel_why,
        )

    # ---- rejections: declared by the dispatcher, always with a reason ----------------------
    if rejected.any():
        rej = np.flatnonzero(rejected)
        if "reject_reason" in jobs:
            reasons = np.char.strip(_texts(j_col("reject_reason")[rej]))
            for i in rej[reasons == ""][:20]:
                report.add(
                    submit[i],
                    "rejected",
                    f"{job_name(i)} (submitted at {submit[i]:.15g}) is rejected without a "
                    "reason (every rejection carries the dispatcher's reason)",
                )
        else:
            report.notes.append(
                f"the jobs table has no reject_reason column: the reasons of {len(rej)} rejected "
                f"job(s) ({_jobs(ids[rej])}) were not checked"
            )
        rejects = dispatcher_tags.get("rejects") if isinstance(dispatcher_tags, Mapping) else None
        if rejects is None:
            report.notes.append(
                f"the dispatcher's tags are unknown (no dispatcher_tags 'rejects'): whether it may "
                f"reject jobs is unknown; {len(rej)} rejected job(s) ({_jobs(ids[rej])}) were not checked "
                "against it"
            )
        elif not rejects:
            for i in rej[:20]:
                report.add(
                    submit[i],
                    "rejected",
                    f"{job_name(i)} (submitted at {submit[i]:.15g}) is rejected, but the "
                    "dispatcher's tags say it never rejects (rejects: false)",
                )

    # ---- allocations ----------------------------------------------------------------------
    a = allocations
    # ``common`` is sorted (``_sorted_unique``): a row's job position by binary search
    row_ids = a["job_id"]
    row_job = np.searchsorted(common, row_ids)
    known = row_job < len(common)
    known[known] = common[row_job[known]] == row_ids[known]
    if not known.all():
        report.add(
            -np.inf,
            "unknown",
            f"allocation rows for unknown jobs: {_jobs(np.unique(row_ids[~known]))}",
        )
        a = {name: values[known] for name, values in a.items()}
        row_job = row_job[known]
    del row_ids
    t_from = np.asarray(a["from"], np.float64)
    t_to = np.asarray(a["to"], np.float64)
    node, bad_node = _int_column(a["node"])
    units, bad_units = _int_column(a["units"])
    seg, bad_seg = _int_column(a["segment"])
    n_rows = len(row_job)
    amount_cols = [_int_column(a[r]) for r in resources]
    amounts = (
        np.stack([c[0] for c in amount_cols], axis=1)
        if n_rows
        else np.zeros((0, len(resources)), np.int64)
    )
    bad_amount_value = np.zeros(n_rows, bool)
    for _, bad in amount_cols:
        bad_amount_value |= bad
    del amount_cols
    for k in np.flatnonzero(bad_node | bad_units | bad_seg | bad_amount_value)[:20]:
        report.add(
            t_from[k],
            "row",
            f"job {int(ids[row_job[k]])}: an allocation row holds values that are not "
            f"integers (node {a['node'][k]}, units {a['units'][k]}, segment "
            f"{a['segment'][k]}, amounts {[a[r][k] for r in resources]})",
        )
    n_common = len(common)
    unit_req = np.stack([w_col(f"unit_{r}", np.int64) for r in resources], axis=1)
    max_pn = (
        w_col("max_units_per_node", np.int64)
        if "max_units_per_node" in workload
        else np.zeros(n_common, np.int64)
    )
    per_node = np.stack(
        [
            w_col(f"pernode_{r}", np.int64)
            if f"pernode_{r}" in workload
            else np.zeros(n_common, np.int64)
            for r in resources
        ],
        axis=1,
    )
    node_count = (
        w_col("node_count", np.int64) if "node_count" in workload else np.zeros(n_common, np.int64)
    )
    contiguous = w_col("contiguous", bool) if "contiguous" in workload else np.zeros(n_common, bool)

    out_of_range = ((node < 0) | (node >= system.n_nodes)) & ~bad_node
    for k in np.flatnonzero(out_of_range)[:20]:
        report.add(
            t_from[k],
            "node",
            f"job {int(ids[row_job[k]])} uses node {int(node[k])} from {t_from[k]:.15g}, the "
            f"system has {system.n_nodes} "
            f"(nodes 0 to {system.n_nodes - 1})",
        )
    # every row holds its node from a finite ``from`` to a finite, later ``to``
    bad_times = ~(np.isfinite(t_from) & np.isfinite(t_to) & (t_to > t_from))
    for k in np.flatnonzero(bad_times)[:20]:
        report.add(
            t_from[k],
            "time",
            f"job {int(ids[row_job[k]])} holds node {int(node[k])} from {t_from[k]:.15g} to {t_to[k]:.15g} (segment "
            f"{int(seg[k])}): an allocation row needs finite times, 'to' after 'from'",
        )
    expected_amounts = units[:, None] * unit_req[row_job] + per_node[row_job]
    # a per-core dispatcher's deadline jobs hold cores: a c-th of their whole-node unit each
    per_core = bool(tags.get("per_core", False)) and app.any()
    cores_per_node = _node_cores(system, resources) if per_core else 1
    core_rows = app[row_job] if per_core else np.zeros(len(row_job), bool)
    if per_core:
        expected_amounts[core_rows] //= cores_per_node
    bad_amount = (amounts != expected_amounts).any(axis=1) | (units <= 0)
    del expected_amounts
    for k in np.flatnonzero(bad_amount)[:20]:
        extra = per_node[row_job[k]]
        report.add(
            t_from[k],
            "amount",
            f"job {int(ids[row_job[k]])} on node {int(node[k])} from {t_from[k]:.15g}: "
            f"{int(units[k])} unit(s) but amounts "
            f"{amounts[k].tolist()} (per-unit request {unit_req[row_job[k]].tolist()}"
            + (f", per-node request {extra.tolist()})" if extra.any() else ")"),
        )
    seg0 = seg == 0
    for k in np.flatnonzero(seg < 0)[:20]:
        report.add(
            t_from[k],
            "segment",
            f"job {int(ids[row_job[k]])} holds node {int(node[k])} in allocation segment "
            f"{int(seg[k])} (segments are numbered from 0)",
        )
    # units per job in segment 0 and agreement with start/end
    units_first = np.bincount(row_job[seg0], weights=units[seg0], minlength=len(common))
    req_units = w_col("units", np.int64)
    # a forking dispatcher may start a deadline job on fewer nodes (the leak's partial start)
    partial_ok = app & forks & (units_first >= 1) & (units_first <= req_units)
    # a static strategy may book a dynamic job's peak (static_request=peak): its nodes for
    # ceil(3n/2) processes, at most ceil(3 x request / 2) nodes and the machine
    peak_ok = (
        app
        & ~forks
        & (units_first >= req_units)
        & (units_first <= np.minimum(-(-3 * req_units // 2), len(system.capacity)))
    )
    # per core: 1 to the request's cores at the start (_check_per_core has the capacity rule)
    core_ok = (
        app
        & bool(tags.get("per_core", False))
        & (units_first >= 1)
        & (units_first <= req_units * _node_cores(system, resources))
    )
    wrong_units = started & (units_first != req_units) & ~partial_ok & ~peak_ok & ~core_ok
    for i in np.flatnonzero(wrong_units)[:20]:
        report.add(
            start[i],
            "units",
            f"job {int(ids[i])} got {int(units_first[i])} unit(s) at its start at {start[i]:.15g}, it requests "
            f"{int(req_units[i])}",
        )
    rows_per_job = np.bincount(row_job, minlength=len(common))
    has_rows = rows_per_job > 0
    for i in np.flatnonzero(~started & has_rows & ~rejected)[:20]:
        report.add(submit[i], "never", f"job {int(ids[i])} has allocation rows but no start time")
    if rejected.any():
        first_row = np.full(len(common), -1, np.int64)
        first_row[row_job[::-1]] = np.arange(len(row_job))[::-1]
        for i in np.flatnonzero(rejected & has_rows)[:20]:
            k = first_row[i]
            report.add(
                t_from[k],
                "rejected",
                f"{job_name(i)} is marked rejected but holds {int(rows_per_job[i])} "
                f"allocation row(s) (node {int(node[k])} from {t_from[k]:.15g})",
            )
    first_from_mismatch = seg0 & (np.abs(t_from - start[row_job]) > TOL)
    for k in np.flatnonzero(first_from_mismatch)[:20]:
        i = row_job[k]
        report.add(
            t_from[k],
            "twice",
            f"job {int(ids[i])} holds node {int(node[k])} from {t_from[k]:.15g}, but started at "
            f"{start[i]:.15g} (started twice?)",
        )
    later = ~seg0 & ((t_from < start[row_job] - TOL) | (t_from >= end[row_job]))
    for k in np.flatnonzero(later)[:20]:
        report.add(
            t_from[k],
            "segment",
            f"job {int(ids[row_job[k]])}: allocation segment {int(seg[k])} on node "
            f"{int(node[k])} starts at {t_from[k]:.15g}, outside its run "
            f"[{start[row_job[k]]:.15g}, {end[row_job[k]]:.15g})",
        )
    # a deadline job's row may end before its job (a node given back at a join)
    to_mismatch = np.where(
        app[row_job], t_to > end[row_job] + TOL, np.abs(t_to - end[row_job]) > TOL
    )
    for k in np.flatnonzero(to_mismatch)[:20]:
        report.add(
            t_to[k],
            "release",
            f"job {int(ids[row_job[k]])} releases node {int(node[k])} at {t_to[k]:.15g}, but ended "
            f"at {end[row_job[k]]:.15g}",
        )
    # (job, segment, node) listed twice; units per (job, node) over all segments -- one int64
    # key per row, sorted (numpy, not pandas: a million rows hash into hundreds of MB)
    # (nodes outside the system, reported above, share one key; segment numbers are ranked so
    # that any int64 value keeps the key within int64)
    width = int(system.n_nodes) + 1
    pair = row_job.astype(np.int64) * width + np.clip(node, 0, width - 1)
    seg_key = np.maximum(seg, 0)
    if len(seg) and int(seg_key.max()) >= len(seg):
        seg_key = np.unique(seg_key, return_inverse=True)[1].astype(np.int64)
    n_segs = int(seg_key.max()) + 1 if len(seg) else 1
    triple = pair * n_segs + seg_key
    order = np.argsort(triple, kind="stable")
    twice = order[1:][triple[order[1:]] == triple[order[:-1]]]
    del triple, order
    for k in np.sort(twice)[:20]:
        report.add(
            t_from[k],
            "node-twice",
            f"job {int(ids[row_job[k]])} lists node {int(node[k])} twice in segment {int(seg[k])} "
            f"(from {t_from[k]:.15g})",
        )
    if app.any():  # a deadline job holds a node at most once at a time (one unit: the whole node)
        rows_app = np.flatnonzero(app[row_job])
        o = rows_app[np.lexsort((t_from[rows_app], pair[rows_app]))]
        again = np.flatnonzero((pair[o][1:] == pair[o][:-1]) & (t_from[o][1:] < t_to[o][:-1] - TOL))
        for q in again[:20]:
            k = o[q + 1]
            report.add(
                t_from[k],
                "per-node",
                f"job {int(ids[row_job[k]])} takes node {int(node[k])} at {t_from[k]:.15g} "
                f"while it still holds it (until {t_to[o[q]]:.15g})",
            )
    if (max_pn > 0).any():
        pair = np.where(
            app[row_job], -1 - np.arange(len(pair)), pair
        )  # deadline jobs: checked above, per instant
        order = np.argsort(pair, kind="stable")
        sorted_pair = pair[order]
        first_of_pair = (
            np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]])
            if len(pair)
            else np.zeros(0, np.int64)
        )
        pair_units = (
            np.add.reduceat(units[order], first_of_pair) if len(pair) else np.zeros(0, np.int64)
        )
        pair_job = row_job[order[first_of_pair]]
        pair_node = node[order[first_of_pair]]
        limit = max_pn[pair_job]
        limit = np.where(core_rows[order[first_of_pair]], 0, limit)  # per core: cores per node
        for k in np.flatnonzero((limit > 0) & (pair_units > limit))[:20]:
            ji = int(pair_job[k])
            report.add(
                start[ji],
                "per-node",
                f"job {int(ids[ji])} has {int(pair_units[k])} unit(s) on node {int(pair_node[k])} (started at "
                f"{start[ji]:.15g}), at most {int(max_pn[ji])} allowed",
            )
        del order, sorted_pair
    del pair

    # ---- later segments: growth grants, each explained by a growth request ----------------------
    later_app = (seg > 0) & app[row_job]
    if (seg > 0).any():
        if later_app.any():
            _check_forks(
                report,
                system,
                forks,
                bool(tags.get("contiguous_grants", False)),
                ids,
                row_job,
                seg,
                node,
                units,
                t_from,
                t_to,
                later_app,
            )
        if (later_app != (seg > 0)).any():
            other = ~later_app
            _check_growth(
                report,
                growth,
                ids,
                start,
                row_job[other],
                seg[other],
                node[other],
                units[other],
                t_from[other],
            )

    # ---- Slurm-style constraints on the first segment ------------------------------------------
    if (node_count > 0).any() or contiguous.any():
        # the distinct (job, node) pairs of first segments: per job, how many nodes and their span
        pairs = np.unique(np.stack([row_job[seg0], node[seg0]], axis=1), axis=0)
        n_used = np.bincount(pairs[:, 0], minlength=len(common))
        lowest = np.full(len(common), np.iinfo(np.int64).max)
        highest = np.full(len(common), np.iinfo(np.int64).min)
        np.minimum.at(lowest, pairs[:, 0], pairs[:, 1])
        np.maximum.at(highest, pairs[:, 0], pairs[:, 1])
        for ji in np.flatnonzero((node_count > 0) & started):
            used = int(n_used[ji])
            if used != node_count[ji]:
                report.add(
                    start[ji],
                    "node-count",
                    f"job {int(ids[ji])} uses {used} node(s) from {start[ji]:.15g}, it requests "
                    f"exactly {int(node_count[ji])}",
                )
        for ji in np.flatnonzero(contiguous & started):
            if n_used[ji] and int(highest[ji] - lowest[ji] + 1) != int(n_used[ji]):
                nodes_used = pairs[pairs[:, 0] == ji, 1]  # (sorted: np.unique's order)
                report.add(
                    start[ji],
                    "contiguous",
                    f"job {int(ids[ji])} requests contiguous nodes, it uses nodes {_ids(np.asarray(nodes_used), 8)} "
                    f"from {start[ji]:.15g}",
                )

    # ---- capacity sweep -------------------------------------------------------------------
    # A row whose ``from`` / ``to`` is not finite (reported above) still holds its node: for the
    # sweep it runs from its job's start (first segment) to its job's end when those are finite.
    # Rows left out -- a node out of range or not an integer, no finite interval even so -- are
    # all reported.
    sweep_from, sweep_to = t_from, t_to
    if bad_times.any():
        sweep_from = np.where(np.isfinite(t_from), t_from, np.where(seg0, start[row_job], np.nan))
        sweep_to = np.where(np.isfinite(t_to), t_to, end[row_job])
    ok_rows = (
        ~out_of_range
        & ~bad_node
        & np.isfinite(sweep_from)
        & np.isfinite(sweep_to)
        & (sweep_to > sweep_from)
    )
    if per_core:  # per-core rows: their own rule instead of the whole-node ones
        _check_per_core(
            report,
            cores_per_node,
            int(system.n_nodes),
            node[ok_rows & core_rows],
            sweep_from[ok_rows & core_rows],
            sweep_to[ok_rows & core_rows],
            units[ok_rows & core_rows],
            row_job[ok_rows & core_rows],
            ids,
        )
        ok_rows = ok_rows & ~core_rows
    if ok_rows.any():
        sel = (
            slice(None) if ok_rows.all() else ok_rows
        )  # the usual case: views, not copies of a million rows
        _capacity_sweep(
            report,
            system,
            cap,
            resources,
            node[sel],
            sweep_from[sel],
            sweep_to[sel],
            amounts[sel],
            ids[row_job[sel]],
        )
        if "whole_nodes" in workload:
            whole = w_col("whole_nodes", bool)
            if whole.any():
                _check_exclusive(
                    report, node[sel], sweep_from[sel], sweep_to[sel], row_job[sel], whole, ids
                )
    if bookings is not None:
        _check_bookings(
            report,
            bookings,
            ids,
            start,
            end,
            started,
            row_job,
            seg0,
            node,
            t_from,
            w_col("deadline", np.float64) if deadline_rules else np.full(len(ids), np.inf),
            cancelled & (cancel_why == CONFLICT),
        )
        if shape is not None and "whole_nodes" in workload:
            _check_shapes(report, system, shape, bookings, ids, w_col("whole_nodes", bool))
    report.violations.sort()
    return report


def _check_forks(
    report: ValidationReport,
    system: System,
    forks: bool,
    contiguous: bool,
    ids: np.ndarray,
    row_job: np.ndarray,
    seg: np.ndarray,
    node: np.ndarray,
    units: np.ndarray,
    t_from: np.ndarray,
    t_to: np.ndarray,
    later: np.ndarray,
) -> None:
    """Later segments of deadline jobs are fork grants: only from a dispatcher tagged
    ``forks``, one unit (one whole node) each; with ``contiguous_grants`` each granted node
    is a 4-neighbour of a node the job held when it was granted (its rows with
    ``from <= t <= to``: a node given back at ``t`` was still held when the forks of ``t``
    were placed)."""
    rows = np.flatnonzero(later)
    if not forks:
        for k in rows[:20]:
            report.add(
                t_from[k],
                "fork",
                f"job {int(ids[row_job[k]])} holds node {int(node[k])} from {t_from[k]:.15g} "
                f"in segment {int(seg[k])}, but its dispatcher does not grant forks",
            )
        return
    for k in rows[units[rows] != 1][:20]:
        report.add(
            t_from[k],
            "fork",
            f"job {int(ids[row_job[k]])}: fork grant of {int(units[k])} unit(s) on node "
            f"{int(node[k])} at {t_from[k]:.15g} (a grant is one whole node)",
        )
    if not contiguous:
        return
    topo = system.topology
    cols = topo.grid.cols if topo.is_grid else system.n_nodes
    torus = topo.kind == "torus2d"
    rows_n = system.n_nodes // cols
    by_job: dict[int, np.ndarray] = {}
    order = np.argsort(row_job, kind="stable")
    bounds = np.flatnonzero(np.r_[True, row_job[order][1:] != row_job[order][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        by_job[int(row_job[order[a]])] = order[a:b]
    found = 0
    for k in rows.tolist():
        mine = by_job[int(row_job[k])]
        t = t_from[k]
        held = mine[(mine != k) & (t_from[mine] <= t + TOL) & (t_to[mine] >= t - TOL)]
        r0, c0 = divmod(int(node[k]), cols)
        r1, c1 = np.divmod(node[held], cols)
        dr, dc = np.abs(r1 - r0), np.abs(c1 - c0)
        if torus:
            dr, dc = np.minimum(dr, rows_n - dr), np.minimum(dc, cols - dc)
        if not ((dr + dc) == 1).any():
            report.add(
                t,
                "fork",
                f"job {int(ids[row_job[k]])} was granted node {int(node[k])} at {t:.15g}, which touches "
                "none of its nodes (the contiguous leak grows over neighbours)",
            )
            found += 1
            if found >= 20:
                return


def _check_deadlines(
    report: ValidationReport,
    ids: np.ndarray,
    submit: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    started: np.ndarray,
    cancelled: np.ndarray,
    expected: np.ndarray,
    earliest: np.ndarray,
    deadline: np.ndarray,
    app: np.ndarray | None = None,
    cancel_why: np.ndarray | None = None,
) -> None:
    """Deadline workloads: no start before ``max(submit, earliest start)``; no started job
    ends after its deadline; a cancelled job ends exactly at its deadline -- or, cancelled
    for a ``booking-conflict``, at the end of its booking (:func:`_check_bookings`) -- and,
    when it had started and has no application model, would have run past it
    (``start + its length > deadline``; a job with one runs as long as the model says)."""
    if app is None:
        app = np.zeros(len(ids), bool)
    conflict = np.zeros(len(ids), bool) if cancel_why is None else (cancel_why == CONFLICT)
    ready = np.maximum(submit, np.nan_to_num(earliest, nan=-np.inf))
    for i in np.flatnonzero(started & (start < ready - TOL))[:20]:
        report.add(
            start[i],
            "earliest-start",
            f"job {int(ids[i])} started at {start[i]:.15g}, before its earliest "
            f"start {ready[i]:.15g}",
        )
    late = started & np.isfinite(end) & (end > deadline + TOL)
    for i in np.flatnonzero(late)[:20]:
        report.add(
            end[i],
            "deadline",
            f"job {int(ids[i])} ended at {end[i]:.15g}, after its deadline {deadline[i]:.15g}",
        )
    off = cancelled & ~conflict & ~(np.abs(end - deadline) <= TOL)
    for i in np.flatnonzero(off)[:20]:
        report.add(
            end[i] if np.isfinite(end[i]) else submit[i],
            "cancelled",
            f"job {int(ids[i])} is cancelled at {end[i]:.15g}, not at its deadline {deadline[i]:.15g}",
        )
    early_cut = cancelled & started & ~app & ~(start + expected > deadline + TOL)
    for i in np.flatnonzero(early_cut)[:20]:
        report.add(
            start[i],
            "cancelled",
            f"job {int(ids[i])} started at {start[i]:.15g} and would have ended by its "
            f"deadline {deadline[i]:.15g}, but is cancelled",
        )


def _node_cores(system: System, resources: Any) -> int:
    """The cores of a node (the ``core`` resource's largest capacity; 1 without one)."""
    res = list(resources)
    if "core" not in res:
        return 1
    return max(1, int(np.asarray(system.capacity)[:, res.index("core")].max()))


def _check_per_core(
    report: ValidationReport,
    cores: int,
    n_nodes: int,
    node: np.ndarray,
    t_from: np.ndarray,
    t_to: np.ndarray,
    units: np.ndarray,
    row_job: np.ndarray,
    ids: np.ndarray,
) -> None:
    """The per-core capacity rule of a per-core dispatcher's deadline jobs (the leak's
    ``overbook``; rows given: theirs only, units = cores). Replayed in time order, a node's
    rows releasing before rows starting at one instant, a job's rows starting together: the
    cores held on a node never exceed its ``cores``, except by a **time-shared start** -- a
    job starting on exactly one core of one node while no node of the machine had a free
    core, on a node holding the fewest cores then."""
    if len(node) == 0:
        return
    held = np.zeros(n_nodes, dtype=np.int64)
    ends = np.argsort(t_to, kind="stable")
    starts = np.lexsort((np.arange(len(node)), t_from))
    e = 0
    found = 0
    k = 0
    m = len(starts)
    while k < m:
        r0 = int(starts[k])
        t, j = float(t_from[r0]), int(row_job[r0])
        group = [r0]
        k += 1
        while k < m and int(row_job[starts[k]]) == j and float(t_from[starts[k]]) == t:
            group.append(int(starts[k]))
            k += 1
        while e < len(ends) and t_to[ends[e]] <= t + TOL:
            r = int(ends[e])
            if t_from[r] <= t:  # (rows starting later than t are not held yet)
                held[node[r]] -= units[r]
            e += 1
        over = [r for r in group if held[node[r]] + units[r] > cores]
        if over:
            r = group[0]
            shared = (
                len(group) == 1
                and int(units[r]) == 1
                and int(held.min()) >= cores
                and held[node[r]] == held.min()
            )
            if not shared:
                report.add(
                    t,
                    "per-core",
                    f"job {int(ids[j])} takes {int(units[over[0]])} core(s) of node "
                    f"{int(node[over[0]])} at {t:.15g}, which holds {int(held[node[over[0]]])} "
                    f"of {cores} (beyond its cores only as a time-shared start: one core on a "
                    "least-loaded node while no node has a free core)",
                )
                found += 1
                if found >= 20:
                    return
        for r in group:
            held[node[r]] += units[r]


def _check_exclusive(
    report: ValidationReport,
    node: np.ndarray,
    t_from: np.ndarray,
    t_to: np.ndarray,
    row_job: np.ndarray,
    whole: np.ndarray,
    ids: np.ndarray,
) -> None:
    """A job that takes whole nodes (``whole_nodes``: deadline jobs) shares none of them, at
    any instant, with another job (rows sorted per node by start; a row that begins before the
    latest end so far on its node overlaps)."""
    order = np.lexsort((t_from, node))
    found = 0
    last_node, last_to, last_job = -1, -np.inf, -1
    for k in order.tolist():
        n, a, b, j = int(node[k]), float(t_from[k]), float(t_to[k]), int(row_job[k])
        if n != last_node:
            last_node, last_to, last_job = n, b, j
            continue
        if a < last_to - TOL and j != last_job and (whole[j] or whole[last_job]):
            report.add(
                a,
                "exclusive",
                f"job {int(ids[j])} uses node {n} from {a:.15g} while job {int(ids[last_job])} "
                f"holds it until {last_to:.15g} (deadline jobs take whole nodes)",
            )
            found += 1
            if found >= 20:
                return
        if b > last_to:
            last_to, last_job = b, j


def _check_bookings(
    report: ValidationReport,
    bookings: Columns,
    ids: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    started: np.ndarray,
    row_job: np.ndarray,
    seg0: np.ndarray,
    node: np.ndarray,
    t_from: np.ndarray,
    deadline: np.ndarray,
    conflict: np.ndarray | None = None,
) -> None:
    """Advance reservations: every started job has one booking and started at its booked
    start on exactly its booked nodes, made no later than that start, ending by its deadline;
    the job ended by its booked end, and gave the nodes back (``released``) no earlier than it
    ended; bookings never overlap on a node (each held until it was released). A job
    cancelled for a ``booking-conflict`` (``conflict``) ends exactly at its booking's end,
    when another booking on one of its nodes begins."""
    missing = [
        c for c in ("job_id", "made", "start", "end", "released", "node") if c not in bookings
    ]
    if missing:
        report.add(-np.inf, "table", f"the bookings table has no column '{missing[0]}'")
        return
    b_job = np.asarray(bookings["job_id"], np.int64)
    b_pos = np.searchsorted(ids, b_job)
    known = (
        (b_pos < len(ids)) & (ids[np.minimum(b_pos, len(ids) - 1)] == b_job)
        if len(ids)
        else np.zeros(len(b_job), bool)
    )
    for j in np.unique(b_job[~known])[:20]:
        report.add(
            -np.inf, "booking", f"a booking names job {int(j)}, which is not in the workload"
        )
    b_start = np.asarray(bookings["start"], np.float64)
    b_end = np.asarray(bookings["end"], np.float64)
    b_made = np.asarray(bookings["made"], np.float64)
    b_rel = np.asarray(bookings["released"], np.float64)
    b_node = np.asarray(bookings["node"], np.int64)
    booked_nodes: dict[int, set[int]] = {}
    booked_at: dict[int, tuple[float, float, float, float]] = {}
    for k in np.flatnonzero(known).tolist():
        i = int(b_pos[k])
        booked_nodes.setdefault(i, set()).add(int(b_node[k]))
        times = (float(b_start[k]), float(b_end[k]), float(b_made[k]), float(b_rel[k]))
        if booked_at.setdefault(i, times) != times:
            report.add(
                b_start[k],
                "booking",
                f"job {int(ids[i])} has two bookings ({booked_at[i][:2]} and {times[:2]})",
            )
    used: dict[int, set[int]] = {}
    for k in np.flatnonzero(seg0).tolist():
        used.setdefault(int(row_job[k]), set()).add(int(node[k]))
    for i in np.flatnonzero(started).tolist():
        if i not in booked_at:
            report.add(
                start[i],
                "booking",
                f"job {int(ids[i])} started at {start[i]:.15g} without a booking",
            )
            continue
        b0, b1, made, rel = booked_at[i]
        if abs(start[i] - b0) > TOL:
            report.add(
                start[i],
                "booking",
                f"job {int(ids[i])} started at {start[i]:.15g}, its booking starts at {b0:.15g}",
            )
        if used.get(i, set()) != booked_nodes[i]:
            report.add(
                start[i],
                "booking",
                f"job {int(ids[i])} runs on nodes {_ids(np.array(sorted(used.get(i, set()))), 8)}, "
                f"it booked nodes {_ids(np.array(sorted(booked_nodes[i])), 8)}",
            )
        if end[i] > b1 + TOL or rel < end[i] - TOL:
            report.add(
                end[i],
                "booking",
                f"job {int(ids[i])} ran until {end[i]:.15g}, its booking [{b0:.15g}, {b1:.15g}) "
                f"was released at {rel:.15g}",
            )
    if conflict is not None and conflict.any():
        starts_on: dict[int, set[float]] = {}
        for k in np.flatnonzero(known).tolist():
            starts_on.setdefault(int(b_node[k]), set()).add(float(b_start[k]))
        for i in np.flatnonzero(conflict & started).tolist():
            b1 = booked_at[i][1] if i in booked_at else np.nan
            hit = any(
                any(abs(s0 - end[i]) <= TOL for s0 in starts_on.get(n, ()))
                for n in booked_nodes.get(i, ())
            )
            if not abs(end[i] - b1) <= TOL or not hit:
                report.add(
                    end[i],
                    "cancelled",
                    f"job {int(ids[i])} is cancelled for a booking conflict at {end[i]:.15g}, "
                    f"but its booking ends at {b1:.15g} or no other booking on its nodes "
                    "begins then",
                )
    for i, (b0, b1, made, rel) in booked_at.items():
        if (
            made > b0 + TOL
            or b1 > deadline[i] + TOL
            or not b0 < b1
            or not b0 - TOL <= rel <= b1 + TOL
        ):
            report.add(
                b0,
                "booking",
                f"job {int(ids[i])}'s booking made at {made:.15g} for [{b0:.15g}, {b1:.15g}) "
                f"(released {rel:.15g}) is not a window that starts after it was made and ends "
                f"by the deadline {deadline[i]:.15g}",
            )
    # bookings never overlap on a node: per node, intervals [start, released) in start order
    sel = np.flatnonzero(known)
    order = sel[np.lexsort((b_start[sel], b_node[sel]))]
    last_node, last_to, last_job = -1, -np.inf, -1
    for k in order.tolist():
        n, a, r, j = int(b_node[k]), float(b_start[k]), float(b_rel[k]), int(b_job[k])
        if n == last_node and a < last_to - TOL:
            report.add(
                a,
                "booking",
                f"job {j}'s booking of node {n} from {a:.15g} overlaps job {last_job}'s "
                f"(held until {last_to:.15g})",
            )
        if n != last_node or r > last_to:
            last_node, last_to, last_job = n, r, j


#: the shape rule of each booking strategy that has one (count-only books any free nodes)
SHAPE_RULES = {"hilbert": "hilbert", "manhattan": "manhattan"}


def shape_rule(identity: Any) -> str | None:
    """The shape rule a run's bookings must follow, from the dispatcher's identity
    (``{"name": ..., "params": ...}`` as ``run.json`` records it): ``"hilbert"``,
    ``"manhattan"`` or ``None``."""
    name = identity.get("name") if isinstance(identity, Mapping) else None
    return SHAPE_RULES.get(name) if isinstance(name, str) else None


def _curve_positions(rows: int, cols: int) -> np.ndarray:
    """Every node's position (row-major node id -> position) on the Hilbert curve of a
    ``rows x cols`` grid as Slurm ranks it: the curve through the enclosing ``2^k`` square,
    the coordinate along the shorter side as the curve's ``x``, cells outside the grid left
    out. Walked from the curve index (the classic ``d2xy``), not from the nodes."""
    side = 1
    while side < max(rows, cols):
        side *= 2
    d = np.arange(side * side, dtype=np.int64)
    x = np.zeros_like(d)
    y = np.zeros_like(d)
    t = d.copy()
    s = 1
    while s < side:
        rx = (t // 2) & 1
        ry = (t ^ rx) & 1
        turn = ry == 0
        flip = turn & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        x, y = np.where(turn, y, x), np.where(turn, x, y)
        x = x + s * rx
        y = y + s * ry
        t //= 4
        s *= 2
    r, c = (x, y) if rows <= cols else (y, x)
    inside = (r < rows) & (c < cols)
    walk = (r * cols + c)[inside]  # nodes in curve order
    pos = np.empty(rows * cols, dtype=np.int64)
    pos[walk] = np.arange(len(walk))
    return pos


def _connected(nodes: Sequence[int], rows: int, cols: int, torus: bool) -> bool:
    """Whether ``nodes`` form one piece of the grid under 4-neighbourhood (a torus adds the
    wrap-around links of every axis of length >= 3)."""
    left = set(nodes)
    if not left:
        return True
    todo = [left.pop()]
    while todo:
        n = todo.pop()
        r, c = divmod(n, cols)
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if torus:
                rr = rr % rows if rows >= 3 else rr
                cc = cc % cols if cols >= 3 else cc
            if 0 <= rr < rows and 0 <= cc < cols and rr * cols + cc in left:
                left.discard(rr * cols + cc)
                todo.append(rr * cols + cc)
    return not left


def _check_shapes(
    report: ValidationReport,
    system: System,
    rule: str,
    bookings: Columns,
    ids: np.ndarray,
    whole: np.ndarray,
) -> None:
    """Each whole-node job's booked nodes follow the strategy's shape rule: ``hilbert``,
    consecutive positions of the grid's Hilbert curve; ``manhattan``, one 4-connected piece."""
    topo = system.topology
    if not topo.is_grid:
        report.add(
            -np.inf,
            "booking",
            f"the bookings follow the {rule} shape rule, but system {system.name} is not a 2-D grid",
        )
        return
    rows, cols = (int(v) for v in topo.shape)
    b_job = np.asarray(bookings["job_id"], np.int64)
    b_node = np.asarray(bookings["node"], np.int64)
    b_pos = np.searchsorted(ids, b_job)
    known = (
        (b_pos < len(ids)) & (ids[np.minimum(b_pos, len(ids) - 1)] == b_job)
        if len(ids)
        else np.zeros(len(b_job), bool)
    )
    known &= (b_node >= 0) & (b_node < rows * cols)  # (other rules report unknown jobs and nodes)
    nodes_of: dict[int, list[int]] = {}
    for k in np.flatnonzero(known).tolist():
        if whole[b_pos[k]]:
            nodes_of.setdefault(int(b_pos[k]), []).append(int(b_node[k]))
    positions = _curve_positions(rows, cols) if rule == "hilbert" else None
    for i, nodes in nodes_of.items():
        nodes = sorted(set(nodes))
        if positions is not None:
            p = np.sort(positions[nodes])
            if p[-1] - p[0] != len(p) - 1:
                report.add(
                    -np.inf,
                    "booking",
                    f"job {int(ids[i])} booked nodes {_ids(np.array(nodes), 8)}: not consecutive "
                    f"positions of the Hilbert curve (positions {_ids(p, 8)})",
                )
        elif not _connected(nodes, rows, cols, topo.kind == "torus2d"):
            report.add(
                -np.inf,
                "booking",
                f"job {int(ids[i])} booked nodes {_ids(np.array(nodes), 8)}: not one "
                "4-connected piece of the grid",
            )


def _int_column(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as int64, and where its values are not integers (NaN, inf, 2.5, a
    text: read as 0 there, and reported by the caller)."""
    column = np.asarray(column)
    if column.dtype.kind in "iu":
        return column.astype(np.int64, copy=False), np.zeros(len(column), bool)
    if column.dtype.kind in "fb":
        values = column.astype(np.float64)
    else:  # texts, None: what is not a number is NaN (pandas' reading of numbers, as before)
        import pandas as pd

        values = pd.to_numeric(pd.Series(column, dtype=object), errors="coerce").to_numpy(
            np.float64
        )
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values != np.round(values))
    return np.where(bad, 0, values).astype(np.int64), bad


#: a table as the validator takes it: a pandas frame (a run directory read back) or columns
#: by name (a result's own arrays, without pandas)
Table = Union["pd.DataFrame", Mapping[str, Any]]
Columns = dict[str, np.ndarray]


def _columns(table: Table) -> Columns:
    """``table``'s columns as numpy arrays, by name (a frame's are read once, without copies
    where pandas can)."""
    if isinstance(table, Mapping):
        return {str(name): np.asarray(values) for name, values in table.items()}
    columns = {}
    for name in table.columns:
        column = table[name]
        if column.dtype.kind in "iufb":  # (numpy's numbers and booleans: shared, not copied)
            columns[str(name)] = column.to_numpy()
        else:  # texts, objects, pandas' own types: missing values (NA, NaT, NaN) as None
            columns[str(name)] = column.to_numpy(dtype=object, na_value=None)
    return columns


def _n_rows(columns: Columns) -> int:
    return len(next(iter(columns.values()))) if columns else 0


def _duplicated(values: np.ndarray) -> np.ndarray:
    """Where a value repeats one seen earlier in ``values`` (the first occurrence is not marked)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    dup = np.zeros(len(values), bool)
    dup[order[1:]] = ordered[1:] == ordered[:-1]
    return dup


def _texts(values: np.ndarray) -> np.ndarray:
    """Text values, a missing one (:func:`~hpcdispatch._util.text_or_none`: None, a NaN of any
    kind, pandas' NA) as ""."""
    return np.array(["" if t is None else t for t in map(text_or_none, values.tolist())], dtype=str)


def growth_requests(workload: Any) -> dict[int, list[tuple[float, int]]]:
    """Job id -> its growth requests ``(after, units)``, for the jobs of ``workload`` (a
    :class:`~hpcdispatch.workload.job.Workload`) that have any."""
    if (
        getattr(workload, "has_growth", True) is False
    ):  # (a Workload knows it: no loop over its jobs)
        return {}
    return {
        int(j.id): [(float(g.after), int(g.units)) for g in j.growth]
        for j in workload.jobs
        if j.growth
    }


def _request(r: Any) -> tuple[float, int]:
    if hasattr(r, "after"):
        return float(r.after), int(r.units)
    after, units = r
    return float(after), int(units)


def _check_growth(report, growth, ids, start, row_job, seg, node, units, t_from) -> None:
    """Every later allocation segment (``segment k >= 1``) is a granted growth request: the
    simulator meets a job's requests in order of ``after`` (ties: their order in the job) at
    exactly ``start + after``, and grants each with exactly its units or refuses it (no
    segment). So segment ``k`` is the ``k``-th granted request: segments ``1..K`` of a job match
    an increasing sequence of its requests, each by time and units."""
    later = np.flatnonzero(seg > 0)
    grown = np.unique(row_job[later])
    if growth is None:
        report.notes.append(
            "the workload's growth requests are unknown (not given, or its source not re-read): the later allocation "
            f"segments (segment >= 1) of {', '.join(f'job {int(ids[i])}' for i in grown[:5])}"
            + (f" ... ({len(grown)} jobs in all)" if len(grown) > 5 else "")
            + " were not checked against them"
        )
        return
    # number of requests per job position (jobs without requests: 0); a segment beyond it is a violation
    by_id = {int(k): [_request(r) for r in v] for k, v in growth.items() if len(v)}
    n_req = np.zeros(len(ids), np.int64)
    if by_id:
        keys = np.fromiter(by_id.keys(), np.int64, len(by_id))
        counts = np.fromiter((len(v) for v in by_id.values()), np.int64, len(by_id))
        pos = np.searchsorted(ids, keys)
        inside = pos < len(ids)
        inside[inside] = ids[pos[inside]] == keys[inside]
        n_req[pos[inside]] = counts[inside]
    beyond = later[seg[later] > n_req[row_job[later]]]
    for k in beyond[:20]:
        i = row_job[k]
        report.add(
            t_from[k],
            "growth",
            f"job {int(ids[i])} holds node {int(node[k])} in allocation segment {int(seg[k])} from {t_from[k]:.15g}, "
            f"but its workload entry has {int(n_req[i])} growth request(s): no grant explains it",
        )
    # jobs whose later segments are all within their number of requests: match them in order
    # (a loop over jobs that grow; their requests come from the workload, so it is bounded by it)
    bad_jobs = set(row_job[beyond].tolist())
    cand = later[n_req[row_job[later]] > 0]
    if not len(cand):
        return
    order = cand[np.lexsort((seg[cand], row_job[cand]))]
    found = 0
    boundaries = np.flatnonzero(np.r_[True, row_job[order][1:] != row_job[order][:-1], True])
    for b0, b1 in pairwise(boundaries):
        rows = order[b0:b1]
        i = int(row_job[rows[0]])
        if i in bad_jobs:
            continue
        job_id, t0 = int(ids[i]), float(start[i])
        requests = sorted(by_id[job_id], key=lambda r: r[0])  # stable: ties keep the job's order
        next_req = 0
        expected_seg = 1
        seg_rows = np.split(rows, np.flatnonzero(np.diff(seg[rows])) + 1)
        for srows in seg_rows:
            k = int(seg[srows[0]])
            at = float(t_from[srows[0]])
            got = int(units[srows].sum())
            problem = None
            if k != expected_seg:
                problem = (
                    f"allocation segment {k} from {at:.15g} on node(s) {_ids(node[srows], 8)}, "
                    f"but no segment {expected_seg}"
                )
            else:
                match = next(
                    (
                        p
                        for p in range(next_req, len(requests))
                        if abs(t0 + requests[p][0] - at) <= TOL * max(1.0, abs(at))
                        and requests[p][1] == got
                    ),
                    None,
                )
                if match is None:
                    left = (
                        ", ".join(f"after {a:.15g} s: {u} unit(s)" for a, u in requests[next_req:])
                        or "none"
                    )
                    problem = (
                        f"allocation segment {k} (from {at:.15g}, {got} unit(s) on node(s) "
                        f"{_ids(node[srows], 8)}) matches none of its remaining growth requests ({left}); "
                        f"a grant starts at start ({t0:.15g}) + after with exactly the requested units"
                    )
                else:
                    next_req = match + 1
                    off = srows[np.abs(t_from[srows] - at) > TOL * max(1.0, abs(at))]
                    if len(off):
                        problem = (
                            f"allocation segment {k} holds node {int(node[off[0]])} from {t_from[off[0]]:.15g}, "
                            f"its other nodes from {at:.15g}"
                        )
            if problem is not None:
                report.add(at, "growth", f"job {job_id}: {problem}")
                found += 1
                break
            expected_seg += 1
        if found >= 20:
            break


def _capacity_sweep(report, system, cap, resources, node, t_from, t_to, amounts, job_ids) -> None:
    # (temporaries dropped as soon as they are used: on a whole trace every array here has
    # millions of rows)
    m = len(node)
    times = np.concatenate([t_from, t_to])
    nodes = np.concatenate([node, node])
    # events ordered by node, then time, releases before acquisitions at one time: two stable
    # sorts (np.lexsort's order, in half its time), the releases (rows m..2m-1) put first
    releases_first = np.r_[np.arange(m, 2 * m), np.arange(m)]
    order = releases_first[np.argsort(times[releases_first], kind="stable")]
    del releases_first
    fits = m == 0 or (0 <= nodes.min() and nodes.max() <= np.iinfo(np.int16).max)
    small = nodes.astype(np.int16) if fits else nodes  # (int16: numpy sorts it by radix)
    order = order[np.argsort(small[order], kind="stable")]
    del small
    times, nodes = times[order], nodes[order]
    releases = order >= m
    usage = amounts[order % m]
    del order
    np.negative(usage, out=usage, where=releases[:, None])
    del releases
    np.cumsum(usage, axis=0, out=usage)
    group_start = np.r_[0, np.flatnonzero(nodes[1:] != nodes[:-1]) + 1]
    prior = np.vstack([np.zeros((1, usage.shape[1]), usage.dtype), usage[group_start[1:] - 1]])
    lengths = np.diff(np.r_[group_start, len(nodes)])
    usage -= np.repeat(prior, lengths, axis=0)
    over = usage > cap[nodes]
    if over.any():
        rows = np.nonzero(over)[0]
        first = rows[np.argsort(times[rows], kind="stable")][:20]
        seen = set()
        for k in first:
            r = int(np.flatnonzero(over[k])[0])
            n, t = int(nodes[k]), float(times[k])
            if (n, r) in seen:
                continue
            seen.add((n, r))
            holders = np.flatnonzero((node == n) & (t_from <= t) & (t_to > t) & (amounts[:, r] > 0))
            report.add(
                t,
                "capacity",
                f"node {n} ({system.node_name(n)}) at t={t:.15g}: {int(usage[k, r])} {resources[r]} in use, capacity "
                f"{int(cap[n, r])} (held by {_jobs(job_ids[holders])})",
            )
    if (usage < 0).any():
        k = int(np.flatnonzero((usage < 0).any(axis=1))[0])
        report.add(
            times[k],
            "internal",
            f"node {int(nodes[k])}: negative usage at t={times[k]:.15g} (inconsistent allocation rows)",
        )


def _sorted_unique(ids: np.ndarray, duplicated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``ids`` sorted, and where each first appears in ``ids``."""
    first = np.flatnonzero(~duplicated)
    order = first[np.argsort(ids[first], kind="stable")]
    return ids[order], order


def _in_sorted(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Boolean: whether each of ``values`` is in ``sorted_ids`` (sorted, unique)."""
    if len(sorted_ids) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return sorted_ids[at] == values


def _identity_or(positions: np.ndarray, n: int) -> np.ndarray | None:
    """``positions``, or ``None`` when they are ``0..n-1`` in order (no reindexing needed)."""
    if len(positions) == n and (n == 0 or (positions[0] == 0 and (np.diff(positions) == 1).all())):
        return None
    return positions


def validate(target: Any) -> ValidationReport:
    """Validate a :class:`~hpcdispatch.sim.result.SimulationResult` in memory, or a run's
    output directory (a path; its workload re-read from its source when possible)."""
    if isinstance(target, (str, Path)):
        return validate_run_dir(target)
    return validate_result(target)


def validate_result(result: Any) -> ValidationReport:
    """Validate an in-memory :class:`~hpcdispatch.sim.result.SimulationResult` (the dispatcher's
    tags from ``result.tags``, the growth requests from its workload's jobs)."""
    from hpcdispatch.results.store import workload_columns

    return validate_tables(
        result.system,
        workload_columns(result),
        result.jobs_columns(allocation_text=False),
        result.allocations_columns(),
        walltime_kill=result.options.walltime_kill,
        dispatcher_tags=result.tags or None,
        growth=growth_requests(result.workload),
        bookings=result.bookings_columns() if getattr(result, "bookings", None) else None,
        shape=shape_rule(result.dispatcher),
    )


def validate_run_dir(out_dir: str | Path, reload_workload: bool = True) -> ValidationReport:
    """Validate an output directory against what it can re-derive: the system ``run.json``
    names (a preset: the stored ``system.toml`` must equal it), the workload re-read from its
    source when possible (every stored column must equal it; its growth requests), and the
    summary recomputed from the tables."""
    from hpcdispatch.results.store import read_run
    from hpcdispatch.workload.loader import workload_from_source

    stored = read_run(out_dir)
    early: list[tuple[str, str]] = []  # (kind, message) found before the tables are checked
    notes: list[str] = []
    system_notes: list[str] = []
    system = _trusted_system(stored, early, system_notes)
    workload_table = stored.workload
    growth: Growth | None = None
    src = stored.run.get("workload", {})
    if reload_workload and src.get("kind") in ("swf", "synthetic", "slurm", "deadline-jsonl"):
        try:
            fresh = workload_from_source(src["kind"], src["spec"], src.get("options", {}), system)
        except HpcDispatchError as exc:
            notes.append(
                f"could not re-read the workload source ({exc}); checked against the stored workload table"
            )
        else:
            columns = _workload_table(fresh, system)
            mismatch = _compare_workloads(columns, workload_table, system)
            if mismatch:
                early.append(
                    (
                        "workload",
                        f"the stored workload differs from its source {src['spec']}: {mismatch}",
                    )
                )
            else:
                notes.append(
                    f"workload re-read from {src['spec']} and matches the stored one ({len(fresh)} jobs)"
                )
            extra = sorted(set(workload_table.columns) - set(columns))
            if extra:
                notes.append(
                    f"stored workload columns not derived from the source (not used): {', '.join(extra)}"
                )
            # the schedule is checked against the source, never against the stored copy
            workload_table = columns
            growth = growth_requests(fresh)
    else:
        why = (
            "not asked to"
            if not reload_workload
            else f"a '{src.get('kind')}' workload source cannot be re-read"
        )
        notes.append(f"workload not re-read ({why}); checked against the stored workload table")
    report = validate_tables(
        system,
        workload_table,
        stored.jobs,
        stored.allocations,
        walltime_kill=bool(stored.run.get("options", {}).get("walltime_kill", True)),
        dispatcher_tags=stored.run.get("dispatcher_tags"),
        growth=growth,
        bookings=stored.bookings,
        time_tolerance=float(stored.run.get("time_tolerance", 0.0)),
        shape=shape_rule(stored.run.get("dispatcher")),
    )
    if stored.run.get("time_tolerance"):
        notes.append(
            f"times checked with run.json's time_tolerance of {float(stored.run['time_tolerance']):.6g} s "
            "(starts before submission and durations only; capacity and allocations exact)"
        )
    for kind, message in early:
        report.add(-np.inf, kind, message)
    _check_summary(report, stored.summary, workload_table, stored.jobs)
    report.violations.sort()
    report.notes[:0] = notes + system_notes
    return report


def _trusted_system(stored: Any, problems: list[tuple[str, str]], notes: list[str]) -> System:
    """The system to validate against: the preset ``run.json`` names, or the system derived
    from the SWF header of its trace (``from-trace:...``) -- the stored ``system.toml`` must
    equal it -- else the stored one (said in the notes)."""
    from hpcdispatch.system.io import load_system, preset_names
    from hpcdispatch.workload.swf import system_from_swf_header

    name = stored.run.get("system")
    src = stored.run.get("workload", {})
    if isinstance(name, str) and name in preset_names():
        trusted, label = load_system(name), f"the preset '{name}' the run names"
    elif isinstance(name, str) and name.startswith("from-trace:") and src.get("kind") == "swf":
        try:
            trusted = system_from_swf_header(src["spec"])
        except HpcDispatchError as exc:
            notes.append(
                f"could not derive the system {name!r} from its trace ({exc}); checked against the "
                "stored system.toml"
            )
            trusted = None
        label = f"the system '{name}' derived from the SWF header of {src.get('spec')}"
    else:
        trusted = None
        notes.append(
            f"system {stored.system.name!r} is not a preset: checked against the stored system.toml"
        )
    if trusted is None:
        if isinstance(name, str) and name != stored.system.name:
            problems.append(
                (
                    "system",
                    (
                        f"run.json names the system {name!r}, the stored system.toml is "
                        f"{stored.system.name!r}"
                    ),
                )
            )
        return stored.system
    diff = _compare_systems(trusted, stored.system)
    if diff:
        problems.append(("system", f"the stored system.toml differs from {label}: {diff}"))
    return trusted


def _compare_systems(want: System, got: System) -> str:
    """The first difference of ``got`` (stored) from ``want`` (resources, node types in order:
    names, counts, capacities; topology), or ``""``."""
    if tuple(want.resources) != tuple(got.resources):
        return f"resources {list(got.resources)}, expected {list(want.resources)}"
    if len(want.node_types) != len(got.node_types):
        return f"{len(got.node_types)} node type(s), expected {len(want.node_types)}"
    for k, (w, g) in enumerate(zip(want.node_types, got.node_types)):
        if w.name != g.name:
            return f"node type {k} is named {g.name!r}, expected {w.name!r}"
        if w.count != g.count:
            return f"node type {g.name!r} has count = {g.count}, expected {w.count}"
        for r in want.resources:
            if int(w.capacity.get(r, 0)) != int(g.capacity.get(r, 0)):
                return (
                    f"node type {g.name!r} has capacity {r} = {int(g.capacity.get(r, 0))}, "
                    f"expected {int(w.capacity.get(r, 0))}"
                )
    if (want.topology.kind, tuple(want.topology.shape)) != (
        got.topology.kind,
        tuple(got.topology.shape),
    ):
        return (
            f"topology {got.topology.kind} {list(got.topology.shape)}, expected {want.topology.kind} "
            f"{list(want.topology.shape)}"
        )
    if want.n_nodes != got.n_nodes or not np.array_equal(
        want.capacity, got.capacity
    ):  # (implied by the above)
        return "node capacities differ"
    return ""


def _workload_table(fresh: Any, system: System) -> dict[str, np.ndarray]:
    """The workload table's columns, from the workload itself (every column the validator reads)."""
    data: dict[str, Any] = {
        "job_id": fresh.ids,
        "submit": fresh.submit,
        "run_time": fresh.run_time,
        "wall_time": fresh.wall_time,
        "units": fresh.units,
        "max_units_per_node": np.fromiter(
            (j.max_units_per_node for j in fresh.jobs), np.int64, len(fresh)
        ),
    }
    res = list(fresh.resources)
    for name in system.resources:
        data[f"unit_{name}"] = (
            fresh.unit_requests[:, res.index(name)]
            if name in res
            else np.zeros(len(fresh), np.int64)
        )
    data["node_count"] = fresh.node_counts
    data["contiguous"] = fresh.contiguous
    for name in system.resources:
        data[f"pernode_{name}"] = (
            fresh.per_node_requests[:, res.index(name)]
            if name in res
            else np.zeros(len(fresh), np.int64)
        )
    if fresh.has_deadlines:  # the validator's own reading of the jobs' windows
        data["earliest_start"] = np.array(
            [
                max(
                    float(j.submit),
                    -np.inf if j.earliest_start is None else float(j.earliest_start),
                )
                for j in fresh.jobs
            ],
            dtype=np.float64,
        )
        data["deadline"] = np.array(
            [np.inf if j.deadline is None else float(j.deadline) for j in fresh.jobs], np.float64
        )
        data["whole_nodes"] = np.array([j.app is not None for j in fresh.jobs], dtype=bool)
    return data


def _compare_workloads(fresh: dict[str, np.ndarray], table: pd.DataFrame, system: System) -> str:
    """The first difference between the stored workload table and the workload re-read from
    its source (``fresh``: :func:`_workload_table`), over every column the source determines
    (a column missing from the table is a difference, unless the source holds only its default
    there: zeros, False)."""
    ids = fresh["job_id"]
    if len(ids) != len(table):
        return f"{len(ids)} jobs in the source, {len(table)} stored"
    required = (
        "job_id",
        "submit",
        "run_time",
        "wall_time",
        "units",
        *(f"unit_{r}" for r in system.resources),
    )
    for col, values in fresh.items():
        values = np.asarray(values)
        if col not in table.columns:
            if col in required or values.any():
                return f"column {col} is missing from the stored workload"
            continue
        stored = table[col].to_numpy()
        diff = np.flatnonzero(stored != values)
        if len(diff):
            k = int(diff[0])
            return f"column {col} differs first at job {int(ids[k])}: source {values[k]}, stored {stored[k]}"
    return ""


def _check_summary(
    report: ValidationReport, summary: dict[str, Any], workload: Table, jobs: pd.DataFrame
) -> None:
    """``summary.json``'s job counts, mean wait, slowdown, bounded slowdown and makespan,
    recomputed from the tables (own arithmetic, per job in workload order):

    - wait = start - submit; run = end - start; turnaround = end - submit;
    - slowdown = turnaround / max(run, 1 s); bounded slowdown = max(1, turnaround / max(run, tau))
      with the summary's ``bsld_tau``; means over the jobs that started;
    - makespan = last end - first submit (first submit when no job started).
    """
    if not summary:
        report.notes.append("no summary.json: the run's summary was not checked")
        return
    import pandas as pd

    workload = _columns(workload)
    ids = workload["job_id"]
    submit = np.asarray(workload["submit"], np.float64)
    first = jobs.drop_duplicates("job_id")
    at = pd.Index(first["job_id"].to_numpy()).get_indexer(ids)
    listed = at >= 0
    take = np.where(listed, at, 0)

    def aligned(name: str, fill: Any, dtype: Any = None) -> np.ndarray:
        values = first[name].to_numpy(dtype)[take] if len(first) else np.zeros(len(ids), dtype)
        return np.where(listed, values, fill)

    start = aligned("start", np.nan, np.float64)
    end = aligned("end", np.nan, np.float64)
    status = aligned("status", "", object).astype(str)
    killed = aligned("killed", False, bool) if "killed" in first.columns else status == "killed"
    ran = ~np.isnan(start)
    s, b, e = submit[ran], start[ran], end[ran]
    run = e - b
    turnaround = e - s
    recomputed: dict[str, Any] = {
        "jobs": len(ids),
        "started": int(ran.sum()),
        "rejected": int((status == "rejected").sum()),
        "killed": int(killed.sum()),
        "wait_mean": float(np.mean(b - s)) if ran.any() else float("nan"),
        "slowdown_mean": float(np.mean(turnaround / np.maximum(run, 1.0)))
        if ran.any()
        else float("nan"),
        "makespan": (float(np.max(e)) if ran.any() else float(submit.min()) if len(submit) else 0.0)
        - (float(submit.min()) if len(submit) else 0.0),
    }
    tau = summary.get("bsld_tau")
    if isinstance(tau, (int, float)) and not isinstance(tau, bool):
        recomputed["bounded_slowdown_mean"] = (
            float(np.mean(np.maximum(1.0, turnaround / np.maximum(run, float(tau)))))
            if ran.any()
            else float("nan")
        )
    else:
        report.notes.append("summary.json has no bsld_tau: bounded_slowdown_mean was not checked")
    unchecked = []
    for key in (*SUMMARY_COUNTS, *SUMMARY_MEANS):
        if key not in recomputed:
            continue
        if key not in summary:
            unchecked.append(key)
            continue
        value, want = summary[key], recomputed[key]
        if key in SUMMARY_COUNTS:
            same = isinstance(value, int) and not isinstance(value, bool) and value == want
        else:
            same = (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and (
                    (np.isnan(value) and np.isnan(want))
                    or abs(value - want) <= SUMMARY_RTOL * max(1.0, abs(value), abs(want))
                )
            )
        if not same:
            shown = f"{value:.12g}" if isinstance(value, float) else repr(value)
            report.add(
                -np.inf,
                "summary",
                f"summary.json: {key} is {shown}, recomputed from the tables {want:.12g}",
            )
    if unchecked:
        report.notes.append(f"summary.json has no {', '.join(unchecked)}: not checked")
