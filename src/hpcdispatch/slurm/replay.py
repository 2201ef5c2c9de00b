"""``hpcdispatch slurm replay``: a workload run on an emulated Slurm cluster, written as a run.

Every job is submitted with ``sbatch --wrap "sleep S"`` at its scaled submit time and runs
its scaled duration; its Slurm options come from its request (:func:`sbatch_options`). When
every job has ended, the schedule is read from Slurm's own records (``squeue --json -t all``;
jobcomp/filetxt cross-checked) and written as a normal run directory
(:func:`hpcdispatch.results.write_result`); on a cluster with accounting (``slurm up
--accounting``) ``sacct --parsable2`` of the jobs is kept beside it as ``slurm.sacct`` (a
workload the sacct reader reads: the round trip). So ``hpcdispatch validate`` and ``report`` read it
unchanged.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
import subprocess
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import Tags
from hpcdispatch.results.store import write_result, write_text
from hpcdispatch.sim.options import SimulationOptions
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.segments import SegmentLog
from hpcdispatch.slurm.cluster import ClusterInfo
from hpcdispatch.slurm.config import _CORE, _GPU, _MEM, SCHEDULER_PARAMETERS
from hpcdispatch.slurm.records import SlurmJobRecord, parse_squeue_json, read_jobcomp
from hpcdispatch.system.model import System
from hpcdispatch.vocabulary import JobStatus
from hpcdispatch.workload.job import Job, Workload
from hpcdispatch.workload.slurm import SlurmRequest, request_of

#: seconds added to a job's scaled wall-time before rounding Slurm's -t up to minutes
_LIMIT_MARGIN_S = 2.0
#: the real seconds a start or a duration may be off (whole-second stamps, start/end overhead)
_TOLERANCE_REAL_S = 3.0
#: Slurm's job states of a job that has ended
_FINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}
_JOB_NAME_PREFIX = "hpcd-"
_DISPATCHER_NAME = "slurm-real"
#: with accounting: Slurm's sacct records of the replayed jobs, in the run directory
_SACCT_FILE = "slurm.sacct"


@dataclass(frozen=True)
class Submission:
    """How one job is submitted: its sbatch options, sleep and time limit (real seconds)."""

    job_index: int
    job_id: int
    offset_s: float  # real seconds after t0
    sleep_s: float
    time_limit_min: int
    options: tuple[str, ...]

    def command(self, sbatch: str, workdir: Path) -> list[str]:
        return [
            sbatch,
            "--parsable",
            f"--job-name={_JOB_NAME_PREFIX}{self.job_id}",
            "--output=/dev/null",
            f"--chdir={workdir}",
            "--partition=batch",
            f"--time={self.time_limit_min}",
            *self.options,
            "--wrap",
            f"sleep {self.sleep_s:g}",
        ]


def time_limit_minutes(wall_time: float, time_scale: float) -> int:
    """Slurm's ``-t`` (whole minutes) for a scaled wall-time (see the module docstring)."""
    return max(1, math.ceil((wall_time * time_scale + _LIMIT_MARGIN_S) / 60.0))


#: the job-model fields a Slurm request determines
_REQUEST_FIELDS = (
    "units",
    "unit_request",
    "max_units_per_node",
    "node_count",
    "per_node_request",
    "contiguous",
)


def _request_options(request: SlurmRequest) -> tuple[str, ...]:
    """A Slurm request as sbatch's long options (memory in MB)."""
    opts = []
    for flag, value in (
        ("--nodes", request.nodes),
        ("--ntasks", request.ntasks),
        ("--ntasks-per-node", request.ntasks_per_node),
    ):
        if value is not None:
            opts.append(f"{flag}={value}")
    if request.cpus_per_task != 1:
        opts.append(f"--cpus-per-task={request.cpus_per_task}")
    if request.mem is not None:
        opts.append(f"--mem={request.mem}")
    if request.mem_per_cpu is not None:
        opts.append(f"--mem-per-cpu={request.mem_per_cpu}")
    gres = ([f"{_GPU}:{request.gpus_per_node}"] if request.gpus_per_node else []) + [
        f"{n}:{c}" for n, c in request.gres
    ]
    if gres:
        opts.append(f"--gres={','.join(gres)}")
    if request.contiguous:
        opts.append("--contiguous")
    return tuple(opts)


def _sbatch_options(job: Job, system: System) -> tuple[str, ...]:
    """The resource options of ``job`` (no time, name or command): the Slurm request the job
    expresses (:func:`hpcdispatch.workload.slurm.request_of`) when it maps back onto exactly
    this job, else the options below for jobs of other origins (SWF units); a
    :class:`ConfigError` naming the job when no sbatch option expresses its request."""
    resources = tuple(system.resources)
    try:
        request = request_of(job, resources)
        same = request.job_fields(resources) == {f: getattr(job, f) for f in _REQUEST_FIELDS}
    except (ValueError, IndexError):
        same = False
    if same:
        return _request_options(request)
    return _unit_options(job, system)


def _unit_options(job: Job, system: System) -> tuple[str, ...]:
    """Options for a job that is not a Slurm request written back (see the module docstring)."""
    res = list(system.resources)
    unit = {r: int(a) for r, a in zip(res, job.unit_request)}
    extra = {r: int(a) for r, a in zip(res, job.per_node_request)} if job.per_node_request else {}
    gres = [r for r in res if r not in (_CORE, _MEM)]
    cores = unit.get(_CORE, 0)

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"job {job.id}: {why}; no sbatch option expresses it (slurm replay)")

    if cores < 1:
        raise refuse(f"its units hold no core (unit request {unit})")
    if extra.get(_CORE, 0):
        raise refuse("it asks for cores per node on top of its units")
    opts: list[str] = []
    if job.exact_nodes and job.max_units_per_node == 1:  # one unit per node: everything is per node
        opts += [f"--nodes={job.exact_nodes}", f"--ntasks-per-node={cores}"]
        per_node = {r: unit.get(r, 0) + extra.get(r, 0) for r in gres}
        mem = unit.get(_MEM, 0) + extra.get(_MEM, 0)
        if mem:
            opts.append(f"--mem={mem}")
    else:
        if any(unit.get(r, 0) for r in gres if r != _GPU) or (job.node_count and unit.get(_GPU, 0)):
            raise refuse(
                "its units hold generic resources and the nodes it uses are not one per unit"
            )
        if job.node_count:
            opts += [f"--nodes={job.node_count}", f"--ntasks={job.units}"]
        else:
            opts.append(f"--ntasks={job.units}")
        if cores > 1:
            opts.append(f"--cpus-per-task={cores}")
        if unit.get(_GPU, 0):
            opts.append(f"--gpus-per-task={unit[_GPU]}")
        if job.max_units_per_node > 0:
            opts.append(f"--ntasks-per-node={job.max_units_per_node}")  # with --ntasks: a maximum
        per_node = {r: extra.get(r, 0) for r in gres}
        if unit.get(_MEM, 0) and extra.get(_MEM, 0):
            raise refuse(
                "it asks for memory per core and per node (sbatch takes one of --mem-per-cpu and --mem)"
            )
        if unit.get(_MEM, 0):
            if unit[_MEM] % cores:
                raise refuse(
                    f"its units of {cores} cores hold {unit[_MEM]} MB, not a whole number of MB per core"
                )
            opts.append(f"--mem-per-cpu={unit[_MEM] // cores}")
        elif extra.get(_MEM, 0):
            opts.append(f"--mem={extra[_MEM]}")
    wanted = [f"{r}:{k}" for r, k in per_node.items() if k > 0]
    if wanted:
        opts.append(f"--gres={','.join(wanted)}")
    if job.contiguous:
        opts.append("--contiguous")
    return tuple(opts)


def plan_submissions(workload: Workload, system: System, time_scale: float) -> list[Submission]:
    """Every job's submission, in submission order (all checked before anything is submitted)."""
    if not time_scale > 0 or not math.isfinite(time_scale):
        raise ConfigError(f"--time-scale must be a positive number, got {time_scale}")
    if len(workload) == 0:
        raise ConfigError("the workload has no jobs")
    first = float(workload.submit.min())
    subs = []
    for job in sorted(workload.jobs, key=lambda j: (j.submit, j.index)):
        subs.append(
            Submission(
                job_index=job.index,
                job_id=int(job.id),
                offset_s=float(math.ceil(round((job.submit - first) * time_scale, 6))),
                sleep_s=round(job.duration(True) * time_scale, 3),
                time_limit_min=time_limit_minutes(job.wall_time, time_scale),
                options=_sbatch_options(job, system),
            )
        )
    return subs


@dataclass
class _ReplayLog:
    """What happened while submitting and waiting (real seconds)."""

    t0: int
    slurm_ids: dict[int, int]  # workload job index -> Slurm job id
    late_s: list[float]  # per submission: how much later than planned sbatch was called
    waited_s: float = 0.0


def _run(
    cmd: list[str], info: ClusterInfo, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=info.env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _cancel(info: ClusterInfo, ids: list[int]) -> None:
    if ids:
        _run([info.binaries["scancel"], *map(str, ids)], info)


def _submit_and_wait(
    info: ClusterInfo, subs: list[Submission], max_wait_s: float | None = None, progress: Any = None
) -> _ReplayLog:
    """Submit every job at its time, then wait until all have ended (their jobs are cancelled
    when anything goes wrong, Ctrl-C included)."""
    workdir = Path(info.state_dir) / "jobs"
    workdir.mkdir(exist_ok=True)
    t0 = math.ceil(time.time()) + 1
    log = _ReplayLog(t0=t0, slurm_ids={}, late_s=[])
    try:
        for sub in subs:
            delay = t0 + sub.offset_s - time.time()
            if delay > 0:
                time.sleep(delay)
            log.late_s.append(max(0.0, time.time() - (t0 + sub.offset_s)))
            proc = _run(sub.command(info.binaries["sbatch"], workdir), info)
            if proc.returncode != 0:
                raise ConfigError(
                    f"sbatch refused job {sub.job_id}: {' '.join(proc.stderr.split())[:200]}"
                )
            log.slurm_ids[sub.job_index] = int(proc.stdout.strip().split(";")[0])
            if progress:
                progress(f"submitted {len(log.slurm_ids)}/{len(subs)}")
        if max_wait_s is None:
            max_wait_s = 120.0 + sum(s.sleep_s + 1.0 for s in subs)
        deadline = time.monotonic() + max_wait_s
        waiting_since = time.monotonic()
        wanted = set(log.slurm_ids.values())
        while True:
            proc = _run([info.binaries["squeue"], "-h", "-t", "all", "-o", "%i %T"], info)
            states = dict(
                line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) >= 2
            )
            active = [i for i in wanted if states.get(str(i)) not in _FINAL_STATES]
            if proc.returncode == 0 and not active:
                break
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"{len(active)} job(s) had not ended after {max_wait_s:.0f} s (Slurm ids "
                    f"{', '.join(map(str, sorted(active)[:5]))}); they were cancelled"
                )
            if progress:
                progress(f"{len(wanted) - len(active)}/{len(wanted)} jobs ended")
            time.sleep(1.0)
        log.waited_s = time.monotonic() - waiting_since
    except BaseException:
        _cancel(info, list(log.slurm_ids.values()))
        raise
    return log


def _collect_records(info: ClusterInfo, slurm_ids: dict[int, int]) -> dict[int, SlurmJobRecord]:
    """``workload index -> record`` from ``squeue --json -t all``."""
    proc = _run([info.binaries["squeue"], "--json", "-t", "all"], info, timeout=60)
    if proc.returncode != 0:
        raise ConfigError(f"squeue --json failed: {' '.join(proc.stderr.split())[:200]}")
    by_id = {r.job_id: r for r in parse_squeue_json(proc.stdout)}
    missing = [sid for sid in slurm_ids.values() if sid not in by_id]
    if missing:
        raise ConfigError(
            f"squeue no longer lists {len(missing)} replayed job(s) (Slurm ids "
            f"{', '.join(map(str, missing[:5]))}); MinJobAge may have expired"
        )
    return {index: by_id[sid] for index, sid in slurm_ids.items()}


@dataclass(frozen=True)
class _ReplayClock:
    """Real epoch seconds <-> workload seconds."""

    t0: int
    first_submit: float
    time_scale: float

    def to_workload(self, epoch: float) -> float:
        return self.first_submit + (epoch - self.t0) / self.time_scale


def _build_result(
    system: System,
    workload: Workload,
    records: dict[int, SlurmJobRecord],
    clock: _ReplayClock,
    subs: list[Submission],
    identity: dict[str, Any],
) -> tuple[SimulationResult, list[str]]:
    """The schedule as a :class:`SimulationResult` (and problems: jobs that did not complete,
    nodes Slurm names that the system does not have). Units on a node = the cores Slurm
    allocated there / the cores of one unit."""
    n = len(workload)
    node_index = {system.node_name(i): i for i in range(system.n_nodes)}
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    status = np.full(n, JobStatus.QUEUED, np.int8)  # until Slurm's record says otherwise
    planned = np.zeros(n)
    limit = {s.job_index: s.time_limit_min for s in subs}
    problems: list[str] = []
    seg_jobs, seg_from, seg_len, rows_node, rows_units = [], [], [], [], []
    core = system.resources.index(_CORE)
    for index in sorted(records, key=lambda i: (records[i].start or math.inf, i)):
        rec = records[index]
        job = workload.jobs[index]
        planned[index] = limit[index] * 60.0 / clock.time_scale
        if rec.state != "COMPLETED":
            problems.append(
                f"job {job.id} (Slurm job {rec.job_id}) ended {rec.state} ({rec.state_reason})"
            )
        if rec.start is None or rec.end is None:
            continue
        start[index] = clock.to_workload(rec.start)
        end[index] = clock.to_workload(rec.end)
        status[index] = JobStatus.COMPLETED
        nodes = []
        for name, cores in rec.cores.items():
            if name not in node_index:
                problems.append(
                    f"job {job.id} ran on node {name}, which system {system.name} does not have"
                )
                continue
            nodes.append((node_index[name], cores // max(1, job.unit_request[core])))
        nodes.sort()
        seg_jobs.append(index)
        seg_from.append(start[index])
        seg_len.append(len(nodes))
        rows_node += [nd for nd, _ in nodes]
        rows_units += [u for _, u in nodes]
    killed = (status == JobStatus.COMPLETED) & (workload.run_time > workload.wall_time)
    log = SegmentLog.from_arrays(
        np.asarray(seg_jobs, np.int64),
        np.asarray(seg_from, np.float64),
        np.asarray(seg_len, np.int64),
        np.asarray(rows_node, np.int64),
        np.asarray(rows_units, np.int64),
    )
    tags = asdict(
        Tags(
            deterministic=False,
            memoryless=False,
            uses_solver=False,
            node_constraints=True,
            rejects=False,
        )
    )
    result = SimulationResult(
        system=system,
        workload=workload,
        dispatcher=identity,
        predictor="slurm-time-limit",
        options=SimulationOptions(walltime_kill=True, record_decisions=False),
        start=start,
        end=end,
        killed=killed,
        status=status,
        planned=planned,
        segment_log=log,
        reject_reason={},
        resize_log=[],
        decisions={
            "time": [],
            "queue_length": [],
            "running": [],
            "started": [],
            "elapsed": [],
            "info": [],
        },
        tags=tags,
    )
    return result, problems


#: the sacct fields the sacct reader uses (hpcdispatch.workload.sacct)
_SACCT_FORMAT = (
    "JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,"
    "ReqTRES,AllocTRES,State"
)


def _collect_sacct(
    info: ClusterInfo, slurm_ids: list[int], since_epoch: int, wait_s: float = 30.0
) -> str:
    """``sacct --parsable2`` of the replayed jobs (a cluster with accounting), once slurmdbd has
    every job's final state (slurmctld sends them asynchronously: waited for up to
    ``wait_s``)."""
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since_epoch))
    cmd = [
        info.binaries["sacct"],
        "--allusers",
        "--parsable2",
        "-S",
        since,
        "-j",
        ",".join(map(str, slurm_ids)),
        "--format",
        _SACCT_FORMAT,
    ]
    deadline = time.monotonic() + wait_s
    while True:
        proc = _run(cmd, info, timeout=60)
        if proc.returncode != 0:
            raise ConfigError(f"sacct failed: {' '.join(proc.stderr.split())[:200]}")
        lines = proc.stdout.splitlines()
        states = {}
        for line in lines[1:]:
            fields = line.split("|")
            if len(fields) == 16 and fields[1].isdigit():
                states[int(fields[1])] = fields[15].split()[0] if fields[15] else ""
        if all(states.get(i) in _FINAL_STATES for i in slurm_ids) or time.monotonic() > deadline:
            return proc.stdout
        time.sleep(1.0)


def _jobcomp_check(info: ClusterInfo, records: dict[int, SlurmJobRecord]) -> dict[str, Any]:
    """jobcomp/filetxt against squeue's records: how many of the replayed jobs it has and how
    many agree on state, start, end and nodes."""
    comp, damaged = read_jobcomp(Path(info.state_dir) / "log" / "jobcomp.txt")
    by_id = {c.job_id: c for c in comp}
    agree, differ = 0, []
    for rec in records.values():
        c = by_id.get(rec.job_id)
        if c is None:
            continue
        if (c.state, c.start, c.end, sorted(c.nodes)) == (
            rec.state,
            rec.start,
            rec.end,
            sorted(rec.cores),
        ):
            agree += 1
        else:
            differ.append(rec.job_id)
    found = sum(1 for r in records.values() if r.job_id in by_id)
    return {"records": found, "agree": agree, "differ": differ[:20], "damaged_lines": damaged[:5]}


def replay(
    info: ClusterInfo,
    workload: Workload,
    time_scale: float,
    out_dir: str | Path,
    force: bool = False,
    max_wait_s: float | None = None,
    progress: Any = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Replay ``workload`` on the cluster and write the run directory; returns ``(summary,
    replay record)``. The replay record's ``problems`` lists jobs that did not complete."""
    system = info.load_system()
    subs = plan_submissions(workload, system, time_scale)
    log = _submit_and_wait(info, subs, max_wait_s, progress)
    records = _collect_records(info, log.slurm_ids)
    clock = _ReplayClock(log.t0, float(workload.submit.min()), time_scale)
    identity = {
        "name": _DISPATCHER_NAME,
        "params": {
            "slurm_version": info.slurm_version,
            "scheduler": "sched/backfill",
            "select": "select/cons_tres",
            "scheduler_parameters": SCHEDULER_PARAMETERS,
            "time_scale": time_scale,
        },
    }
    result, problems = _build_result(system, workload, records, clock, subs, identity)
    tolerance = _TOLERANCE_REAL_S / time_scale
    states = Counter(r.state for r in records.values())
    record = {
        "cluster": info.name,
        "state_dir": info.state_dir,
        "nodes": info.n_nodes,
        "slurm_version": info.slurm_version,
        "time_scale": time_scale,
        "t0_epoch": log.t0,
        "first_submit": clock.first_submit,
        "time_tolerance": tolerance,
        "tolerance_real_s": _TOLERANCE_REAL_S,
        "reproducible": False,
        "why_not_reproducible": "a real Slurm's schedule depends on its timers and ~1 s start jitter; "
        "repeated replays differ job by job",
        "slurm_states": dict(states),
        "problems": problems[:50],
        "submit_late_max_s": max(log.late_s, default=0.0),
        "wait_s": round(log.waited_s, 3),
        "slurm_job_ids": {str(workload.jobs[i].id): sid for i, sid in log.slurm_ids.items()},
        "jobcomp": _jobcomp_check(info, records),
        "time_limits_min": {str(workload.jobs[s.job_index].id): s.time_limit_min for s in subs},
    }
    sacct_text = None
    if info.accounting:
        sacct_text = _collect_sacct(info, sorted(log.slurm_ids.values()), log.t0 - 60)
        record["sacct"] = _SACCT_FILE
    summary = write_result(
        result, out_dir, force=force, run_extra={"replay": record, "time_tolerance": tolerance}
    )
    if sacct_text is not None:
        write_text(Path(out_dir) / _SACCT_FILE, sacct_text)
    return summary, record
