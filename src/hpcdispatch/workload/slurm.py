"""Slurm-style job requests (the AUCSCHED paper's Table 1) and the paper's CPU-GPU workloads.

A request is written as a Slurm user writes it:

- ``ntasks`` (``-n``): total number of cores;
- ``nodes`` (``-N``): number of nodes;
- ``ntasks_per_node`` (``--ntasks-per-node``): cores per node;
- ``gpus_per_node`` (``--gres=gpu:X``): GPUs on every node used;
- ``contiguous`` (``--contiguous``): consecutive nodes of the linear node order.

The paper's three request types map onto the job model (one unit = what one node or one
core holds; see :mod:`hpcdispatch.workload.job`) as the docs page below says.

Design notes, decisions and measurements: docs/RESULTS-AUCSCHED.md,
"From the module docstrings".
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.allocation import request_fits
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job, SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.slurm_units import (
    format_slurm_time,
    gres_resource,
    parse_gres,
    parse_slurm_memory,
    parse_slurm_time,
)
from hpcdispatch.workload.swf import _binary_content, _check_file

_CORE = "core"
_GPU = "gpu"
_MEM = "mem"


@dataclass(frozen=True)
class SlurmRequest:
    """One job's resource request as Slurm options (``None`` = option not given).

    ``cpus_per_task`` (``-c``) multiplies every task's cores; ``gres`` holds per-node
    generic resources other than plain GPUs, already matched to system resources
    (``(("gpu:a100", 2), ("mic", 1))``; :func:`~hpcdispatch.workload.slurm_units.gres_resource`);
    ``mem`` is ``--mem`` (MB per node) and ``mem_per_cpu`` ``--mem-per-cpu`` (MB per core).
    Memory is requested only on a system with a ``mem`` resource: on any other system it is
    ignored (the request still describes it, the job holds no memory).
    """

    ntasks: int | None = None
    nodes: int | None = None
    ntasks_per_node: int | None = None
    gpus_per_node: int = 0
    contiguous: bool = False
    cpus_per_task: int = 1
    gres: tuple[tuple[str, int], ...] = ()
    mem: int | None = None
    mem_per_cpu: int | None = None

    def normalized(self) -> tuple[int, int, int | None, int]:
        """``(type, nodes or 0, tasks per node or None, total tasks)``; raises ``ValueError``
        for an inconsistent or incomplete request."""
        n, nn, c, g = self.ntasks, self.nodes, self.ntasks_per_node, self.gpus_per_node
        for name, v in (("ntasks", n), ("nodes", nn), ("ntasks_per_node", c)):
            if v is not None and v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v}")
        if g < 0:
            raise ValueError(f"gpus_per_node must be >= 0, got {g}")
        if self.cpus_per_task < 1:
            raise ValueError(f"cpus_per_task must be a positive integer, got {self.cpus_per_task}")
        if self.mem is not None and self.mem_per_cpu is not None:
            raise ValueError(
                "mem and mem_per_cpu are mutually exclusive (as sbatch's --mem and --mem-per-cpu)"
            )
        if c is not None:
            if nn is None:
                if n is None:
                    raise ValueError("ntasks_per_node needs nodes or ntasks")
                if n % c:
                    raise ValueError(f"ntasks {n} is not a multiple of ntasks_per_node {c}")
                nn = n // c
            if n is not None and n != nn * c:
                raise ValueError(f"ntasks {n} != nodes {nn} x ntasks_per_node {c}")
            return 3, nn, c, nn * c
        if nn is not None:
            if n is None:  # -N alone: one task per node
                return 3, nn, 1, nn
            if n < nn:
                raise ValueError(
                    f"ntasks {n} is smaller than nodes {nn} (each node needs one task)"
                )
            return 2, nn, None, n
        if n is None:
            raise ValueError("the request gives neither ntasks nor nodes")
        return 1, 0, None, n

    @property
    def request_type(self) -> int:
        return self.normalized()[0]

    @property
    def cores(self) -> int:
        """Total cores: tasks x cpus per task."""
        return self.normalized()[3] * self.cpus_per_task

    def job_fields(self, resources: tuple[str, ...]) -> dict[str, Any]:
        """The job-model fields (units, unit_request, max_units_per_node, node_count,
        per_node_request, contiguous) for a system with ``resources``: one unit per task
        (types 1 and 2; ``cpus_per_task`` cores, plus ``mem_per_cpu`` for each) with the
        per-node amounts (GPUs, GRES, ``mem``) in ``per_node_request``, or one unit per node
        (type 3) holding all of them."""
        kind, nodes, tpn, tasks = self.normalized()
        if _CORE not in resources:
            raise ValueError(f"the system has no '{_CORE}' resource (it has {list(resources)})")
        ci = resources.index(_CORE)
        cpt = self.cpus_per_task
        mi = resources.index(_MEM) if _MEM in resources else None
        per_node = [0] * len(resources)
        if self.gpus_per_node:
            if _GPU not in resources:
                raise ValueError(f"the request asks for GPUs, the system has no '{_GPU}' resource")
            per_node[resources.index(_GPU)] += self.gpus_per_node
        for name, count in self.gres:
            if name not in resources:
                raise ValueError(f"the request asks for '{name}', the system has no such resource")
            per_node[resources.index(name)] += count
        if self.mem is not None and mi is not None:
            per_node[mi] += self.mem
        if kind == 3:
            unit = list(per_node)
            unit[ci] += tpn * cpt
            if self.mem_per_cpu is not None and mi is not None:
                unit[mi] += tpn * cpt * self.mem_per_cpu
            return {
                "units": nodes,
                "unit_request": tuple(unit),
                "max_units_per_node": 1,
                "node_count": nodes,
                "per_node_request": (),
                "contiguous": self.contiguous,
            }
        unit = [0] * len(resources)
        unit[ci] = cpt
        if self.mem_per_cpu is not None and mi is not None:
            unit[mi] = cpt * self.mem_per_cpu
        extra = tuple(per_node) if any(per_node) else ()
        return {
            "units": tasks,
            "unit_request": tuple(unit),
            "max_units_per_node": 0,
            "node_count": nodes,
            "per_node_request": extra,
            "contiguous": self.contiguous,
        }

    def describe(self) -> str:
        """The request as ``sbatch`` options."""
        parts = []
        if self.nodes is not None:
            parts.append(f"-N {self.nodes}")
        if self.ntasks is not None:
            parts.append(f"-n {self.ntasks}")
        if self.ntasks_per_node is not None:
            parts.append(f"--ntasks-per-node={self.ntasks_per_node}")
        if self.cpus_per_task != 1:
            parts.append(f"--cpus-per-task={self.cpus_per_task}")
        gres = ([f"gpu:{self.gpus_per_node}"] if self.gpus_per_node else []) + [
            f"{n}:{c}" for n, c in self.gres
        ]
        if gres:
            parts.append("--gres=" + ",".join(gres))
        if self.mem is not None:
            parts.append(f"--mem={self.mem}M")
        if self.mem_per_cpu is not None:
            parts.append(f"--mem-per-cpu={self.mem_per_cpu}M")
        if self.contiguous:
            parts.append("--contiguous")
        return " ".join(parts)


def slurm_job(
    id: int,
    request: SlurmRequest,
    run_time: int,
    resources: tuple[str, ...],
    submit: int = 0,
    wall_time: int | None = None,
    user: int = -1,
) -> Job:
    """A :class:`Job` for a Slurm-style request (``wall_time`` defaults to ``run_time``)."""
    f = request.job_fields(tuple(resources))
    return Job(
        id=id,
        submit=submit,
        run_time=run_time,
        wall_time=run_time if wall_time is None else wall_time,
        user=user,
        processors=request.cores,
        **f,
    )


def request_of(job: Job, resources: tuple[str, ...]) -> SlurmRequest:
    """The Slurm request a job expresses (inverse of :meth:`SlurmRequest.job_fields`; a type-3
    unit's cores come back as tasks per node with one cpu per task, and its memory as
    ``mem`` per node)."""
    resources = tuple(resources)
    ci = resources.index(_CORE)
    gi = resources.index(_GPU) if _GPU in resources else None
    mi = resources.index(_MEM) if _MEM in resources else None
    kind = job.slurm_type
    if kind == 3 and job.per_node_request and job.max_units_per_node != 1:
        kind = 2  # -N N -n N with per-node extras: one task per node, but written as it was built
    per_node = job.per_node_request or (0,) * len(resources)
    # type 3 (one unit per node): the unit's amounts and any per-node extras are all per node
    extra = tuple(a + b for a, b in zip(job.unit_request, per_node)) if kind == 3 else per_node
    g = extra[gi] if gi is not None else 0
    gres = tuple(
        (r, int(extra[k])) for k, r in enumerate(resources) if k not in (ci, gi, mi) and extra[k]
    )
    mem = int(extra[mi]) if mi is not None and extra[mi] else None
    if kind == 3:
        return SlurmRequest(
            nodes=job.exact_nodes,
            ntasks_per_node=job.unit_request[ci],
            gpus_per_node=g,
            contiguous=job.contiguous,
            gres=gres,
            mem=mem,
        )
    cpt = max(int(job.unit_request[ci]), 1)
    mem_per_cpu = None
    if mi is not None and job.unit_request[mi]:
        mem_per_cpu = -(-int(job.unit_request[mi]) // cpt)
    if (
        mem is not None and mem_per_cpu is not None
    ):  # both cannot be written; keep the larger need per node
        mem_per_cpu = None
    if kind == 2:
        return SlurmRequest(
            ntasks=job.units,
            nodes=job.node_count,
            gpus_per_node=g,
            contiguous=job.contiguous,
            cpus_per_task=cpt,
            gres=gres,
            mem=mem,
            mem_per_cpu=mem_per_cpu,
        )
    return SlurmRequest(
        ntasks=job.units,
        gpus_per_node=g,
        contiguous=job.contiguous,
        cpus_per_task=cpt,
        gres=gres,
        mem=mem,
        mem_per_cpu=mem_per_cpu,
    )


# ---------------------------------------------------------------------------------------
# reader: CSV / JSON lines
# ---------------------------------------------------------------------------------------

#: accepted column names -> canonical name (Slurm's long option names, with ``_`` or ``-``)
_COLUMNS = {
    "id": "id",
    "job": "id",
    "job_id": "id",
    "jobid": "id",
    "name": "name",
    "job_name": "name",
    "job-name": "name",
    "submit": "submit",
    "run_time": "run_time",
    "runtime": "run_time",
    "time_limit": "time_limit",
    "time": "time_limit",
    "t": "time_limit",
    "wall_time": "wall_time",
    "walltime": "wall_time",
    "time_limit_s": "wall_time",
    "ntasks": "ntasks",
    "n": "ntasks",
    "nodes": "nodes",
    "N": "nodes",
    "ntasks_per_node": "ntasks_per_node",
    "ntasks-per-node": "ntasks_per_node",
    "cpus_per_task": "cpus_per_task",
    "cpus-per-task": "cpus_per_task",
    "c": "cpus_per_task",
    "gpus_per_node": "gpus_per_node",
    "gres": "gres",
    "mem": "mem",
    "mem_per_cpu": "mem_per_cpu",
    "mem-per-cpu": "mem_per_cpu",
    "contiguous": "contiguous",
    "partition": "partition",
    "p": "partition",
    "user": "user",
    "account": "account",
    "A": "account",
}
_REQUEST_COLUMNS = ("ntasks", "nodes", "ntasks_per_node")
#: columns whose values may be names: the job field each one fills
_LABEL_COLUMNS = {"user": "user", "account": "group", "partition": "partition"}


#: the largest value a column may have (as the SWF reader: 2^50, about 10^15)
_MAX_VALUE = 2**50


class _TooLarge(ValueError):
    """A value beyond :data:`MAX_VALUE` (skipped as ``<column>-too-large``)."""


def _parse_int(
    value: Any, column: str, positive: bool = False, allow_empty: bool = True
) -> int | None:
    if value is None or (isinstance(value, str) and value.strip() == ""):
        if allow_empty:
            return None
        raise ValueError(f"column '{column}' is empty")
    if isinstance(value, bool):
        raise ValueError(f"column '{column}': expected an integer, got {value!r}")
    if (
        column == "gpus_per_node"
        and isinstance(value, str)
        and value.strip().lower().startswith("gpu")
    ):
        value = value.strip()[3:].lstrip(":") or "1"  # gres syntax: gpu, gpu:2
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        if isinstance(value, int):  # an integer too large for a float
            raise _TooLarge(f"column '{column}': {value} is too large (at most 2^50)") from None
        raise ValueError(f"column '{column}': expected an integer, got {value!r}") from None
    if not math.isfinite(f) or f != int(f):
        raise ValueError(f"column '{column}': expected an integer, got {value!r}")
    if abs(f) > _MAX_VALUE:
        raise _TooLarge(f"column '{column}': {value!r} is too large (at most 2^50)")
    v = int(f)
    if positive and v <= 0:
        raise ValueError(f"column '{column}': expected a positive integer, got {value!r}")
    if v < 0:
        raise ValueError(f"column '{column}': expected a non-negative integer, got {value!r}")
    return v


def _parse_bool(value: Any, column: str) -> bool:
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return False
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "y", "on"):
        return True
    if text in ("0", "false", "no", "n", "off"):
        return False
    raise ValueError(f"column '{column}': expected true/false, got {value!r}")


def _text_lines(path: Path) -> list[tuple[int, str | None, str]]:
    """``(line number, text or None, why not)`` for every line of the file (split at ``\\n``,
    as editors count lines); a line that is not UTF-8 text has ``None`` and the reason."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    why = _binary_content(data[: 1 << 16])
    if why:
        raise TraceFormatError(str(path), f"{why}; a request file is CSV or JSON lines text")
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
        data = data[3:]
    out: list[tuple[int, str | None, str]] = []
    for k, raw in enumerate(data.split(b"\n"), start=1):
        try:
            out.append((k, raw.decode("utf-8").removesuffix("\r"), ""))
        except UnicodeDecodeError as exc:
            out.append(
                (
                    k,
                    None,
                    f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1} is not UTF-8 text",
                )
            )
    return out


def _records(path: Path) -> tuple[str, list[tuple[int, dict[str, Any] | str]]]:
    """``(format, [(line number, record dict or parse error)])``."""
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".ndjson", ".csv"):
        raise TraceFormatError(str(path), "unknown request-file type (use .csv or .jsonl)")
    lines = [
        (k, line, why)
        for k, line, why in _text_lines(path)
        if line is None or (line.strip() and not line.lstrip().startswith("#"))
    ]
    out: list[tuple[int, dict[str, Any] | str]] = []
    if suffix in (".jsonl", ".json", ".ndjson"):
        for k, line, why in lines:
            if line is None:
                out.append((k, why))
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                out.append((k, f"not valid JSON ({exc.msg})"))
                continue
            except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting too deep
                out.append((k, f"not valid JSON ({type(exc).__name__}: {str(exc)[:80]})"))
                continue
            if not isinstance(rec, dict):
                out.append((k, "a JSON line must be an object"))
                continue
            out.append((k, rec))
        return "jsonl", out
    if not lines:
        raise TraceFormatError(str(path), "empty file (a CSV header line is needed)")
    header_line, first, why = lines[0]
    if first is None:
        raise TraceFormatError(str(path), f"the header line is not text: {why}", line=header_line)
    try:
        header = [h.strip() for h in next(csv.reader([first]))]
    except csv.Error as exc:
        raise TraceFormatError(
            str(path), f"the header line is not CSV: {exc}", line=header_line
        ) from None
    unknown = [h for h in header if h not in _COLUMNS]
    if unknown:
        raise TraceFormatError(
            str(path),
            f"unknown column(s) {unknown}; known: {sorted(set(_COLUMNS))}",
            line=header_line,
        )
    seen: dict[str, str] = {}
    for h in header:
        if _COLUMNS[h] in seen:
            raise TraceFormatError(
                str(path),
                f"columns '{seen[_COLUMNS[h]]}' and '{h}' are the same column ('{_COLUMNS[h]}')",
                line=header_line,
                field=h,
            )
        seen[_COLUMNS[h]] = h
    if "time_limit" in seen and "wall_time" in seen:
        raise TraceFormatError(
            str(path),
            f"columns '{seen['time_limit']}' (a Slurm time, minutes when a bare "
            f"number) and '{seen['wall_time']}' (seconds) both give the time limit: keep one",
            line=header_line,
            field=seen["wall_time"],
        )
    for k, line, why in lines[1:]:
        if line is None:
            out.append((k, why))
            continue
        try:
            values = next(csv.reader([line]))
        except csv.Error as exc:
            out.append((k, f"not CSV ({exc})"))
            continue
        if len(values) != len(header):
            out.append((k, f"{len(values)} fields, the header has {len(header)}"))
            continue
        out.append((k, dict(zip(header, values))))
    return "csv", out


def _label_ids(records: list[tuple[int, dict[str, Any] | str]]) -> dict[str, dict[str, int] | None]:
    """Per label column: ``None`` when every value given is an integer (kept as the id), else
    ``{name: id}`` with ids 1, 2, ... in order of first appearance in the file (then every
    value, digits included, is a name)."""
    out: dict[str, dict[str, int] | None] = {}
    for column in _LABEL_COLUMNS:
        values = []
        for _, rec in records:
            if isinstance(rec, dict):
                v = next(
                    (val for key, val in rec.items() if _COLUMNS.get(str(key).strip()) == column),
                    None,
                )
                if v is not None and not (isinstance(v, str) and not v.strip()):
                    values.append(v)
        numeric = all(
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, str) and v.strip().isdigit())
            for v in values
        )
        if numeric:
            out[column] = None
            continue
        ids: dict[str, int] = {}
        for v in values:
            ids.setdefault(str(v).strip(), len(ids) + 1)
        out[column] = ids
    return out


def _renumber_labels(
    jobs: list[Job], names: dict[str, dict[int, str]]
) -> tuple[list[Job], dict[str, dict[int, str]]]:
    """Give the named fields of ``jobs`` (``{field: {provisional id: name}}``) ids 1, 2, ... in
    order of first appearance among ``jobs`` (file order), so that the ids do not depend on
    records that were skipped; ``queue`` follows ``partition``. Returns the jobs and
    ``{field: {id: name}}``."""
    maps: dict[str, dict[int, int]] = {}
    labels: dict[str, dict[int, str]] = {}
    for field_name, by_id in names.items():
        m: dict[int, int] = {}
        for j in jobs:
            v = getattr(j, field_name)
            if v >= 0 and v not in m:
                m[v] = len(m) + 1
        maps[field_name] = m
        labels[field_name] = {new: by_id[old] for old, new in m.items()}
    if not maps:
        return jobs, labels
    out = []
    for j in jobs:
        changes = {f: m[getattr(j, f)] for f, m in maps.items() if getattr(j, f) >= 0}
        if "partition" in changes:
            changes["queue"] = changes["partition"]
        out.append(j._replace(**changes) if changes else j)
    if "partition" in labels:
        labels["queue"] = dict(labels["partition"])
    return out, labels


def _parse_time_limit(value: Any) -> int | None:
    """A ``time_limit`` value in Slurm's grammar (a bare number is minutes); ``None`` = empty
    or unlimited."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"column 'time_limit': {value!r} is not a Slurm time")
    try:
        return parse_slurm_time(str(value))
    except ValueError as exc:
        if "too long" in str(exc):
            raise _TooLarge(f"column 'time_limit': {exc}") from None
        raise ValueError(f"column 'time_limit': {exc}") from None


def _parse_gres_column(
    value: Any, resources: tuple[str, ...]
) -> tuple[int, tuple[tuple[str, int], ...]]:
    """``(GPUs per node, other GRES per node)`` of a ``gres`` value; a bare integer is GPUs per
    node (the column's older meaning). ``LookupError``: a GRES the system does not have."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0, ()
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        or (isinstance(value, str) and value.strip().isdigit())
    ):
        return _parse_int(value, "gres") or 0, ()
    if not isinstance(value, str):
        raise ValueError(f"column 'gres': expected a GRES such as gpu:a100:2, got {value!r}")
    try:
        items = parse_gres(value)
    except ValueError as exc:
        raise ValueError(f"column 'gres': {exc}") from None
    gpus = 0
    other: dict[str, int] = {}
    for name, kind, count in items:
        if count > _MAX_VALUE:
            raise _TooLarge(f"column 'gres': {count} is too large (at most 2^50)")
        resource = gres_resource(name, kind, resources)
        if resource == _GPU:
            gpus += count
        else:
            other[resource] = other.get(resource, 0) + count
    return gpus, tuple(other.items())


def _parse_mem(value: Any, column: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(
            f"column '{column}': expected a memory size such as 4096, 500M or 16G, got {value!r}"
        )
    text = (
        value
        if isinstance(value, str)
        else (str(int(value)) if math.isfinite(value) and value == int(value) else repr(value))
    )
    try:
        return parse_slurm_memory(text)
    except ValueError as exc:
        if "too large" in str(exc):
            raise _TooLarge(f"column '{column}': {exc}") from None
        raise ValueError(f"column '{column}': {exc}") from None


def read_slurm_requests(path: str | Path, system: System) -> Workload:
    """Read Slurm-style requests (CSV or JSON lines) onto ``system``.

    Columns, named after sbatch's long options (``-`` or ``_``; short forms in brackets):

    - ``run_time`` (seconds, required; the simulated run time);
    - ``ntasks`` (``n``), ``nodes`` (``N``), ``ntasks_per_node``, ``cpus_per_task`` (``c``),
      ``contiguous`` (true/false): the request (:class:`SlurmRequest`);
    - ``gres``: ``gpu:2``, ``gpu:a100:2``, ``gpu:a100:2,mic:1`` per node (a bare integer is
      GPUs per node); ``gpus_per_node``: an integer. A GRES the system does not have (a GPU
      type it does not declare as a resource ``gpu:TYPE``) skips the record as ``bad-gres``;
    - ``mem`` (per node) / ``mem_per_cpu``: Slurm sizes (``4096``, ``500M``, ``16G``; a bare
      number is MB). ``mem=0`` is Slurm's "all the memory of each node": the smallest node's
      memory here. On a system without a ``mem`` resource memory is ignored and counted as
      patched;
    - ``time_limit`` (``time``, ``t``): **Slurm's time formats** (``MM``, ``MM:SS``,
      ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``, ``UNLIMITED``): **a bare number is
      minutes**, as for ``sbatch --time``. ``wall_time`` (``time_limit_s``, ``walltime``):
      the limit in seconds (what ``time_limit`` meant before this followed Slurm). Not both.
      Without a limit the wall time is the run time -- an exact estimate, as an oracle's --
      and every such job is counted as patched with its rule: ``no time limit column``
      (neither column in the file, or the key missing from a JSON line), ``time_limit
      empty``, ``time_limit UNLIMITED`` (also ``-1``, ``0``, ``INFINITE``: Slurm's "no
      limit"), ``wall_time empty``; give a ``time_limit`` to simulate users' estimates;
    - ``user``, ``account`` (``A``), ``partition`` (``p``): names or integers. Names get ids
      1, 2, ... in order of first appearance in the file (when one value of a column is not an
      integer, every value of it is a name; ids count the jobs read, not skipped lines),
      kept in ``workload.labels``; ``user`` fills
      ``Job.user``, ``account`` ``Job.group`` (SWF's group), ``partition`` ``Job.partition``
      and ``Job.queue``. The simulated system is one partition: the partition is recorded,
      it does not restrict the nodes;
    - ``id`` (default: the line number), ``submit`` (seconds, default 0), ``name``.

    A line that cannot be used is skipped and counted per reason (``malformed``: not CSV /
    JSON, or not UTF-8 text; ``bad-<column>``, ``<column>-too-large`` (beyond 2^50),
    ``bad-request``, ``too-big``, ``duplicate-id``) with its line number; the first messages
    name file, line and column.
    """
    path = Path(path)
    _check_file(path)
    fmt, records = _records(path)
    report = SkipReport(total_records=len(records))
    resources = tuple(system.resources)
    jobs: list[Job] = []
    seen: set[int] = set()
    messages: list[str] = []
    label_ids = _label_ids(records)
    has_mem = _MEM in resources
    all_mem = int(system.capacity[:, resources.index(_MEM)].min()) if has_mem else 0
    mem_ignored = 0
    # jobs without a time limit, by what the file gave (their wall time is their run time)
    no_limit: dict[str, int] = {}

    def skip(reason: str, line: int, message: str) -> None:
        report.skip(reason, [line])
        if len(messages) < 10:
            messages.append(f"{path}, line {line}: {message}")

    cap = system.capacity
    for line, rec in records:
        if isinstance(rec, str):
            skip("malformed", line, rec)
            continue
        canon: dict[str, Any] = {}
        bad_key = None
        for key, value in rec.items():
            name = _COLUMNS.get(str(key).strip())
            if name is None:
                bad_key = key
                break
            canon[name] = value
        if bad_key is not None:
            skip("malformed", line, f"unknown column '{bad_key}'")
            continue
        if "time_limit" in canon and "wall_time" in canon:
            skip(
                "malformed",
                line,
                "both 'time_limit' (a Slurm time) and 'wall_time' (seconds) are given",
            )
            continue
        try:
            run = _parse_int(canon.get("run_time"), "run_time", positive=True, allow_empty=False)
            job_id = _parse_int(canon.get("id"), "id")
            submit = _parse_int(canon.get("submit"), "submit") or 0
            if "time_limit" in canon:
                limit = _parse_time_limit(canon.get("time_limit"))
                raw_limit = canon.get("time_limit")
                blank = raw_limit is None or not str(raw_limit).strip()
                given = "time_limit empty" if blank else f"time_limit {raw_limit!s}".upper()
            else:
                limit = _parse_int(canon.get("wall_time"), "wall_time", positive=True)
                given = "wall_time empty" if "wall_time" in canon else "no time limit column"
            labels: dict[str, int] = {}
            for column, ids in label_ids.items():
                raw = canon.get(column)
                if raw is None or (isinstance(raw, str) and not raw.strip()):
                    continue
                if ids is None:
                    labels[column] = _parse_int(raw, column) or 0
                elif isinstance(raw, (dict, list)):
                    raise ValueError(f"column '{column}': expected a name, got {raw!r}")
                else:
                    labels[column] = ids[str(raw).strip()]
            req_values = {c: _parse_int(canon.get(c), c, positive=True) for c in _REQUEST_COLUMNS}
            cpt = _parse_int(canon.get("cpus_per_task"), "cpus_per_task", positive=True) or 1
            gpus = _parse_int(canon.get("gpus_per_node"), "gpus_per_node") or 0
            try:
                more_gpus, gres = _parse_gres_column(canon.get("gres"), resources)
            except LookupError as exc:
                skip("bad-gres", line, f"column 'gres': {exc.args[0]}")
                continue
            mem = _parse_mem(canon.get("mem"), "mem")
            mem_per_cpu = _parse_mem(canon.get("mem_per_cpu"), "mem_per_cpu")
            contiguous = _parse_bool(canon.get("contiguous"), "contiguous")
            name = canon.get("name")
            if name is not None and not isinstance(name, (str, int)):
                raise ValueError(f"column 'name': expected text, got {name!r}")
        except ValueError as exc:
            col = str(exc).split("'")[1] if "'" in str(exc) else "value"
            skip(f"{col}-too-large" if isinstance(exc, _TooLarge) else f"bad-{col}", line, str(exc))
            continue
        if mem == 0 and has_mem:
            mem = all_mem
        if (mem is not None or mem_per_cpu is not None) and not has_mem:
            mem_ignored += 1
        request = SlurmRequest(
            gpus_per_node=gpus + more_gpus,
            contiguous=contiguous,
            cpus_per_task=cpt,
            gres=gres,
            mem=mem,
            mem_per_cpu=mem_per_cpu,
            **req_values,
        )
        try:
            f = request.job_fields(resources)
        except ValueError as exc:
            skip("bad-request", line, f"{request.describe() or 'empty request'}: {exc}")
            continue
        job_id = line if job_id is None else job_id
        if job_id in seen:
            skip("duplicate-id", line, f"job id {job_id} appears twice")
            continue
        pn = np.asarray(f["per_node_request"] or (0,) * len(resources), dtype=np.int64)
        if not request_fits(
            cap,
            np.asarray(f["unit_request"]),
            f["units"],
            f["max_units_per_node"],
            f["node_count"],
            pn,
            f["contiguous"],
        ):
            skip(
                "too-big", line, f"{request.describe()} does not fit the empty system {system.name}"
            )
            continue
        seen.add(job_id)
        if limit is None:
            rule = given.replace("TIME_LIMIT", "time_limit")
            no_limit[rule] = no_limit.get(rule, 0) + 1
        partition = labels.get("partition", -1)
        jobs.append(
            Job(
                id=job_id,
                submit=submit,
                run_time=run,
                wall_time=limit if limit is not None else run,
                user=labels.get("user", -1),
                group=labels.get("account", -1),
                queue=partition,
                partition=partition,
                name=None if name is None else str(name),
                processors=request.cores,
                **f,
            )
        )
    report.notes.extend(messages)
    report.patch(f"memory ignored (system {system.name} has no '{_MEM}' resource)", mem_ignored)
    for given, n in sorted(no_limit.items()):
        report.patch(f"{given}: wall time = run time (an exact estimate, as an oracle's)", n)
    jobs, names = _renumber_labels(
        jobs,
        {_LABEL_COLUMNS[c]: {i: n for n, i in ids.items()} for c, ids in label_ids.items() if ids},
    )
    source = WorkloadSource(kind="slurm", spec=str(path), options={"format": fmt})
    return Workload(
        jobs, resources, source=source, report=report, labels=names, queue_names=names.get("queue")
    )


def _slurm_rows(workload: Workload) -> list[dict[str, Any]]:
    """The workload as rows of a Slurm-style request file (the columns of
    :func:`read_slurm_requests`; ``time_limit`` in Slurm's ``[D-]HH:MM:SS``, names where
    ``workload.labels`` has them)."""
    resources = tuple(workload.resources)
    labels = workload.labels

    def label(field: str, value: int) -> str | int | None:
        if value < 0:
            return None
        return labels.get(field, {}).get(value, value)

    rows = []
    for j in workload.jobs:
        r = request_of(j, resources)
        gres = ",".join(f"{n}:{c}" for n, c in r.gres)
        rows.append(
            {
                "id": j.id,
                "name": j.name,
                "submit": j.submit,
                "run_time": j.run_time,
                "time_limit": format_slurm_time(j.wall_time),
                "ntasks": r.ntasks,
                "nodes": r.nodes,
                "ntasks_per_node": r.ntasks_per_node,
                "cpus_per_task": r.cpus_per_task if r.cpus_per_task != 1 else None,
                "gpus_per_node": r.gpus_per_node or None,
                "gres": gres or None,
                "mem": f"{r.mem}M" if r.mem is not None else None,
                "mem_per_cpu": f"{r.mem_per_cpu}M" if r.mem_per_cpu is not None else None,
                "contiguous": int(r.contiguous),
                "user": label("user", j.user),
                "account": label("group", j.group),
                "partition": label("partition", j.partition),
            }
        )
    keep = [
        k
        for k in (rows[0] if rows else {})
        if k in ("id", "run_time", "time_limit") or any(row[k] is not None for row in rows)
    ]
    return [{k: row[k] for k in keep} for row in rows]


def slurm_requests_text(workload: Workload, suffix: str) -> str:
    """A Slurm-style request file's text: CSV (``suffix`` ``.csv``) or JSON lines."""
    rows = _slurm_rows(workload)
    if suffix.lower() == ".csv":
        out = io.StringIO()
        w = csv.DictWriter(
            out,
            fieldnames=list(rows[0]) if rows else ["id", "run_time", "ntasks"],
            lineterminator="\n",
        )
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if v is None else v) for k, v in row.items()})
        return out.getvalue()
    return "".join(
        json.dumps({k: v for k, v in row.items() if v is not None}) + "\n" for row in rows
    )


def write_slurm_requests(workload: Workload, path: str | Path) -> None:
    """Write a workload of Slurm-style jobs as a request file (``.csv`` or ``.jsonl``)."""
    path = Path(path)
    path.write_text(slurm_requests_text(workload, path.suffix), encoding="utf-8")


# ---------------------------------------------------------------------------------------
# the paper's workload generator (section 6.1, Table 4)
# ---------------------------------------------------------------------------------------

#: Table 4: shares of (core-only, node request, 1 GPU/node, 2 GPUs/node) jobs
WORKLOAD_MIXES: dict[str, tuple[float, float, float, float]] = {
    "I": (1.0, 0.0, 0.0, 0.0),
    "II": (0.0, 1.0, 0.0, 0.0),
    "III": (0.5, 0.5, 0.0, 0.0),
    "IV": (0.4, 0.4, 0.2, 0.0),
    "V": (1 / 3, 1 / 3, 1 / 6, 1 / 6),
}
#: versions .1 .2 .3: fraction of jobs that request --contiguous
CONTIGUOUS_FRACTION = {1: 0.0, 2: 0.5, 3: 1.0}


@dataclass(frozen=True)
class AucschedSpec:
    """Parameters of the paper's workload generator (names as in ``synthetic:aucsched,...``).

    - ``workload``: I-V (Table 4); ``version``: 1 (no job contiguous), 2 (each job contiguous
      with probability 1/2) or 3 (all contiguous);
    - ``seed``: the jobs of one (workload, seed) are the same in all three versions -- only
      the contiguity flags differ (version 2 draws them from their own stream), so the
      versions compare like with like;
    - ``runtime_h``: total work = ``runtime_h`` hours on the whole machine, i.e. jobs are
      drawn until sum(run time x cores) / total cores reaches it (the paper: about 4 h);
    - ``min_run``, ``max_run``: run times uniform in [60, 600] s;
    - ``max_cores``: largest core request (a multiple of the cores per node); 0 = the number
      of nodes x (cores per node / 8), i.e. one eighth of the machine's cores (the paper does
      not give it; this is the largest value for which a 1-core-per-node GPU request still
      fits on the machine's nodes);
    - ``gpu_type``: 3 (default: GPU jobs as ``-N N --ntasks-per-node=c --gres=gpu:g``, like the
      paper's example jobs J2 and J3) or 2 (``-N N -n C --gres=gpu:g``);
    - ``walltime``: ``minute`` (default: the run time rounded up to whole minutes, Slurm's
      ``--time`` granularity) or ``exact``.

    Every job arrives at t = 0 (the paper submits a whole workload at once), in generation
    order; that order is the FIFO priority order.
    """

    workload: str = "I"
    version: int = 1
    seed: int = 1
    runtime_h: float = 4.0
    min_run: int = 60
    max_run: int = 600
    max_cores: int = 0
    gpu_type: int = 3
    walltime: str = "minute"

    def __post_init__(self) -> None:
        if self.workload not in WORKLOAD_MIXES:
            raise ConfigError(
                f"aucsched workload must be one of {list(WORKLOAD_MIXES)}, got '{self.workload}'"
            )
        if self.version not in CONTIGUOUS_FRACTION:
            raise ConfigError(f"aucsched version must be 1, 2 or 3, got {self.version}")
        if self.runtime_h <= 0:
            raise ConfigError(f"runtime_h must be positive, got {self.runtime_h}")
        if not 0 < self.min_run <= self.max_run:
            raise ConfigError(f"need 0 < min_run <= max_run, got {self.min_run}, {self.max_run}")
        if self.gpu_type not in (2, 3):
            raise ConfigError(f"gpu_type must be 2 or 3, got {self.gpu_type}")
        if self.walltime not in ("minute", "exact"):
            raise ConfigError(f"walltime must be 'minute' or 'exact', got '{self.walltime}'")

    def spec_string(self) -> str:
        defaults = AucschedSpec()
        parts = [f"workload={self.workload}", f"version={self.version}", f"seed={self.seed}"]
        for f in fields(self):
            if f.name in ("workload", "version", "seed"):
                continue
            v = getattr(self, f.name)
            if v != getattr(defaults, f.name) or f.name == "runtime_h":
                parts.append(f"{f.name}={v:g}" if isinstance(v, float) else f"{f.name}={v}")
        return "synthetic:aucsched," + ",".join(parts)


def aucsched_requests(system: System, spec: AucschedSpec) -> list[tuple[SlurmRequest, int]]:
    """``(request, run time)`` of every job of the workload, in submission order."""
    ci = system.resource_index(_CORE)
    core_caps = system.capacity[:, ci]
    cpn_sys = int(core_caps.min())
    if cpn_sys <= 0:
        raise ConfigError(
            f"system {system.name}: every node needs cores for the aucsched workloads"
        )
    gpu_caps = (
        system.capacity[:, system.resource_index(_GPU)]
        if _GPU in system.resources
        else np.zeros_like(core_caps)
    )
    mix = WORKLOAD_MIXES[spec.workload]
    if (mix[2] or mix[3]) and int(gpu_caps.min()) < (2 if mix[3] else 1):
        raise ConfigError(
            f"workload {spec.workload} needs {2 if mix[3] else 1} GPU(s) on every node; "
            f"system {system.name} has at least {int(gpu_caps.min())}"
        )
    total_cores = int(core_caps.sum())
    max_cores = spec.max_cores or system.n_nodes * max(cpn_sys // 8, 1)
    k_max = max_cores // cpn_sys
    if k_max < 1:
        raise ConfigError(f"max_cores {max_cores} is below the {cpn_sys} cores of one node")
    target = spec.runtime_h * 3600.0 * total_cores
    rng = np.random.default_rng([spec.seed, list(WORKLOAD_MIXES).index(spec.workload), 0x5EED])
    cum = np.cumsum(mix)
    out: list[tuple[SlurmRequest, int]] = []
    work = 0.0
    n_nodes = system.n_nodes
    while work < target:
        category = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
        category = min(category, 3)
        run = int(rng.integers(spec.min_run, spec.max_run + 1))
        while True:  # cores are multiples of the cores per node; redraw a request that cannot fit
            cores = cpn_sys * int(rng.integers(1, k_max + 1))
            if category == 0:
                req = SlurmRequest(ntasks=cores)
                break
            if category == 1:
                cpn = int(rng.choice([4, 8]))
                gpus = 0
            else:
                gpus = category - 1  # 1 or 2 GPUs per node
                cpn = gpus * int(rng.choice([1, 2]))  # 1 or 2 cores per GPU
            nodes = cores // cpn
            if cpn <= cpn_sys and nodes <= n_nodes:
                if spec.gpu_type == 2 and gpus:
                    req = SlurmRequest(ntasks=cores, nodes=nodes, gpus_per_node=gpus)
                else:
                    req = SlurmRequest(nodes=nodes, ntasks_per_node=cpn, gpus_per_node=gpus)
                break
        out.append((req, run))
        work += run * req.cores
    frac = CONTIGUOUS_FRACTION[spec.version]
    if frac:
        flags = (
            np.random.default_rng(
                [spec.seed, list(WORKLOAD_MIXES).index(spec.workload), 0xC0]
            ).random(len(out))
            < frac
        )
        out = [
            (SlurmRequest(r.ntasks, r.nodes, r.ntasks_per_node, r.gpus_per_node, bool(c)), run)
            for (r, run), c in zip(out, flags)
        ]
    return out


def _aucsched_workload(
    system: System, spec: AucschedSpec, spec_string: str | None = None
) -> Workload:
    """The paper's synthetic CPU-GPU workload on ``system`` (all jobs submitted at t = 0)."""
    resources = tuple(system.resources)
    jobs = []
    for k, (req, run) in enumerate(aucsched_requests(system, spec)):
        wall = run if spec.walltime == "exact" else int(math.ceil(run / 60.0) * 60)
        jobs.append(slurm_job(k + 1, req, run, resources, submit=0, wall_time=wall))
    source = WorkloadSource(kind="synthetic", spec=spec_string or spec.spec_string(), options={})
    return Workload(jobs, resources, source=source, report=SkipReport(total_records=len(jobs)))


def theoretical_runtime(workload: Workload, system: System) -> float:
    """The paper's theoretical runtime: sum(run time x requested cores) / total cores (s)."""
    ci = system.resource_index(_CORE) if _CORE in system.resources else 0
    cores = (
        workload.units * workload.unit_requests[:, ci]
        + workload.node_counts * workload.per_node_requests[:, ci]
    )
    return float((workload.run_time * cores).sum() / system.total_capacity[ci])
