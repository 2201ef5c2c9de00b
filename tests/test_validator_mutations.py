"""Mutation suite of the independent validator: real runs of several dispatchers, written to
run directories, then corrupted one way at a time -- the stored parquet / json / toml files
edited with pandas (or, where the run has no job a corruption needs, the in-memory tables) --
and every corruption must be rejected with a message naming the job, and the node and the
time where they apply.

Every class of corruption the validator knows is here: capacity overlap, NaN / inf times,
start before submission, wrong duration, wrong units or amounts, a node out of range or twice
in a segment, max_units_per_node, node_count, contiguous, the killed flag, statuses,
rejections (undeclared, unexplained, with allocation rows), a growth segment no request
explains, a stored system.toml or workload that differs from what the run names, missing /
unknown / duplicated jobs, and every recomputed field of summary.json.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import hpcdispatch as h
from hpcdispatch.results.store import read_run
from hpcdispatch.validation import validate_run_dir, validate_tables

SLURM_I = (
    "synthetic:aucsched,workload=I,version=2,seed=1,runtime_h=0.2"  # 1-core units, half contiguous
)
SLURM_III = (
    "synthetic:aucsched,workload=III,version=2,seed=1,runtime_h=0.2"  # node counts, 1 unit per node
)
LUBLIN = "synthetic:lublin,jobs=50,seed=3,load=1.2"

#: dispatcher -> (system, workload) of its run
RUNS = {
    "easy": ("machine-s", SLURM_III),
    "conservative": ("machine-s", LUBLIN),
    "fifo": ("machine-s", SLURM_I),
    "slurm-bf": ("machine-s", SLURM_III),
    "hcp:deterministic=true": ("machine-s", "synthetic:lublin,jobs=30,seed=5,load=1.2"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, (system, workload) in RUNS.items():
        result = h.simulate(system, workload, name)
        assert h.validate(result).ok
        path = tmp_path_factory.mktemp("runs") / name.split(":")[0]
        h.write_result(result, path)
        assert validate_run_dir(path).ok, validate_run_dir(path).describe()
        out[name] = path
    return out


# ---- a run's tables, corrupted and checked -------------------------------------------------


@dataclass
class Expect:
    """A violation of ``kind`` whose message holds every one of ``words`` (a job, a node, a
    time ...)."""

    kind: str
    words: list[str]


@dataclass
class Case:
    path: Path
    system: Any
    run: dict
    summary: dict
    workload: pd.DataFrame
    jobs: pd.DataFrame
    allocs: pd.DataFrame
    toml: str
    #: set by corruptions that change the workload entry itself: validated in memory
    memory_workload: pd.DataFrame | None = None
    expect: list[Expect] = field(default_factory=list)

    # -- picking jobs and rows
    def started(self) -> pd.DataFrame:
        return self.jobs[~self.jobs.start.isna()]

    def job(self, job_id: int) -> pd.Series:
        return self.jobs[self.jobs.job_id == job_id].iloc[0]

    def rows_of(self, job_id: int, segment: int = 0) -> pd.DataFrame:
        return self.allocs[(self.allocs.job_id == job_id) & (self.allocs.segment == segment)]

    def multi_row_job(self) -> int:
        counts = self.allocs[self.allocs.segment == 0].groupby("job_id").size()
        return int(counts[counts >= 2].index[0])

    def unit_request(self, job_id: int) -> dict[str, int]:
        w = self.workload[self.workload.job_id == job_id].iloc[0]
        return {r: int(w[f"unit_{r}"]) for r in self.system.resources}

    def overflow_move(self) -> tuple[int, int, float]:
        """A row and a node busy with another job at the same time, where both together exceed
        the node's capacity: ``(row label, node, first time both hold it)``."""
        a = self.allocs
        amounts = a[list(self.system.resources)].to_numpy()
        cap = self.system.capacity
        for k in range(len(a)):
            mine = set(a.node[a.job_id == a.job_id.iloc[k]])
            over = (
                (a["from"] < a.to.iloc[k])
                & (a.to > a["from"].iloc[k])
                & (a.job_id != a.job_id.iloc[k])
                & ~a.node.isin(mine)
            ).to_numpy()
            for m in np.flatnonzero(over):
                n = int(a.node.iloc[m])
                if (amounts[k] + amounts[m] > cap[n]).any():
                    return a.index[k], n, max(float(a["from"].iloc[k]), float(a["from"].iloc[m]))
        raise AssertionError("no two jobs overlap beyond a node's capacity")

    def free_node(self, t0: float, t1: float) -> int | None:
        """A node nobody holds during ``[t0, t1)``, or ``None``."""
        busy = set(self.allocs.node[(self.allocs["from"] < t1) & (self.allocs.to > t0)])
        return next((n for n in range(self.system.n_nodes) if n not in busy), None)

    def expects(self, kind: str, *words: Any) -> None:
        self.expect.append(Expect(kind, [str(w) for w in words]))


def job_word(job_id: Any) -> str:
    return f"job {int(job_id)}"


def node_word(node: Any) -> str:
    return f"node {int(node)}"


def time_word(t: float) -> str:
    return f"{float(t):.15g}"


def load_case(src: Path, dst: Path) -> Case:
    shutil.copytree(src, dst)
    stored = read_run(dst)
    return Case(
        dst,
        stored.system,
        stored.run,
        stored.summary,
        stored.workload,
        stored.jobs.copy(),
        stored.allocations.copy(),
        (dst / "system.toml").read_text(),
    )


def check(case: Case):
    if case.memory_workload is not None:
        report = validate_tables(
            case.system,
            case.memory_workload,
            case.jobs,
            case.allocs,
            walltime_kill=case.run["options"]["walltime_kill"],
            dispatcher_tags=case.run["dispatcher_tags"],
            growth={},
        )
    else:
        case.jobs.to_parquet(case.path / "jobs.parquet", index=False)
        case.allocs.to_parquet(case.path / "allocations.parquet", index=False)
        case.workload.to_parquet(case.path / "workload.parquet", index=False)
        (case.path / "summary.json").write_text(json.dumps(case.summary))
        (case.path / "system.toml").write_text(case.toml)
        report = validate_run_dir(case.path)
    return report


# ---- the corruptions ---------------------------------------------------------------------

CORRUPTIONS: dict[str, Callable[[Case], None]] = {}


def corruption(name: str):
    def register(fn):
        CORRUPTIONS[name] = fn
        return fn

    return register


@corruption("capacity-overlap")
def _(c: Case):
    k, node, _ = c.overflow_move()
    c.allocs.loc[k, "node"] = node
    c.expects("capacity", node_word(node), job_word(c.allocs.job_id[k]))
    c.expects("capacity", node_word(node))


@corruption("nan-from-on-a-busy-node")
def _(c: Case):
    k, node, _ = c.overflow_move()
    c.allocs.loc[k, "node"] = node
    c.allocs.loc[k, "from"] = np.nan
    c.expects("time", job_word(c.allocs.job_id[k]), node_word(node), "nan")
    c.expects("capacity", node_word(node))  # the row still takes part in the sweep


@corruption("nan-to")
def _(c: Case):
    k = c.allocs.index[0]
    c.allocs.loc[k, "to"] = np.nan
    c.expects(
        "time",
        job_word(c.allocs.job_id[k]),
        node_word(c.allocs.node[k]),
        time_word(c.allocs["from"][k]),
    )


@corruption("inf-from-and-to")
def _(c: Case):
    k = c.allocs.index[-1]
    c.allocs.loc[k, ["from", "to"]] = [-np.inf, np.inf]
    c.expects("time", job_word(c.allocs.job_id[k]), node_word(c.allocs.node[k]), "inf")


@corruption("inf-start")
def _(c: Case):
    j = c.started().iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "start"] = np.inf
    c.expects("time", job_word(j.job_id), "start inf")


@corruption("nan-end")
def _(c: Case):
    j = c.started().iloc[1]
    c.jobs.loc[c.jobs.job_id == j.job_id, "end"] = np.nan
    c.expects("time", job_word(j.job_id), "end nan", time_word(j.start))
    c.expects("status", job_word(j.job_id))


@corruption("start-before-submit")
def _(c: Case):
    j = c.started().iloc[-1]
    w = c.workload[c.workload.job_id == j.job_id].iloc[0]
    shift = float(j.start - w.submit) + 10.0
    c.jobs.loc[c.jobs.job_id == j.job_id, ["start", "end"]] -= shift
    c.allocs.loc[c.allocs.job_id == j.job_id, ["from", "to"]] -= shift
    c.expects("early", job_word(j.job_id), time_word(j.start - shift))


@corruption("wrong-duration")
def _(c: Case):
    j = c.started().iloc[2]
    c.jobs.loc[c.jobs.job_id == j.job_id, "end"] += 1
    c.allocs.loc[c.allocs.job_id == j.job_id, "to"] += 1
    c.expects(
        "duration",
        job_word(j.job_id),
        f"ran {float(j.end - j.start + 1):.15g} s",
        time_word(j.start),
    )


@corruption("wrong-units")
def _(c: Case):
    k = c.allocs.index[c.allocs.units >= 2]
    if len(k):  # one unit fewer, amounts to match
        k = k[0]
        job_id = int(c.allocs.job_id[k])
        c.allocs.loc[k, "units"] -= 1
        for r, a in c.unit_request(job_id).items():
            c.allocs.loc[k, r] -= a
    else:  # one node fewer
        job_id = c.multi_row_job()
        c.allocs = c.allocs.drop(index=c.rows_of(job_id).index[-1])
    c.expects("units", job_word(job_id), time_word(c.job(job_id).start))


@corruption("wrong-amount")
def _(c: Case):
    k = c.allocs.index[3]
    c.allocs.loc[k, c.system.resources[0]] += 1
    c.expects("amount", job_word(c.allocs.job_id[k]), node_word(c.allocs.node[k]))


@corruption("node-out-of-range")
def _(c: Case):
    k = c.allocs.index[1]
    c.allocs.loc[k, "node"] = c.system.n_nodes
    c.expects("node", job_word(c.allocs.job_id[k]), node_word(c.system.n_nodes))


@corruption("node-twice-in-a-segment")
def _(c: Case):
    job_id = c.multi_row_job()
    rows = c.rows_of(job_id)
    c.allocs.loc[rows.index[1], "node"] = rows.node.iloc[0]
    c.expects("node-twice", job_word(job_id), node_word(rows.node.iloc[0]))


@corruption("max-units-per-node")
def _(c: Case):
    limited = c.workload.job_id[c.workload.max_units_per_node == 1]
    rows = c.allocs[(c.allocs.segment == 0) & c.allocs.job_id.isin(limited)]
    multi = rows.groupby("job_id").size()
    if (multi >= 2).any():  # two of its one-unit rows merged onto one node
        job_id = int(multi[multi >= 2].index[0])
        rows = c.rows_of(job_id)
        first, second = rows.index[0], rows.index[1]
        for col in ["units", *c.system.resources]:
            c.allocs.loc[first, col] += c.allocs.loc[second, col]
        c.allocs = c.allocs.drop(index=second)
        node = rows.node.iloc[0]
    else:  # (no such job in this run) the workload entry limits a job that has 2 units on a node
        k = c.allocs.index[c.allocs.units >= 2][0]
        job_id, node = int(c.allocs.job_id[k]), int(c.allocs.node[k])
        c.memory_workload = c.workload.copy()
        c.memory_workload.loc[c.memory_workload.job_id == job_id, "max_units_per_node"] = 1
    c.expects("per-node", job_word(job_id), node_word(node))


@corruption("node-count")
def _(c: Case):
    counted = c.workload.job_id[c.workload.node_count >= 2]
    candidates = [j for j in counted if len(c.rows_of(j)) >= 2]
    if candidates:  # its last node's units moved onto its first node: one node fewer
        job_id = int(candidates[0])
        rows = c.rows_of(job_id)
        first, last = rows.index[0], rows.index[-1]
        for col in ["units", *c.system.resources]:
            c.allocs.loc[first, col] += c.allocs.loc[last, col]
        c.allocs = c.allocs.drop(index=last)
        want = int(c.workload.node_count[c.workload.job_id == job_id].iloc[0])
    else:  # (no such job in this run) the workload entry asks for one node more than it got
        job_id = c.multi_row_job()
        want = len(c.rows_of(job_id)) + 1
        c.memory_workload = c.workload.copy()
        c.memory_workload.loc[c.memory_workload.job_id == job_id, "node_count"] = want
    c.expects("node-count", job_word(job_id), f"exactly {want}", time_word(c.job(job_id).start))


@corruption("contiguous")
def _(c: Case):
    flagged = set(c.workload.job_id[c.workload.contiguous])
    multi = c.allocs[c.allocs.segment == 0].groupby("job_id").size()
    candidates = [j for j in multi[multi >= 2].index if j in flagged]
    job_id = int(candidates[0]) if candidates else c.multi_row_job()
    if not candidates:  # (no such job in this run) the workload entry asks for contiguity
        c.memory_workload = c.workload.copy()
        c.memory_workload.loc[c.memory_workload.job_id == job_id, "contiguous"] = True
    rows = c.rows_of(job_id)
    j = c.job(job_id)
    free = [
        n for n in range(c.system.n_nodes) if n > rows.node.max() + 1 or n < rows.node.min() - 1
    ]
    busy = set(c.allocs.node[(c.allocs["from"] < j.end) & (c.allocs.to > j.start)])
    away = next((n for n in free if n not in busy), free[0])
    c.allocs.loc[rows.index[-1], "node"] = away
    c.expects("contiguous", job_word(job_id), time_word(j.start))


@corruption("killed-flag")
def _(c: Case):
    j = c.started().iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "killed"] = not bool(j.killed)
    c.expects("killed", job_word(j.job_id), time_word(j.start))


@corruption("status-killed-but-completed")
def _(c: Case):
    j = c.started()[c.started().status == "completed"].iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "status"] = "killed"
    c.expects("status", job_word(j.job_id), time_word(j.start))


for _status in ("queued", "pending", "running"):

    def _unfinished(c: Case, status=_status):
        j = c.started().iloc[-2]
        c.jobs.loc[c.jobs.job_id == j.job_id, "status"] = status
        c.expects("status", job_word(j.job_id), f"'{status}'")

    corruption(f"status-{_status}")(_unfinished)


def _reject(c: Case, job_id: int, reason: str) -> None:
    sel = c.jobs.job_id == job_id
    c.jobs.loc[sel, ["start", "end"]] = np.nan
    c.jobs.loc[sel, ["status", "reject_reason", "killed"]] = ["rejected", reason, False]


@corruption("rejected")
def _(c: Case):
    # removed from the schedule and marked rejected: EASY & co. never reject; a dispatcher
    # that may reject (slurm-bf) must give a reason
    j = c.started().iloc[3]
    may_reject = c.run["dispatcher_tags"]["rejects"]
    _reject(c, int(j.job_id), "" if may_reject else "no room")
    c.allocs = c.allocs[c.allocs.job_id != j.job_id]
    c.expects("rejected", job_word(j.job_id), "without a reason" if may_reject else "never rejects")


@corruption("rejected-with-allocation-rows")
def _(c: Case):
    j = c.started().iloc[4]
    _reject(c, int(j.job_id), "no room")
    first = c.rows_of(int(j.job_id)).iloc[0]
    c.expects(
        "rejected",
        job_word(j.job_id),
        "allocation",
        node_word(first.node),
        time_word(first["from"]),
    )


@corruption("extra-segment")
def _(c: Case):
    # a job that never grows holds one more node, free at the time, from a second after its start
    jobs = c.started()[(c.started().end - c.started().start) > 2]
    j, node = next(
        (j, n) for _, j in jobs.iterrows() if (n := c.free_node(j.start + 1, j.end)) is not None
    )
    t = float(j.start) + 1
    row = c.rows_of(int(j.job_id)).iloc[[0]].assign(segment=1, node=node, units=1)
    row["from"] = t
    for r, a in c.unit_request(int(j.job_id)).items():
        row[r] = a
    c.allocs = pd.concat([c.allocs, row], ignore_index=True)
    c.expects("growth", job_word(j.job_id), node_word(node), time_word(t))


@corruption("system-toml-count")
def _(c: Case):
    n = c.system.n_nodes
    assert f"count = {c.system.node_types[-1].count}" in c.toml
    c.toml = c.toml.replace(
        f"count = {c.system.node_types[-1].count}", f"count = {c.system.node_types[-1].count + 1}"
    )
    k = c.allocs.index[-1]
    c.allocs.loc[k, "node"] = n
    c.expects("system", c.run["system"], f"count = {c.system.node_types[-1].count + 1}")
    c.expects("node", job_word(c.allocs.job_id[k]), node_word(n))


@corruption("system-toml-capacity")
def _(c: Case):
    nt = c.system.node_types[0]
    r = c.system.resources[0]
    before = f"{r} = {nt.capacity[r]}"
    assert before in c.toml
    c.toml = c.toml.replace(before, f"{r} = {nt.capacity[r] * 2}", 1)
    c.expects("system", c.run["system"], f"capacity {r} = {nt.capacity[r] * 2}")


@corruption("workload-max-units-per-node")
def _(c: Case):
    k = c.workload.index[5]
    c.workload.loc[k, "max_units_per_node"] = 1 - min(int(c.workload.max_units_per_node[k]), 1)
    c.expects("workload", "max_units_per_node", job_word(c.workload.job_id[k]))


@corruption("workload-run-time")
def _(c: Case):
    k = c.workload.index[7]
    c.workload.loc[k, "run_time"] += 100
    c.expects("workload", "run_time", job_word(c.workload.job_id[k]))


@corruption("missing-job")
def _(c: Case):
    j = c.started().iloc[5]
    c.jobs = c.jobs[c.jobs.job_id != j.job_id]
    c.allocs = c.allocs[c.allocs.job_id != j.job_id]
    c.expects("missing", job_word(j.job_id))


@corruption("unknown-job")
def _(c: Case):
    extra = c.jobs.iloc[[0]].assign(job_id=999_999)
    c.jobs = pd.concat([c.jobs, extra], ignore_index=True)
    rows = c.rows_of(int(c.jobs.job_id.iloc[0])).assign(job_id=999_999)
    c.allocs = pd.concat([c.allocs, rows], ignore_index=True)
    c.expects("unknown", job_word(999_999))


@corruption("duplicated-job")
def _(c: Case):
    j = c.jobs.iloc[[6]]
    c.jobs = pd.concat([c.jobs, j], ignore_index=True)
    c.expects("twice", job_word(j.job_id.iloc[0]))


for _field in (
    "jobs",
    "started",
    "rejected",
    "killed",
    "wait_mean",
    "slowdown_mean",
    "bounded_slowdown_mean",
    "makespan",
):

    def _summary(c: Case, key=_field):
        true = c.summary[key]
        c.summary[key] = true + 1
        c.expects("summary", key, f"{true + 1:.12g}", f"{true:.12g}")

    corruption(f"summary-{_field}")(_summary)


# ---- the test ----------------------------------------------------------------------------


@pytest.mark.parametrize("corrupt", list(CORRUPTIONS))
@pytest.mark.parametrize("dispatcher", list(RUNS))
def test_every_corruption_is_rejected_naming_job_node_and_time(runs, tmp_path, dispatcher, corrupt):
    case = load_case(runs[dispatcher], tmp_path / "run")
    CORRUPTIONS[corrupt](case)
    report = check(case)
    assert not report.ok, f"{dispatcher}: '{corrupt}' passed the validator"
    # every message about jobs names them
    unnamed = [
        v
        for v in report.violations
        if v.kind not in ("summary", "system", "internal") and "job " not in v.message
    ]
    assert not unnamed, unnamed
    for want in case.expect:
        hits = [v for v in report.violations if v.kind == want.kind]
        assert hits, (
            f"{dispatcher}: '{corrupt}': no '{want.kind}' violation in\n{report.describe()}"
        )
        assert any(all(w in v.message for w in want.words) for v in hits), (
            f"{dispatcher}: '{corrupt}': no '{want.kind}' message names {want.words}:\n"
            + "\n".join(v.message for v in hits)
        )


# ---- deadline runs: earliest starts, deadlines, cancellations, node exclusivity, bookings ---------

DEADLINE_RUNS = {
    "manhattan": "synthetic:deadline,jobs=80,seed=2,load=heavy,lead_days=1",  # bookings, earliest starts
    "fifo": "synthetic:deadline,jobs=80,seed=2,load=heavy",  # cancellations (waiting and running)
    "leak": "synthetic:deadline,jobs=80,seed=2,load=heavy,types=3",  # forks granted, nodes given back at joins
    "hilbert": "synthetic:deadline,jobs=80,seed=2,load=heavy",  # bookings on consecutive curve positions
    # per-core holdings, time-shared starts (no free core anywhere)
    "leak:admission=overbook": "synthetic:deadline,jobs=80,seed=2,load=very-heavy,types=2",
}


@pytest.fixture(scope="module")
def deadline_runs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, workload in DEADLINE_RUNS.items():
        result = h.simulate("hlrn2-grid", workload, name)
        path = tmp_path_factory.mktemp("deadline") / name
        h.write_result(result, path)
        assert validate_run_dir(path).ok, validate_run_dir(path).describe()
        out[name] = path
    return out


def _late_started(c: Case) -> pd.Series:
    w = c.workload.set_index("job_id")
    s = c.started()
    return s[(s.start.to_numpy() > w.loc[s.job_id, "submit"].to_numpy())].iloc[0]


def _shift(c: Case, job_id: int, start: float, end: float) -> None:
    k = c.jobs.job_id == job_id
    c.jobs.loc[k, ["start", "end"]] = [start, end]
    rows = (c.allocs.job_id == job_id) & (c.allocs.segment == 0)
    c.allocs.loc[rows, ["from", "to"]] = [start, end]


def _before_earliest(c: Case) -> None:
    j = _late_started(c)
    est = float(c.workload.set_index("job_id").loc[j.job_id, "earliest_start"])
    _shift(c, j.job_id, est - 5, est - 5 + (j.end - j.start))
    c.expects("earliest-start", job_word(j.job_id), time_word(est - 5))
    c.expects("booking", job_word(j.job_id))


def _past_deadline(c: Case) -> None:
    j = c.started().iloc[3]
    dl = float(c.workload.set_index("job_id").loc[j.job_id, "deadline"])
    _shift(c, j.job_id, j.start, dl + 7)
    c.expects("deadline", job_word(j.job_id), time_word(dl + 7))


def _cancel_time(c: Case) -> None:
    j = c.jobs[c.jobs.status == "cancelled"].iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "end"] = j.end - 1
    c.expects("cancelled", job_word(j.job_id), time_word(j.end - 1))


def _shared_node(c: Case) -> None:
    a = c.allocs
    for k in range(len(a)):
        other = a[
            (a.job_id != a.job_id.iloc[k]) & (a["from"] < a.to.iloc[k]) & (a.to > a["from"].iloc[k])
        ]
        if len(other):
            node = int(other.node.iloc[0])
            c.allocs.loc[a.index[k], "node"] = node
            c.expects("exclusive", node_word(node))
            return
    raise AssertionError("no two jobs run at the same time")


def _wrong_booked_node(c: Case) -> None:
    j = c.started().iloc[0]
    rows = c.rows_of(j.job_id)
    free = c.free_node(j.start, j.end)
    assert free is not None
    c.allocs.loc[rows.index[0], "node"] = free
    c.expects("booking", job_word(j.job_id), "booked nodes")


def _moved_off_shape(c: Case, fits_shape) -> None:
    """One booked node of a multi-node job moved, in its booking and its allocation, to a node
    nobody holds or books during the job's booking that breaks the strategy's shape."""
    b = pd.read_parquet(c.path / "bookings.parquet")
    for j in c.started().itertuples():
        mine = b[b.job_id == j.job_id]
        if len(mine) < 2:
            continue
        t0, t1 = float(mine.start.iloc[0]), float(mine.released.iloc[0])
        busy = set(c.allocs.node[(c.allocs["from"] < t1) & (c.allocs.to > t0)])
        busy |= set(b.node[(b.start < t1) & (b.released > t0)])
        keep = sorted(set(mine.node))[1:]
        moved = int(mine.node.min())
        for n in range(c.system.n_nodes):
            if n not in busy and not fits_shape(keep + [n]):
                b.loc[(b.job_id == j.job_id) & (b.node == moved), "node"] = n
                c.allocs.loc[(c.allocs.job_id == j.job_id) & (c.allocs.node == moved), "node"] = n
                b.to_parquet(c.path / "bookings.parquet", index=False)
                return j.job_id
    raise AssertionError("no multi-node job with a free node off its shape")


def _not_consecutive_on_the_curve(c: Case) -> None:
    pos = c.system.topology.grid.hilbert_position
    job = _moved_off_shape(c, lambda nodes: np.ptp(pos[nodes]) == len(nodes) - 1)
    c.expects("booking", job_word(job), "Hilbert curve")


def _not_connected(c: Case) -> None:
    grid = c.system.topology.grid

    def connected(nodes: list[int]) -> bool:
        seen, todo = {nodes[0]}, [nodes[0]]
        while todo:
            n = todo.pop()
            for m in nodes:
                if m not in seen and grid.distance(n, m) == 1:
                    seen.add(m)
                    todo.append(m)
        return len(seen) == len(nodes)

    job = _moved_off_shape(c, connected)
    c.expects("booking", job_word(job), "4-connected")


def _overlapping_bookings(c: Case) -> None:
    b = pd.read_parquet(c.path / "bookings.parquet")
    for k in range(len(b)):
        other = b[
            (b.job_id != b.job_id.iloc[k])
            & (b.start < b.released.iloc[k])
            & (b.released > b.start.iloc[k])
        ]
        other = other[other.node != b.node.iloc[k]]
        if len(other):
            b.loc[b.index[k], "node"] = int(other.node.iloc[0])
            b.to_parquet(c.path / "bookings.parquet", index=False)
            c.expects("booking", "overlaps", node_word(other.node.iloc[0]))
            return
    raise AssertionError("no two bookings overlap in time")


def _booked_start(c: Case) -> None:
    b = pd.read_parquet(c.path / "bookings.parquet")
    j = int(b.job_id.iloc[0])
    b.loc[b.job_id == j, "start"] = b.loc[b.job_id == j, "start"] + 3
    b.to_parquet(c.path / "bookings.parquet", index=False)
    c.expects("booking", job_word(j), "its booking starts at")


def _grant_away(c: Case) -> None:
    """A contiguous-leak grant moved to a free node that touches none of the job's nodes."""
    grid = c.system.topology.grid
    a = c.allocs
    for k in np.flatnonzero((a.segment > 0).to_numpy()):
        row = a.iloc[k]
        mine = a[(a.job_id == row.job_id) & (a["from"] <= row["from"]) & (a.to >= row["from"])]
        busy = set(a.node[(a["from"] < row.to) & (a.to > row["from"])])
        for n in range(c.system.n_nodes):
            if n not in busy and not (grid.distance(n, mine.node.to_numpy()) <= 1).any():
                c.allocs.loc[a.index[k], "node"] = n
                c.expects("fork", job_word(row.job_id), "touches none")
                return
    raise AssertionError("no fork grant to move")


def _kept_past_end(c: Case) -> None:
    """A node given back at a join is held past the job's end."""
    a = c.allocs
    end = c.jobs.set_index("job_id").end
    early = a[a.to.to_numpy() < end.loc[a.job_id].to_numpy()]
    k = early.index[0]
    j = int(a.job_id[k])
    c.allocs.loc[k, "to"] = float(end.loc[j]) + 5
    c.expects("release", job_word(j))


def _fork_without_forks(c: Case) -> None:
    """A static strategy's job suddenly holds one more node (a grant it cannot make)."""
    j = c.started().iloc[0]
    row = c.rows_of(j.job_id).iloc[0].copy()
    row["segment"] = 1
    row["node"] = c.free_node(j.start, j.end)
    c.allocs = pd.concat(
        [c.allocs, row.to_frame().T.astype(c.allocs.dtypes.to_dict())], ignore_index=True
    )
    c.expects("fork", job_word(j.job_id), "does not grant forks")


def _conflict_time(c: Case) -> None:
    """A job cancelled for a booking conflict ends a second early."""
    j = c.jobs[c.jobs.cancel_reason == "booking-conflict"].iloc[0]
    _shift(c, j.job_id, j.start, j.end - 1)
    c.expects("cancelled", job_word(j.job_id), "booking conflict")


def _partial_static_start(c: Case) -> None:
    """A static strategy's job started on fewer nodes than booked (only the leak may)."""
    j = c.job(c.multi_row_job())
    rows = c.rows_of(j.job_id)
    c.allocs = c.allocs.drop(rows.index[-1])
    c.expects("units", job_word(j.job_id))


def _held_cores(c: Case, t: float) -> dict[int, int]:
    """Cores held per node at ``t`` by the rows of the per-core run (rows ending at ``t``
    have released, rows starting at ``t`` not yet taken)."""
    a = c.allocs
    live = a[(a["from"] < t) & (a.to > t)]
    return live.groupby("node")["units"].sum().astype(int).to_dict()


def _per_core_over_capacity(c: Case) -> None:
    """An overbook job's start takes more cores of a node than the node has free, while
    another node had a free core (not a time-shared start)."""
    n = c.system.n_nodes
    a = c.allocs
    for k in a.index[a.segment == 0]:
        t, node, units, job = (
            float(a.at[k, "from"]),
            int(a.at[k, "node"]),
            int(a.at[k, "units"]),
            a.at[k, "job_id"],
        )
        held = _held_cores(c, t)
        if len(held) == n and min(held.values()) >= 4:
            continue  # no free core anywhere then: a time-shared start would be allowed
        full = [v for v, h in held.items() if h + units > 4 and v != node]
        if full:
            c.allocs.loc[k, "node"] = full[0]
            c.expects("per-core", job_word(job), node_word(full[0]))
            return
    raise AssertionError("no start while a node was full")


def _per_core_too_many_units(c: Case) -> None:
    """An overbook job's row holds more cores than a node has (5 of 4)."""
    r = c.allocs[c.allocs.segment == 0].iloc[0]
    c.allocs.loc[c.allocs.index[0], ["units", "core"]] = [5, 5]
    c.expects("per-core", job_word(r.job_id))


DEADLINE_CORRUPTIONS = {
    "per-core-start-on-a-full-node": ("leak:admission=overbook", _per_core_over_capacity),
    "per-core-more-cores-than-a-node": ("leak:admission=overbook", _per_core_too_many_units),
    "contiguous-grant-not-adjacent": ("leak", _grant_away),
    "released-node-held-past-the-end": ("leak", _kept_past_end),
    "static-job-grows": ("manhattan", _fork_without_forks),
    "booking-conflict-cancel-time": ("manhattan", _conflict_time),
    "static-partial-start": ("manhattan", _partial_static_start),
    "start-before-earliest-start": ("manhattan", _before_earliest),
    "end-after-deadline": ("manhattan", _past_deadline),
    "cancel-time-not-the-deadline": ("fifo", _cancel_time),
    "deadline-job-shares-a-node": ("manhattan", _shared_node),
    "not-on-the-booked-nodes": ("manhattan", _wrong_booked_node),
    "bookings-overlap": ("manhattan", _overlapping_bookings),
    "not-at-the-booked-start": ("manhattan", _booked_start),
    "hilbert-booking-off-the-curve": ("hilbert", _not_consecutive_on_the_curve),
    "manhattan-booking-not-connected": ("manhattan", _not_connected),
}


@pytest.mark.parametrize("corrupt", list(DEADLINE_CORRUPTIONS))
def test_every_deadline_corruption_is_rejected(deadline_runs, tmp_path, corrupt):
    dispatcher, fn = DEADLINE_CORRUPTIONS[corrupt]
    case = load_case(deadline_runs[dispatcher], tmp_path / "run")
    fn(case)
    report = check(case)
    assert not report.ok, f"'{corrupt}' passed the validator"
    for want in case.expect:
        hits = [v for v in report.violations if v.kind == want.kind]
        assert hits, f"'{corrupt}': no '{want.kind}' violation in\n{report.describe()}"
        assert any(all(w in v.message for w in want.words) for v in hits), (
            f"'{corrupt}': no '{want.kind}' message names {want.words}:\n"
            + "\n".join(v.message for v in hits)
        )
