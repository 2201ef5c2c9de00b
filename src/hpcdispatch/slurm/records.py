"""Slurm's own records of a schedule, read back: ``squeue --json -t all`` and jobcomp/filetxt.

``squeue --json`` (Slurm 22.05, OpenAPI v0.0.38) lists every job slurmctld still holds
(``MinJobAge=3600`` keeps finished ones for an hour) with ``submit_time``, ``start_time``,
``end_time`` (epoch seconds), ``job_state``, ``name`` and ``job_resources.allocated_nodes``:
per node its name and its cores, ``{"sockets": {"0": {"cores": {"3": "allocated", ...}}}}``;
the cores a job holds on a node are those marked allocated. GPUs per node are the request
(``tres_per_node``, ``gres:gpu:K``): without slurmdbd Slurm keeps no GRES accounting.

jobcomp/filetxt writes one line per finished job, ``Key=Value`` separated by spaces
(``JobId=3 ... JobState=COMPLETED ... StartTime=2026-11-27T10:12:37 EndTime=... NodeList=n0000
NodeCnt=1 ProcCnt=3 ... SubmitTime=...``), times in the local time zone, whole seconds.

Both readers keep the valid records and report a damaged one as a :class:`TraceFormatError`
naming the file (or source), the record and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from hpcdispatch.errors import TraceFormatError


@dataclass(frozen=True)
class SlurmJobRecord:
    """One job as slurmctld reports it (times in epoch seconds; ``None`` = not yet)."""

    job_id: int
    name: str
    state: str
    submit: int
    start: int | None
    end: int | None
    cores: dict[str, int]  # node name -> cores allocated there (node order as Slurm lists them)
    state_reason: str = ""
    time_limit_min: int | None = None
    gres_per_node: str = ""
    het_job_id: int = (
        0  # a heterogeneous job's components share it (their leader's job id); 0: not one
    )
    het_job_offset: int = 0


def _merge_hetjob(components: list[SlurmJobRecord]) -> SlurmJobRecord:
    """The components of one heterogeneous job as one record: the leader's id, name and
    submission, the cores of every component, the earliest start and latest end (Slurm starts
    and ends the components together), and a state that is final only when every component's
    is (else the first unfinished component's)."""
    if not components:
        raise ValueError("no components to merge")
    parts = sorted(components, key=lambda r: r.het_job_offset)
    lead = parts[0]
    cores: dict[str, int] = {}
    for part in parts:
        for node, c in part.cores.items():
            cores[node] = cores.get(node, 0) + c
    open_ = [p for p in parts if p.state not in _FINAL]
    state, reason = (
        (open_[0].state, open_[0].state_reason) if open_ else (lead.state, lead.state_reason)
    )
    starts = [p.start for p in parts if p.start is not None]
    ends = [p.end for p in parts if p.end is not None]
    return SlurmJobRecord(
        job_id=lead.het_job_id or lead.job_id,
        name=lead.name,
        state=state,
        submit=lead.submit,
        start=min(starts) if len(starts) == len(parts) else None,
        end=max(ends) if len(ends) == len(parts) else None,
        cores=cores,
        state_reason=reason,
        time_limit_min=lead.time_limit_min,
        gres_per_node=lead.gres_per_node,
        het_job_id=lead.het_job_id,
        het_job_offset=0,
    )


#: Slurm's job states of a job that has ended
_FINAL = frozenset(
    {
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
)


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list syntax expanded: ``n[0002-0003,0007],x1`` -> ``n0002 n0003 n0007 x1``
    (zero padding kept; one bracket group per name, as Slurm writes node lists)."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text.strip()):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if m is None:
            names.append(part)
            continue
        prefix, body, suffix = m.groups()
        for item in body.split(","):
            lo, _, hi = item.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"bad range '{item}' in host list '{text}'")
            width = len(lo)
            for k in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{k:0{width}d}{suffix}")
    return names


def _allocated_cores(node: dict[str, Any]) -> int:
    count = 0
    for sock in (node.get("sockets") or {}).values():
        for state in ((sock or {}).get("cores") or {}).values():
            if "allocated" in str(state).lower():
                count += 1
    return count


def _epoch(value: Any) -> int | None:
    """Slurm's epoch fields: 0 means "not set"."""
    if value is None:
        return None
    if isinstance(value, dict):  # later OpenAPI versions: {"set": true, "number": N}
        value = value.get("number") if value.get("set", True) else None
        if value is None:
            return None
    value = int(value)
    return value if value > 0 else None


def parse_squeue_json(text: str, source: str = "squeue --json") -> list[SlurmJobRecord]:
    """The jobs of ``squeue --json`` output (see the module docstring)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(
            source, f"not JSON ({exc.msg} at character {exc.pos})", line=exc.lineno
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise TraceFormatError(source, "no 'jobs' list (is this squeue --json output?)")
    records = []
    for k, job in enumerate(doc["jobs"]):
        where = f"jobs[{k}]"
        try:
            resources = job.get("job_resources") or {}
            cores = {
                str(n["nodename"]): _allocated_cores(n)
                for n in resources.get("allocated_nodes") or []
            }
            state = job["job_state"]
            if isinstance(state, list):  # later OpenAPI versions: a list of flags
                state = state[0] if state else ""
            limit = job.get("time_limit")
            if isinstance(limit, dict):
                limit = limit.get("number") if limit.get("set", True) else None
            records.append(
                SlurmJobRecord(
                    job_id=int(job["job_id"]),
                    name=str(job.get("name", "")),
                    state=str(state),
                    submit=int(_epoch(job["submit_time"]) or 0),
                    start=_epoch(job.get("start_time")),
                    end=_epoch(job.get("end_time")),
                    cores=cores,
                    state_reason=str(job.get("state_reason", "")),
                    time_limit_min=int(limit) if limit is not None else None,
                    gres_per_node=str(job.get("tres_per_node") or ""),
                    het_job_id=int(_epoch(job.get("het_job_id")) or 0),
                    het_job_offset=int(_epoch(job.get("het_job_offset")) or 0),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            field = exc.args[0] if isinstance(exc, KeyError) else None
            raise TraceFormatError(
                source,
                f"{where} (job {job.get('job_id', '?') if isinstance(job, dict) else '?'}): "
                f"{'missing' if field else type(exc).__name__ + ': ' + str(exc)}",
                field=field,
            ) from None
    return records


@dataclass(frozen=True)
class JobCompRecord:
    """One line of jobcomp/filetxt (times in epoch seconds, local time zone)."""

    job_id: int
    state: str
    submit: int
    start: int
    end: int
    nodes: list[str]
    proc_count: int
    name: str = ""


#: ``squeue -o`` format of :func:`parse_squeue_text`: job (``ID`` or ``HETID+OFFSET``), name,
#: state, reason, submit, start, end, job id
_SQUEUE_TEXT_FORMAT = "%i|%j|%T|%r|%V|%S|%e|%A"
_PENDING = frozenset({"PENDING", "CONFIGURING"})


def _parse_squeue_text(text: str, source: str = "squeue -o") -> list[SlurmJobRecord]:
    """The jobs of ``squeue -h -t all -o SQUEUE_TEXT_FORMAT``: ids, names, states, reasons and
    times, without cores per node. Slurm 22.05's ``squeue --json`` dumps every job whatever the
    filters (measured: 29 MB and 2.4 s for 6,763 jobs of a 128-node run), this text form the same
    jobs in 0.2 s; the bridge polls with it and reads the JSON once, at the end. A pending job has
    no start (squeue prints its expected start); a damaged line is a :class:`TraceFormatError`
    naming it."""
    records = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        try:
            if len(fields) != 8:
                raise ValueError(f"{len(fields)} fields, expected 8")
            jid, name, state, reason, submit, start, end, job_id = fields
            het, _, offset = jid.partition("+")
            started = state not in _PENDING and start not in ("N/A", "Unknown", "")
            ended = state in _FINAL and end not in ("N/A", "Unknown", "")
            records.append(
                SlurmJobRecord(
                    job_id=int(job_id),
                    name=name,
                    state=state,
                    submit=_local_epoch(submit),
                    start=_local_epoch(start) if started else None,
                    end=_local_epoch(end) if ended else None,
                    cores={},
                    state_reason=reason,
                    het_job_id=int(het) if offset else 0,
                    het_job_offset=int(offset or 0),
                )
            )
        except ValueError as exc:
            raise TraceFormatError(source, f"{exc}: {line[:120]!r}", line=n) from None
    return records


def _local_epoch(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp())


def parse_jobcomp(text: str, source: str = "jobcomp.txt") -> tuple[list[JobCompRecord], list[str]]:
    """``(records, problems)``: every valid line of a jobcomp/filetxt file, and one message per
    damaged line (file, line and field), which is skipped."""
    records, problems = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        field = "JobId"
        try:
            job_id = int(fields["JobId"])
            values = {}
            for field in ("SubmitTime", "StartTime", "EndTime"):
                values[field] = _local_epoch(fields[field])
            field = "NodeList"
            nodes = (
                expand_hostlist(fields[field])
                if fields.get(field, "(null)") not in ("", "(null)", "None")
                else []
            )
            field = "ProcCnt"
            procs = int(fields.get(field, "0"))
            field = "JobState"
            records.append(
                JobCompRecord(
                    job_id,
                    fields[field],
                    values["SubmitTime"],
                    values["StartTime"],
                    values["EndTime"],
                    nodes,
                    procs,
                    fields.get("Name", ""),
                )
            )
        except (KeyError, ValueError) as exc:
            what = (
                "missing" if isinstance(exc, KeyError) else f"bad value {fields.get(field, '')!r}"
            )
            problems.append(str(TraceFormatError(source, what, line=lineno, field=field)))
    return records, problems


def read_jobcomp(path: str | Path) -> tuple[list[JobCompRecord], list[str]]:
    """Slurm's jobcomp/filetxt records of ``path`` and the lines it could not read."""
    p = Path(path)
    if not p.is_file():
        return [], []
    return parse_jobcomp(p.read_text(encoding="utf-8", errors="replace"), str(p))
