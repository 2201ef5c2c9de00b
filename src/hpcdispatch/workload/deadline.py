"""Deadline workloads (Linnert, De Rose, Heiss 2024, sec. 5): the generator and JSON lines.

``synthetic:deadline,jobs=1000,seed=S,load=normal|heavy|very-heavy|SECONDS,types=0|1|2|3|uniform,
comm=async|sync[,key=value...]`` -- every parameter is a field of :class:`DeadlineWorkloadParams`
(documented there and in docs/DEADLINE.md, "Deadline workloads"). In short (design note §3.2,
defaults A14-A17):

1. process counts ``n`` and run times from the Lublin-Feitelson model
   (:func:`~hpcdispatch.workload.lublin.lublin_jobs`) on ``cores`` = 512 cores; the reserved
   length ``R = max(min_runtime, run x runtime_scale)`` (whole seconds);
2. submission times: cumulative exponential inter-arrival times of mean ``load`` seconds
   (normal 1500, heavy 150, very heavy 1), floored to whole seconds; earliest start =
   submission + ``U(0, lead_days)`` days (0 by default: earliest start = submission);
3. slack ``s = max(slack_min, N(slack_base + slack_size * log2(n) / 9, slack_sd))`` and
   deadline = earliest start + ``R (1 + s)``, floored to a whole second;
4. behaviour type per job (``types=uniform``: drawn uniformly from 0-3) and the
   communication pattern, stored as the job's :class:`~hpcdispatch.workload.job.AppSpec`.

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import AppSpec, Job, SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.lublin import LublinSpec, lublin_jobs

#: the paper's load levels: mean inter-arrival time in seconds (sec. 5, design note A15)
LOADS = {"normal": 1500.0, "heavy": 150.0, "very-heavy": 1.0}
TYPES = ("0", "1", "2", "3", "uniform")
COMMS = ("async", "sync")
_JSONL_SUFFIX = ".deadline.jsonl"

# random streams (the second element of each stream's seed): common random numbers
_ARRIVALS, _SLACK, _TYPES, _LEAD = 1, 2, 3, 4


@dataclass(frozen=True)
class DeadlineWorkloadParams:
    """Every parameter of the deadline workload generator (``synthetic:deadline,key=value``).

    - ``jobs``: job requests per trace (paper: 1,000);
    - ``seed``: one seed for every random stream (sizes and run times, arrivals, slack,
      behaviour types, lead times -- each its own stream);
    - ``load``: ``normal`` / ``heavy`` / ``very-heavy`` (mean inter-arrival 1500 / 150 / 1 s,
      the paper's "interarrival factor", A15) or a mean inter-arrival time in seconds;
    - ``types``: ``0``-``3`` (every job that behaviour type) or ``uniform`` (each job's type
      drawn uniformly, from its own stream);
    - ``comm``: ``async`` or ``sync`` (sec. 5.2);
    - ``cores``: the machine size the Lublin model draws sizes for (512: HLRN-II, A14);
    - ``runtime_scale``: Lublin run time x this = the reserved length R (A14; 30 brings the
      simulated spans close to the paper's 74 / 65 / 65 days, design note App. B);
    - ``min_runtime``: the shortest R, seconds;
    - ``lead_days``: earliest start = submission + U(0, lead_days) days (A16; 0: at submission);
    - ``slack_min``, ``slack_base``, ``slack_size``, ``slack_sd``: slack
      ``s = max(slack_min, N(slack_base + slack_size * log2(n) / 9, slack_sd))``, deadline =
      earliest start + R (1 + s) (A17: bigger jobs get more slack, a normal distribution);
    - ``interactive``: include the Lublin model's interactive stream (its size distribution).
    """

    jobs: int = 1000
    seed: int = 1
    load: str = "normal"
    types: str = "uniform"
    comm: str = "async"
    cores: int = 512
    runtime_scale: float = 30.0
    min_runtime: int = 60
    lead_days: float = 0.0
    slack_min: float = 0.05
    slack_base: float = 0.25
    slack_size: float = 0.75
    slack_sd: float = 0.1
    interactive: bool = True

    def __post_init__(self) -> None:
        where = "workload 'synthetic:deadline'"
        if self.jobs < 1:
            raise ConfigError(f"{where}: 'jobs' must be >= 1, got {self.jobs}")
        _ = self.interarrival  # validates load
        if str(self.types) not in TYPES:
            raise ConfigError(
                f"{where}: 'types' must be one of {', '.join(TYPES)}, got '{self.types}'"
            )
        if self.comm not in COMMS:
            raise ConfigError(f"{where}: 'comm' must be async or sync, got '{self.comm}'")
        if self.cores < 1:
            raise ConfigError(f"{where}: 'cores' must be >= 1, got {self.cores}")
        if not self.runtime_scale > 0:
            raise ConfigError(f"{where}: 'runtime_scale' must be > 0, got {self.runtime_scale}")
        if self.min_runtime < 1:
            raise ConfigError(f"{where}: 'min_runtime' must be >= 1 second, got {self.min_runtime}")
        if not self.lead_days >= 0:
            raise ConfigError(f"{where}: 'lead_days' must be >= 0, got {self.lead_days}")
        if not self.slack_min > 0 or not self.slack_sd >= 0:
            raise ConfigError(f"{where}: 'slack_min' must be > 0 and 'slack_sd' >= 0")

    @property
    def interarrival(self) -> float:
        """The mean inter-arrival time in seconds."""
        if self.load in LOADS:
            return LOADS[self.load]
        try:
            value = float(self.load)
        except ValueError:
            raise ConfigError(
                f"workload 'synthetic:deadline': 'load' must be normal, heavy, very-heavy or a "
                f"mean inter-arrival time in seconds, got '{self.load}'"
            ) from None
        if not value > 0 or not math.isfinite(value):
            raise ConfigError(
                f"workload 'synthetic:deadline': 'load' in seconds must be > 0, got '{self.load}'"
            )
        return value


def parse_deadline_spec(spec: str) -> DeadlineWorkloadParams:
    """``synthetic:deadline,key=value,...`` -> parameters (unknown keys: one error naming them)."""
    return DeadlineWorkloadParams(**_deadline_values(spec))


def _deadline_values(spec: str) -> dict[str, Any]:
    """The typed values of ``synthetic:deadline,key=value,...``, in the order given."""
    body = spec.split(":", 1)[1] if ":" in spec else spec
    _, _, rest = body.partition(",")
    where = f"workload '{spec}'"
    types = {f.name: f.type for f in fields(DeadlineWorkloadParams)}
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        if "=" not in part:
            raise ConfigError(f"{where}: expected key=value, got '{part}'")
        key, value = (x.strip() for x in part.split("=", 1))
        if key not in types:
            raise ConfigError(f"{where}: unknown key '{key}'; known: {', '.join(types)}")
        kind = types[key]
        try:
            if kind == "int":
                values[key] = int(value)
            elif kind == "float":
                values[key] = float(value)
            elif kind == "bool":
                if value.lower() not in ("0", "1", "true", "false", "yes", "no"):
                    raise ValueError(value)
                values[key] = value.lower() in ("1", "true", "yes")
            else:
                values[key] = value
        except ValueError:
            raise ConfigError(f"{where}: '{key}' must be {kind}, got '{value}'") from None
    return values


def _node_cores(system: System) -> int:
    """Cores per node (every node must have the same number: deadline jobs take whole nodes)."""
    if "core" not in system.resources:
        raise ConfigError(f"system '{system.name}' has no 'core' resource: deadline jobs need one")
    cores = system.capacity[:, system.resource_index("core")]
    if len(cores) == 0 or cores.min() != cores.max() or cores[0] < 1:
        raise ConfigError(
            f"system '{system.name}': deadline jobs take whole nodes and need every node to have "
            f"the same number of cores (found {sorted(set(cores.tolist()))})"
        )
    return int(cores[0])


def deadline_job(
    system: System,
    job_id: int,
    submit: int,
    run_time: int,
    earliest_start: float | None,
    deadline: float | None,
    app: AppSpec,
) -> Job:
    """One deadline job on ``system``: ``ceil(processes / c)`` units of ``c`` cores, one per node."""
    c = _node_cores(system)
    req = [0] * len(system.resources)
    req[system.resource_index("core")] = c
    return Job(
        id=job_id,
        submit=submit,
        run_time=run_time,
        wall_time=run_time,
        units=-(-app.processes // c),
        unit_request=tuple(req),
        processors=app.processes,
        max_units_per_node=1,
        deadline=deadline,
        earliest_start=earliest_start,
        app=app,
    )


def deadline_columns(params: DeadlineWorkloadParams) -> dict[str, np.ndarray]:
    """The generator's draws as columns (no system needed): ``processes, run_time, submit,
    earliest_start, deadline, behaviour``."""
    seed = params.seed
    lub = lublin_jobs(
        LublinSpec(jobs=params.jobs, seed=seed, interactive=params.interactive), params.cores
    )
    n = params.jobs
    procs = lub["processors"].astype(np.int64)
    run = np.maximum(params.min_runtime, np.floor(lub["run_time"] * params.runtime_scale)).astype(
        np.int64
    )
    gaps = np.random.default_rng([seed, _ARRIVALS]).exponential(params.interarrival, size=n)
    submit = np.floor(np.cumsum(gaps) - gaps[0]).astype(np.int64)  # the first job at t = 0
    lead = np.random.default_rng([seed, _LEAD]).uniform(0.0, params.lead_days * 86400.0, size=n)
    est = submit + np.floor(lead).astype(np.int64)
    mean = params.slack_base + params.slack_size * np.log2(procs) / 9.0
    slack = np.maximum(
        params.slack_min, np.random.default_rng([seed, _SLACK]).normal(mean, params.slack_sd)
    )
    deadline = est + np.floor(run * (1.0 + slack)).astype(np.int64)
    type_rng = np.random.default_rng([seed, _TYPES])
    if params.types == "uniform":
        behaviour = type_rng.integers(0, 4, size=n)
    else:
        behaviour = np.full(n, int(params.types), dtype=np.int64)
    return {
        "processes": procs,
        "run_time": run,
        "submit": submit,
        "earliest_start": est,
        "deadline": deadline,
        "behaviour": behaviour.astype(np.int64),
    }


def _deadline_workload(
    system: System, params: DeadlineWorkloadParams, spec_string: str | None = None
) -> Workload:
    """The deadline workload of ``params`` on ``system`` (jobs larger than the system are
    skipped and counted as ``too-big``)."""
    cols = deadline_columns(params)
    c = _node_cores(system)
    report = SkipReport(total_records=params.jobs)
    nodes_needed = -(-cols["processes"] // c)
    too_big = np.flatnonzero(nodes_needed > system.n_nodes)
    report.skip("too-big", (too_big + 1).tolist())
    jobs = []
    for i in range(params.jobs):
        if nodes_needed[i] > system.n_nodes:
            continue
        app = AppSpec(int(cols["behaviour"][i]), params.comm, int(cols["processes"][i]))
        jobs.append(
            deadline_job(
                system,
                i + 1,
                int(cols["submit"][i]),
                int(cols["run_time"][i]),
                float(cols["earliest_start"][i]),
                float(cols["deadline"][i]),
                app,
            )
        )
    spec = spec_string or "synthetic:deadline," + ",".join(
        f"{k}={v}" for k, v in asdict(params).items()
    )
    return Workload(jobs, system.resources, WorkloadSource("synthetic", spec, {}), report)


# ---- JSON lines ------------------------------------------------------------------------------
_JSONL_FIELDS = (
    "id",
    "submit",
    "run_time",
    "earliest_start",
    "deadline",
    "processes",
    "behaviour",
    "comm",
)


def write_deadline_jsonl(workload: Workload, path: str | Path) -> None:
    """One JSON object per job (``_JSONL_FIELDS``); every job must have an ``app``."""
    lines = []
    for job in workload.jobs:
        if job.app is None:
            raise ConfigError(f"job {job.id} has no application model: not a deadline job")
        lines.append(
            json.dumps(
                {
                    "id": job.id,
                    "submit": job.submit,
                    "run_time": job.run_time,
                    "earliest_start": job.earliest_start,
                    "deadline": job.deadline,
                    "processes": job.app.processes,
                    "behaviour": job.app.behaviour,
                    "comm": job.app.comm,
                }
            )
        )
    Path(path).write_text("".join(line + "\n" for line in lines))


def _number(rec: dict, key: str, integer: bool, optional: bool = False) -> Any:
    value = rec.get(key)
    if value is None:
        if optional:
            return None
        raise ValueError(f"'{key}' is missing")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"'{key}' must be a number, got {value!r}")
    if integer and value != int(value):
        raise ValueError(f"'{key}' must be a whole number of seconds, got {value!r}")
    if value < 0:
        raise ValueError(f"'{key}' must be >= 0, got {value!r}")
    return int(value) if integer else float(value)


def read_deadline_jsonl(path: str | Path, system: System) -> Workload:
    """Read a ``.deadline.jsonl`` workload onto ``system`` (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(
            str(path), f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    report = SkipReport(total_records=len(lines))
    c = _node_cores(system)
    jobs: list[Job] = []
    seen: set[int] = set()

    def skip(reason: str, line: int, message: str) -> None:
        report.skip(reason, [line])
        if len(report.notes) < 10:
            report.notes.append(f"{path}, line {line}: {message}")

    for line, raw in lines:
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            skip("malformed", line, f"not JSON ({exc.msg})")
            continue
        if not isinstance(rec, dict):
            skip("malformed", line, "not a JSON object")
            continue
        unknown = sorted(set(rec) - set(_JSONL_FIELDS))
        if unknown:
            skip(
                "malformed",
                line,
                f"field '{unknown[0]}': unknown (fields: {', '.join(_JSONL_FIELDS)})",
            )
            continue
        try:
            job_id = _number(rec, "id", True)
            submit = _number(rec, "submit", True)
            run = _number(rec, "run_time", True)
            est = _number(rec, "earliest_start", False, optional=True)
            deadline = _number(rec, "deadline", False, optional=True)
            procs = _number(rec, "processes", True)
            behaviour = _number(rec, "behaviour", True)
        except ValueError as exc:
            field = str(exc).split("'")[1]
            skip(f"bad-{field}", line, f"field {field}: {exc}")
            continue
        comm = rec.get("comm", "async")
        try:
            app = AppSpec(behaviour, comm, procs)
        except ConfigError as exc:
            skip("bad-app", line, f"field behaviour/comm/processes: {exc}")
            continue
        if run < 1:
            skip("bad-run_time", line, "field run_time: must be >= 1 second")
            continue
        if deadline is not None and deadline < max(submit, est or 0):
            skip("bad-deadline", line, f"field deadline: {deadline:g} is before the earliest start")
            continue
        if -(-procs // c) > system.n_nodes:
            skip(
                "too-big",
                line,
                f"field processes: {procs} processes need more than the system's {system.n_nodes} nodes",
            )
            continue
        if job_id in seen:
            skip("duplicate-id", line, f"field id: {job_id} was used before")
            continue
        seen.add(job_id)
        jobs.append(deadline_job(system, job_id, submit, run, est, deadline, app))
    if not jobs and lines:
        raise TraceFormatError(str(path), "no usable job; " + "; ".join(report.notes[:3]))
    return Workload(jobs, system.resources, WorkloadSource("deadline-jsonl", str(path), {}), report)
