"""Standard Workload Format (SWF) reader: ``.swf`` and ``.swf.gz``, streaming and vectorised.

The file is read in blocks of a few MiB; each block is split into lines and tokens with
pyarrow compute kernels (C++, released GIL, two blocks in flight), so a whole trace is parsed
at several hundred thousand lines per second without a Python loop per line.

Mapping of an SWF record to a job (every choice is a named option of :class:`SwfOptions`):

- submit = field 2; run time = field 4;
- processors = field 8 (requested) or field 5 (allocated), ``processors="requested"`` by
  default; when the chosen field is -1 the other one is used and counted as patched;
- processors -> ``rn`` identical units: :class:`~hpcdispatch.workload.mapping.UnitMapping`;
- wall-time = field 9 (requested time); when it is missing (<= 0) ``missing_walltime``
  decides: ``queue-max`` (default; the largest run time seen in the job's queue, i.e. the
  queue's default limit as CP'19 uses), ``trace-max`` (the header's MaxRuntime, else the
  largest run time in the trace), ``runtime`` (perfect estimate), ``skip``, or a number of
  seconds;
- memory (field 10 requested, field 7 used; KB per processor) only when ``memory`` is not
  ``ignore`` and the system has a ``mem`` resource (MiB per unit, rounded up);
- user, group, executable, queue, partition = fields 12, 13, 14, 15, 16.

Records that can never run are skipped and counted per reason with their first line
numbers (see :class:`~hpcdispatch.workload.job.SkipReport`): ``malformed`` (not 18 numeric
fields), ``submit<0``, ``runtime<=0``, ``processors<=0``, ``no-walltime`` (with
``missing_walltime="skip"``), ``too-big`` (does not fit the empty system),
``duplicate-id``. Jobs are sorted by submit time (ties keep file order); out-of-order
records are reported as a note (LLNL-Thunder has 808).
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from hpcdispatch._util import gc_paused
from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.allocation import request_fits
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource, make_job
from hpcdispatch.workload.mapping import UnitMapping

SWF_FIELDS = (
    "job",
    "submit",
    "wait",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
N_FIELDS = len(SWF_FIELDS)
_BLOCK_BYTES = 1 << 23
_NUMBER = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"


def field_label(i: int) -> str:
    """Human name of 0-based SWF field ``i``: ``"4 (run_time)"``."""
    return f"{i + 1} ({SWF_FIELDS[i]})"


@dataclass(frozen=True)
class SwfOptions:
    processors: str = "requested"
    units: UnitMapping = field(default_factory=UnitMapping)
    missing_walltime: str = "queue-max"
    memory: str = "ignore"
    max_jobs: int | None = None
    #: move every submission by up to this many seconds (seeded; 0 = the trace as recorded),
    #: after ``max_jobs``: replicas for measuring a metric's spread (:meth:`Workload.jittered`)
    submit_jitter: int = 0
    jitter_seed: int = 0

    def __post_init__(self) -> None:
        if self.processors not in ("requested", "allocated"):
            raise ConfigError(f"processors must be 'requested' or 'allocated', got '{self.processors}'")
        if self.memory not in ("ignore", "requested", "used"):
            raise ConfigError(f"memory must be 'ignore', 'requested' or 'used', got '{self.memory}'")
        mw = str(self.missing_walltime)
        if mw not in ("queue-max", "trace-max", "runtime", "skip") and not mw.isdigit():
            raise ConfigError(
                f"missing_walltime must be queue-max, trace-max, runtime, skip or a number of seconds, got '{mw}'"
            )
        if self.max_jobs is not None and self.max_jobs <= 0:
            raise ConfigError(f"max_jobs must be positive, got {self.max_jobs}")
        if self.submit_jitter < 0:
            raise ConfigError(f"submit_jitter must be >= 0 seconds, got {self.submit_jitter}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d


# --------------------------------------------------------------------------------------
# header
# --------------------------------------------------------------------------------------


@dataclass
class SwfHeader:
    entries: dict[str, list[str]] = field(default_factory=dict)

    def first(self, key: str) -> str | None:
        values = self.entries.get(key.lower())
        return values[0] if values else None

    def leading_int(self, key: str) -> int | None:
        value = self.first(key)
        if value is None:
            return None
        m = re.match(r"\s*(\d+)", value)
        return int(m.group(1)) if m else None

    def named_ids(self, key: str) -> dict[int, str]:
        out = {}
        for value in self.entries.get(key.lower(), []):
            m = re.match(r"\s*(\d+)\s*(.*)", value)
            if m:
                out[int(m.group(1))] = m.group(2).strip()
        return out

    def flat(self) -> dict[str, str]:
        return {k: " | ".join(v) for k, v in self.entries.items()}


def _open_binary(path: Path):
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_swf_header(path: str | Path) -> SwfHeader:
    """Parse the ``; Key: value`` comment lines at the top of an SWF file."""
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(str(path), "file does not exist")
    header = SwfHeader()
    try:
        with _open_binary(path) as fh:
            for raw in fh:
                line = raw.decode("ascii", errors="replace").strip()
                if not line:
                    continue
                if not line.startswith(";"):
                    break
                body = line.lstrip(";").strip()
                if ":" in body:
                    key, value = body.split(":", 1)
                    header.entries.setdefault(key.strip().lower(), []).append(value.strip())
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(str(path), f"cannot read header: {exc}") from None
    return header


def system_from_swf_header(path: str | Path, resource: str = "core") -> System:
    """A homogeneous system from the header: MaxNodes nodes x (MaxProcs / MaxNodes) cores."""
    header = read_swf_header(path)
    nodes = header.leading_int("MaxNodes")
    procs = header.leading_int("MaxProcs")
    missing = [k for k, v in (("MaxNodes", nodes), ("MaxProcs", procs)) if not v]
    if missing:
        raise ConfigError(
            f"{path}: cannot derive a system from the SWF header: it lacks {' and '.join(missing)}; "
            "give --system a preset or a TOML file instead"
        )
    assert nodes and procs
    if procs % nodes:
        raise ConfigError(
            f"{path}: cannot derive a homogeneous system from the SWF header: MaxProcs {procs} "
            f"is not a multiple of MaxNodes {nodes}; give --system a preset or a TOML file instead"
        )
    name = Path(path).name.split(".swf")[0]
    return System(
        name=f"from-trace:{name}",
        resources=(resource,),
        node_types=(NodeType(name="node", count=nodes, capacity={resource: procs // nodes}),),
        description=f"derived from the SWF header of {Path(path).name}: MaxNodes {nodes}, MaxProcs {procs}",
    )


# --------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------


@dataclass
class SwfRecords:
    """The raw numeric fields of every well-formed record, plus their 1-based line numbers."""

    values: np.ndarray  # (n, 18) float64
    lines: np.ndarray  # (n,) int64
    malformed: list[tuple[int, str]]
    truncated_after: int | None = None


def _iter_blocks(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, bytes)`` blocks that end at a line boundary."""
    carry = b""
    line_no = 1
    fh = _open_binary(path)
    try:
        while True:
            try:
                chunk = fh.read(_BLOCK_BYTES)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise _Truncated(line_no + carry.count(b"\n"), str(exc)) from None
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            block, carry = data[: cut + 1], data[cut + 1 :]
            yield line_no, block
            line_no += block.count(b"\n")
        if carry:
            yield line_no, carry
    finally:
        fh.close()


class _Truncated(Exception):
    def __init__(self, line: int, message: str):
        self.line = line
        self.message = message


def _parse_block(first_line: int, block: bytes) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]:
    table = pacsv.read_csv(
        io.BytesIO(block),
        read_options=pacsv.ReadOptions(column_names=["line"], block_size=max(1 << 20, len(block) + 1)),
        parse_options=pacsv.ParseOptions(
            delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False, newlines_in_values=False
        ),
        convert_options=pacsv.ConvertOptions(column_types={"line": pa.binary()}),
    )
    raw = table.column("line").combine_chunks()
    n_lines = len(raw)
    line_numbers = np.arange(first_line, first_line + n_lines, dtype=np.int64)
    malformed: list[tuple[int, str]] = []
    try:
        text = raw.cast(pa.string())
    except pa.ArrowInvalid:
        keep_mask = []
        for i, b in enumerate(raw.to_pylist()):
            try:
                (b or b"").decode("utf-8")
                keep_mask.append(True)
            except UnicodeDecodeError:
                malformed.append((int(line_numbers[i]), "not valid text (bytes outside UTF-8)"))
                keep_mask.append(False)
        mask = pa.array(keep_mask)
        raw = raw.filter(mask)
        line_numbers = line_numbers[np.asarray(keep_mask)]
        text = raw.cast(pa.string())
    text = pc.ascii_trim_whitespace(text)
    skip = pc.or_(pc.equal(pc.binary_length(text), 0), pc.starts_with(text, ";"))
    skip_np = skip.to_numpy(zero_copy_only=False)
    if skip_np.any():
        keep = pa.array(~skip_np)
        text = text.filter(keep)
        line_numbers = line_numbers[~skip_np]
    tokens = pc.ascii_split_whitespace(text)
    counts = pc.list_value_length(tokens).to_numpy(zero_copy_only=False)
    bad = counts != N_FIELDS
    if bad.any():
        for ln, c in zip(line_numbers[bad].tolist(), counts[bad].tolist()):
            malformed.append((ln, f"has {c} fields, an SWF record has {N_FIELDS}"))
        tokens = tokens.filter(pa.array(~bad))
        line_numbers = line_numbers[~bad]
    flat = pc.list_flatten(tokens)
    try:
        values = pc.cast(flat, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        ok = pc.match_substring_regex(flat, _NUMBER).to_numpy(zero_copy_only=False)
        bad_tok = np.flatnonzero(~ok)
        bad_rows = np.unique(bad_tok // N_FIELDS)
        texts = flat.to_pylist()
        for row in bad_rows.tolist():
            k = int(bad_tok[bad_tok // N_FIELDS == row][0])
            malformed.append(
                (int(line_numbers[row]), f"field {field_label(k % N_FIELDS)} is not a number: {texts[k]!r}")
            )
        row_ok = np.ones(len(line_numbers), dtype=bool)
        row_ok[bad_rows] = False
        tokens = tokens.filter(pa.array(row_ok))
        line_numbers = line_numbers[row_ok]
        values = pc.cast(pc.list_flatten(tokens), pa.float64()).to_numpy(zero_copy_only=False)
    return values.reshape(-1, N_FIELDS), line_numbers, malformed


def read_swf_records(path: str | Path) -> SwfRecords:
    """Read every record of an SWF file. Malformed lines are collected, never fatal."""
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(str(path), "file does not exist")
    truncated_after = None
    futures = []
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            blocks = _iter_blocks(path)
            while True:
                try:
                    first, block = next(blocks)
                except StopIteration:
                    break
                except _Truncated as exc:
                    truncated_after = exc.line - 1
                    break
                futures.append(pool.submit(_parse_block, first, block))
            parts = [f.result() for f in futures]
    except OSError as exc:
        raise TraceFormatError(str(path), f"cannot read: {exc}") from None
    if parts:
        values = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, N_FIELDS))
        lines = np.concatenate([p[1] for p in parts])
        malformed = [m for p in parts for m in p[2]]
    else:
        values, lines, malformed = np.zeros((0, N_FIELDS)), np.zeros(0, dtype=np.int64), []
    malformed.sort()
    del parts, futures
    # Arrow's allocator keeps the parse buffers pooled (about 190 MB after RICC's 447k
    # lines); nothing else here uses Arrow, so hand them back to the system
    pa.default_memory_pool().release_unused()
    return SwfRecords(values=values, lines=lines, malformed=malformed, truncated_after=truncated_after)


# --------------------------------------------------------------------------------------
# records -> jobs
# --------------------------------------------------------------------------------------


def _col(name: str) -> int:
    return SWF_FIELDS.index(name)


def load_swf(path: str | Path, system: System, options: SwfOptions | None = None) -> Workload:
    """Read an SWF trace and map it onto ``system`` (see the module docstring)."""
    options = options or SwfOptions()
    path = Path(path)
    header = read_swf_header(path)
    records = read_swf_records(path)
    report = SkipReport(total_records=len(records.lines) + len(records.malformed))
    if records.malformed:
        report.skip("malformed", [ln for ln, _ in records.malformed])
        first_ln, first_msg = records.malformed[0]
        report.notes.append(f"first malformed record: line {first_ln}: {first_msg}")
    if records.truncated_after is not None:
        report.notes.append(
            f"the file is truncated: the compressed stream ends early; records up to line "
            f"{records.truncated_after} were kept"
        )
        report.skip("truncated-file", [records.truncated_after + 1])

    v = records.values
    lines = records.lines
    keep = np.ones(len(lines), dtype=bool)

    def drop(mask: np.ndarray, reason: str) -> None:
        nonlocal keep
        hit = mask & keep
        if hit.any():
            report.skip(reason, lines[hit])
            keep &= ~hit

    submit = np.rint(v[:, _col("submit")]).astype(np.int64)
    run = np.rint(v[:, _col("run_time")]).astype(np.int64)
    req_p = np.rint(v[:, _col("requested_processors")]).astype(np.int64)
    alloc_p = np.rint(v[:, _col("allocated_processors")]).astype(np.int64)
    req_t = np.rint(v[:, _col("requested_time")]).astype(np.int64)
    queue = np.rint(v[:, _col("queue")]).astype(np.int64)
    ids = np.rint(v[:, _col("job")]).astype(np.int64)

    drop(submit < 0, "submit<0")
    drop(run <= 0, "runtime<=0")
    primary, secondary = (req_p, alloc_p) if options.processors == "requested" else (alloc_p, req_p)
    use_secondary = (primary <= 0) & (secondary > 0)
    procs = np.where(use_secondary, secondary, primary)
    report.patch(
        f"processors taken from field {'5 (allocated)' if options.processors == 'requested' else '8 (requested)'}",
        int((use_secondary & keep).sum()),
    )
    drop(procs <= 0, "processors<=0")

    # duplicate ids: keep the first occurrence in file order
    order = np.argsort(ids, kind="stable")
    dup = np.zeros(len(ids), dtype=bool)
    sorted_ids = ids[order]  # noqa: the stable sort keeps the first occurrence first
    dup[order[1:]] = sorted_ids[1:] == sorted_ids[:-1]
    drop(dup, "duplicate-id")

    # wall-time
    wall = req_t.copy()
    missing = (wall <= 0) & keep
    mw = str(options.missing_walltime)
    if missing.any():
        if mw == "skip":
            drop(missing, "no-walltime")
        elif mw == "runtime":
            wall[missing] = run[missing]
        elif mw == "trace-max":
            hdr_max = header.leading_int("MaxRuntime")
            wall[missing] = hdr_max if hdr_max else int(run[keep].max())
        elif mw == "queue-max":
            valid = keep
            for q in np.unique(queue[missing]).tolist():
                in_q = valid & (queue == q)
                wall[missing & (queue == q)] = int(run[in_q].max())
        else:
            wall[missing] = int(mw)
        if mw != "skip":
            report.patch(f"missing wall-time set by '{mw}'", int(missing.sum()))

    # units
    pos_procs = np.where(procs > 0, procs, 1)
    units, cores_per_unit = options.units.map(pos_procs, system)
    if options.units.mode == "node":
        rounded = int(((units * cores_per_unit != pos_procs) & keep).sum())
        report.patch("processor counts rounded up to whole nodes", rounded)
    n_res = len(system.resources)
    unit_req = np.zeros((len(lines), n_res), dtype=np.int64)
    unit_req[:, system.resource_index(options.units.core_resource)] = cores_per_unit
    if options.memory != "ignore":
        if "mem" not in system.resources:
            raise ConfigError(f"memory='{options.memory}' needs a 'mem' resource; system '{system.name}' has none")
        mem_field = _col("requested_memory") if options.memory == "requested" else _col("used_memory")
        kb = v[:, mem_field]
        no_mem = (kb <= 0) & keep
        report.patch(f"memory field {mem_field + 1} missing, 0 MiB used", int(no_mem.sum()))
        unit_req[:, system.resource_index("mem")] = np.where(
            kb > 0, np.ceil(kb * cores_per_unit / 1024.0), 0
        ).astype(np.int64)

    drop(~fits_empty_system(units, unit_req, system), "too-big")

    idx = np.flatnonzero(keep)
    # sort by submit, ties by file order (idx is already in file order)
    order = idx[np.argsort(submit[idx], kind="stable")]
    raw_disorder = int((np.diff(submit) < 0).sum()) if len(submit) > 1 else 0
    kept_disorder = int((np.diff(submit[idx]) < 0).sum()) if len(idx) > 1 else 0
    if raw_disorder:
        report.notes.append(
            f"{raw_disorder} records of the file are out of submit order ({kept_disorder} among the jobs kept); "
            "jobs are sorted by submit time"
        )
    if options.max_jobs is not None:
        order = order[: options.max_jobs]
        report.notes.append(f"max_jobs={options.max_jobs}: only the first {len(order)} jobs by submit time are used")

    cols = {
        name: np.rint(v[order, _col(name)]).astype(np.int64).tolist()
        for name in ("user", "group", "executable", "queue", "partition")
    }
    sub_l, run_l, wall_l = submit[order].tolist(), run[order].tolist(), wall[order].tolist()
    units_l, procs_l, ids_l = units[order].tolist(), procs[order].tolist(), ids[order].tolist()
    req_l = [tuple(r) for r in unit_req[order].tolist()]
    n = len(order)
    with gc_paused():
        jobs = list(
            map(
                make_job,
                zip(
                    ids_l, sub_l, run_l, wall_l, units_l, req_l,
                    cols["user"], cols["group"], cols["queue"], cols["partition"], cols["executable"],
                    [None] * n, procs_l, [0] * n, [None] * n, [()] * n,
                    [0] * n, [()] * n, [False] * n, range(n),
                ),
            )
        )
    source = WorkloadSource(
        kind="swf",
        spec=str(path),
        options={
            "processors": options.processors,
            "units": options.units.mode,
            "cores_per_unit_max": options.units.cores_per_unit_max,
            "missing_walltime": mw,
            "memory": options.memory,
            "max_jobs": options.max_jobs,
        },
    )
    # expected waiting time per queue: the mean wait the trace itself recorded (field 3)
    waits = v[order, _col("wait")]
    queues = queue[order]
    queue_ewt = {}
    for q in np.unique(queues).tolist():
        w = waits[(queues == q) & (waits >= 0)]
        if len(w):
            queue_ewt[int(q)] = float(w.mean())
    with gc_paused():
        return Workload(
            jobs,
            system.resources,
            source=source,
            report=report,
            queue_names=header.named_ids("Queue"),
            header=header.flat(),
            queue_ewt=queue_ewt,
        )


def fits_empty_system(
    units: np.ndarray,
    unit_req: np.ndarray,
    system: System,
    max_per_node: np.ndarray | None = None,
    node_count: np.ndarray | None = None,
    per_node: np.ndarray | None = None,
    contiguous: np.ndarray | None = None,
) -> np.ndarray:
    """For each job: can its ``units`` be placed on the system when every node is free?

    Jobs with Slurm-style constraints (``node_count``, ``per_node`` extras, ``contiguous``)
    get the exact test on the empty system's node list (in the linear node order)."""
    out = _fits_empty_plain(units, unit_req, system, max_per_node)
    if node_count is None and per_node is None and contiguous is None:
        return out
    n = len(units)
    nc = np.zeros(n, np.int64) if node_count is None else np.asarray(node_count, dtype=np.int64)
    pn = np.zeros((n, len(system.resources)), np.int64) if per_node is None else np.asarray(per_node, dtype=np.int64)
    ct = np.zeros(n, bool) if contiguous is None else np.asarray(contiguous, dtype=bool)
    mp = np.zeros(n, np.int64) if max_per_node is None else np.asarray(max_per_node, dtype=np.int64)
    special = np.flatnonzero((nc > 0) | ct | pn.any(axis=1))
    cap = system.capacity
    for i in special.tolist():
        out[i] = request_fits(cap, unit_req[i], int(units[i]), int(mp[i]), int(nc[i]), pn[i], bool(ct[i]))
    return out


def _fits_empty_plain(units: np.ndarray, unit_req: np.ndarray, system: System, max_per_node: np.ndarray | None) -> np.ndarray:
    caps = np.array([[nt.capacity.get(r, 0) for r in system.resources] for nt in system.node_types], dtype=np.int64)
    counts = np.array([nt.count for nt in system.node_types], dtype=np.int64)
    big = np.iinfo(np.int64).max // 4
    with np.errstate(divide="ignore"):
        per = np.where(unit_req[:, None, :] > 0, caps[None, :, :] // np.maximum(unit_req[:, None, :], 1), big)
    per_type = per.min(axis=2)  # (jobs, types)
    if max_per_node is not None:
        limit = np.where(max_per_node > 0, max_per_node, big)
        per_type = np.minimum(per_type, limit[:, None])
    all_zero = (unit_req <= 0).all(axis=1)
    per_type = np.where(all_zero[:, None], big, per_type)
    capacity_units = (np.minimum(per_type, big // max(int(counts.max()), 1)) * counts[None, :]).sum(axis=1)
    return capacity_units >= units


def write_swf(workload: Workload, path: str | Path, processors_per_unit_column: int = 0) -> None:
    """Write a workload as SWF (processors = units x per-unit cores of column ``processors_per_unit_column``).

    Used to hand exactly the simulated jobs to peer simulators in benchmarks.
    """
    with open(path, "w") as fh:
        fh.write("; Version: 2.2\n; Note: written by hpcdispatch\n")
        for j in workload.jobs:
            procs = j.units * j.unit_request[processors_per_unit_column]
            fields = [j.id, j.submit, -1, j.run_time, procs, -1, -1, procs, j.wall_time, -1, 1,
                      j.user, j.group, j.executable, j.queue, j.partition, -1, -1]
            fh.write(" ".join(str(int(x)) for x in fields) + "\n")
