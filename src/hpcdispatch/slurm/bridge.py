"""``hpcdispatch slurm dispatch``: any dispatcher as the scheduler of a live Slurm (external mode).

The workload's jobs are submitted held (``sbatch --hold``, at their scaled submit times, as
``slurm replay`` plans them), so neither Slurm's main scheduler nor its backfill touches them.
In a loop the bridge reads the cluster (``squeue``, ``sinfo --json``), builds the same
:class:`~hpcdispatch.protocol.DispatchView` the simulator gives (:func:`build_view`), calls the
dispatcher, journals the decision and applies each start (:func:`start_commands`)::

    scontrol update JobId=ID NumNodes=k-k MinCPUsNode=c ReqNodeList=a,b
    scontrol release ID

A start with different unit counts per node runs as a heterogeneous job (``--uneven hetjob``,
the default) or is refused (``--uneven refuse``). The journal (``<out>.bridge/journal.jsonl``)
is written before each start is applied, so a bridge started again with the same arguments
goes on where it stopped and every job starts once; a failing dispatcher stops the bridge and
leaves the waiting jobs held. At the end the schedule is collected from squeue and written as
a run directory (``run.json`` with the placement check).

When slurmctld dies under the bridge, its error says so (``slurm down`` ends what is left).

Design notes, decisions and measurements: docs/RESULTS-SLURM-EXTERNAL.md,
"From the module docstrings".
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.protocol import Decision, Dispatcher, DispatchView, RunningJob, Start
from hpcdispatch.results.store import write_result
from hpcdispatch.slurm.cluster import ClusterInfo
from hpcdispatch.slurm.config import _CORE, _MEM
from hpcdispatch.slurm.records import (
    _SQUEUE_TEXT_FORMAT,
    SlurmJobRecord,
    _merge_hetjob,
    _parse_squeue_text,
    parse_squeue_json,
)
from hpcdispatch.slurm.replay import (
    _FINAL_STATES,
    _TOLERANCE_REAL_S,
    Submission,
    _build_result,
    _ReplayClock,
    plan_submissions,
)
from hpcdispatch.system.allocation import Allocation, held_amounts
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job, Workload

_log = logging.getLogger("hpcdispatch.slurm.bridge")

_POLL_S = 0.5
#: at most this many sbatch calls per loop turn (:meth:`Bridge.submit_due`)
_SUBMIT_BATCH = 50
_CALL_EVERY_S = 1.0
_JOURNAL_FILE = "journal.jsonl"
_LOG_FILE = "bridge.log"
_NAME_PREFIX = "hpcb-"
#: node states (sinfo --json, lower case) on which nothing may start
_UNUSABLE = ("down", "drain", "fail", "maint", "unknown", "not_responding", "future", "power")
_HELD_REASONS = ("JobHeldUser", "JobHeldAdmin")
#: how a start giving nodes different unit counts is applied: as a heterogeneous job, or refused
_UNEVEN_MODES = ("hetjob", "refuse")
#: suffix of the name of the heterogeneous job that runs an uneven start
_HET_SUFFIX = "-h"


class BridgeError(ConfigError):
    """The bridge stopped; the cluster runs on and the waiting jobs stay held."""


# ---- reading the cluster --------------------------------------------------------------
@dataclass(frozen=True)
class _NodeState:
    """One node as ``sinfo --json`` reports it."""

    name: str
    cpus: int
    alloc_cpus: int
    state: str
    flags: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        words = [self.state.lower(), *(f.lower() for f in self.flags)]
        return not any(w.startswith(bad) for w in words for bad in _UNUSABLE)


def _parse_sinfo_nodes(text: str, source: str = "sinfo --json") -> dict[str, _NodeState]:
    """``node name -> NodeState`` from ``sinfo --json`` (a one-line error naming the field)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(
            source, f"not JSON ({exc.msg} at character {exc.pos})", line=exc.lineno
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise TraceFormatError(source, "no 'nodes' list (is this sinfo --json output?)")
    nodes = {}
    for k, node in enumerate(doc["nodes"]):
        try:
            state = node["state"]
            if isinstance(state, list):  # later OpenAPI versions: a list of flags
                state = state[0] if state else "unknown"
            flags = tuple(str(f) for f in node.get("state_flags") or ())
            nodes[str(node["name"])] = _NodeState(
                str(node["name"]),
                int(node["cpus"]),
                int(node.get("alloc_cpus", 0)),
                str(state),
                flags,
            )
        except (KeyError, TypeError, ValueError) as exc:
            fld = exc.args[0] if isinstance(exc, KeyError) else None
            raise TraceFormatError(
                source,
                f"nodes[{k}]: {'missing' if fld else type(exc).__name__ + ': ' + str(exc)}",
                field=fld,
            ) from None
    return nodes


def _job_name(t0: int, job: Job) -> str:
    """Slurm's name of a bridged job: the run (its ``t0``) and the workload job id."""
    return f"{_NAME_PREFIX}{t0}-{job.id}"


def _is_held(record: SlurmJobRecord) -> bool:
    return record.state == "PENDING" and record.state_reason in _HELD_REASONS


@dataclass(frozen=True)
class _Placement:
    """A start the dispatcher decided at ``t`` (workload seconds): nodes and units per node."""

    nodes: tuple[int, ...]
    units: tuple[int, ...]
    t: float = 0.0


# ---- the view ---------------------------------------------------------------------------
def _build_view(
    system: System,
    workload: Workload,
    clock: _ReplayClock,
    now_epoch: float,
    ours: dict[int, SlurmJobRecord],
    nodes: dict[str, _NodeState],
    planned: list[float],
    decided: dict[int, _Placement],
    excluded: frozenset[int] | set[int] = frozenset(),
    previous: DispatchView | None = None,
) -> DispatchView:
    """The dispatcher's view of the live cluster (see the module docstring).

    ``ours``: workload index -> squeue record of every submitted job; ``decided``: the starts
    applied so far (from the journal); ``excluded``: jobs refused by the bridge (not queued);
    ``previous``: the view of the dispatcher's last call, against which ``new_jobs``,
    ``ended_jobs``, ``ended_running`` and ``running_version`` are set as the simulator sets
    them (stateful dispatchers -- EASY's kept reservation, conservative's profile -- rely on
    them). A job the dispatcher started is running from its decision's time ``t`` (what the
    dispatcher assumed; Slurm starts it up to about a second later)."""
    now = clock.to_workload(now_epoch)
    index_of = {system.node_name(i): i for i in range(system.n_nodes)}
    core = system.resources.index(_CORE)
    requests = workload.unit_requests
    queue: dict[int, Job] = {}
    running: dict[int, RunningJob] = {}
    started_cores = np.zeros(system.n_nodes, np.int64)  # cores squeue says our started jobs hold
    for index in sorted(ours, key=lambda i: (workload.jobs[i].submit, i)):
        rec, job = ours[index], workload.jobs[index]
        if _is_held(rec) and index not in decided:  # (a decided job still held: being released)
            if index not in excluded:
                queue[index] = job
            continue
        if rec.state in _FINAL_STATES:
            continue
        if (
            rec.start is not None and rec.cores
        ):  # running (or completing): what squeue says it holds
            unit_cores = max(1, int(requests[index][core]))
            pairs = sorted(
                (index_of[n], c // unit_cores) for n, c in rec.cores.items() if n in index_of
            )
            for n, c in rec.cores.items():
                if n in index_of:
                    started_cores[index_of[n]] += c
            begin = decided[index].t if index in decided else clock.to_workload(rec.start)
        elif (
            index in decided
        ):  # released (Slurm starts it within about a second), or a record without cores
            pairs = list(zip(decided[index].nodes, decided[index].units))
            begin = decided[index].t
            if (
                rec.start is not None
            ):  # started: sinfo counts its cores, which are the journalled ones
                unit_cores = int(requests[index][core])
                extra = int(job.per_node_request[core]) if job.per_node_request else 0
                for n, u in pairs:
                    started_cores[n] += u * unit_cores + extra
        else:
            continue
        running[index] = RunningJob(
            job, begin, Allocation.from_pairs(pairs), begin + planned[index]
        )
    free = system.capacity.astype(np.int64).copy()
    for index, rj in running.items():
        job = rj.job
        free[rj.allocation.nodes] -= held_amounts(
            rj.allocation, requests[index], job.per_node_request
        )
    for name, node in nodes.items():
        i = index_of.get(name)
        if i is None:
            continue
        if not node.usable:
            free[i] = 0
        else:  # cores of jobs not ours (sinfo counts every started job; squeue told ours)
            free[i, core] -= max(0, node.alloc_cpus - int(started_cores[i]))
    np.maximum(free, 0, out=free)
    free.flags.writeable = False
    view = DispatchView(
        system,
        free,
        free.sum(axis=0).tolist(),
        queue,
        running,
        planned,
        requests,
        walltime_kill=True,
        planned_array=np.asarray(planned, np.float64),
        queue_ewt=workload.queue_ewt,
    )
    view.now = now
    if previous is None:
        view.new_jobs = tuple(queue.values())
    else:
        before = set(previous.queue.indices().tolist())
        view.new_jobs = tuple(j for i, j in queue.items() if i not in before)
        gone = tuple(rj for i, rj in previous.running.items() if i not in running)
        view.ended_running = gone
        view.ended_jobs = tuple(rj.job for rj in gone)
        view.running_version = previous.running_version + (set(previous.running) != set(running))
    return view


# ---- applying a start ---------------------------------------------------------------------
def _check_start(start: Start, view: DispatchView) -> str | None:
    """Why ``start`` cannot be applied to the view's cluster (an invalid decision), or None."""
    job, alloc = start.job, start.allocation
    if job.index not in {j.index for j in view.queue}:
        return f"job {job.id} is not queued"
    if alloc.total_units != job.units or len(alloc.nodes) == 0 or (alloc.units < 1).any():
        return f"job {job.id} asks for {job.units} units, the start gives {alloc.units.tolist()}"
    if alloc.nodes[0] < 0 or alloc.nodes[-1] >= view.system.n_nodes:
        return f"job {job.id}: node index out of range in {alloc.nodes.tolist()}"
    need = held_amounts(alloc, view.requests[job.index], job.per_node_request)
    short = np.nonzero((need > view.free[alloc.nodes]).any(axis=1))[0]
    if len(short):
        node = int(alloc.nodes[short[0]])
        return (
            f"job {job.id} needs {need[short[0]].tolist()} on node {view.system.node_name(node)}, which has "
            f"{view.free[node].tolist()} free"
        )
    return None


def _start_commands(
    scontrol: str, slurm_id: int, job: Job, alloc: Allocation, system: System
) -> list[list[str]]:
    """The scontrol calls that pin a held job to ``alloc`` and release it; a
    :class:`ConfigError` naming the job when Slurm cannot express the allocation (nodes with
    different unit counts; see the module docstring)."""
    units = sorted(set(alloc.units.tolist()))
    if len(units) != 1:
        raise ConfigError(
            f"job {job.id}: the dispatcher gives its nodes different unit counts "
            f"({dict(zip((system.node_name(int(n)) for n in alloc.nodes), alloc.units.tolist()))}); "
            "Slurm pins only the same count on every node (NumNodes=k-k MinCPUsNode=c); "
            "the job stays held"
        )
    core = system.resources.index(_CORE)
    cores_per_node = units[0] * int(job.unit_request[core]) + (
        int(job.per_node_request[core]) if job.per_node_request else 0
    )
    k = len(alloc.nodes)
    names = ",".join(system.node_name(int(n)) for n in alloc.nodes)
    return [
        [
            scontrol,
            "update",
            f"JobId={slurm_id}",
            f"NumNodes={k}-{k}",
            f"MinCPUsNode={cores_per_node}",
            f"ReqNodeList={names}",
        ],
        [scontrol, "release", str(slurm_id)],
    ]


def _node_amounts(job: Job, alloc: Allocation, system: System) -> list[dict[str, int]]:
    """What each node of ``alloc`` holds for ``job``: its units' resources plus the per-node
    extras, by resource name."""
    need = held_amounts(alloc, job.unit_request, job.per_node_request)
    return [{r: int(a) for r, a in zip(system.resources, row)} for row in need]


def _hetjob_command(
    sbatch: str,
    sub: Submission,
    job: Job,
    alloc: Allocation,
    system: System,
    name: str,
    workdir: Path,
) -> list[str]:
    """The sbatch call that runs an uneven start as a heterogeneous job: one component per
    node, ``--nodes=1 --ntasks=<cores there> --nodelist=<node>`` (one core per task) with that
    node's GPUs (``--gres=gpu:G``) and memory (``--mem``, when the system models it), the
    components separated by ``:``, and the job's sleep once (Slurm runs the batch script in the
    first component and ends every component with it). Submitted not held: every node is free
    in the dispatcher's view, and Slurm's backfill (the only scheduler of heterogeneous jobs,
    every ``bf_interval`` = 1 s) starts it."""
    cmd = [sbatch, "--parsable"]
    for k, (node, amounts) in enumerate(
        zip(alloc.nodes.tolist(), _node_amounts(job, alloc, system))
    ):
        if k:
            cmd.append(":")
        else:
            cmd += [f"--job-name={name}", "--output=/dev/null", f"--chdir={workdir}"]
        cmd += [
            "--partition=batch",
            f"--time={sub.time_limit_min}",
            "--nodes=1",
            f"--ntasks={amounts.get(_CORE, 0)}",
            f"--nodelist={system.node_name(int(node))}",
        ]
        gres = [f"{r}:{a}" for r, a in amounts.items() if r not in (_CORE, _MEM) and a > 0]
        if gres:
            cmd.append(f"--gres={','.join(gres)}")
        if amounts.get(_MEM, 0) > 0:
            cmd.append(f"--mem={amounts[_MEM]}")
    return [*cmd, "--wrap", f"sleep {sub.sleep_s:g}"]


def _is_uneven(alloc: Allocation) -> bool:
    return len(set(alloc.units.tolist())) > 1


def _placement_check(
    system: System,
    workload: Workload,
    records: dict[int, SlurmJobRecord],
    decided: dict[int, _Placement],
) -> dict[str, Any]:
    """Every started job against its journalled start: the same nodes and, on each, the cores
    of its units (squeue's allocation)."""
    core = system.resources.index(_CORE)
    exact, wrong, unplanned = 0, [], []
    for index, rec in sorted(records.items()):
        if rec.start is None:
            continue
        job = workload.jobs[index]
        if index not in decided:
            unplanned.append(int(job.id))
            continue
        p = decided[index]
        extra = int(job.per_node_request[core]) if job.per_node_request else 0
        chosen = {
            system.node_name(n): u * int(job.unit_request[core]) + extra
            for n, u in zip(p.nodes, p.units)
        }
        if chosen == rec.cores:
            exact += 1
        else:
            wrong.append({"job": int(job.id), "chosen": chosen, "slurm": rec.cores})
    return {
        "started": exact + len(wrong) + len(unplanned),
        "exact": exact,
        "wrong": wrong[:20],
        "started_without_decision": unplanned[:20],
    }


# ---- the journal --------------------------------------------------------------------------
@dataclass
class _BridgeJournal:
    """The decision journal of one bridged run (see the module docstring)."""

    path: Path
    t0: int
    decided: dict[int, _Placement] = field(default_factory=dict)
    calls: int = 0
    errors: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, path: Path, run: dict[str, Any], t0: int) -> _BridgeJournal:
        """This run's journal: read (resume) or created with ``t0``."""
        if not path.exists() or path.stat().st_size == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w") as fh:
                fh.write(json.dumps({"journal": 2, "bridge": 1, "run": run, "t0": t0}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            return cls(path, t0)
        lines = path.read_text().split("\n")
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError:
            raise ConfigError(f"{path}, line 1: not a bridge journal header") from None
        if (
            not isinstance(header, dict)
            or header.get("bridge") != 1
            or not isinstance(header.get("t0"), int)
        ):
            raise ConfigError(f"{path}, line 1: not a bridge journal header (field 'bridge'/'t0')")
        if header.get("run") != run:
            diff = sorted(
                k
                for k in set(run) | set(header.get("run") or {})
                if run.get(k) != header["run"].get(k)
            )
            raise ConfigError(
                f"{path}: the journal is of another run (differs in {', '.join(diff)}); "
                "use another output directory"
            )
        journal = cls(path, header["t0"])
        body = lines[1:]
        while body and body[-1] == "":
            body.pop()
        for n, line in enumerate(body, start=2):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if n == len(body) + 1:  # the last line, cut short by a kill
                    _log.warning(
                        "%s, line %d: cut short (the bridge was killed while writing it); dropped",
                        path,
                        n,
                    )
                    path.write_text("\n".join(lines[: n - 1]) + "\n")
                    break
                raise ConfigError(f"{path}, line {n}: not JSON") from None
            if "error" in rec:
                journal.errors.append(str(rec["error"]))
                continue
            try:
                for index, _jid, nodes, units in rec["starts"]:
                    journal.decided[int(index)] = _Placement(
                        tuple(map(int, nodes)), tuple(map(int, units)), float(rec["t"])
                    )
                journal.calls = max(journal.calls, int(rec["k"]))
            except (KeyError, TypeError, ValueError):
                raise ConfigError(
                    f"{path}, line {n}: field 'starts' or 'k' is not a list of "
                    "[job index, job id, [nodes], [units]] / a call number"
                ) from None
        return journal

    def _append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as fh:
            fh.write(json.dumps(record, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def record(self, now: float, view: DispatchView, decision: Decision, elapsed: float) -> None:
        self.calls += 1
        head = view.queue.head()
        self._append(
            {
                "k": self.calls,
                "t": now,
                "queue": len(view.queue),
                "head": head.id if head else None,
                "starts": [
                    [
                        int(s.job.index),
                        int(s.job.id),
                        s.allocation.nodes.tolist(),
                        s.allocation.units.tolist(),
                    ]
                    for s in decision.starts
                ],
                "wakeup": decision.wakeup,
                "elapsed": round(elapsed, 6),
                "info": decision.info,
            }
        )
        for s in decision.starts:
            self.decided[int(s.job.index)] = _Placement(
                tuple(s.allocation.nodes.tolist()), tuple(s.allocation.units.tolist()), float(now)
            )

    def error(self, now: float, reason: str) -> None:
        self.errors.append(reason)
        self._append({"k": self.calls + 1, "t": now, "error": reason})


# ---- the loop -------------------------------------------------------------------------------
def _run(
    cmd: list[str], info: ClusterInfo, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=info.env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _call_due(since_last_s: float, changed: bool, hints: dict[str, Any], time_scale: float) -> bool:
    """Whether the bridge calls the dispatcher now (``since_last_s``: real seconds since its
    last call; ``changed``: a job was submitted, started or ended since). By default: on every
    change, and every :data:`CALL_EVERY_S` while jobs wait. A periodic dispatcher (its
    ``simulation_hints()`` say ``dispatch_on_events: False`` with a ``dispatch_interval``, as
    AUCSCHED's step) is called as the simulator calls it: every interval (workload seconds,
    scaled), whatever changed -- but never more often than the bridge polls."""
    if hints.get("dispatch_on_events", True) is False and hints.get("dispatch_interval"):
        return since_last_s >= float(hints["dispatch_interval"]) * time_scale
    return changed or since_last_s >= _CALL_EVERY_S


def _call_with_budget(
    dispatcher: Dispatcher, view: DispatchView, budget_s: float
) -> tuple[Decision, float]:
    """``dispatcher.dispatch(view)`` in a thread; a :class:`BridgeError` when it raises or has
    not returned after ``budget_s`` seconds (the thread is left behind, the bridge stops)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["decision"] = dispatcher.dispatch(view)
        except BaseException as exc:  # noqa: BLE001 - reported as the reason
            out["error"] = exc

    began = time.monotonic()
    thread = threading.Thread(target=target, name="dispatcher", daemon=True)
    thread.start()
    thread.join(budget_s)
    elapsed = time.monotonic() - began
    if thread.is_alive():
        raise BridgeError(
            f"dispatcher {dispatcher.describe()} did not decide within its budget of {budget_s:g} s"
        )
    if "error" in out:
        exc = out["error"]
        raise BridgeError(f"dispatcher {dispatcher.describe()} raised {type(exc).__name__}: {exc}")
    return out["decision"], elapsed


@dataclass
class _Bridge:
    """One bridged run: the cluster, the workload, the dispatcher and the journal."""

    info: ClusterInfo
    system: System
    workload: Workload
    dispatcher: Dispatcher
    time_scale: float
    journal: _BridgeJournal
    subs: list[Submission]
    budget_s: float = 60.0
    uneven: str = "hetjob"
    refused: dict[int, str] = field(default_factory=dict)
    slurm_ids: dict[int, int] = field(
        default_factory=dict
    )  # the held job each workload job was submitted as
    held_records: dict[int, SlurmJobRecord] = field(default_factory=dict)  # its squeue record
    het_ids: dict[int, int] = field(
        default_factory=dict
    )  # the heterogeneous job running an uneven start
    previous: DispatchView | None = None  # the view of the last dispatcher call

    @property
    def clock(self) -> _ReplayClock:
        return _ReplayClock(self.journal.t0, float(self.workload.submit.min()), self.time_scale)

    def poll(self, cores: bool = False) -> tuple[dict[int, SlurmJobRecord], dict[str, _NodeState]]:
        """Our jobs and the nodes; the records carry cores per node only with ``cores``
        (``squeue --json``, read at the end; the loop reads the fast text form,
        :func:`hpcdispatch.slurm.records.parse_squeue_text`, and takes a started job's cores
        from its journalled start, which the placement check confirms at the end)."""
        if cores:
            cmd = [self.info.binaries["squeue"], "--json", "-t", "all"]
        else:
            cmd = [self.info.binaries["squeue"], "-h", "-t", "all", "-o", _SQUEUE_TEXT_FORMAT]
        proc = _run(cmd, self.info, timeout=60)
        if proc.returncode != 0:
            raise BridgeError(f"{' '.join(cmd[1:3])} failed: {' '.join(proc.stderr.split())[:200]}")
        by_name: dict[str, list[SlurmJobRecord]] = {}
        for r in parse_squeue_json(proc.stdout) if cores else _parse_squeue_text(proc.stdout):
            by_name.setdefault(r.name, []).append(r)
        ours = {}
        for sub in self.subs:
            name = _job_name(self.journal.t0, self.workload.jobs[sub.job_index])
            plain = by_name.get(name)
            if plain:
                ours[sub.job_index] = self.held_records[sub.job_index] = plain[0]
                self.slurm_ids[sub.job_index] = plain[0].job_id
            het = by_name.get(name + _HET_SUFFIX)
            if het:  # an uneven start: the heterogeneous job is the one that runs
                ours[sub.job_index] = _merge_hetjob(het)
                self.het_ids[sub.job_index] = ours[sub.job_index].job_id
        proc = _run([self.info.binaries["sinfo"], "--json"], self.info, timeout=60)
        if proc.returncode != 0:
            raise BridgeError(f"sinfo --json failed: {' '.join(proc.stderr.split())[:200]}")
        return ours, _parse_sinfo_nodes(proc.stdout)

    def submit_due(self, ours: dict[int, SlurmJobRecord]) -> int:
        """Submit (held) the jobs whose time has come and that Slurm does not have yet, at most
        :data:`SUBMIT_BATCH` per call: a workload submitting hundreds of jobs at once (the
        AUCSCHED paper's) is submitted over a few loop turns, and the dispatcher decides on the
        first jobs meanwhile instead of after the last sbatch."""
        workdir = Path(self.info.state_dir) / "jobs"
        workdir.mkdir(exist_ok=True)
        submitted = 0
        for sub in self.subs:
            if sub.job_index in ours or time.time() < self.journal.t0 + sub.offset_s:
                continue
            if submitted >= _SUBMIT_BATCH:
                break
            cmd = sub.command(self.info.binaries["sbatch"], workdir)
            cmd = [
                f"--job-name={_job_name(self.journal.t0, self.workload.jobs[sub.job_index])}"
                if a.startswith("--job-name=")
                else a
                for a in cmd
            ]
            cmd.insert(2, "--hold")
            proc = _run(cmd, self.info)
            if proc.returncode != 0:
                raise BridgeError(
                    f"sbatch refused job {sub.job_id}: {' '.join(proc.stderr.split())[:200]}"
                )
            self.slurm_ids[sub.job_index] = int(proc.stdout.strip().split(";")[0])
            submitted += 1
        return submitted

    def apply(self, index: int, placement: _Placement) -> None:
        job = self.workload.jobs[index]
        sid = self.slurm_ids[index]
        alloc = Allocation(placement.nodes, placement.units)
        if self.uneven == "hetjob" and _is_uneven(alloc):
            self.apply_hetjob(index, alloc)
        else:
            for cmd in _start_commands(
                self.info.binaries["scontrol"], sid, job, alloc, self.system
            ):
                proc = _run(cmd, self.info)
                if proc.returncode != 0:
                    raise BridgeError(
                        f"job {job.id} (Slurm job {sid}): {' '.join(cmd[1:])} failed: "
                        f"{' '.join(proc.stderr.split())[:200]}"
                    )
        _log.info(
            "started job %s (Slurm job %d) on %s",
            job.id,
            sid,
            ",".join(
                f"{self.system.node_name(n)}x{u}" for n, u in zip(placement.nodes, placement.units)
            ),
        )

    def apply_hetjob(self, index: int, alloc: Allocation) -> None:
        """An uneven start: submit the heterogeneous job (unless a restart finds it submitted),
        then cancel the held job. In this order a kill between the two leaves both; a restart
        then only cancels the held one (:meth:`run`), so the job runs once."""
        job = self.workload.jobs[index]
        if index not in self.het_ids:
            sub = next(s for s in self.subs if s.job_index == index)
            name = _job_name(self.journal.t0, job) + _HET_SUFFIX
            cmd = _hetjob_command(
                self.info.binaries["sbatch"],
                sub,
                job,
                alloc,
                self.system,
                name,
                Path(self.info.state_dir) / "jobs",
            )
            proc = _run(cmd, self.info)
            if proc.returncode != 0:
                raise BridgeError(
                    f"job {job.id}: sbatch of its heterogeneous job failed: "
                    f"{' '.join(proc.stderr.split())[:200]}"
                )
            self.het_ids[index] = int(proc.stdout.strip().split(";")[0].split("+")[0])
        self.cancel_held(index)

    def cancel_held(self, index: int) -> None:
        sid = self.slurm_ids[index]
        proc = _run([self.info.binaries["scancel"], str(sid)], self.info)
        if proc.returncode != 0:
            raise BridgeError(
                f"job {self.workload.jobs[index].id}: scancel {sid} (its held job, replaced by "
                f"heterogeneous job {self.het_ids.get(index)}) failed: "
                f"{' '.join(proc.stderr.split())[:200]}"
            )

    def finish_journalled(self, ours: dict[int, SlurmJobRecord]) -> None:
        """Journalled starts Slurm has not fully applied (the bridge was stopped between journal
        and release): a job whose heterogeneous job exists while its held job is still held
        gets the held job cancelled, nothing else; a job still held without one is applied
        again."""
        for index, placement in self.journal.decided.items():
            if (
                index in self.het_ids
                and index in self.held_records
                and _is_held(self.held_records[index])
            ):
                _log.info(
                    "cancelling the held job of job %s (its heterogeneous job %d runs it)",
                    self.workload.jobs[index].id,
                    self.het_ids[index],
                )
                self.cancel_held(index)
            elif index in ours and _is_held(ours[index]) and index not in self.refused:
                _log.info(
                    "re-applying the journalled start of job %s", self.workload.jobs[index].id
                )
                self.apply(index, placement)

    def run(self, max_wait_s: float | None = None) -> dict[int, SlurmJobRecord]:
        """Submit, dispatch and wait until every job has ended (or was refused); returns
        squeue's records of the jobs."""
        planned = [float(j.wall_time) for j in self.workload.jobs]
        if max_wait_s is None:
            max_wait_s = 120.0 + sum(s.sleep_s + 1.0 for s in self.subs)
        deadline = self.journal.t0 + max(s.offset_s for s in self.subs) + max_wait_s
        last_call, seen = -math.inf, None
        hints = self.dispatcher.simulation_hints()
        while True:
            ours, nodes = self.poll()
            if self.submit_due(ours):
                ours, nodes = self.poll()
            self.finish_journalled(ours)
            active = [
                i for i in ours if ours[i].state not in _FINAL_STATES and i not in self.refused
            ]
            if len(ours) == len(self.subs) and not active:
                return self.poll(cores=True)[0]
            if time.time() > deadline:
                raise BridgeError(
                    f"{len(active)} job(s) had not ended after the wait limit; they are left as they are"
                )
            now_epoch = time.time()
            state = tuple(sorted((i, r.state) for i, r in ours.items()))
            view = _build_view(
                self.system,
                self.workload,
                self.clock,
                now_epoch,
                ours,
                nodes,
                planned,
                self.journal.decided,
                set(self.refused),
                self.previous,
            )
            if view.queue and _call_due(
                now_epoch - last_call, state != seen, hints, self.time_scale
            ):
                seen, last_call = state, now_epoch
                self.decide(view)
                self.previous = view
            time.sleep(_POLL_S)

    def decide(self, view: DispatchView) -> None:
        try:
            decision, elapsed = _call_with_budget(self.dispatcher, view, self.budget_s)
            for start in decision.starts:
                why = _check_start(start, view)
                if why:
                    raise BridgeError(
                        f"dispatcher {self.dispatcher.describe()} returned an invalid start: {why}"
                    )
        except BridgeError as exc:
            self.journal.error(view.now, str(exc))
            _log.error("%s; the cluster keeps running, %d job(s) stay held", exc, len(view.queue))
            raise
        ok = []
        for start in decision.starts:
            try:
                if self.uneven == "refuse" or not _is_uneven(start.allocation):
                    _start_commands("scontrol", 0, start.job, start.allocation, self.system)
            except ConfigError as exc:
                self.refused[start.job.index] = str(exc)
                _log.error("refused: %s", exc)
                continue
            ok.append(start)
        decision = Decision(starts=ok, wakeup=decision.wakeup, info=decision.info)
        self.journal.record(view.now, view, decision, elapsed)
        for start in ok:
            self.apply(start.job.index, self.journal.decided[start.job.index])


def bridge_dir(out_dir: Path) -> Path:
    """Where a bridged run keeps its journal and log while it runs (beside the run directory)."""
    return out_dir.parent / f"{out_dir.name}.bridge"


def _run_identity(
    info: ClusterInfo, workload: Workload, dispatcher: Dispatcher, time_scale: float
) -> dict[str, Any]:
    """What the journal's header records of the run (a restart must match it)."""
    return {
        "cluster": info.name,
        "workload": str(getattr(workload.source, "spec", "")),
        "jobs": len(workload),
        "dispatcher": dispatcher.identity(),
        "time_scale": time_scale,
    }


def dispatch(
    info: ClusterInfo,
    workload: Workload,
    dispatcher: Dispatcher,
    time_scale: float,
    out_dir: str | Path,
    budget_s: float = 60.0,
    max_wait_s: float | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    uneven: str = "hetjob",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``workload`` on the cluster with ``dispatcher`` deciding (external mode), resume
    from the journal if there is one, and write the run directory; returns ``(summary,
    bridge record)``. A :class:`BridgeError` when the dispatcher fails (jobs stay held)."""
    out_dir = Path(out_dir)
    if uneven not in _UNEVEN_MODES:
        raise ConfigError(f"uneven must be one of {', '.join(_UNEVEN_MODES)}, got '{uneven}'")
    system = info.load_system()
    subs = plan_submissions(workload, system, time_scale)
    dispatcher.setup(system)
    bad = dispatcher.unsupported(workload)
    if bad is not None:
        raise ConfigError(f"job {bad[0].id}: {bad[1]}")
    state = bridge_dir(out_dir)
    state.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(state / _LOG_FILE)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    try:
        journal = _BridgeJournal.open(
            state / _JOURNAL_FILE,
            {**_run_identity(info, workload, dispatcher, time_scale), "uneven": uneven},
            math.ceil(time.time()) + 1,
        )
        _log.info(
            "bridge for %s on cluster %s: %d jobs, t0 %d, %d starts journalled",
            dispatcher.describe(),
            info.name,
            len(workload),
            journal.t0,
            len(journal.decided),
        )
        bridge = _Bridge(
            info, system, workload, dispatcher, time_scale, journal, subs, budget_s, uneven
        )
        records = bridge.run(max_wait_s)
        clock = bridge.clock
        result, problems = _build_result(
            system, workload, records, clock, subs, dispatcher.identity()
        )
        problems += [f"refused: {why}" for why in bridge.refused.values()]
        check = _placement_check(system, workload, records, journal.decided)
        if check["wrong"] or check["started_without_decision"]:
            problems.append(
                f"{len(check['wrong'])} job(s) started elsewhere than chosen, "
                f"{len(check['started_without_decision'])} without a decision"
            )
        tolerance = _TOLERANCE_REAL_S / time_scale
        record = {
            "cluster": info.name,
            "nodes": info.n_nodes,
            "slurm_version": info.slurm_version,
            "time_scale": time_scale,
            "t0_epoch": journal.t0,
            "first_submit": clock.first_submit,
            "time_tolerance": tolerance,
            "dispatcher_calls": journal.calls,
            "placement": check,
            "uneven": uneven,
            "hetjobs": len(bridge.het_ids),
            "held_slurm_job_ids": {
                str(workload.jobs[i].id): sid for i, sid in bridge.slurm_ids.items()
            },
            "problems": problems[:50],
            "refused": {str(workload.jobs[i].id): w for i, w in bridge.refused.items()},
            "slurm_job_ids": {str(workload.jobs[i].id): r.job_id for i, r in records.items()},
            "journal": _JOURNAL_FILE,
        }
        summary = write_result(
            result, out_dir, force=True, run_extra={"bridge": record, "time_tolerance": tolerance}
        )
        shutil.copy(state / _JOURNAL_FILE, out_dir / _JOURNAL_FILE)
    finally:
        _log.removeHandler(handler)
        handler.close()
    shutil.copy(state / _LOG_FILE, out_dir / _LOG_FILE)
    shutil.rmtree(state, ignore_errors=True)
    return summary, record
