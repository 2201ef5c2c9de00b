"""Independent schedule validator.

It replays a schedule from plain tables -- the workload (what each job asked for), the job
outcomes and the allocation rows -- against the system's capacities, sharing no code with the
simulator's bookkeeping, and reports every violation it finds, earliest first: missing,
duplicate or unknown jobs; starts before submission; statuses that disagree with the times;
run times other than ``min(run time, wall-time)``; allocations that do not hold the job's
units and amounts; growth segments no request explains; Slurm-style constraints; more in use
than a node's capacity at any instant; and, for deadline workloads, deadlines, bookings and
booking shapes.

The rules are a table (:data:`RULES`): each :class:`Rule` has a name, when it applies and a
check over one :class:`RunTables` value (the tables aligned once by :func:`run_tables`) that
returns its :class:`Problems`; :func:`validate_tables` runs every rule that applies. To add a
rule: a function ``rule_x(t: RunTables) -> Problems``, one line in :data:`RULES`, and its
mutation in ``tests/test_validator_mutations.py::RULE_MUTATIONS``. Every constant is the
validator's own (:data:`TIME_TOLERANCE_S`, :data:`REAL_SLURM_SLACK_S`, :data:`BSLD_TAU_S`,
:data:`COMM_SHARE_MAX`). :func:`validate_run_dir` takes from a run directory only the
schedule and the identity of what produced it; verdicts and exit codes: :data:`EXIT_CODES`.
The rules one by one, and what a run directory is checked against: docs/VALIDATION.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from hpcdispatch._util import text_or_none
from hpcdispatch.errors import HpcDispatchError, ScheduleValidationError
from hpcdispatch.system.model import System
from hpcdispatch.vocabulary import CancelReason, JobStatus

if (
    TYPE_CHECKING
):  # (pandas for the tables of a run directory; a result in memory is checked without it)
    import pandas as pd

TOL = 1e-6


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule: when, which kind, and a message naming the job."""

    time: float
    kind: str
    message: str


#: the verdicts of :func:`validate_run_dir`, and the exit code ``hpcdispatch validate`` gives each
#: (2 is every error that stops the check itself: an unreadable run directory, bad input)
EXIT_CODES = {"valid": 0, "invalid": 1, "unverified": 3, "cannot validate": 4}


@dataclass
class ValidationReport:
    """What the validator found. ``violations``: the schedule breaks a rule (verdict
    ``invalid``); ``cannot``: a rule the schedule needs is unknown to the validator (an
    unregistered dispatcher: verdict ``cannot validate``); ``unverified``: an input the schedule
    is judged against could not be re-derived (a workload source missing or changed, a
    workload held only in memory: verdict ``unverified``). Only a report with none of them is
    ``valid``."""

    jobs: int = 0
    allocation_rows: int = 0
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.violations:
            return "invalid"
        if self.cannot:
            return "cannot validate"
        if self.unverified:
            return "unverified"
        return "valid"

    @property
    def ok(self) -> bool:
        """Valid: no violation, and every input re-derived."""
        return self.verdict == "valid"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

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

    def headline(self) -> str:
        """One line: the verdict and its first reason."""
        verdict = self.verdict
        if verdict == "invalid":
            v = self.first()
            assert v is not None
            more = f" (and {len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            return f"INVALID: [{v.kind}] {v.message}{more}"
        if verdict == "cannot validate":
            return f"cannot validate: {self.cannot[0]}"
        if verdict == "unverified":
            return f"unverified: {self.unverified[0]}"
        return f"valid: {self.jobs} jobs, {self.allocation_rows} allocation rows checked"

    def describe(self) -> str:
        verdict = self.verdict
        if verdict == "valid":
            return self.headline()
        if verdict == "invalid":
            lines = [f"INVALID: {len(self.violations)} violation(s); earliest first:"]
            lines += [
                f"  t={v.time:.15g} [{v.kind}] {v.message}" for v in sorted(self.violations)[:20]
            ]
            return "\n".join(lines)
        reasons = self.cannot if verdict == "cannot validate" else self.unverified
        return "\n".join([f"{verdict}: {reasons[0]}", *(f"  also: {r}" for r in reasons[1:])])


def _jobs(values: np.ndarray, limit: int = 5) -> str:
    """``"job 3, job 7 ... (12 in all)"``: messages name every job they are about."""
    vals = [f"job {int(v)}" for v in values[:limit]]
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(vals) + more


def _ids(values: np.ndarray, limit: int = 5) -> str:
    vals = [int(v) for v in values[:limit]]
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(map(str, vals)) + more


#: the validator's own constants -- nothing in a run directory changes them
#: a simulated schedule's times are exact: the only slack is floating-point rounding (``TOL``)
TIME_TOLERANCE_S = 0.0
#: real seconds a schedule recorded on a real Slurm may be off (whole-second timestamps, start
#: and end overhead; measured never more than 3 s), divided by the run's time scale
REAL_SLURM_SLACK_S = 3.0
#: the bounded slowdown's threshold (seconds) the summary must use
BSLD_TAU_S = 10.0
#: the largest communication share of a deadline job's phase under the execution model's
#: documented constants (docs/DEADLINE.md: 0.5, 0.3, 0.2, 0.2 by behaviour type): the lower
#: bound of a deadline job's run time (:func:`rule_deadline_outcome`) uses it
COMM_SHARE_MAX = 0.5

#: a job's status as the jobs table spells it (``JobStatus`` names in lower case; a completed
#: job that ran into its wall-time is ``killed``)
COMPLETED = JobStatus.COMPLETED.name.lower()
REJECTED = JobStatus.REJECTED.name.lower()
CANCELLED = JobStatus.CANCELLED.name.lower()
KILLED = "killed"
#: the statuses a job can have when a run has ended
FINAL_STATUSES = (COMPLETED, KILLED, REJECTED, CANCELLED)
CONFLICT = str(
    CancelReason.BOOKING_CONFLICT
)  # cancelled when the next booking on its nodes begins (A19)
CANCEL_REASONS = tuple(str(r) for r in CancelReason)

Growth = Mapping[int, Sequence[Any]]


class Problems(list[Violation]):
    """What one rule found: violations (``add``, as :meth:`ValidationReport.add`) and notes."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def add(self, time: float, kind: str, message: str) -> None:
        self.append(Violation(float(time) if np.isfinite(time) else float("-inf"), kind, message))


@dataclass(frozen=True)
class RunTables:
    """One schedule as every rule reads it: the raw tables, the jobs common to the workload
    and the schedule aligned by id (sorted), and the allocation rows of known jobs with their
    job's position (``row_job``). Built once by :func:`run_tables`; the rules only read it."""

    system: System
    workload: Columns
    jobs: Columns
    #: rows of known jobs only (rows of unknown jobs: ``unknown_rows``), less ``job_id``
    #: (``row_job`` is their job)
    allocations: Columns
    bookings: Columns | None
    walltime_kill: bool
    tags: Mapping[str, Any] | None
    growth: Growth | None
    time_tolerance: float
    shape: str | None
    # the set of jobs
    workload_duplicates: np.ndarray
    job_duplicates: np.ndarray
    missing: np.ndarray
    unknown: np.ndarray
    unknown_rows: np.ndarray  # job ids of allocation rows for jobs not in the workload
    n_allocation_rows: int  # every row, of known jobs or not
    ids: np.ndarray  # the common job ids, sorted
    w_pos: np.ndarray | None
    j_pos: np.ndarray | None
    # per job (aligned with ``ids``)
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    status: np.ndarray
    run: np.ndarray
    wall: np.ndarray
    app: np.ndarray  # jobs with an application model (deadline jobs: whole nodes)
    cancel_why: np.ndarray
    # per allocation row
    row_job: np.ndarray
    t_from: np.ndarray
    t_to: np.ndarray
    node: np.ndarray
    bad_node: np.ndarray
    units: np.ndarray
    bad_units: np.ndarray
    seg: np.ndarray
    bad_seg: np.ndarray
    amounts: np.ndarray
    bad_amount_value: np.ndarray

    def w_col(self, name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(self.workload[name], dtype)
        return values if self.w_pos is None else values[self.w_pos]

    def j_col(self, name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(self.jobs[name], dtype)
        return values if self.j_pos is None else values[self.j_pos]

    def w_or(self, name: str, dtype: Any, fill: Any) -> np.ndarray:
        """A workload column, or ``fill`` for every job when the workload has none."""
        return (
            self.w_col(name, dtype)
            if name in self.workload
            else np.full(len(self.ids), fill, dtype)
        )

    def job(self, i: Any) -> str:
        return f"job {int(self.ids[i])}"

    @property
    def rejected(self) -> np.ndarray:
        return self.status == REJECTED

    @property
    def cancelled(self) -> np.ndarray:
        return self.status == CANCELLED

    @property
    def started(self) -> np.ndarray:
        return ~np.isnan(self.start)

    @property
    def ended(self) -> np.ndarray:
        return ~np.isnan(self.end)

    @property
    def timed(self) -> np.ndarray:
        """Started jobs with a finite start and a finite end."""
        return self.started & np.isfinite(self.start) & np.isfinite(self.end)

    @property
    def expected(self) -> np.ndarray:
        """How long each job without an application model runs: min(run time, wall-time)."""
        return np.minimum(self.run, self.wall) if self.walltime_kill else self.run

    @property
    def should_kill(self) -> np.ndarray:
        return self.started & (self.walltime_kill & (self.run > self.wall))

    @property
    def deadline_rules(self) -> bool:
        return "deadline" in self.workload and "earliest_start" in self.workload

    @property
    def deadline(self) -> np.ndarray:
        return self.w_or("deadline", np.float64, np.inf)

    @property
    def seg0(self) -> np.ndarray:
        return self.seg == 0

    @property
    def forks(self) -> bool:
        return bool((self.tags or {}).get("forks", False))

    @property
    def per_core_rows(self) -> np.ndarray:
        """Per allocation row: a per-core dispatcher's deadline job (tag ``per_core``, the
        leak's ``overbook``): its units are cores, and :func:`rule_per_core` replaces the
        whole-node rules for it."""
        if not (self.tags or {}).get("per_core", False):
            return np.zeros(len(self.row_job), dtype=bool)
        return self.app[self.row_job]


def run_tables(
    system: System,
    workload: Table,
    jobs: Table,
    allocations: Table,
    walltime_kill: bool = True,
    *,
    dispatcher_tags: Mapping[str, Any] | None = None,
    growth: Growth | None = None,
    bookings: Table | None = None,
    time_tolerance: float = TIME_TOLERANCE_S,
    shape: str | None = None,
) -> RunTables:
    """The :class:`RunTables` of a schedule. Columns are read through positions of the common
    job ids (sorted) in each table; when a table already lists exactly those ids in that order
    nothing is copied (a whole-trace schedule has half a million jobs and a million rows)."""
    wcols, jcols, acols = _columns(workload), _columns(jobs), _columns(allocations)
    wl_ids = wcols["job_id"]
    wl_dup = _duplicated(wl_ids)
    job_ids = jcols["job_id"]
    job_dup = _duplicated(job_ids)
    w_sorted, w_order = _sorted_unique(wl_ids, wl_dup)
    j_sorted, j_order = _sorted_unique(job_ids, job_dup)
    w_in_j = _in_sorted(w_sorted, j_sorted)
    common = w_sorted[w_in_j]
    w_pos = _identity_or(w_order[w_in_j], len(wl_ids))
    j_pos = _identity_or(j_order[np.searchsorted(j_sorted, common)], len(job_ids))

    def w_col(name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(wcols[name], dtype)
        return values if w_pos is None else values[w_pos]

    def j_col(name: str, dtype: Any = None) -> np.ndarray:
        values = np.asarray(jcols[name], dtype)
        return values if j_pos is None else values[j_pos]

    # allocation rows: a row's job position by binary search (``common`` is sorted)
    row_ids = acols["job_id"]
    row_job = np.searchsorted(common, row_ids)
    known = row_job < len(common)
    if known.all():  # (the usual case: compared a piece of rows at a time)
        for a in range(0, len(row_ids), _PIECE_ROWS):
            b = a + _PIECE_ROWS
            np.equal(common[row_job[a:b]], row_ids[a:b], out=known[a:b])
    else:
        known[known] = common[row_job[known]] == row_ids[known]
    unknown_rows = np.unique(row_ids[~known])
    n_allocation_rows = len(row_ids)
    if not known.all():
        acols = {name: values[known] for name, values in acols.items()}
        row_job = row_job[known]
    node, bad_node = _int_column(acols["node"])
    units, bad_units = _int_column(acols["units"])
    seg, bad_seg = _int_column(acols["segment"])
    amount_cols = [_int_column(acols[r]) for r in system.resources]
    amounts = (
        np.stack([c[0] for c in amount_cols], axis=1)
        if len(row_job) and len(amount_cols) > 1
        else amount_cols[0][0].reshape(-1, 1)  # one resource: the column itself, not a copy
        if len(row_job) and amount_cols
        else np.zeros((0, len(system.resources)), np.int64)
    )
    bad_amount_value = np.zeros(len(row_job), bool)
    for _, bad in amount_cols:
        bad_amount_value |= bad
    return RunTables(
        system=system,
        workload=wcols,
        jobs=jcols,
        # (the rows' job ids are read here only: as row_job below)
        allocations={name: values for name, values in acols.items() if name != "job_id"},
        bookings=None if bookings is None else _columns(bookings),
        walltime_kill=bool(walltime_kill),
        tags=dispatcher_tags if isinstance(dispatcher_tags, Mapping) else None,
        growth=growth,
        time_tolerance=float(time_tolerance),
        shape=shape,
        workload_duplicates=wl_ids[wl_dup],
        job_duplicates=job_ids[job_dup],
        missing=w_sorted[~w_in_j],
        unknown=j_sorted[~_in_sorted(j_sorted, w_sorted)],
        unknown_rows=unknown_rows,
        n_allocation_rows=n_allocation_rows,
        ids=common,
        w_pos=w_pos,
        j_pos=j_pos,
        submit=w_col("submit", np.float64),
        start=j_col("start", np.float64),
        end=j_col("end", np.float64),
        status=_status_texts(j_col("status")),
        run=w_col("run_time", np.float64),
        wall=w_col("wall_time", np.float64),
        app=w_col("whole_nodes", bool) if "whole_nodes" in wcols else np.zeros(len(common), bool),
        cancel_why=(
            _texts(j_col("cancel_reason"))
            if "cancel_reason" in jcols
            else np.full(len(common), "", dtype=object)
        ),
        row_job=row_job,
        t_from=np.asarray(acols["from"], np.float64),
        t_to=np.asarray(acols["to"], np.float64),
        node=node,
        bad_node=bad_node,
        units=units,
        bad_units=bad_units,
        seg=seg,
        bad_seg=bad_seg,
        amounts=amounts,
        bad_amount_value=bad_amount_value,
    )


def _status_texts(values: np.ndarray) -> np.ndarray:
    """The statuses as text (``str`` of each value), in numpy's variable-width text: 16 bytes
    a job, not 4 per character of the longest (converted a piece at a time)."""
    out = np.empty(len(values), dtype=np.dtypes.StringDType())
    for a in range(0, len(values), _PIECE_ROWS):
        out[a : a + _PIECE_ROWS] = values[a : a + _PIECE_ROWS].astype(str)
    return out


@dataclass(frozen=True)
class Rule:
    """One rule of the validator: ``check`` returns what it finds in a schedule for which
    ``applies`` is true."""

    name: str
    applies: Callable[[RunTables], bool]
    check: Callable[[RunTables], Problems]


def _always(t: RunTables) -> bool:
    return True


# ---- the set of jobs --------------------------------------------------------------------


def rule_job_set(t: RunTables) -> Problems:
    """Every job of the workload is in the schedule once, and the schedule and its allocation
    rows name no other job."""
    p = Problems()
    if len(t.workload_duplicates):
        p.add(
            -np.inf,
            "workload",
            f"duplicate job ids in the workload: {_jobs(t.workload_duplicates)}",
        )
    if len(t.job_duplicates):
        p.add(
            -np.inf,
            "twice",
            f"jobs listed more than once in the schedule: {_jobs(t.job_duplicates)}",
        )
    if len(t.missing):
        p.add(
            -np.inf,
            "missing",
            f"jobs of the workload missing from the schedule: {_jobs(t.missing)}",
        )
    if len(t.unknown):
        p.add(-np.inf, "unknown", f"schedule lists jobs not in the workload: {_jobs(t.unknown)}")
    if len(t.unknown_rows):
        p.add(-np.inf, "unknown", f"allocation rows for unknown jobs: {_jobs(t.unknown_rows)}")
    return p


# ---- per job: times, durations, statuses -------------------------------------------------


def rule_never_started(t: RunTables) -> Problems:
    """A job that was neither rejected nor cancelled started."""
    p = Problems()
    never = np.isnan(t.start) & ~t.rejected & ~t.cancelled
    for i in np.flatnonzero(never)[:20]:
        p.add(
            t.submit[i],
            "never",
            f"{t.job(i)} (submitted at {t.submit[i]:.15g}) never started and was not rejected",
        )
    return p


def rule_finite_times(t: RunTables) -> Problems:
    """A started job has a finite start and a finite end (NaN / inf never drop out of a check)."""
    p = Problems()
    start, end = t.start, t.end
    for i in np.flatnonzero(t.started & ~t.timed)[:20]:
        p.add(
            start[i],
            "time",
            f"{t.job(i)} has start {start[i]:.15g} and end {end[i]:.15g}: a started job needs "
            "finite start and end times",
        )
    return p


def rule_rejected_never_ran(t: RunTables) -> Problems:
    """A rejected job has no start and no end."""
    p = Problems()
    start, end, started = t.start, t.end, t.started
    for i in np.flatnonzero(t.rejected & (started | t.ended))[:20]:
        p.add(
            start[i] if started[i] else end[i],
            "rejected",
            f"{t.job(i)} is marked rejected but has a start time {start[i]:.15g} (end {end[i]:.15g})",
        )
    return p


def rule_start_after_submit(t: RunTables) -> Problems:
    """No job starts before its submission (by more than the validator's time tolerance)."""
    p = Problems()
    slack = max(TOL, t.time_tolerance)
    for i in np.flatnonzero(t.started & (t.start < t.submit - slack))[:20]:
        p.add(
            t.start[i],
            "early",
            f"{t.job(i)} started at {t.start[i]:.15g}, before its submission at {t.submit[i]:.15g}",
        )
    return p


def rule_duration(t: RunTables) -> Problems:
    """A job without an application model runs ``min(run time, wall-time)`` (its run time when
    wall-time kills are off); a cancelled one is cut at its deadline (:func:`rule_deadlines`)."""
    p = Problems()
    start, end, expected = t.start, t.end, t.expected
    ok = np.abs((end - start) - expected) <= np.maximum(
        TOL * np.maximum(1.0, np.abs(expected)), t.time_tolerance
    )
    for i in np.flatnonzero(t.timed & ~t.cancelled & ~t.app & ~ok)[:20]:
        p.add(
            start[i],
            "duration",
            f"{t.job(i)} ran {end[i] - start[i]:.15g} s ({start[i]:.15g} -> {end[i]:.15g}); it should run "
            f"{expected[i]:.15g} s (run time {t.run[i]:.15g}, wall-time {t.wall[i]:.15g}, kills "
            f"{'on' if t.walltime_kill else 'off'})",
        )
    return p


def rule_killed_flag(t: RunTables) -> Problems:
    """The ``killed`` flag says whether the job ran into its wall-time."""
    p = Problems()
    flag = t.j_col("killed", bool)
    should = t.should_kill
    for i in np.flatnonzero(t.started & ~t.cancelled & (flag != should))[:20]:
        p.add(
            t.start[i],
            "killed",
            f"{t.job(i)} (started at {t.start[i]:.15g}): killed flag is {bool(flag[i])}, "
            f"expected {bool(should[i])}",
        )
    return p


def rule_final_status(t: RunTables) -> Problems:
    """Every job ends the run completed, killed, rejected or cancelled, and its status agrees
    with its times: completed and killed jobs started and ended; ``killed`` exactly when the job
    ran into its wall-time."""
    p = Problems()
    status, start, started = t.status, t.start, t.started
    for i in np.flatnonzero(~np.isin(status, FINAL_STATUSES))[:20]:
        p.add(
            start[i] if started[i] else t.submit[i],
            "status",
            f"{t.job(i)} ends the run with status '{status[i]}'; every job ends it "
            f"{', '.join(FINAL_STATUSES[:-1])} or {FINAL_STATUSES[-1]}",
        )
    ran = (status == COMPLETED) | (status == KILLED)
    for i in np.flatnonzero(ran & ~(started & t.ended))[:20]:
        p.add(
            start[i] if started[i] else t.submit[i],
            "status",
            f"{t.job(i)} is '{status[i]}' but has start {start[i]:.15g} and end {t.end[i]:.15g} "
            f"(a {status[i]} job started and ended)",
        )
    should = t.should_kill
    for i in np.flatnonzero(ran & started & ((status == KILLED) != should))[:20]:
        p.add(
            start[i],
            "status",
            f"{t.job(i)} is '{status[i]}', but it {'ran into' if should[i] else 'did not run into'} its "
            f"wall-time (run time {t.run[i]:.15g}, wall-time {t.wall[i]:.15g}, kills "
            f"{'on' if t.walltime_kill else 'off'})",
        )
    return p


def rule_cancel_reason(t: RunTables) -> Problems:
    """A cancelled job carries one of the cancel reasons, and only a cancelled job has one."""
    p = Problems()
    why, cancelled = t.cancel_why, t.cancelled
    for i in np.flatnonzero(cancelled & ~np.isin(why, CANCEL_REASONS))[:20]:
        p.add(
            t.end[i] if np.isfinite(t.end[i]) else t.submit[i],
            "cancelled",
            f"{t.job(i)} is cancelled with the reason '{why[i]}'; the reasons are "
            f"{', '.join(CANCEL_REASONS)}",
        )
    for i in np.flatnonzero(~cancelled & (why != ""))[:20]:
        p.add(
            t.start[i] if t.started[i] else t.submit[i],
            "status",
            f"{t.job(i)} is '{t.status[i]}' but carries the cancel reason '{why[i]}'",
        )
    return p


def rule_cancelled_without_deadlines(t: RunTables) -> Problems:
    """Only a workload with deadlines has cancelled jobs."""
    p = Problems()
    for i in np.flatnonzero(t.cancelled)[:20]:
        p.add(
            t.submit[i], "cancelled", f"{t.job(i)} is cancelled, but the workload has no deadlines"
        )
    return p


def rule_deadlines(t: RunTables) -> Problems:
    """Deadline workloads: start window, end by the deadline, cancellation times
    (:func:`_check_deadlines`)."""
    p = Problems()
    _check_deadlines(
        p,
        t.ids,
        t.submit,
        t.start,
        t.end,
        t.started,
        t.cancelled,
        t.expected,
        t.w_col("earliest_start", np.float64),
        t.w_col("deadline", np.float64),
        t.app,
        t.cancel_why,
    )
    return p


def run_time_lower_bound(t: RunTables) -> np.ndarray:
    """Per job with an application model, the least time it can run where it ran, from its
    work and the cores it held (the validator's own reading of docs/DEADLINE.md, "The
    execution model"): phase ``k`` lasts ``D*_k x combine(a, b) / combine(1 - phi, phi)``
    with ``combine(a, b) >= a = (1 - phi) x max_c m_c`` and ``combine(1 - phi, phi) <= 1``, so
    it lasts at least ``D*_k (1 - phi) max_c m_c``; the nominal ``D*_k`` sum to the run time
    ``R``; ``phi <= COMM_SHARE_MAX``; a core time-shares at least one process, and a static
    job (types 0, 1) runs its ``n`` processes in every phase on at most ``C`` cores (every core
    of every node it ever held), so ``max_c m_c >= ceil(n / C)``. Hence
    ``run >= R (1 - COMM_SHARE_MAX) ceil(n / C)`` (``ceil(n / C)`` taken as 1 for dynamic jobs
    and jobs whose processes are unknown); 0 for other jobs."""
    bound = np.zeros(len(t.ids))
    if not t.app.any():
        return bound
    cores_per_node = t.system.capacity[:, _core_column(t.system)].astype(np.float64)
    held = np.zeros(len(t.ids))
    if len(t.row_job):
        ok = ~t.bad_node & (t.node >= 0) & (t.node < t.system.n_nodes)
        width = t.system.n_nodes
        pairs = np.unique(t.row_job[ok].astype(np.int64) * width + t.node[ok])
        np.add.at(held, pairs // width, cores_per_node[pairs % width])
    processes = t.w_or("processes", np.float64, 0.0)
    behaviour = t.w_or("behaviour", np.int64, -1)
    static = (behaviour == 0) | (behaviour == 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sharing = np.where(static & (held > 0), np.ceil(processes / held), 1.0)
    sharing = np.maximum(sharing, 1.0)
    return np.where(t.app, t.run * (1.0 - COMM_SHARE_MAX) * sharing, 0.0)


def _core_column(system: System) -> int:
    res = list(system.resources)
    return res.index("core") if "core" in res else 0


def rule_deadline_outcome(t: RunTables) -> Problems:
    """A deadline job's outcome follows from its end, its deadline and what the validator
    computes itself: a job that completed ran at least :func:`run_time_lower_bound` (a job
    cut short is not completed) and ended by its deadline; a job cancelled while running was
    still running at its deadline, i.e. it could not have completed by then."""
    p = Problems()
    bound = run_time_lower_bound(t)
    done = t.timed & ((t.status == COMPLETED) | (t.status == KILLED)) & t.app
    ran = t.end - t.start
    for i in np.flatnonzero(done & (ran < bound - TOL))[:20]:
        p.add(
            t.start[i],
            "duration",
            f"{t.job(i)} is '{t.status[i]}' after {ran[i]:.15g} s ({t.start[i]:.15g} -> {t.end[i]:.15g}); "
            f"its work takes at least {bound[i]:.15g} s on the cores it held (run time "
            f"{t.run[i]:.15g} s, communication share at most {COMM_SHARE_MAX})",
        )
    waiting = t.cancelled & (t.cancel_why == str(CancelReason.DEADLINE_WAITING))
    for i in np.flatnonzero(waiting & t.started)[:20]:
        p.add(
            t.start[i],
            "cancelled",
            f"{t.job(i)} is cancelled as 'deadline-waiting', but it started at {t.start[i]:.15g}",
        )
    running = t.cancelled & (t.cancel_why == str(CancelReason.DEADLINE_RUNNING))
    for i in np.flatnonzero(running & ~t.started)[:20]:
        p.add(
            t.submit[i],
            "cancelled",
            f"{t.job(i)} is cancelled as 'deadline-running', but it never started",
        )
    return p


def rule_booking_conflict_needs_bookings(t: RunTables) -> Problems:
    """A ``booking-conflict`` cancellation needs a booking of the job's own and another
    booking on one of its nodes: a dispatcher that makes no bookings never gives it (the
    timing against the bookings: :func:`_check_bookings`)."""
    p = Problems()
    conflict = t.cancelled & (t.cancel_why == CONFLICT)
    if t.bookings is None:
        for i in np.flatnonzero(conflict)[:20]:
            p.add(
                t.end[i] if np.isfinite(t.end[i]) else t.submit[i],
                "cancelled",
                f"{t.job(i)} is cancelled for a booking conflict, but the run has no bookings "
                "(its dispatcher makes none)",
            )
        return p
    booked = np.isin(t.ids, np.asarray(t.bookings.get("job_id", np.zeros(0)), np.int64))
    for i in np.flatnonzero(conflict & (~booked | ~t.started))[:20]:
        p.add(
            t.end[i] if np.isfinite(t.end[i]) else t.submit[i],
            "cancelled",
            f"{t.job(i)} is cancelled for a booking conflict, but it "
            + ("has no booking" if not booked[i] else "never started"),
        )
    return p


def rule_rejections(t: RunTables) -> Problems:
    """A rejected job carries the dispatcher's reason, and its dispatcher may reject
    (``rejects`` of its tags)."""
    p = Problems()
    rej = np.flatnonzero(t.rejected)
    submit = t.submit
    if "reject_reason" in t.jobs:
        reasons = np.char.strip(_texts(t.j_col("reject_reason")[rej]))
        for i in rej[reasons == ""][:20]:
            p.add(
                submit[i],
                "rejected",
                f"{t.job(i)} (submitted at {submit[i]:.15g}) is rejected without a "
                "reason (every rejection carries the dispatcher's reason)",
            )
    else:
        p.notes.append(
            f"the jobs table has no reject_reason column: the reasons of {len(rej)} rejected "
            f"job(s) ({_jobs(t.ids[rej])}) were not checked"
        )
    rejects = t.tags.get("rejects") if t.tags is not None else None
    if rejects is None:
        p.notes.append(
            f"the dispatcher's tags are unknown (no dispatcher_tags 'rejects'): whether it may "
            f"reject jobs is unknown; {len(rej)} rejected job(s) ({_jobs(t.ids[rej])}) were not checked "
            "against it"
        )
    elif not rejects:
        for i in rej[:20]:
            p.add(
                submit[i],
                "rejected",
                f"{t.job(i)} (submitted at {submit[i]:.15g}) is rejected, but the "
                "dispatcher's tags say it never rejects (rejects: false)",
            )
    return p


# ---- allocation rows ----------------------------------------------------------------------


def _row_job_id(t: RunTables, k: int) -> int:
    return int(t.ids[t.row_job[k]])


def rule_row_values(t: RunTables) -> Problems:
    """Node, units, segment and amounts of an allocation row are integers."""
    p = Problems()
    a = t.allocations
    res = list(t.system.resources)
    for k in np.flatnonzero(t.bad_node | t.bad_units | t.bad_seg | t.bad_amount_value)[:20]:
        p.add(
            t.t_from[k],
            "row",
            f"job {_row_job_id(t, k)}: an allocation row holds values that are not "
            f"integers (node {a['node'][k]}, units {a['units'][k]}, segment "
            f"{a['segment'][k]}, amounts {[a[r][k] for r in res]})",
        )
    return p


def _out_of_range(t: RunTables) -> np.ndarray:
    return ((t.node < 0) | (t.node >= t.system.n_nodes)) & ~t.bad_node


def _bad_times(t: RunTables) -> np.ndarray:
    return ~(np.isfinite(t.t_from) & np.isfinite(t.t_to) & (t.t_to > t.t_from))


def rule_node_range(t: RunTables) -> Problems:
    """Every row's node is one of the system's."""
    p = Problems()
    n = t.system.n_nodes
    for k in np.flatnonzero(_out_of_range(t))[:20]:
        p.add(
            t.t_from[k],
            "node",
            f"job {_row_job_id(t, k)} uses node {int(t.node[k])} from {t.t_from[k]:.15g}, the "
            f"system has {n} (nodes 0 to {n - 1})",
        )
    return p


def rule_row_times(t: RunTables) -> Problems:
    """Every row holds its node from a finite ``from`` to a finite, later ``to``."""
    p = Problems()
    for k in np.flatnonzero(_bad_times(t))[:20]:
        p.add(
            t.t_from[k],
            "time",
            f"job {_row_job_id(t, k)} holds node {int(t.node[k])} from {t.t_from[k]:.15g} to "
            f"{t.t_to[k]:.15g} (segment {int(t.seg[k])}): an allocation row needs finite times, "
            "'to' after 'from'",
        )
    return p


def _requests(t: RunTables) -> tuple[np.ndarray, np.ndarray]:
    """Per job, the per-unit and the per-node request of every resource."""
    res = t.system.resources
    unit_req = np.stack([t.w_col(f"unit_{r}", np.int64) for r in res], axis=1)
    per_node = np.stack([t.w_or(f"pernode_{r}", np.int64, 0) for r in res], axis=1)
    return unit_req, per_node


#: rows per piece where a rule goes over the allocation rows a piece at a time (its
#: temporaries a few MB, not several arrays of a whole trace's millions of rows)
_PIECE_ROWS = 1 << 18


def rule_amounts(t: RunTables) -> Problems:
    """A row holds ``units x per-unit request + per-node request`` of every resource, and at
    least one unit."""
    p = Problems()
    unit_req, per_node = _requests(t)
    rj = t.row_job
    core = t.per_core_rows
    extra_any, core_any = per_node.any(), core.any()
    bad = t.units <= 0
    for a in range(0, len(rj), _PIECE_ROWS):  # (a piece of rows at a time: rows x resources)
        b = a + _PIECE_ROWS
        expected = unit_req[rj[a:b]]
        expected *= t.units[a:b, None]
        if extra_any:
            expected += per_node[rj[a:b]]
        if core_any:  # a core is a c-th of a deadline job's whole-node unit
            expected[core[a:b]] //= _node_cores(t.system, t.system.resources)
        bad[a:b] |= (t.amounts[a:b] != expected).any(axis=1)
    for k in np.flatnonzero(bad)[:20]:
        extra = per_node[rj[k]]
        p.add(
            t.t_from[k],
            "amount",
            f"job {_row_job_id(t, k)} on node {int(t.node[k])} from {t.t_from[k]:.15g}: "
            f"{int(t.units[k])} unit(s) but amounts "
            f"{t.amounts[k].tolist()} (per-unit request {unit_req[rj[k]].tolist()}"
            + (f", per-node request {extra.tolist()})" if extra.any() else ")"),
        )
    return p


def rule_segment_numbers(t: RunTables) -> Problems:
    """Allocation segments are numbered from 0."""
    p = Problems()
    for k in np.flatnonzero(t.seg < 0)[:20]:
        p.add(
            t.t_from[k],
            "segment",
            f"job {_row_job_id(t, k)} holds node {int(t.node[k])} in allocation segment "
            f"{int(t.seg[k])} (segments are numbered from 0)",
        )
    return p


def rule_units_at_start(t: RunTables) -> Problems:
    """A job starts with exactly the units it requests (a forking dispatcher may start a
    deadline job on fewer: the leak's partial start)."""
    p = Problems()
    seg0 = t.seg0
    units_first = np.zeros(len(t.ids))
    every = seg0.all()  # (no later segments: no copies of the rows)
    for a in range(0, len(seg0), _PIECE_ROWS):  # (the weights in float64 a piece at a time)
        b = a + _PIECE_ROWS
        rows, units = t.row_job[a:b], t.units[a:b]
        if not every:
            rows, units = rows[seg0[a:b]], units[seg0[a:b]]
        units_first += np.bincount(rows, weights=units, minlength=len(t.ids))
    req = t.w_col("units", np.int64)
    partial_ok = t.app & t.forks & (units_first >= 1) & (units_first <= req)
    # a static strategy may book a dynamic job's peak (static_request=peak): the nodes of
    # ceil(3n/2) processes, at most ceil(3 x request / 2) nodes and the machine
    peak_ok = (
        t.app
        & (not t.forks)
        & (units_first >= req)
        & (units_first <= np.minimum(-(-3 * req // 2), t.system.n_nodes))
    )
    # per core (overbook): 1 to the request's cores (rule_per_core has the capacity rule)
    cores = _node_cores(t.system, t.system.resources)
    core_ok = (
        t.app
        & bool((t.tags or {}).get("per_core", False))
        & (units_first >= 1)
        & (units_first <= req * cores)
    )
    wrong = t.started & (units_first != req) & ~partial_ok & ~peak_ok & ~core_ok
    for i in np.flatnonzero(wrong)[:20]:
        p.add(
            t.start[i],
            "units",
            f"{t.job(i)} got {int(units_first[i])} unit(s) at its start at {t.start[i]:.15g}, it "
            f"requests {int(req[i])}",
        )
    return p


def rule_rows_of_unstarted(t: RunTables) -> Problems:
    """A job that never started, or was rejected, holds no allocation row."""
    p = Problems()
    rows_per_job = np.bincount(t.row_job, minlength=len(t.ids))
    has_rows = rows_per_job > 0
    for i in np.flatnonzero(~t.started & has_rows & ~t.rejected)[:20]:
        p.add(t.submit[i], "never", f"{t.job(i)} has allocation rows but no start time")
    if t.rejected.any():
        first_row = np.full(len(t.ids), -1, np.int64)
        first_row[t.row_job[::-1]] = np.arange(len(t.row_job))[::-1]
        for i in np.flatnonzero(t.rejected & has_rows)[:20]:
            k = first_row[i]
            p.add(
                t.t_from[k],
                "rejected",
                f"{t.job(i)} is marked rejected but holds {int(rows_per_job[i])} "
                f"allocation row(s) (node {int(t.node[k])} from {t.t_from[k]:.15g})",
            )
    return p


def _off_by_more_than_tol(values: np.ndarray, per_job: np.ndarray, rj: np.ndarray) -> np.ndarray:
    """Per row, ``|values - per_job[rj]| > TOL``, a piece of rows at a time."""
    out = np.empty(len(rj), dtype=bool)
    for a in range(0, len(rj), _PIECE_ROWS):
        b = a + _PIECE_ROWS
        off = per_job[rj[a:b]]
        np.subtract(values[a:b], off, out=off)
        np.abs(off, out=off)
        np.greater(off, TOL, out=out[a:b])
    return out


def rule_rows_within_run(t: RunTables) -> Problems:
    """First-segment rows begin at the job's start; later ones inside its run; every row ends
    when its job ends (a deadline job's row may end before: a node given back at a join)."""
    p = Problems()
    rj, start, end = t.row_job, t.start, t.end
    seg0 = t.seg0
    twice = _off_by_more_than_tol(t.t_from, start, rj)
    twice &= seg0
    for k in np.flatnonzero(twice)[:20]:
        i = rj[k]
        p.add(
            t.t_from[k],
            "twice",
            f"{t.job(i)} holds node {int(t.node[k])} from {t.t_from[k]:.15g}, but started at "
            f"{start[i]:.15g} (started twice?)",
        )
    later = np.flatnonzero(~seg0)  # (the rows of later segments only)
    rl = rj[later]
    later = later[(t.t_from[later] < start[rl] - TOL) | (t.t_from[later] >= end[rl])]
    for k in later[:20]:
        p.add(
            t.t_from[k],
            "segment",
            f"{t.job(rj[k])}: allocation segment {int(t.seg[k])} on node "
            f"{int(t.node[k])} starts at {t.t_from[k]:.15g}, outside its run "
            f"[{start[rj[k]]:.15g}, {end[rj[k]]:.15g})",
        )
    if t.app.any():  # a deadline job's row may end before its job (a node given back)
        to_mismatch = np.where(t.app[rj], t.t_to > end[rj] + TOL, np.abs(t.t_to - end[rj]) > TOL)
    else:
        to_mismatch = _off_by_more_than_tol(t.t_to, end, rj)
    for k in np.flatnonzero(to_mismatch)[:20]:
        p.add(
            t.t_to[k],
            "release",
            f"{t.job(rj[k])} releases node {int(t.node[k])} at {t.t_to[k]:.15g}, but ended "
            f"at {end[rj[k]]:.15g}",
        )
    return p


def _pair_key(t: RunTables) -> np.ndarray:
    """One int64 key per row for its (job, node) (nodes outside the system share one key)."""
    width = int(t.system.n_nodes) + 1
    key = t.row_job.astype(np.int64, copy=False) * width
    in_range = not len(key) or (int(t.node.min()) >= 0 and int(t.node.max()) < width)
    key += t.node if in_range else np.clip(t.node, 0, width - 1)
    return key


def rule_node_once_per_segment(t: RunTables) -> Problems:
    """A segment lists each node once ((job, segment, node) keys sorted: numpy, not pandas --
    a million rows hash into hundreds of MB; segment numbers ranked so that any int64 value
    keeps the key within int64)."""
    p = Problems()
    seg = t.seg
    # (copies only where needed: a whole trace has a million rows, each array of them 8 MB)
    seg_key = seg if not len(seg) or int(seg.min()) >= 0 else np.maximum(seg, 0)
    if len(seg) and int(seg_key.max()) >= len(seg):
        seg_key = np.unique(seg_key, return_inverse=True)[1].astype(np.int64)
    n_segs = int(seg_key.max()) + 1 if len(seg) else 1

    def keys() -> np.ndarray:
        triple = _pair_key(t)
        if n_segs > 1:
            triple *= n_segs
            triple += seg_key
        return triple

    # the usual case, no node listed twice, is seen without sorting when each job's rows are
    # together with their keys rising (a schedule's own table: segments in order, nodes
    # ascending in each), else on the keys sorted in place; the rows are found (the keys
    # made again) only when some node is listed twice
    ordered = keys()
    rj = t.row_job
    if len(rj):
        new_job = rj[1:] != rj[:-1]
        runs = 1 + int(np.count_nonzero(new_job))
        if (
            runs == np.count_nonzero(np.bincount(rj))
            and (new_job | (ordered[1:] > ordered[:-1])).all()
        ):
            return p
        del new_job
    ordered.sort()
    if not (ordered[1:] == ordered[:-1]).any():
        return p
    del ordered
    triple = keys()
    order = np.argsort(triple, kind="stable")
    twice = order[1:][triple[order[1:]] == triple[order[:-1]]]
    for k in np.sort(twice)[:20]:
        p.add(
            t.t_from[k],
            "node-twice",
            f"job {_row_job_id(t, k)} lists node {int(t.node[k])} twice in segment {int(seg[k])} "
            f"(from {t.t_from[k]:.15g})",
        )
    return p


def rule_whole_node_once(t: RunTables) -> Problems:
    """A deadline job holds a node at most once at a time (one unit: the whole node)."""
    p = Problems()
    pair = _pair_key(t)
    rows_app = np.flatnonzero(t.app[t.row_job])
    o = rows_app[np.lexsort((t.t_from[rows_app], pair[rows_app]))]
    again = np.flatnonzero((pair[o][1:] == pair[o][:-1]) & (t.t_from[o][1:] < t.t_to[o][:-1] - TOL))
    for q in again[:20]:
        k = o[q + 1]
        p.add(
            t.t_from[k],
            "per-node",
            f"job {_row_job_id(t, k)} takes node {int(t.node[k])} at {t.t_from[k]:.15g} "
            f"while it still holds it (until {t.t_to[o[q]]:.15g})",
        )
    return p


def rule_max_units_per_node(t: RunTables) -> Problems:
    """A job with ``max_units_per_node`` has at most that many units on a node, over all its
    segments (deadline jobs: :func:`rule_whole_node_once`)."""
    p = Problems()
    max_pn = t.w_col("max_units_per_node", np.int64)
    pair = _pair_key(t)
    pair = np.where(t.app[t.row_job], -1 - np.arange(len(pair)), pair)
    order = np.argsort(pair, kind="stable")
    sorted_pair = pair[order]
    if not len(pair):
        return p
    first_of_pair = np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]])
    pair_units = np.add.reduceat(t.units[order], first_of_pair)
    pair_job = t.row_job[order[first_of_pair]]
    pair_node = t.node[order[first_of_pair]]
    limit = max_pn[pair_job]
    limit = np.where(t.per_core_rows[order[first_of_pair]], 0, limit)  # per core: cores
    for k in np.flatnonzero((limit > 0) & (pair_units > limit))[:20]:
        ji = int(pair_job[k])
        p.add(
            t.start[ji],
            "per-node",
            f"{t.job(ji)} has {int(pair_units[k])} unit(s) on node {int(pair_node[k])} (started at "
            f"{t.start[ji]:.15g}), at most {int(max_pn[ji])} allowed",
        )
    return p


def rule_fork_grants(t: RunTables) -> Problems:
    """Later segments of deadline jobs are fork grants (:func:`_check_forks`)."""
    p = Problems()
    later_app = (t.seg > 0) & t.app[t.row_job]
    tags = t.tags or {}
    _check_forks(
        p,
        t.system,
        t.forks,
        bool(tags.get("contiguous_grants", False)),
        t.ids,
        t.row_job,
        t.seg,
        t.node,
        t.units,
        t.t_from,
        t.t_to,
        later_app,
    )
    return p


def rule_growth_grants(t: RunTables) -> Problems:
    """Later segments of other jobs are growth grants, each explained by a growth request
    (:func:`_check_growth`)."""
    p = Problems()
    other = ~((t.seg > 0) & t.app[t.row_job])
    _check_growth(
        p,
        t.growth,
        t.ids,
        t.start,
        t.row_job[other],
        t.seg[other],
        t.node[other],
        t.units[other],
        t.t_from[other],
    )
    return p


def _first_segment_nodes(t: RunTables) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (job, node) pairs of first segments; per job how many, lowest, highest."""
    seg0 = t.seg0
    pairs = np.unique(np.stack([t.row_job[seg0], t.node[seg0]], axis=1), axis=0)
    n_used = np.bincount(pairs[:, 0], minlength=len(t.ids))
    lowest = np.full(len(t.ids), np.iinfo(np.int64).max)
    highest = np.full(len(t.ids), np.iinfo(np.int64).min)
    np.minimum.at(lowest, pairs[:, 0], pairs[:, 1])
    np.maximum.at(highest, pairs[:, 0], pairs[:, 1])
    return pairs, n_used, lowest, highest


def rule_node_count(t: RunTables) -> Problems:
    """A job with ``node_count`` starts on exactly that many distinct nodes."""
    p = Problems()
    node_count = t.w_col("node_count", np.int64)
    _, n_used, _, _ = _first_segment_nodes(t)
    for ji in np.flatnonzero((node_count > 0) & t.started)[:20]:
        if int(n_used[ji]) != node_count[ji]:
            p.add(
                t.start[ji],
                "node-count",
                f"{t.job(ji)} uses {int(n_used[ji])} node(s) from {t.start[ji]:.15g}, it requests "
                f"exactly {int(node_count[ji])}",
            )
    return p


def rule_contiguous(t: RunTables) -> Problems:
    """A ``contiguous`` job starts on consecutive node indices."""
    p = Problems()
    contiguous = t.w_col("contiguous", bool)
    pairs, n_used, lowest, highest = _first_segment_nodes(t)
    for ji in np.flatnonzero(contiguous & t.started):
        if n_used[ji] and int(highest[ji] - lowest[ji] + 1) != int(n_used[ji]):
            nodes_used = pairs[pairs[:, 0] == ji, 1]  # (sorted: np.unique's order)
            p.add(
                t.start[ji],
                "contiguous",
                f"{t.job(ji)} requests contiguous nodes, it uses nodes {_ids(np.asarray(nodes_used), 8)} "
                f"from {t.start[ji]:.15g}",
            )
            if len(p) >= 20:
                break
    return p


def _swept_rows(t: RunTables) -> tuple[Any, np.ndarray, np.ndarray]:
    """The rows the capacity sweep reads and their intervals: a row whose ``from`` / ``to`` is
    not finite (reported by :func:`rule_row_times`) still holds its node, from its job's start
    (first segment) to its job's end when those are finite; rows left out -- a node out of
    range or not an integer, no finite interval even so -- are all reported elsewhere."""
    sweep_from, sweep_to = t.t_from, t.t_to
    if _bad_times(t).any():
        sweep_from = np.where(
            np.isfinite(t.t_from), t.t_from, np.where(t.seg0, t.start[t.row_job], np.nan)
        )
        sweep_to = np.where(np.isfinite(t.t_to), t.t_to, t.end[t.row_job])
    ok = (
        ~_out_of_range(t)
        & ~t.bad_node
        & np.isfinite(sweep_from)
        & np.isfinite(sweep_to)
        & (sweep_to > sweep_from)
    )
    sel: Any = slice(None) if ok.all() else ok  # the usual case: views, not copies
    return sel, sweep_from, sweep_to


def _without_per_core(t: RunTables, sel: Any) -> Any:
    """``sel`` (a slice or a row mask) less the per-core rows (:func:`rule_per_core`)."""
    core = t.per_core_rows
    if not core.any():
        return sel
    mask = np.ones(len(t.row_job), dtype=bool) if isinstance(sel, slice) else sel.copy()
    return mask & ~core


def rule_per_core(t: RunTables) -> Problems:
    """The per-core capacity rule of a per-core dispatcher's deadline jobs
    (:func:`_check_per_core`): cores held on a node never beyond its cores, except by a
    time-shared start while no core is free anywhere, on a least-loaded node."""
    p = Problems()
    sel, sweep_from, sweep_to = _swept_rows(t)
    ok = np.zeros(len(t.row_job), dtype=bool)
    ok[sel] = True
    rows = ok & t.per_core_rows
    _check_per_core(
        p,
        _node_cores(t.system, t.system.resources),
        int(t.system.n_nodes),
        t.node[rows],
        sweep_from[rows],
        sweep_to[rows],
        t.units[rows],
        t.row_job[rows],
        t.ids,
    )
    return p


def rule_capacity(t: RunTables) -> Problems:
    """At no instant, on no node, for no resource is more in use than the node's capacity (a
    job ending at ``t`` releases before a job starting at ``t`` acquires)."""
    p = Problems()
    sel, sweep_from, sweep_to = _swept_rows(t)
    sel = _without_per_core(t, sel)
    if len(t.node[sel]):
        _capacity_sweep(
            p,
            t.system,
            t.system.capacity,
            list(t.system.resources),
            t.node[sel],
            sweep_from[sel],
            sweep_to[sel],
            t.amounts[sel],
            lambda rows: t.ids[t.row_job[sel][rows]],
        )
    return p


def rule_exclusive_nodes(t: RunTables) -> Problems:
    """A whole-node job shares none of its nodes (:func:`_check_exclusive`)."""
    p = Problems()
    sel, sweep_from, sweep_to = _swept_rows(t)
    sel = _without_per_core(t, sel)
    if len(t.node[sel]):
        _check_exclusive(
            p, t.node[sel], sweep_from[sel], sweep_to[sel], t.row_job[sel], t.app, t.ids
        )
    return p


def rule_bookings(t: RunTables) -> Problems:
    """The dispatcher's advance reservations (:func:`_check_bookings`)."""
    p = Problems()
    assert t.bookings is not None
    _check_bookings(
        p,
        t.bookings,
        t.ids,
        t.start,
        t.end,
        t.started,
        t.row_job,
        t.seg0,
        t.node,
        t.t_from,
        t.deadline,
        t.cancelled & (t.cancel_why == CONFLICT),
    )
    return p


def rule_booking_shapes(t: RunTables) -> Problems:
    """The booking strategy's shape rule (:func:`_check_shapes`)."""
    p = Problems()
    assert t.bookings is not None and t.shape is not None
    _check_shapes(p, t.system, t.shape, t.bookings, t.ids, t.app)
    return p


#: every rule of the validator, in the order of the module docstring
RULES: tuple[Rule, ...] = (
    Rule("job-set", _always, rule_job_set),
    Rule("never-started", _always, rule_never_started),
    Rule("finite-times", _always, rule_finite_times),
    Rule("rejected-never-ran", _always, rule_rejected_never_ran),
    Rule("start-after-submit", _always, rule_start_after_submit),
    Rule("duration", _always, rule_duration),
    Rule("killed-flag", lambda t: "killed" in t.jobs, rule_killed_flag),
    Rule("final-status", _always, rule_final_status),
    Rule("cancel-reason", lambda t: "cancel_reason" in t.jobs, rule_cancel_reason),
    Rule(
        "cancelled-without-deadlines",
        lambda t: bool(t.cancelled.any()) and not t.deadline_rules,
        rule_cancelled_without_deadlines,
    ),
    Rule("deadlines", lambda t: t.deadline_rules, rule_deadlines),
    Rule("deadline-outcome", lambda t: t.deadline_rules, rule_deadline_outcome),
    Rule(
        "booking-conflict-needs-bookings",
        lambda t: bool((t.cancelled & (t.cancel_why == CONFLICT)).any()),
        rule_booking_conflict_needs_bookings,
    ),
    Rule("rejections", lambda t: bool(t.rejected.any()), rule_rejections),
    Rule("row-values", _always, rule_row_values),
    Rule("node-range", _always, rule_node_range),
    Rule("row-times", _always, rule_row_times),
    Rule("amounts", _always, rule_amounts),
    Rule("segment-numbers", _always, rule_segment_numbers),
    Rule("units-at-start", _always, rule_units_at_start),
    Rule("rows-of-unstarted", _always, rule_rows_of_unstarted),
    Rule("rows-within-run", _always, rule_rows_within_run),
    Rule("node-once-per-segment", _always, rule_node_once_per_segment),
    Rule("whole-node-once", lambda t: bool(t.app.any()), rule_whole_node_once),
    Rule("per-core", lambda t: bool(t.per_core_rows.any()), rule_per_core),
    Rule(
        "max-units-per-node",
        lambda t: (
            "max_units_per_node" in t.workload
            and bool((np.asarray(t.workload["max_units_per_node"]) > 0).any())
        ),
        rule_max_units_per_node,
    ),
    Rule("fork-grants", lambda t: bool(((t.seg > 0) & t.app[t.row_job]).any()), rule_fork_grants),
    Rule(
        "growth-grants", lambda t: bool(((t.seg > 0) & ~t.app[t.row_job]).any()), rule_growth_grants
    ),
    Rule(
        "node-count",
        lambda t: (
            "node_count" in t.workload and bool((np.asarray(t.workload["node_count"]) > 0).any())
        ),
        rule_node_count,
    ),
    Rule(
        "contiguous",
        lambda t: (
            "contiguous" in t.workload and bool(np.asarray(t.workload["contiguous"], bool).any())
        ),
        rule_contiguous,
    ),
    Rule("capacity", _always, rule_capacity),
    Rule("exclusive-nodes", lambda t: bool(t.app.any()), rule_exclusive_nodes),
    Rule("bookings", lambda t: t.bookings is not None, rule_bookings),
    Rule(
        "booking-shapes",
        lambda t: t.bookings is not None and t.shape is not None and "whole_nodes" in t.workload,
        rule_booking_shapes,
    ),
)


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
    time_tolerance: float = TIME_TOLERANCE_S,
    shape: str | None = None,
    rules: Sequence[Rule] = RULES,
) -> ValidationReport:
    """Validate a schedule given as tables: every rule of :data:`RULES` that applies, over one
    :class:`RunTables` (see the module docstring for the rules). The tables hold their columns'
    kinds of value, as a result's frames and :func:`~hpcdispatch.results.store.read_run` give
    them (the run reader checks them: ids and counts integers, times numbers); integer columns
    holding NaN or 2.5 are reported per job.

    ``bookings``: the dispatcher's advance reservations, one row per booking and node
    (``job_id, made, start, end, released, node``: ``bookings.parquet``), or ``None`` when it
    made none; deadline workloads carry ``earliest_start`` and ``deadline`` columns.
    ``shape``: the booking strategy's shape rule, ``"hilbert"`` or ``"manhattan"``
    (:func:`shape_rule` of the dispatcher's identity), or ``None``. ``dispatcher_tags``: the
    dispatcher's tags (``rejects``: whether it may reject jobs; a run directory's come from
    the registry, :func:`validate_run_dir`). ``growth``: job id -> its growth requests, each
    ``(after, units)`` or an object with ``after`` and ``units`` (jobs without any may be left
    out). ``None`` for either: unknown, said in the notes when the schedule needs it; no
    verdict is invented. ``time_tolerance``: the validator's own (:data:`TIME_TOLERANCE_S`, or
    :data:`REAL_SLURM_SLACK_S` over a real Slurm's time scale).
    """
    t = run_tables(
        system,
        workload,
        jobs,
        allocations,
        walltime_kill,
        dispatcher_tags=dispatcher_tags,
        growth=growth,
        bookings=bookings,
        time_tolerance=time_tolerance,
        shape=shape,
    )
    report = ValidationReport(jobs=_n_rows(t.workload), allocation_rows=t.n_allocation_rows)
    for rule in rules:
        if rule.applies(t):
            found = rule.check(t)
            report.violations.extend(found)
            report.notes.extend(found.notes)
    report.violations.sort()
    return report


def _check_forks(
    report: Problems,
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
    report: Problems,
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
    report: Problems,
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
    report: Problems,
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
    report: Problems,
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
    report: Problems,
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
    if column.dtype.kind in "iu":  # (nothing bad: one False seen as every row's, read only)
        return column.astype(np.int64, copy=False), np.broadcast_to(np.False_, (len(column),))
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
            values = column.astype(object)
            columns[str(name)] = values.where(values.notna(), None).to_numpy()
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


def _check_growth(
    report: Problems,
    growth: Growth | None,
    ids: np.ndarray,
    start: np.ndarray,
    row_job: np.ndarray,
    seg: np.ndarray,
    node: np.ndarray,
    units: np.ndarray,
    t_from: np.ndarray,
) -> None:
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


#: rows per piece of the capacity sweep (whole nodes at a time): its temporaries are a few MB
#: whatever the schedule's size, instead of a dozen arrays of every row's two events
SWEEP_CHUNK_ROWS = 1 << 16


def _capacity_sweep(
    report: Problems,
    system: System,
    cap: np.ndarray,
    resources: list[str],
    node: np.ndarray,
    t_from: np.ndarray,
    t_to: np.ndarray,
    amounts: np.ndarray,
    job_ids: Callable[[np.ndarray], np.ndarray],
) -> None:
    """Replay every node's acquisitions and releases in time order and report where more is
    in use than ``cap``; ``job_ids``: the job ids of given rows (for the messages). The rows
    are taken a few nodes at a time (:data:`SWEEP_CHUNK_ROWS`): a node's events are all in
    one piece, and the pieces in node order give the order one sweep of all rows would."""
    m = len(node)
    fits = m == 0 or (0 <= node.min() and node.max() <= np.iinfo(np.int16).max)
    small = node.astype(np.int16) if fits else node  # (int16: numpy sorts it by radix)
    by_node = np.argsort(small, kind="stable")  # rows grouped by node, in row order within one
    sorted_nodes = small[by_node]
    del small
    node_start = np.r_[0, np.flatnonzero(sorted_nodes[1:] != sorted_nodes[:-1]) + 1, m]
    del sorted_nodes
    # piece boundaries: node boundaries, a new piece once one holds SWEEP_CHUNK_ROWS rows
    bounds = [0]
    for b in node_start[1:].tolist():
        if b - bounds[-1] >= SWEEP_CHUNK_ROWS or b == m:
            bounds.append(b)
    # over capacity: per piece its first (by time, then position) events, merged below
    candidates: list[tuple[float, int, int, int, int, int]] = []  # time, piece, rank, node, r, use
    negative: tuple[float, int] | None = None
    for piece, (a, b) in enumerate(pairwise(bounds)):
        if a == b:
            continue
        rows = by_node[a:b]
        over_at, negative_at = _sweep_piece(
            cap, node[rows], t_from[rows], t_to[rows], amounts[rows]
        )
        candidates.extend(
            (t, piece, rank, n, r, use) for rank, (t, n, r, use) in enumerate(over_at)
        )
        if negative is None and negative_at is not None:
            negative = negative_at
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    seen = set()
    for t, _, _, n, r, use in candidates[:20]:
        if (n, r) in seen:
            continue
        seen.add((n, r))
        holders = np.flatnonzero((node == n) & (t_from <= t) & (t_to > t) & (amounts[:, r] > 0))
        report.add(
            t,
            "capacity",
            f"node {n} ({system.node_name(n)}) at t={t:.15g}: {use} {resources[r]} in use, capacity "
            f"{int(cap[n, r])} (held by {_jobs(job_ids(holders))})",
        )
    if negative is not None:
        t, n = negative
        report.add(
            t,
            "internal",
            f"node {n}: negative usage at t={t:.15g} (inconsistent allocation rows)",
        )


def _sweep_piece(
    cap: np.ndarray, node: np.ndarray, t_from: np.ndarray, t_to: np.ndarray, amounts: np.ndarray
) -> tuple[list[tuple[float, int, int, int]], tuple[float, int] | None]:
    """One piece of :func:`_capacity_sweep` (the rows of whole nodes): its first 20 events
    over capacity, by time (``(time, node, first resource over, amount in use)``), and its
    first event with a negative amount in use (``(time, node)``, or None)."""
    m = len(node)
    times = np.concatenate([t_from, t_to])
    nodes = np.concatenate([node, node])
    # events ordered by node, then time, releases before acquisitions at one time: two stable
    # sorts (np.lexsort's order, in half its time), the releases (rows m..2m-1) put first
    releases_first = np.r_[np.arange(m, 2 * m), np.arange(m)]
    order = releases_first[np.argsort(times[releases_first], kind="stable")]
    del releases_first
    fits = 0 <= nodes.min() and nodes.max() <= np.iinfo(np.int16).max
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
    over_at = []
    if over.any():
        rows = np.nonzero(over)[0]
        for k in rows[np.argsort(times[rows], kind="stable")][:20].tolist():
            r = int(np.flatnonzero(over[k])[0])
            over_at.append((float(times[k]), int(nodes[k]), r, int(usage[k, r])))
    negative_at = None
    if (usage < 0).any():
        k = int(np.flatnonzero((usage < 0).any(axis=1))[0])
        negative_at = (float(times[k]), int(nodes[k]))
    return over_at, negative_at


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

    allocations = result.allocations_columns()
    del allocations["job_id"]  # made again when read, and not kept: see _JobIdsWhenRead
    ids, row_job = result.workload.ids, result.allocation_rows().job
    return validate_tables(
        result.system,
        workload_columns(result),
        result.jobs_columns(allocation_text=False),
        _JobIdsWhenRead(allocations, lambda: ids[row_job]),
        walltime_kill=result.options.walltime_kill,
        dispatcher_tags=result.tags or None,
        growth=growth_requests(result.workload),
        bookings=result.bookings_columns() if getattr(result, "bookings", None) else None,
        shape=shape_rule(result.dispatcher),
    )


class _JobIdsWhenRead(Mapping[str, Any]):
    """A result's allocation columns whose ``job_id`` is made each time it is read, not kept:
    :func:`run_tables` reads it once, to find each row's job, and a whole trace's rows' ids
    are 8 MB (HPC2N) to 18 MB (RICC) that would otherwise stay for all of the validation."""

    def __init__(self, columns: dict[str, Any], job_ids: Callable[[], np.ndarray]) -> None:
        self._columns, self._job_ids = columns, job_ids

    def __getitem__(self, name: str) -> Any:
        return self._job_ids() if name == "job_id" else self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(["job_id", *self._columns])

    def __len__(self) -> int:
        return 1 + len(self._columns)


def validate_run_dir(out_dir: str | Path, reload_workload: bool = True) -> ValidationReport:
    """Validate an output directory. From the directory the validator takes only the schedule
    (jobs, allocation rows, bookings) and the identity of what produced it (the system's and
    the dispatcher's names and parameters, the workload's source); every rule comes from its
    own code: the system the run names (a preset: the stored ``system.toml`` must equal it),
    the dispatcher's tags from the registry, its own time tolerance, the workload re-derived
    from its source (a file by absolute path and SHA-256, or a generator's spec), the files
    its dispatcher's family must write, and ``summary.json`` recomputed. The verdict
    (:attr:`ValidationReport.verdict`): ``valid``, ``invalid``, ``unverified`` (an input
    could not be re-derived) or ``cannot validate`` (the dispatcher is not registered)."""
    from hpcdispatch.results.store import read_run

    stored = read_run(out_dir)
    early: list[tuple[str, str]] = []  # (kind, message) found before the tables are checked
    notes: list[str] = []
    unverified: list[str] = []
    cannot: list[str] = []
    system_notes: list[str] = []
    system = _trusted_system(stored, early, system_notes)
    producer = _producer(stored.run, early, cannot)
    tolerance = _time_tolerance(stored.run, early, notes)
    workload_table, growth = _source_workload(
        stored, system, reload_workload, early, notes, unverified
    )
    bookings = stored.bookings
    if producer is not None:
        name = producer.name
        if producer.books and bookings is None:
            early.append(
                (
                    "file",
                    f"bookings.parquet is missing: dispatcher '{name}' books every job it "
                    "starts (its bookings are part of the schedule)",
                )
            )
        elif not producer.books and bookings is not None:
            early.append(
                ("file", f"bookings.parquet is present, but dispatcher '{name}' makes no bookings")
            )
    report = validate_tables(
        system,
        workload_table,
        stored.jobs,
        stored.allocations,
        walltime_kill=bool(stored.run.get("options", {}).get("walltime_kill", True)),
        dispatcher_tags=producer.tags if producer is not None else None,
        growth=growth,
        bookings=bookings,
        time_tolerance=tolerance,
        shape=producer.shape if producer is not None else None,
    )
    for kind, message in early:
        report.add(-np.inf, kind, message)
    _check_summary(report, stored, system, workload_table, producer)
    report.violations.sort()
    report.notes[:0] = notes + system_notes
    report.unverified.extend(unverified)
    report.cannot.extend(cannot)
    return report


#: the dispatcher tags the rules read (:class:`~hpcdispatch.protocol.dispatcher.Tags`)
RULE_TAGS = ("rejects", "forks", "contiguous_grants")
#: the dispatcher name of a schedule recorded on a real Slurm by ``hpcdispatch slurm replay``
REAL_SLURM = "slurm-real"
#: the dispatcher name of a learning environment's episode (``hpcdispatch.rl``: an agent picks
#: queued jobs, with or without backfilling): it rejects, books and forks nothing
RL_AGENT = "rl-agent"


@dataclass(frozen=True)
class Producer:
    """The dispatcher that made a run, as the registry knows it: its canonical name, its
    tags (with the run's parameters), whether its family books (the reservation strategies:
    a class with its own ``bookings``) and its booking shape rule."""

    name: str
    tags: dict[str, Any]
    books: bool
    shape: str | None


def _producer(
    run: Mapping[str, Any], problems: list[tuple[str, str]], cannot: list[str]
) -> Producer | None:
    """The dispatcher ``run.json`` names, from the registry (built-in dispatchers are always
    registered; a plugin's when its file was loaded, ``validate --plugin``). Unknown: said in
    ``cannot``; parameters the class does not take, or stored tags that differ from the
    registry's: problems."""
    import dataclasses

    import hpcdispatch.dispatchers  # noqa: F401  (registers the built-in dispatchers)
    from hpcdispatch.protocol.dispatcher import Dispatcher
    from hpcdispatch.protocol.registry import DISPATCHERS

    ident = run.get("dispatcher")
    name = ident.get("name") if isinstance(ident, Mapping) else None
    params = ident.get("params", {}) if isinstance(ident, Mapping) else {}
    if not isinstance(name, str) or not name.strip():
        problems.append(("run.json", "run.json: field 'dispatcher' names no dispatcher"))
        return None
    if name == REAL_SLURM and isinstance(run.get("replay"), Mapping):
        # a schedule recorded on a real Slurm (slurm replay): no registered class made it; a
        # real Slurm rejects nothing here (a job it did not run is a problem of the replay),
        # books nothing and grants no forks
        return Producer(REAL_SLURM, {"rejects": False, "forks": False}, False, None)
    if name == RL_AGENT:
        return Producer(RL_AGENT, {"rejects": False, "forks": False}, False, None)
    cls = DISPATCHERS.get(name.strip().lower())
    if cls is None:
        cannot.append(
            f"run.json: dispatcher '{name}' is not registered (a plugin not loaded? give "
            "validate --plugin FILE): its rules are unknown"
        )
        return None
    if not isinstance(params, Mapping):
        problems.append(("run.json", f"run.json: dispatcher.params of '{name}' is not a table"))
        params = {}
    try:
        instance = cls(**dict(params))
        tags = dataclasses.asdict(instance.get_tags())
    except (TypeError, ValueError, HpcDispatchError) as exc:
        problems.append(
            (
                "run.json",
                f"run.json: dispatcher '{name}' does not take the parameters "
                f"{json_text(params)} ({str(exc).splitlines()[0][:120]})",
            )
        )
        return None
    stored = run.get("dispatcher_tags")
    if isinstance(stored, Mapping):
        for key, value in stored.items():  # (the tags the rules read; a bridge records its
            # own ``deterministic`` and ``memoryless``: a real Slurm's schedule is neither)
            if key in RULE_TAGS and value != tags[key]:
                problems.append(
                    (
                        "run.json",
                        f"run.json: dispatcher_tags.{key} is {json_text(value)}, but dispatcher "
                        f"'{cls.name}' declares {json_text(tags[key])} (the registry's tags are used)",
                    )
                )
    books = type(instance).bookings is not Dispatcher.bookings
    return Producer(cls.name, tags, books, SHAPE_RULES.get(cls.name))


def json_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, sort_keys=True)[:120]
    except (TypeError, ValueError):
        return repr(value)[:120]


def _time_tolerance(
    run: Mapping[str, Any], problems: list[tuple[str, str]], notes: list[str]
) -> float:
    """The validator's own time tolerance: :data:`TIME_TOLERANCE_S` for a simulated run;
    :data:`REAL_SLURM_SLACK_S` over the time scale for a schedule recorded on a real Slurm
    (``run.json``'s ``replay`` or ``bridge`` record). ``run.json``'s ``time_tolerance`` is
    never used: a value other than this one is a violation."""
    tolerance = TIME_TOLERANCE_S
    for what in ("replay", "bridge"):
        record = run.get(what)
        if not isinstance(record, Mapping):
            continue
        scale = record.get("time_scale")
        if (
            isinstance(scale, (int, float))
            and not isinstance(scale, bool)
            and np.isfinite(scale)
            and scale > 0
        ):
            tolerance = REAL_SLURM_SLACK_S / float(scale)
            notes.append(
                f"a schedule recorded on a real Slurm ({what}): starts and durations checked "
                f"with the validator's time tolerance of {tolerance:.6g} s "
                f"({REAL_SLURM_SLACK_S:g} s / time scale {scale:g}); capacity and allocations exact"
            )
        else:
            problems.append(
                (
                    "run.json",
                    f"run.json: {what}.time_scale is {json_text(scale)}, not a positive number",
                )
            )
        break
    stored = run.get("time_tolerance")
    if stored is not None and not (
        isinstance(stored, (int, float))
        and abs(float(stored) - tolerance) <= 1e-9 * max(1.0, tolerance)
    ):
        problems.append(
            (
                "run.json",
                f"run.json: time_tolerance is {json_text(stored)} s; the validator's own for this "
                f"run is {tolerance:.6g} s (the field is not used)",
            )
        )
    return tolerance


def _source_workload(
    stored: Any,
    system: System,
    reload_workload: bool,
    problems: list[tuple[str, str]],
    notes: list[str],
    unverified: list[str],
) -> tuple[Table, Growth | None]:
    """The workload the schedule is judged against: re-generated from a ``synthetic:`` spec,
    or re-read from the file ``run.json`` records by absolute path when its SHA-256 matches
    (``workload.kind`` is not read: the spec and the file decide). The stored table must
    equal it (every column the source determines). Otherwise the stored table, and the
    verdict can at best be ``unverified``."""
    from hpcdispatch.results.store import file_sha256
    from hpcdispatch.workload.loader import workload_from_source

    src = stored.run.get("workload", {})
    src = src if isinstance(src, Mapping) else {}
    spec = src.get("spec")
    given = src.get("options")
    options: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {}
    if not reload_workload:
        unverified.append(
            "workload not re-derived (--no-reload): the schedule was checked against the stored "
            "workload table only"
        )
        return stored.workload, None
    if isinstance(spec, str) and spec.startswith("synthetic:"):
        where = spec
    elif isinstance(src.get("path"), str) and isinstance(src.get("sha256"), str):
        path = Path(src["path"])
        if not path.is_absolute():
            unverified.append(f"run.json: workload.path {str(path)!r} is not an absolute path")
            return stored.workload, None
        try:
            digest = file_sha256(path)
        except OSError as exc:
            unverified.append(
                f"the workload source {path} cannot be re-read ({exc.strerror or exc}): the "
                "schedule was checked against the stored workload table only"
            )
            return stored.workload, None
        if digest != src["sha256"]:
            unverified.append(
                f"the workload source {path} changed since the run (SHA-256 {digest[:12]}..., "
                f"recorded {str(src['sha256'])[:12]}...): the schedule was checked against the "
                "stored workload table only"
            )
            return stored.workload, None
        where = str(path)
    else:
        unverified.append(
            f"workload not re-derivable: run.json records no generator spec and no file path "
            f"with its hash for {spec!r} (a workload held in memory, or a run written before "
            "hashes were recorded): the schedule was checked against the stored workload table only"
        )
        return stored.workload, None
    try:
        fresh = workload_from_source(str(src.get("kind", "")), where, options, system)
    except HpcDispatchError as exc:
        unverified.append(f"the workload source {where} could not be re-read ({exc})")
        return stored.workload, None
    columns = _workload_table(fresh, system)
    mismatch = _compare_workloads(columns, stored.workload, system)
    if mismatch:
        problems.append(
            ("workload", f"the stored workload differs from its source {where}: {mismatch}")
        )
    else:
        notes.append(
            f"workload re-read from {where} and matches the stored one ({len(fresh)} jobs)"
        )
    extra = sorted(set(stored.workload.columns) - set(columns))
    if extra:
        notes.append(
            f"stored workload columns not derived from the source (not used): {', '.join(extra)}"
        )
    return columns, growth_requests(fresh)


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
            trusted = system_from_swf_header(src.get("path") or src["spec"])
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
        # (the validator's own: the run-time bound and the per-type summary read them)
        data["behaviour"] = np.array(
            [-1 if j.app is None else j.app.behaviour for j in fresh.jobs], dtype=np.int64
        )
        data["processes"] = np.array(
            [0 if j.app is None else j.app.processes for j in fresh.jobs], dtype=np.int64
        )
    return data


#: columns of :func:`_workload_table` that the stored workload table does not carry
VALIDATOR_ONLY_COLUMNS = ("behaviour", "processes")


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
        if col in VALIDATOR_ONLY_COLUMNS:
            continue
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
    report: ValidationReport,
    stored: Any,
    system: System,
    workload: Table,
    producer: Producer | None,
) -> None:
    """Every field of ``summary.json`` recomputed from the schedule
    (:mod:`hpcdispatch.validation.summary`) with the validator's own ``bsld_tau``, and its
    names (system, dispatcher, workload) compared with ``run.json``'s."""
    from hpcdispatch.validation.summary import check_summary, recompute_summary

    summary = stored.summary
    if not summary:
        report.notes.append("no summary.json: the run publishes no summary")
        return
    decisions = None
    if (Path(stored.path) / "decisions.parquet").is_file():
        decisions = stored.decisions()
    with np.errstate(all="ignore"):  # (NaN / inf times are reported by the rules)
        recomputed = recompute_summary(
            system, _columns(workload), stored.jobs, stored.allocations, BSLD_TAU_S, decisions
        )
    src = stored.run.get("workload", {})
    identity: dict[str, Any] = {"system": stored.run.get("system")}
    if isinstance(stored.run.get("predictor"), str):
        identity["predictor"] = stored.run["predictor"]
    if isinstance(src, Mapping) and "spec" in src:
        identity["workload"] = src["spec"]
    named = stored.run.get("dispatcher")
    if producer is not None:
        identity["dispatcher"] = producer.name
    elif isinstance(named, Mapping) and isinstance(named.get("name"), str):
        identity["dispatcher"] = named["name"]
    problems, notes = check_summary(summary, recomputed, identity)
    for message in problems:
        report.add(-np.inf, "summary", message)
    report.notes.extend(notes)
