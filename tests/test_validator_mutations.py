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

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

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
    "leak-nc": "synthetic:deadline,jobs=80,seed=2,load=heavy",  # no bookings; cancelled while running
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


DEADLINE_CORRUPTIONS = {
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


# ---- issue 49: edits of the run directory that used to switch the validator off -----------------
#
# Each test edits what a run directory holds beside its schedule (run.json, summary.json, a file
# of the dispatcher's family, the workload source, the current directory) -- most together with
# a bad schedule -- and runs ``hpcdispatch validate``: it must exit non-zero with one line that
# names the field or the job.


def validate_cli(path: Path, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from hpcdispatch.cli.main import cli

    result = CliRunner().invoke(cli, ["validate", str(path), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def one_line_names(output: str, *words: Any) -> bool:
    """Whether one line of ``output`` holds every one of ``words``."""
    return any(all(str(w) in line for w in words) for line in output.splitlines())


def assert_refused(path: Path, *words: Any, code: int = 1) -> str:
    got, out = validate_cli(path)
    assert got == code, f"exit {got}, expected {code}:\n{out}"
    assert one_line_names(out, *words), f"no line names {words}:\n{out}"
    return out


class RunDir:
    """A copy of a run directory, its files edited in place."""

    def __init__(self, src: Path, dst: Path):
        shutil.copytree(src, dst)
        self.path = dst
        self.run = json.loads((dst / "run.json").read_text())
        self.summary = json.loads((dst / "summary.json").read_text())
        self.jobs = pd.read_parquet(dst / "jobs.parquet")
        self.allocs = pd.read_parquet(dst / "allocations.parquet")
        self.workload = pd.read_parquet(dst / "workload.parquet")

    def save(self, summary: bool = True) -> Path:
        (self.path / "run.json").write_text(json.dumps(self.run))
        if summary:
            (self.path / "summary.json").write_text(json.dumps(self.summary))
        else:  # the rule itself must catch the edit, not the recomputed summary
            (self.path / "summary.json").unlink(missing_ok=True)
        self.jobs.to_parquet(self.path / "jobs.parquet", index=False)
        self.allocs.to_parquet(self.path / "allocations.parquet", index=False)
        self.workload.to_parquet(self.path / "workload.parquet", index=False)
        return self.path

    def deadline_of(self, job_id: int) -> float:
        return float(self.workload.set_index("job_id").loc[job_id, "deadline"])

    def cancelled_running(self) -> pd.Series:
        c = self.jobs[
            (self.jobs.status == "cancelled") & (self.jobs.cancel_reason == "deadline-running")
        ]
        assert len(c), "the run has no job cancelled while running"
        return c.iloc[0]

    def reject(self, job_id: int) -> None:
        """The job marked rejected (with a reason) and its allocation rows dropped."""
        k = self.jobs.job_id == job_id
        self.jobs.loc[k, ["start", "end"]] = np.nan
        self.jobs.loc[k, "status"] = "rejected"
        self.jobs.loc[k, "killed"] = False
        self.jobs.loc[k, "reject_reason"] = "dropped"
        self.allocs = self.allocs[self.allocs.job_id != job_id]


@pytest.fixture(scope="module")
def pcp20_run(tmp_path_factory) -> Path:
    result = h.simulate(
        "machine-s", "synthetic:lublin,jobs=12,seed=5,load=1.2", "pcp20:deterministic=true"
    )
    path = tmp_path_factory.mktemp("pcp20") / "pcp20"
    h.write_result(result, path)
    assert validate_run_dir(path).ok
    return path


def test_time_tolerance_of_run_json_is_not_the_validators(runs, tmp_path):
    d = RunDir(runs["easy"], tmp_path / "run")
    d.run["time_tolerance"] = 1e9
    j = d.jobs[~d.jobs.start.isna()].iloc[0]
    submit = float(d.workload.set_index("job_id").loc[j.job_id, "submit"])
    shift = (j.start - submit) + 5000.0
    d.jobs.loc[d.jobs.job_id == j.job_id, ["start", "end"]] -= shift
    d.allocs.loc[d.allocs.job_id == j.job_id, ["from", "to"]] -= shift
    out = assert_refused(d.save(summary=False), "time_tolerance", "1000000000")
    assert one_line_names(out, job_word(j.job_id), "before its submission")


@pytest.mark.parametrize("tags", ["rejects-true", "deleted"])
def test_easy_job_dropped_as_rejected_with_edited_tags(runs, tmp_path, tags):
    d = RunDir(runs["easy"], tmp_path / "run")
    j = d.jobs[~d.jobs.start.isna()].iloc[2]
    d.reject(int(j.job_id))
    if tags == "deleted":
        del d.run["dispatcher_tags"]
    else:
        d.run["dispatcher_tags"]["rejects"] = True
        assert_refused(d.save(summary=False), "dispatcher_tags.rejects", "easy")
    assert_refused(d.save(summary=False), job_word(j.job_id), "rejects: false")


def test_pcp20_run_with_every_job_rejected(pcp20_run, tmp_path):
    d = RunDir(pcp20_run, tmp_path / "run")
    for job_id in d.jobs.job_id.tolist():
        d.reject(int(job_id))
    d.run["dispatcher_tags"]["rejects"] = True
    first = int(d.jobs.job_id.iloc[0])
    assert_refused(d.save(summary=False), job_word(first), "never rejects")


def _workload_and_schedule_edited(d: RunDir) -> int:
    """A started job's run time edited in the stored workload and its schedule to match."""
    j = d.jobs[(~d.jobs.start.isna()) & (d.jobs.status == "completed")].iloc[0]
    k = d.workload.job_id == j.job_id
    d.workload.loc[k, ["run_time", "wall_time"]] += 100
    d.jobs.loc[d.jobs.job_id == j.job_id, "end"] += 100
    d.allocs.loc[d.allocs.job_id == j.job_id, "to"] += 100
    return int(j.job_id)


def test_workload_kind_custom_does_not_make_the_stored_table_the_reference(runs, tmp_path):
    d = RunDir(runs["conservative"], tmp_path / "run")
    job = _workload_and_schedule_edited(d)
    d.run["workload"]["kind"] = "custom"
    assert_refused(d.save(summary=False), "stored workload differs", job_word(job))


def test_a_memory_workload_is_unverified_never_valid(runs, tmp_path):
    d = RunDir(runs["conservative"], tmp_path / "run")
    d.run["workload"].update(kind="memory", spec="<memory>")
    d.summary["workload"] = "<memory>"
    assert_refused(d.save(summary=False), "unverified", "not re-derivable", code=3)


def test_dispatcher_renamed_hilbert_to_count_only(deadline_runs, tmp_path):
    d = RunDir(deadline_runs["hilbert"], tmp_path / "run")
    d.run["dispatcher"]["name"] = "count-only"
    out = assert_refused(d.save(), "dispatcher 'count-only' does not take the parameters")
    assert one_line_names(out, "summary.json: dispatcher", "hilbert")


def test_unknown_dispatcher_cannot_be_validated(runs, tmp_path):
    d = RunDir(runs["easy"], tmp_path / "run")
    d.run["dispatcher"]["name"] = "my-plugin-policy"
    d.summary["dispatcher"] = "my-plugin-policy"
    assert_refused(d.save(), "cannot validate", "my-plugin-policy", code=4)


def test_bookings_file_deleted(deadline_runs, tmp_path):
    d = RunDir(deadline_runs["hilbert"], tmp_path / "run")
    (d.path / "bookings.parquet").unlink()
    assert_refused(d.save(), "bookings.parquet is missing", "hilbert")


@pytest.mark.parametrize(
    "key",
    [
        "bsld_tau",
        "utilization_core",
        "wait_p95",
        "wait_max",
        "turnaround_mean",
        "slowdown_median",
        "queue_length_mean",
        "spread_mean",
        "theoretical_runtime_s",
        "decision_time_mean_s",
    ],
)
def test_summary_field_edited(runs, tmp_path, key):
    d = RunDir(runs["easy"], tmp_path / "run")
    d.summary[key] = d.summary[key] * 0.5 + 1.0
    assert_refused(d.save(), f"summary.json: {key}")


@pytest.mark.parametrize("key", ["success_rate", "on_time", "cancel_rate", "type-success_rate"])
def test_deadline_summary_field_edited(deadline_runs, tmp_path, key):
    d = RunDir(deadline_runs["hilbert"], tmp_path / "run")
    if key.startswith("type-"):  # the first behaviour type's
        key = next(k for k in d.summary if k.startswith("type") and k.endswith("_success_rate"))
    d.summary[key] = d.summary[key] + 1
    assert_refused(d.save(), f"summary.json: {key}")


@pytest.mark.parametrize("dispatcher", ["leak-nc", "hilbert"])
def test_deadline_job_cancelled_while_running_relabelled_completed(
    deadline_runs, tmp_path, dispatcher
):
    d = RunDir(deadline_runs[dispatcher], tmp_path / "run")
    j = d.cancelled_running()
    k = d.jobs.job_id == j.job_id
    d.jobs.loc[k, "status"] = "completed"
    d.jobs.loc[k, "cancel_reason"] = None
    assert_refused(d.save(), "summary.json: on_time")


@pytest.mark.parametrize("dispatcher", ["leak-nc", "hilbert"])
def test_deadline_relabel_keeping_the_reason_names_the_job(deadline_runs, tmp_path, dispatcher):
    d = RunDir(deadline_runs[dispatcher], tmp_path / "run")
    j = d.cancelled_running()
    d.jobs.loc[d.jobs.job_id == j.job_id, "status"] = "completed"
    assert_refused(d.save(summary=False), job_word(j.job_id), "deadline-running")


def test_completed_deadline_job_cut_to_one_second(deadline_runs, tmp_path):
    d = RunDir(deadline_runs["hilbert"], tmp_path / "run")
    done = d.jobs[d.jobs.status == "completed"].merge(d.workload[["job_id", "run_time"]])
    j = done[done.run_time >= 4].iloc[0]
    d.jobs.loc[d.jobs.job_id == j.job_id, "end"] = j.start + 1
    d.allocs.loc[d.allocs.job_id == j.job_id, "to"] = j.start + 1
    assert_refused(d.save(summary=False), job_word(j.job_id), "its work takes at least")


def test_booking_conflict_by_a_dispatcher_without_bookings(deadline_runs, tmp_path):
    d = RunDir(deadline_runs["leak-nc"], tmp_path / "run")
    j = d.cancelled_running()
    d.jobs.loc[d.jobs.job_id == j.job_id, "cancel_reason"] = "booking-conflict"
    assert_refused(d.save(summary=False), job_word(j.job_id), "no bookings")


# ---- the workload source: by absolute path and SHA-256, from any current directory ----------------


@pytest.fixture(scope="module")
def swf_run(tmp_path_factory) -> Path:
    """A run of a small SWF trace given by a relative path, written from the trace's directory."""
    import os

    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload
    from hpcdispatch.workload.swf import swf_text

    home = tmp_path_factory.mktemp("swf")
    system = load_system("machine-s")
    (home / "trace.swf").write_text(
        swf_text(load_workload("synthetic:lublin,jobs=30,seed=4", system), system)
    )
    before = os.getcwd()
    os.chdir(home)
    try:
        result = h.simulate("machine-s", "trace.swf", "easy")
        h.write_result(result, home / "run")
    finally:
        os.chdir(before)
    run = json.loads((home / "run" / "run.json").read_text())
    assert run["workload"]["spec"] == "trace.swf" and run["workload"]["path"] == str(
        home / "trace.swf"
    )
    return home / "run"


def test_validate_gives_the_same_verdict_from_any_directory(swf_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out = validate_cli(swf_run)
    assert code == 0 and "re-read from" in out and "schedule valid" in out, out
    d = RunDir(swf_run, tmp_path / "run")
    job = _workload_and_schedule_edited(d)
    assert_refused(d.save(summary=False), "stored workload differs", job_word(job))


def test_a_file_of_the_same_name_in_the_current_directory_is_not_read(
    swf_run, tmp_path, monkeypatch
):
    (tmp_path / "trace.swf").write_text(
        "; not the trace\n1 0 0 100 1 -1 -1 1 100 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out = validate_cli(swf_run)
    assert code == 0 and "schedule valid" in out, out


@pytest.mark.parametrize("how", ["deleted", "changed"])
def test_a_missing_or_changed_source_is_unverified(swf_run, tmp_path, how):
    home = tmp_path / "home"
    shutil.copytree(swf_run.parent, home)
    run = json.loads((home / "run" / "run.json").read_text())
    run["workload"]["path"] = str(home / "trace.swf")
    (home / "run" / "run.json").write_text(json.dumps(run))
    assert validate_cli(home / "run")[0] == 0
    if how == "deleted":
        (home / "trace.swf").unlink()
        assert_refused(home / "run", "unverified", "cannot be re-read", code=3)
    else:
        with open(home / "trace.swf", "a") as f:
            f.write("; one more comment\n")
        assert_refused(home / "run", "unverified", "changed since the run", code=3)


# ---- every rule of the table, each with its own mutation ---------------------------------------
#
# For each rule of ``RULES``: a run, one edit, and the rule alone must report it -- the same
# tables checked with no rule at all report nothing, so the violation is this rule's own.


def _m_never_started(c: Case) -> None:
    j = c.started().iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, ["start", "end"]] = np.nan
    c.allocs = c.allocs[c.allocs.job_id != j.job_id]


def _m_rejected_with_times(c: Case) -> None:
    j = c.started().iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, ["status", "reject_reason"]] = ["rejected", "x"]


def _m_rejected(c: Case) -> None:
    j = c.started().iloc[0]
    k = c.jobs.job_id == j.job_id
    c.jobs.loc[k, ["start", "end"]] = np.nan
    c.jobs.loc[k, ["status", "reject_reason"]] = ["rejected", "dropped"]
    c.jobs.loc[k, "killed"] = False
    c.allocs = c.allocs[c.allocs.job_id != j.job_id]


def _m_cancelled_without_deadlines(c: Case) -> None:
    c.jobs.loc[c.jobs.index[0], "status"] = "cancelled"


def _m_cancel_reason_kept(c: Case) -> None:
    j = c.jobs[c.jobs.cancel_reason == "deadline-running"].iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "status"] = "completed"


def _m_cut_to_one_second(c: Case) -> None:
    done = c.jobs[c.jobs.status == "completed"].merge(c.workload[["job_id", "run_time"]])
    j = done[done.run_time >= 4].iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "end"] = j.start + 1
    c.allocs.loc[c.allocs.job_id == j.job_id, "to"] = j.start + 1


def _m_conflict_without_bookings(c: Case) -> None:
    j = c.jobs[c.jobs.cancel_reason == "deadline-running"].iloc[0]
    c.jobs.loc[c.jobs.job_id == j.job_id, "cancel_reason"] = "booking-conflict"


def _m_node_not_an_integer(c: Case) -> None:
    c.allocs["node"] = c.allocs["node"].astype(float)
    c.allocs.loc[c.allocs.index[0], "node"] = 2.5


def _m_negative_segment(c: Case) -> None:
    c.allocs.loc[c.allocs.index[0], "segment"] = -1


def _m_released_late(c: Case) -> None:
    c.allocs.loc[c.allocs.index[0], "to"] += 5.0


def _m_whole_node_twice(c: Case) -> None:
    row = c.allocs[c.allocs.segment == 0].iloc[[0]].copy()
    row["segment"] = 1
    c.allocs = pd.concat([c.allocs, row], ignore_index=True)


def _deadline(name: str) -> tuple[str, Callable[[Case], None]]:
    dispatcher, fn = DEADLINE_CORRUPTIONS[name]
    return f"deadline:{dispatcher}", fn


#: rule name -> (the run it edits: a key of RUNS, or "deadline:" + a key of DEADLINE_RUNS; the edit)
RULE_MUTATIONS: dict[str, tuple[str, Callable[[Case], None]]] = {
    "job-set": ("easy", CORRUPTIONS["missing-job"]),
    "never-started": ("easy", _m_never_started),
    "finite-times": ("easy", CORRUPTIONS["inf-start"]),
    "rejected-never-ran": ("easy", _m_rejected_with_times),
    "start-after-submit": ("easy", CORRUPTIONS["start-before-submit"]),
    "duration": ("easy", CORRUPTIONS["wrong-duration"]),
    "killed-flag": ("easy", CORRUPTIONS["killed-flag"]),
    "final-status": ("easy", CORRUPTIONS["status-killed-but-completed"]),
    "cancel-reason": ("deadline:hilbert", _m_cancel_reason_kept),
    "cancelled-without-deadlines": ("easy", _m_cancelled_without_deadlines),
    "deadlines": _deadline("end-after-deadline"),
    "deadline-outcome": ("deadline:hilbert", _m_cut_to_one_second),
    "booking-conflict-needs-bookings": ("deadline:leak-nc", _m_conflict_without_bookings),
    "rejections": ("easy", _m_rejected),
    "row-values": ("easy", _m_node_not_an_integer),
    "node-range": ("easy", CORRUPTIONS["node-out-of-range"]),
    "row-times": ("easy", CORRUPTIONS["nan-to"]),
    "amounts": ("easy", CORRUPTIONS["wrong-amount"]),
    "segment-numbers": ("easy", _m_negative_segment),
    "units-at-start": ("easy", CORRUPTIONS["wrong-units"]),
    "rows-of-unstarted": ("easy", CORRUPTIONS["rejected-with-allocation-rows"]),
    "rows-within-run": ("easy", _m_released_late),
    "node-once-per-segment": ("easy", CORRUPTIONS["node-twice-in-a-segment"]),
    "whole-node-once": ("deadline:leak", _m_whole_node_twice),
    "max-units-per-node": ("easy", CORRUPTIONS["max-units-per-node"]),
    "fork-grants": _deadline("static-job-grows"),
    "growth-grants": ("easy", CORRUPTIONS["extra-segment"]),
    "node-count": ("easy", CORRUPTIONS["node-count"]),
    "contiguous": ("fifo", CORRUPTIONS["contiguous"]),
    "capacity": ("easy", CORRUPTIONS["capacity-overlap"]),
    "exclusive-nodes": _deadline("deadline-job-shares-a-node"),
    "bookings": _deadline("not-at-the-booked-start"),
    "booking-shapes": _deadline("hilbert-booking-off-the-curve"),
}


def test_every_rule_has_its_own_mutation():
    from hpcdispatch.validation.validator import RULES

    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert set(names) == set(RULE_MUTATIONS)


@pytest.mark.parametrize("rule_name", list(RULE_MUTATIONS))
def test_each_rule_reports_its_own_mutation(runs, deadline_runs, tmp_path, rule_name):
    import dataclasses

    from hpcdispatch.protocol.registry import dispatcher_class
    from hpcdispatch.validation.validator import RULES, shape_rule

    where, mutate = RULE_MUTATIONS[rule_name]
    src = deadline_runs[where.split(":")[1]] if where.startswith("deadline:") else runs[where]
    case = load_case(src, tmp_path / "run")
    mutate(case)
    rule = next(r for r in RULES if r.name == rule_name)
    ident = case.run["dispatcher"]
    tags = dispatcher_class(ident["name"])(**ident["params"]).get_tags()
    booked = case.path / "bookings.parquet"

    def check_with(rules):
        return validate_tables(
            case.system,
            case.memory_workload if case.memory_workload is not None else case.workload,
            case.jobs,
            case.allocs,
            walltime_kill=case.run["options"]["walltime_kill"],
            dispatcher_tags=dataclasses.asdict(tags),
            growth={},
            bookings=pd.read_parquet(booked) if booked.is_file() else None,
            shape=shape_rule(ident),
            rules=rules,
        )

    assert check_with([]).ok  # no rule, no violation: what follows is the rule's own
    found = check_with([rule])
    assert found.violations, f"rule '{rule_name}' missed its mutation"


@pytest.mark.slow
def test_a_plugins_dispatcher_cannot_be_validated_until_its_plugin_is_loaded(tmp_path):
    """A run of a plugin's dispatcher: 'cannot validate' (exit 4) without the plugin, never
    'valid'; with ``--plugin`` its tags come from the registry and the run is valid."""
    import subprocess
    import sys

    plugin = tmp_path / "issue49_plugin.py"
    plugin.write_text(
        "from hpcdispatch.dispatchers.priority import FIFO\n"
        "from hpcdispatch.protocol import register\n\n\n"
        "@register\nclass Fifo49(FIFO):\n    name = 'fifo-issue49'\n"
    )
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "hpcdispatch"]
    made = subprocess.run(
        [*cmd, "simulate", "-s", "machine-s", "-w", "synthetic:lublin,jobs=20,seed=2"]
        + ["-d", "fifo-issue49", "--plugin", str(plugin), "-o", str(run), "-q"],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    without = subprocess.run([*cmd, "validate", str(run)], capture_output=True, text=True)
    assert without.returncode == 4, without.stdout + without.stderr
    assert one_line_names(without.stdout, "cannot validate", "fifo-issue49", "--plugin")
    with_it = subprocess.run(
        [*cmd, "validate", str(run), "--plugin", str(plugin)], capture_output=True, text=True
    )
    assert with_it.returncode == 0 and "schedule valid" in with_it.stdout, with_it.stdout
