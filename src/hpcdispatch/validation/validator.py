"""Independent schedule validator.

It replays a schedule from plain tables -- the workload (what each job asked for), the
job outcomes and the allocation rows -- against the system's capacities, sharing no code
with the simulator's bookkeeping. It reports every violation it finds, earliest first:

- a job of the workload missing from the schedule, listed twice, or unknown;
- a job started before its submission, never started (without being rejected), or started
  twice (two first allocation segments);
- a job that ran other than ``min(run time, wall-time)`` (or its run time when wall-time kills
  are off), or whose ``killed`` flag disagrees;
- an allocation that does not hold exactly the job's units, amounts other than
  ``units x per-unit request + per-node request``, a node out of range or used twice by one
  segment, more units on a node than ``max_units_per_node``;
- Slurm-style constraints: a job with ``node_count`` on another number of distinct nodes, a
  ``contiguous`` job on nodes that are not consecutive indices (the per-node extras are part of
  the amount rule above);
- at any instant, on any node, for any resource, more in use than the node's capacity
  (a job ending at ``t`` releases before a job starting at ``t`` acquires).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpcdispatch.errors import HpcDispatchError, ScheduleValidationError
from hpcdispatch.system.model import System

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
        self.violations.append(Violation(float(time) if np.isfinite(time) else float("-inf"), kind, message))

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
        lines += [f"  t={v.time:g} [{v.kind}] {v.message}" for v in sorted(self.violations)[:20]]
        return "\n".join(lines)


def _ids(values: np.ndarray, limit: int = 5) -> str:
    vals = [int(v) for v in values[:limit]]
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(map(str, vals)) + more


def validate_tables(
    system: System,
    workload: pd.DataFrame,
    jobs: pd.DataFrame,
    allocations: pd.DataFrame,
    walltime_kill: bool = True,
) -> ValidationReport:
    """Validate a schedule given as tables (see the module docstring for the rules)."""
    report = ValidationReport(jobs=len(workload), allocation_rows=len(allocations))
    resources = list(system.resources)
    cap = system.capacity

    # ---- the set of jobs ------------------------------------------------------------------
    # Columns are read through positions of the common job ids (sorted) in each table; when a
    # table already lists exactly those ids in that order nothing is copied (a whole-trace
    # schedule has half a million jobs and a million allocation rows).
    wl_ids = workload["job_id"].to_numpy()
    wl_dup = pd.Index(wl_ids).duplicated()
    if wl_dup.any():
        report.add(-np.inf, "workload", f"duplicate job ids in the workload: {_ids(wl_ids[wl_dup])}")
    job_ids = jobs["job_id"].to_numpy()
    job_dup = pd.Index(job_ids).duplicated()
    if job_dup.any():
        report.add(-np.inf, "twice", f"jobs listed more than once in the schedule: {_ids(job_ids[job_dup])}")
    missing = np.setdiff1d(wl_ids, job_ids)
    if len(missing):
        report.add(-np.inf, "missing", f"jobs of the workload missing from the schedule: {_ids(missing)}")
    unknown = np.setdiff1d(job_ids, wl_ids)
    if len(unknown):
        report.add(-np.inf, "unknown", f"schedule lists jobs not in the workload: {_ids(unknown)}")
    common = np.intersect1d(wl_ids, job_ids)
    w_pos = _positions(wl_ids, wl_dup, common)
    j_pos = _positions(job_ids, job_dup, common)

    def w_col(name: str, dtype: Any = None) -> np.ndarray:
        values = workload[name].to_numpy(dtype)
        return values if w_pos is None else values[w_pos]

    def j_col(name: str, dtype: Any = None) -> np.ndarray:
        values = jobs[name].to_numpy(dtype)
        return values if j_pos is None else values[j_pos]

    submit = w_col("submit", np.float64)
    start = j_col("start", np.float64)
    end = j_col("end", np.float64)
    status = j_col("status").astype(str)
    run = w_col("run_time", np.float64)
    wall = w_col("wall_time", np.float64)
    ids = common

    rejected = status == "rejected"
    never = np.isnan(start) & ~rejected
    for i in np.flatnonzero(never)[:20]:
        report.add(submit[i], "never", f"job {int(ids[i])} (submitted at {submit[i]:g}) never started and was not rejected")
    started = ~np.isnan(start)
    bad_rej = rejected & started
    for i in np.flatnonzero(bad_rej)[:20]:
        report.add(start[i], "rejected", f"job {int(ids[i])} is marked rejected but has a start time {start[i]:g}")
    early = started & (start < submit - TOL)
    for i in np.flatnonzero(early)[:20]:
        report.add(start[i], "early", f"job {int(ids[i])} started at {start[i]:g}, before its submission at {submit[i]:g}")
    expected = np.minimum(run, wall) if walltime_kill else run
    wrong = started & ~(np.abs((end - start) - expected) <= TOL * np.maximum(1.0, np.abs(expected)))
    for i in np.flatnonzero(wrong)[:20]:
        report.add(
            start[i],
            "duration",
            f"job {int(ids[i])} ran {end[i] - start[i]:g} s ({start[i]:g} -> {end[i]:g}); it should run "
            f"{expected[i]:g} s (run time {run[i]:g}, wall-time {wall[i]:g}, kills {'on' if walltime_kill else 'off'})",
        )
    if "killed" in jobs.columns:
        should_kill = started & (walltime_kill & (run > wall))
        flag = j_col("killed", bool)
        for i in np.flatnonzero(started & (flag != should_kill))[:20]:
            report.add(start[i], "killed", f"job {int(ids[i])}: killed flag is {bool(flag[i])}, expected {bool(should_kill[i])}")

    # ---- allocations ----------------------------------------------------------------------
    a = allocations
    # ``common`` is sorted (intersect1d): a row's job position by binary search
    row_ids = a["job_id"].to_numpy()
    row_job = np.searchsorted(common, row_ids)
    known = row_job < len(common)
    known[known] = common[row_job[known]] == row_ids[known]
    if not known.all():
        report.add(-np.inf, "unknown", f"allocation rows for unknown jobs: {_ids(np.unique(row_ids[~known]))}")
        a = a[known]
        row_job = row_job[known]
    del row_ids
    node = a["node"].to_numpy(np.int64)
    units = a["units"].to_numpy(np.int64)
    t_from = a["from"].to_numpy(np.float64)
    t_to = a["to"].to_numpy(np.float64)
    seg = a["segment"].to_numpy(np.int64)
    amounts = np.stack([a[r].to_numpy(np.int64) for r in resources], axis=1) if len(a) else np.zeros((0, len(resources)), np.int64)
    n_common = len(common)
    unit_req = np.stack([w_col(f"unit_{r}", np.int64) for r in resources], axis=1)
    max_pn = w_col("max_units_per_node", np.int64) if "max_units_per_node" in workload.columns else np.zeros(n_common, np.int64)
    per_node = np.stack(
        [w_col(f"pernode_{r}", np.int64) if f"pernode_{r}" in workload.columns else np.zeros(n_common, np.int64)
         for r in resources], axis=1,
    )
    node_count = w_col("node_count", np.int64) if "node_count" in workload.columns else np.zeros(n_common, np.int64)
    contiguous = w_col("contiguous", bool) if "contiguous" in workload.columns else np.zeros(n_common, bool)

    out_of_range = (node < 0) | (node >= system.n_nodes)
    for k in np.flatnonzero(out_of_range)[:20]:
        report.add(t_from[k], "node", f"job {int(ids[row_job[k]])} uses node {int(node[k])}, the system has {system.n_nodes}")
    expected_amounts = units[:, None] * unit_req[row_job] + per_node[row_job]
    bad_amount = (amounts != expected_amounts).any(axis=1) | (units <= 0)
    del expected_amounts
    for k in np.flatnonzero(bad_amount)[:20]:
        extra = per_node[row_job[k]]
        report.add(
            t_from[k], "amount",
            f"job {int(ids[row_job[k]])} on node {int(node[k])}: {int(units[k])} unit(s) but amounts "
            f"{amounts[k].tolist()} (per-unit request {unit_req[row_job[k]].tolist()}"
            + (f", per-node request {extra.tolist()})" if extra.any() else ")"),
        )
    seg0 = seg == 0
    # units per job in segment 0 and agreement with start/end
    units_first = np.bincount(row_job[seg0], weights=units[seg0], minlength=len(common))
    req_units = w_col("units", np.int64)
    wrong_units = started & (units_first != req_units)
    for i in np.flatnonzero(wrong_units)[:20]:
        report.add(start[i], "units", f"job {int(ids[i])} got {int(units_first[i])} unit(s) at its start, it requests {int(req_units[i])}")
    has_rows = np.bincount(row_job, minlength=len(common)) > 0
    for i in np.flatnonzero(~started & has_rows)[:20]:
        report.add(submit[i], "never", f"job {int(ids[i])} has allocation rows but no start time")
    first_from_mismatch = seg0 & (np.abs(t_from - start[row_job]) > TOL)
    for k in np.flatnonzero(first_from_mismatch)[:20]:
        i = row_job[k]
        report.add(t_from[k], "twice", f"job {int(ids[i])} holds node {int(node[k])} from {t_from[k]:g}, but started at {start[i]:g} (started twice?)")
    later = ~seg0 & ((t_from < start[row_job] - TOL) | (t_from >= end[row_job]))
    for k in np.flatnonzero(later)[:20]:
        report.add(t_from[k], "segment", f"job {int(ids[row_job[k]])}: allocation segment {int(seg[k])} starts outside its run")
    to_mismatch = np.abs(t_to - end[row_job]) > TOL
    for k in np.flatnonzero(to_mismatch)[:20]:
        report.add(t_to[k], "release", f"job {int(ids[row_job[k]])} releases node {int(node[k])} at {t_to[k]:g}, but ended at {end[row_job[k]]:g}")
    # (job, segment, node) listed twice; units per (job, node) over all segments -- one int64
    # key per row, sorted (numpy, not pandas: a million rows hash into hundreds of MB)
    width = int(max(system.n_nodes, int(node.max()) + 1 if len(node) else 1, 1))
    pair = row_job.astype(np.int64) * width + np.clip(node, 0, width - 1)
    n_segs = int(seg.max()) + 1 if len(seg) else 1
    triple = pair * n_segs + seg
    order = np.argsort(triple, kind="stable")
    twice = order[1:][triple[order[1:]] == triple[order[:-1]]]
    del triple, order
    for k in np.sort(twice)[:20]:
        report.add(t_from[k], "node-twice", f"job {int(ids[row_job[k]])} lists node {int(node[k])} twice in segment {int(seg[k])}")
    if (max_pn > 0).any():
        order = np.argsort(pair, kind="stable")
        sorted_pair = pair[order]
        first_of_pair = np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]]) if len(pair) else np.zeros(0, np.int64)
        pair_units = np.add.reduceat(units[order], first_of_pair) if len(pair) else np.zeros(0, np.int64)
        pair_job = row_job[order[first_of_pair]]
        pair_node = node[order[first_of_pair]]
        limit = max_pn[pair_job]
        for k in np.flatnonzero((limit > 0) & (pair_units > limit))[:20]:
            ji = int(pair_job[k])
            report.add(start[ji], "per-node", f"job {int(ids[ji])} has more than {int(max_pn[ji])} unit(s) on node {int(pair_node[k])}")
        del order, sorted_pair
    del pair

    # ---- Slurm-style constraints on the first segment ------------------------------------------
    if (node_count > 0).any() or contiguous.any():
        first = pd.DataFrame({"j": row_job[seg0], "n": node[seg0]}).drop_duplicates()
        grouped = first.groupby("j")["n"]
        n_used = grouped.nunique()
        span = grouped.max() - grouped.min() + 1
        for ji in np.flatnonzero((node_count > 0) & started):
            used = int(n_used.get(ji, 0))
            if used != node_count[ji]:
                report.add(start[ji], "node-count",
                           f"job {int(ids[ji])} uses {used} node(s), it requests exactly {int(node_count[ji])}")
        for ji in np.flatnonzero(contiguous & started):
            if ji in span.index and int(span[ji]) != int(n_used[ji]):
                nodes_used = sorted(first.loc[first.j == ji, "n"].tolist())
                report.add(start[ji], "contiguous",
                           f"job {int(ids[ji])} requests contiguous nodes, it uses {_ids(np.asarray(nodes_used), 8)}")

    # ---- capacity sweep -------------------------------------------------------------------
    ok_rows = ~out_of_range & (t_to > t_from)
    if ok_rows.any():
        sel = slice(None) if ok_rows.all() else ok_rows  # the usual case: views, not copies of a million rows
        _capacity_sweep(report, system, cap, resources, node[sel], t_from[sel], t_to[sel], amounts[sel],
                        ids[row_job[sel]])
    report.violations.sort()
    return report


def _capacity_sweep(report, system, cap, resources, node, t_from, t_to, amounts, job_ids) -> None:
    # (temporaries dropped as soon as they are used: on a whole trace every array here has
    # millions of rows)
    m = len(node)
    times = np.concatenate([t_from, t_to])
    nodes = np.concatenate([node, node])
    acquire = np.concatenate([np.ones(m, np.int8), np.zeros(m, np.int8)])  # releases (0) first
    order = np.lexsort((acquire, times, nodes))
    del acquire
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
        rows, cols = np.nonzero(over)
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
                t, "capacity",
                f"node {n} ({system.node_name(n)}) at t={t:g}: {int(usage[k, r])} {resources[r]} in use, capacity "
                f"{int(cap[n, r])} (jobs {_ids(job_ids[holders])})",
            )
    if (usage < 0).any():
        k = int(np.flatnonzero((usage < 0).any(axis=1))[0])
        report.add(times[k], "internal", f"node {int(nodes[k])}: negative usage at t={times[k]:g} (inconsistent allocation rows)")


def _positions(ids: np.ndarray, duplicated: np.ndarray, common: np.ndarray) -> np.ndarray | None:
    """Where each of ``common`` (sorted, unique) first appears in ``ids``; ``None`` when ``ids``
    is exactly ``common`` (no reindexing needed)."""
    if len(ids) == len(common) and not duplicated.any() and np.array_equal(ids, common):
        return None
    first = np.flatnonzero(~duplicated)
    order = first[np.argsort(ids[first], kind="stable")]
    return order[np.searchsorted(ids[order], common)]


def validate(target: Any) -> ValidationReport:
    """Validate a :class:`~hpcdispatch.sim.result.SimulationResult` in memory, or a run's
    output directory (a path; its workload re-read from its source when possible)."""
    if isinstance(target, (str, Path)):
        return validate_run_dir(target)
    return validate_result(target)


def validate_result(result: Any) -> ValidationReport:
    """Validate an in-memory :class:`~hpcdispatch.sim.result.SimulationResult`."""
    from hpcdispatch.results.store import shared_frame, workload_columns

    return validate_tables(
        result.system,
        shared_frame(workload_columns(result)),
        shared_frame(result.jobs_columns(allocation_text=False)),
        shared_frame(result.allocations_columns()),
        walltime_kill=result.options.walltime_kill,
    )


def validate_run_dir(out_dir: str | Path, reload_workload: bool = True) -> ValidationReport:
    """Validate an output directory; re-reads the workload from its source when possible."""
    from hpcdispatch.results.store import read_run
    from hpcdispatch.workload.loader import workload_from_source

    stored = read_run(out_dir)
    workload_table = stored.workload
    notes = []
    src = stored.run.get("workload", {})
    if reload_workload and src.get("kind") in ("swf", "synthetic", "slurm"):
        try:
            fresh = workload_from_source(src["kind"], src["spec"], src.get("options", {}), stored.system)
        except HpcDispatchError as exc:
            notes.append(f"could not re-read the workload source ({exc}); checked against the stored workload table")
        else:
            mismatch = _compare_workloads(fresh, workload_table, stored.system)
            if mismatch:
                report = ValidationReport(jobs=len(workload_table))
                report.add(-np.inf, "workload", f"the stored workload differs from its source {src['spec']}: {mismatch}")
                return report
            notes.append(f"workload re-read from {src['spec']} and matches the stored one ({len(fresh)} jobs)")
    report = validate_tables(
        stored.system,
        workload_table,
        stored.jobs,
        stored.allocations,
        walltime_kill=bool(stored.run.get("options", {}).get("walltime_kill", True)),
    )
    report.notes.extend(notes)
    return report


def _compare_workloads(fresh: Any, table: pd.DataFrame, system: System) -> str:
    if len(fresh) != len(table):
        return f"{len(fresh)} jobs in the source, {len(table)} stored"
    checks = {
        "job_id": fresh.ids,
        "submit": fresh.submit,
        "run_time": fresh.run_time,
        "wall_time": fresh.wall_time,
        "units": fresh.units,
    }
    for r, name in enumerate(system.resources):
        checks[f"unit_{name}"] = fresh.unit_requests[:, r]
    optional = {"node_count": fresh.node_counts, "contiguous": fresh.contiguous}
    for r, name in enumerate(system.resources):
        optional[f"pernode_{name}"] = fresh.per_node_requests[:, r]
    for col, values in optional.items():
        if col in table.columns or bool(np.any(values)):
            checks[col] = values
    for col, values in checks.items():
        if col not in table.columns:
            return f"column {col} is missing from the stored workload"
        stored = table[col].to_numpy()
        diff = np.flatnonzero(stored != values)
        if len(diff):
            k = int(diff[0])
            return f"column {col} differs first at job {int(table['job_id'].iloc[k])}: source {values[k]}, stored {stored[k]}"
    return ""
