"""Slurm accounting (``sacct --parsable2``) as a workload: what a Slurm site has instead of SWF.

Produce the file with::

    sacct --allusers --parsable2 --starttime 2024-01-01 --endtime 2024-02-01 \
        --format JobID,JobIDRaw,JobName,User,Account,Partition,Submit,Start,End,Elapsed,\
Timelimit,NNodes,NCPUS,ReqTRES,AllocTRES,State \
        > jan.sacct

The first line is the header (``|``-separated field names, any order, any case; ``--parsable``'s
trailing ``|`` is accepted too). The fields and how each record is read are in the docs page
below.

No time limit (``UNLIMITED``, ``Partition_Limit``, empty): the partition's largest limit,
else the file's longest run time, each counted as patched under its own rule.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hpcdispatch.errors import TraceFormatError
from hpcdispatch.system.allocation import request_fits
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job, SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.slurm import _GPU, _MEM, SlurmRequest, _renumber_labels, _text_lines
from hpcdispatch.workload.slurm_units import _MAX_VALUE, gres_resource, parse_slurm_time, parse_tres
from hpcdispatch.workload.swf import _check_file

_SACCT_SUFFIX = ".sacct"
#: states of jobs that ran and ended (their allocation was held for Elapsed)
_ENDED_STATES = {
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "DEADLINE",
    "BOOT_FAIL",
}
#: states of jobs without a final run time
_UNFINISHED_STATES = {
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "REQUEUED",
    "RESIZING",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "REVOKED",
    "SPECIAL_EXIT",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "CONFIGURING",
    "COMPLETING",
}
_JOBID = re.compile(r"^(\d{1,16})(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(\..+)?$", re.ASCII)
_UNKNOWN = {"", "unknown", "none", "partition_limit", "n/a"}
_DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)$", re.ASCII)


def is_sacct_file(path: Path) -> bool:
    """``path`` ends in ``.sacct`` or its first line is a sacct header (``JobID|...``)."""
    if path.suffix.lower() == _SACCT_SUFFIX:
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].strip()
    fields = [f.strip().lower() for f in first.split(b"|")]
    return len(fields) > 2 and fields[0] in (b"jobid", b"jobidraw") and b"submit" in fields


def _date(text: str) -> int | None:
    """Epoch seconds of a sacct date read as UTC; ``None`` for Unknown/None."""
    s = text.strip()
    if s.lower() in _UNKNOWN:
        return None
    m = _DATE.match(s)
    if m is not None:
        try:
            return int(datetime(*map(int, m.groups()), tzinfo=UTC).timestamp())
        except (ValueError, OverflowError):
            pass
    raise ValueError(f"'{text}' is not a sacct date (YYYY-MM-DDTHH:MM:SS)")


def _is_int(text: str) -> bool:
    """Plain ASCII digits of a value up to 2^50."""
    return text.isascii() and text.isdigit() and len(text) <= 16 and int(text) <= _MAX_VALUE


def _count(text: str) -> int:
    s = text.strip()
    if not _is_int(s):
        raise ValueError(f"'{text}' is not a count")
    return int(s)


@dataclass
class _Record:
    line: int
    jobid: str
    base: int
    compound: bool  # an array task or a het component
    het: bool
    raw_id: int | None
    submit: int
    start: int
    run: int
    limit: int | None
    nodes: int
    cpus: int
    tres: dict[str, int]
    user: str | None
    account: str | None
    partition: str | None
    name: str | None


class _Bad(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def read_sacct(path: str | Path, system: System) -> Workload:
    """Read ``sacct --parsable2`` output onto ``system`` (see the module docstring)."""
    path = Path(path)
    _check_file(path)
    lines = [(k, text, why) for k, text, why in _text_lines(path) if text is None or text.strip()]
    if not lines or lines[0][1] is None:
        raise TraceFormatError(
            str(path),
            "empty file: sacct --parsable2 output starts with its header line"
            if not lines
            else f"the header line is not text: {lines[0][2]}",
            line=lines[0][0] if lines else None,
        )
    header_line, head, _ = lines[0]
    header = [h.strip().lower() for h in head.split("|")]
    trailing = len(header) > 1 and header[-1] == ""  # --parsable: every line ends with '|'
    if trailing:
        header = header[:-1]
    col = {h: i for i, h in enumerate(header) if h}
    if "jobid" not in col and "jobidraw" not in col:
        raise TraceFormatError(
            str(path),
            "not sacct --parsable2 output: the first line must be its header "
            "(JobID|Submit|Start|...; see hpcdispatch.workload.sacct)",
            line=header_line,
        )
    missing = [f for f in ("Submit", "Start", "Timelimit", "State") if f.lower() not in col]
    if "elapsed" not in col and "end" not in col:
        missing.append("Elapsed or End")
    if not {"nnodes", "reqnodes", "alloctres", "reqtres"} & set(col):
        missing.append("NNodes")
    if not {"ncpus", "alloccpus", "reqcpus", "alloctres", "reqtres"} & set(col):
        missing.append("NCPUS")
    if missing:
        raise TraceFormatError(
            str(path),
            f"the sacct header lacks {', '.join(missing)} (give them in sacct's --format)",
            line=header_line,
        )
    report = SkipReport(total_records=len(lines) - 1)
    notes: list[str] = []

    def skip(reason: str, line: int, message: str | None = None) -> None:
        report.skip(reason, [line])
        if message and len(notes) < 10:
            notes.append(f"{path}, line {line}: {message}")

    def get(values: list[str], *names: str) -> str | None:
        for n in names:
            i = col.get(n)
            if i is not None and values[i].strip().lower() not in _UNKNOWN:
                return values[i].strip()
        return None

    records: list[_Record] = []
    for line, text, why in lines[1:]:
        if text is None:
            skip("malformed", line, why)
            continue
        values = text.split("|")
        if trailing and values and values[-1] == "":
            values = values[:-1]
        if len(values) != len(header):
            skip("malformed", line, f"{len(values)} fields, the header has {len(header)}")
            continue
        jobid = (get(values, "jobid") or get(values, "jobidraw") or "").strip()
        m = _JOBID.match(jobid)
        if m is None:
            skip("bad-JobID", line, f"field JobID: '{jobid}' is not a Slurm job id")
            continue
        base, task, het, step = m.groups()
        if step is not None:
            skip("job-step", line)
            continue
        state = (get(values, "state") or "").split()
        state_word = state[0].upper().rstrip("+") if state else ""
        if task is not None and task.startswith("["):
            skip("not-finished", line)  # a pending array's summary line
            continue
        if state_word in _UNFINISHED_STATES:
            skip("not-finished", line)
            continue
        if state_word not in _ENDED_STATES:
            skip("bad-State", line, f"field State: '{' '.join(state)}' is not a Slurm job state")
            continue
        try:
            try:
                start = _date(values[col["start"]])
            except ValueError as exc:
                raise _Bad("Start", str(exc)) from None
            if start is None:
                skip("never-started", line)
                continue
            try:
                submit = _date(values[col["submit"]])
            except ValueError as exc:
                raise _Bad("Submit", str(exc)) from None
            if submit is None:
                raise _Bad("Submit", "no submit time")
            run = _run_time(values, col, start)
            try:
                limit = (
                    parse_slurm_time(values[col["timelimit"]])
                    if values[col["timelimit"]].strip().lower() not in _UNKNOWN
                    else None
                )
            except ValueError as exc:
                raise _Bad("Timelimit", str(exc)) from None
            tres: dict[str, int] = {}
            for field_name in ("reqtres", "alloctres"):  # AllocTRES (later) overrides ReqTRES
                raw = get(values, field_name)
                if raw:
                    try:
                        tres.update(parse_tres(raw))
                    except ValueError as exc:
                        raise _Bad(
                            "AllocTRES" if field_name == "alloctres" else "ReqTRES", str(exc)
                        ) from None
            nodes = _first_count(values, col, ("nnodes", "reqnodes"), tres.get("node"), "NNodes")
            cpus = _first_count(
                values, col, ("ncpus", "alloccpus", "reqcpus"), tres.get("cpu"), "NCPUS"
            )
            raw_text = get(values, "jobidraw")
            raw_id = None
            if raw_text is not None and "jobid" in col:
                if not _is_int(raw_text):
                    raise _Bad("JobIDRaw", f"'{raw_text}' is not a job id")
                raw_id = int(raw_text)
        except _Bad as exc:
            skip(f"bad-{exc.field}", line, f"field {exc.field}: {exc}")
            continue
        if int(base) > _MAX_VALUE:
            skip("bad-JobID", line, f"field JobID: '{jobid}' is too large")
            continue
        if run <= 0:
            skip("runtime<=0", line)
            continue
        records.append(
            _Record(
                line,
                jobid,
                int(base),
                task is not None or het is not None,
                het is not None,
                raw_id,
                submit,
                start,
                run,
                limit,
                nodes,
                cpus,
                tres,
                get(values, "user"),
                get(values, "account"),
                get(values, "partition"),
                get(values, "jobname"),
            )
        )
    return _to_workload(path, system, records, report, notes)


def _run_time(values: list[str], col: dict[str, int], start: int) -> int:
    if "elapsed" in col and values[col["elapsed"]].strip().lower() not in _UNKNOWN:
        try:
            run = parse_slurm_time(values[col["elapsed"]], zero_is_unlimited=False)
        except ValueError as exc:
            raise _Bad("Elapsed", str(exc)) from None
        if run is None:
            raise _Bad("Elapsed", f"'{values[col['elapsed']]}' is not an elapsed time")
        return run
    if "end" not in col:
        raise _Bad("Elapsed", "no elapsed time")
    try:
        end = _date(values[col["end"]])
    except ValueError as exc:
        raise _Bad("End", str(exc)) from None
    if end is None:
        raise _Bad("End", "no end time")
    return end - start


def _first_count(
    values: list[str], col: dict[str, int], names: tuple[str, ...], tres: int | None, label: str
) -> int:
    for n in names:
        i = col.get(n)
        if i is not None and values[i].strip().lower() not in _UNKNOWN:
            try:
                return _count(values[i])
            except ValueError as exc:
                raise _Bad(label, str(exc)) from None
    if tres is not None:
        return tres
    raise _Bad(label, "not given")


def _label_ids(values: list[str | None]) -> tuple[dict[str, int] | None, list[int]]:
    """``(name -> id or None when every value is an integer, id per value (-1: none))``."""
    given = [v for v in values if v is not None]
    if all(_is_int(v) for v in given):
        return None, [int(v) if v is not None else -1 for v in values]
    ids: dict[str, int] = {}
    for v in given:
        ids.setdefault(v, len(ids) + 1)
    return ids, [ids[v] if v is not None else -1 for v in values]


def _per_node(total: int, nodes: int) -> tuple[int, bool]:
    """``total`` spread over ``nodes``, rounded up; True when it did not divide evenly."""
    return -(-total // nodes), total % nodes != 0


def _to_workload(
    path: Path, system: System, records: list[_Record], report: SkipReport, notes: list[str]
) -> Workload:
    resources = tuple(system.resources)
    has_mem = _MEM in resources
    cap = system.capacity

    # ids: JobIDRaw, else the plain id; array tasks and het components without JobIDRaw get fresh ones
    next_id = max((r.base for r in records), default=0) + 1
    ids: list[int] = []
    for r in records:
        if r.raw_id is not None:
            ids.append(r.raw_id)
        elif r.compound:
            ids.append(next_id)
            next_id += 1
        else:
            ids.append(r.base)

    # time limits: the partition's largest recorded limit, else the largest run time
    part_limit: dict[str | None, int] = {}
    for r in records:
        if r.limit is not None:
            part_limit[r.partition] = max(part_limit.get(r.partition, 0), r.limit)
    longest = max((r.run for r in records), default=1)

    users, user_ids = _label_ids([r.user for r in records])
    accounts, account_ids = _label_ids([r.account for r in records])
    parts, part_ids = _label_ids([r.partition for r in records])

    jobs: list[Job] = []
    seen: set[int] = set()
    kept: list[_Record] = []
    uneven = mem_ignored = limits_patched = limits_longest = het = 0
    fit_cache: dict[tuple, bool] = {}

    def skip(reason: str, line: int, message: str) -> None:
        report.skip(reason, [line])
        if len(notes) < 10:
            notes.append(f"{path}, line {line}: {message}")

    for k, r in enumerate(records):
        if r.nodes < 1 or r.cpus < r.nodes:
            skip("bad-request", r.line, f"{r.cpus} CPUs on {r.nodes} nodes (each node needs one)")
            continue
        gpus = 0
        odd_amounts = False
        gres: dict[str, int] = {}
        typed = {
            name.split(":", 1)[0] for name in r.tres if name.startswith("gres/") and ":" in name
        }
        bad = None
        for name, amount in r.tres.items():
            if not name.startswith("gres/") or not amount:
                continue
            gname, _, gtype = name[5:].partition(":")
            if not gtype and f"gres/{gname}" in typed:
                continue  # the untyped total of typed entries
            try:
                resource = gres_resource(gname, gtype or None, resources)
            except LookupError as exc:
                if gtype and f"gres/{gname}" in r.tres:  # fall back to the untyped total
                    try:
                        resource = gres_resource(gname, None, resources)
                        amount = r.tres[f"gres/{gname}"]
                        if resource in gres or (resource == _GPU and gpus):
                            continue  # the untyped total already counted
                    except LookupError:
                        bad = exc.args[0]
                        break
                else:
                    bad = exc.args[0]
                    break
            per, odd = _per_node(amount, r.nodes)
            odd_amounts |= odd
            if resource == _GPU:
                gpus += per
            else:
                gres[resource] = gres.get(resource, 0) + per
        if bad is not None:
            skip("bad-gres", r.line, bad)
            continue
        mem = None
        if r.tres.get("mem") and has_mem:
            mem, odd = _per_node(r.tres["mem"], r.nodes)
            odd_amounts |= odd
        request = SlurmRequest(
            ntasks=r.cpus, nodes=r.nodes, gpus_per_node=gpus, gres=tuple(gres.items()), mem=mem
        )
        try:
            f = request.job_fields(resources)
        except ValueError as exc:
            skip("bad-request", r.line, f"{request.describe()}: {exc}")
            continue
        job_id = ids[k]
        if job_id in seen:
            skip("duplicate-id", r.line, f"job id {job_id} appears twice")
            continue
        shape = (
            f["unit_request"],
            f["units"],
            f["max_units_per_node"],
            f["node_count"],
            f["per_node_request"],
        )
        fits = fit_cache.get(shape)
        if fits is None:  # the same shapes recur: test each once
            pn = np.asarray(f["per_node_request"] or (0,) * len(resources), dtype=np.int64)
            fits = fit_cache[shape] = request_fits(
                cap,
                np.asarray(f["unit_request"]),
                f["units"],
                f["max_units_per_node"],
                f["node_count"],
                pn,
                f["contiguous"],
            )
        if not fits:
            skip(
                "too-big",
                r.line,
                f"job {r.jobid} ({request.describe()}) does not fit the empty system {system.name}",
            )
            continue
        limit = r.limit
        if limit is None:
            limit = part_limit.get(r.partition, longest)
            limits_patched += 1
            limits_longest += r.partition not in part_limit
        seen.add(job_id)
        het += r.het
        uneven += odd_amounts
        mem_ignored += bool(r.tres.get("mem")) and not has_mem
        name = (
            r.name if r.name is not None else (r.jobid if r.compound and r.raw_id is None else None)
        )
        kept.append(r)
        jobs.append(
            Job(
                id=job_id,
                submit=r.submit,
                run_time=r.run,
                wall_time=limit,
                units=f["units"],
                unit_request=f["unit_request"],
                user=user_ids[k],
                group=account_ids[k],
                queue=part_ids[k],
                partition=part_ids[k],
                name=name,
                processors=r.cpus,
                max_units_per_node=f["max_units_per_node"],
                node_count=f["node_count"],
                per_node_request=f["per_node_request"],
                contiguous=f["contiguous"],
            )
        )
    jobs, labels = _renumber_labels(
        jobs,
        {
            field: {i: n for n, i in ids_.items()}
            for field, ids_ in (("user", users), ("group", accounts), ("partition", parts))
            if ids_
        },
    )
    t0 = min((j.submit for j in jobs), default=0)
    jobs = [j._replace(submit=j.submit - t0) for j in jobs]
    # expected wait per queue (partition): the mean recorded wait, as the SWF reader's field 3
    waits: dict[int, list[int]] = {}
    for j, r in zip(jobs, kept):
        waits.setdefault(j.queue, []).append(max(r.start - r.submit, 0))
    queue_ewt = {q: float(np.mean(w)) for q, w in waits.items()}
    no_limit = "Timelimit UNLIMITED, Partition_Limit or empty: wall time ="
    report.patch(
        f"{no_limit} the largest limit recorded in the job's partition",
        limits_patched - limits_longest,
    )
    report.patch(
        f"{no_limit} the longest run time in the file (no limit recorded in its partition)",
        limits_longest,
    )
    report.patch("GRES or memory not divisible by the node count: rounded up per node", uneven)
    report.patch(f"memory ignored (system {system.name} has no '{_MEM}' resource)", mem_ignored)
    if het:
        notes.append(
            f"{het} het-job components read as separate jobs (the simulator does not start them together)"
        )
    report.notes.extend(notes)
    header = {"UnixStartTime": str(t0)} if jobs else {}
    source = WorkloadSource(kind="sacct", spec=str(path), options={})
    return Workload(
        jobs,
        resources,
        source=source,
        report=report,
        queue_names=labels.get("queue"),
        header=header,
        queue_ewt=queue_ewt,
        labels=labels,
    )
