"""Standard Workload Format (SWF) reader: ``.swf`` and ``.swf.gz``, streaming and vectorised.

The file is read in blocks of a few MiB; each block is split into lines and tokens with
pyarrow compute kernels (C++, released GIL, two blocks in flight), so a whole trace is parsed
at several hundred thousand lines per second without a Python loop per line.

How an SWF record becomes a job is in the docs page below; every choice is a named option
of :class:`SwfOptions`.

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hpcdispatch._util import arrow_array, arrow_scalar, numpy_array
from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.allocation import request_fits
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.mapping import UnitMapping

_SWF_FIELDS = (
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
_N_FIELDS = len(_SWF_FIELDS)
_MAX_EXP = 50
#: the largest value a field may have (about 10^15; sums of a few such values stay exact
#: integers in float64): a record with a larger one is skipped as ``<field>-too-large``
_MAX_FIELD = float(2**_MAX_EXP)
_BLOCK_BYTES = 1 << 23
#: blocks read ahead of the one being parsed (two parsers, and one waiting for each)
_BLOCKS_IN_FLIGHT = 4
#: what a number looks like (as Arrow reads it: nan and inf too, which load_swf then refuses)
_NUMBER = r"^[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|nan(\([0-9a-z_]*\))?|inf|infinity)$"


def _field_label(i: int) -> str:
    """Human name of 0-based SWF field ``i``: ``"4 (run_time)"``."""
    return f"{i + 1} ({_SWF_FIELDS[i]})"


@dataclass(frozen=True)
class SwfOptions:
    """How an SWF trace becomes jobs: which processor count, the unit mapping, a missing
    wall-time, memory, the first ``max_jobs`` jobs, and a seeded submit jitter."""

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
            raise ConfigError(
                f"processors must be 'requested' or 'allocated', got '{self.processors}'"
            )
        if self.memory not in ("ignore", "requested", "used"):
            raise ConfigError(
                f"memory must be 'ignore', 'requested' or 'used', got '{self.memory}'"
            )
        mw = str(self.missing_walltime)
        if mw not in ("queue-max", "trace-max", "runtime", "skip") and not mw.isdigit():
            raise ConfigError(
                f"missing_walltime must be queue-max, trace-max, runtime, skip or a number of seconds, got '{mw}'"
            )
        if self.max_jobs is not None and self.max_jobs <= 0:
            raise ConfigError(f"max_jobs must be positive, got {self.max_jobs}")
        if self.submit_jitter < 0 or self.submit_jitter > _MAX_FIELD:
            raise ConfigError(
                f"submit_jitter must be >= 0 seconds and at most 2^{_MAX_EXP}, got {self.submit_jitter}"
            )
        if mw.isdigit() and int(mw) > _MAX_FIELD:
            raise ConfigError(f"missing_walltime must be at most 2^{_MAX_EXP} seconds, got {mw}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d


# --------------------------------------------------------------------------------------
# header
# --------------------------------------------------------------------------------------


@dataclass
class SwfHeader:
    """The ``; Key: value`` lines of an SWF header, by lower-case key."""

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


#: compressed bytes read at a time; the decompressed output of one call is at most a block
_READ_BYTES = 1 << 20
#: a line longer than this is not an SWF record (and a file of one such line is no trace)
_MAX_LINE_BYTES = 1 << 26
#: how much of the start of a file decides whether it is text at all
_SAMPLE_BYTES = 1 << 16
#: bytes a text line may hold (printable ASCII and whitespace); others are damage
_TEXT_BYTES = bytes([9, 10, 11, 12, 13]) + bytes(range(0x20, 0x7F))


class _Damage(Exception):
    """The content cannot be read past this point (a gzip stream cut short or corrupt)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason  # "truncated-file" or "damaged-file"
        self.message = message


def _check_file(path: Path) -> None:
    """A clear error unless ``path`` is a regular file (names the file and what it is instead)."""
    try:
        is_dir, exists, is_file = path.is_dir(), path.exists(), path.is_file()
    except OSError as exc:  # a name too long ...
        raise TraceFormatError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    if is_dir:
        raise TraceFormatError(str(path), "is a directory, not a workload file")
    if not exists:
        raise TraceFormatError(str(path), "file does not exist")
    if not is_file:
        raise TraceFormatError(str(path), "is not a regular file")


def _binary_content(sample: bytes) -> str | None:
    """Why ``sample`` (the start of a file) is not text, or ``None`` when it is: more than a
    tenth of its bytes are control bytes or bytes that are not UTF-8. A stray byte in a text
    file is far below that (its line is skipped); any binary format is far above it."""
    if not sample:
        return None
    if sample[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "is UTF-16 text; it must be ASCII or UTF-8"
    a = np.frombuffer(sample, dtype=np.uint8)
    control = int(((a < 0x20) & ~np.isin(a, (9, 10, 11, 12, 13))).sum() + (a == 0x7F).sum())
    not_utf8 = (
        sample.decode("utf-8", errors="replace").count("\ufffd") if not sample.isascii() else 0
    )
    bad = control + not_utf8
    if bad * 10 > len(sample):
        return (
            f"is not a text file ({100 * bad // len(sample)} % of its first {len(sample)} bytes are "
            "control bytes or not UTF-8)"
        )
    return None


def _salvage(d: Any, data: bytes) -> Iterator[bytes]:
    """Output of decompressor ``d`` fed ``data`` up to the point where it fails: the content
    before a damage, to the byte (slices of 4 KiB, the failing one again byte by byte)."""
    step = 4096
    for k in range(0, len(data), step):
        piece = data[k : k + step]
        before = d.copy()
        try:
            out = d.decompress(piece)
        except zlib.error:
            d = before
            for i in range(len(piece)):
                try:
                    out = d.decompress(piece[i : i + 1])
                except zlib.error:
                    return
                if out:
                    yield out
            return
        if out:
            yield out


def _decompressed(path: Path, block_bytes: int) -> Iterator[bytes]:
    """The file's content in chunks, decompressed when it is gzip (by its magic bytes; any
    number of members, zero padding between them). Damage ends the iteration with
    :class:`_Damage` after every byte that could be read before it: a stream cut short keeps
    everything up to the cut, a corrupt one everything up to the corruption."""
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            fh.seek(0)
            while chunk := fh.read(block_bytes):
                yield chunk
            return
        fh.seek(0)
        d = zlib.decompressobj(31)
        in_member = False  # inside a member (its end not reached yet)
        members = 0  # members read to their end
        member_out = 0  # bytes out of the current member
        comp = b""
        while True:
            if not comp:
                comp = fh.read(_READ_BYTES)
                if not comp:
                    break
            if not in_member:
                comp = comp.lstrip(b"\0")  # padding after a member
                if not comp:
                    continue
                in_member = True
            before = d.copy()
            try:
                out = d.decompress(comp, block_bytes)
            except zlib.error as exc:
                yield from _salvage(
                    before, comp
                )  # the output of the failing call, up to the damage
                if "incorrect data check" in str(exc) or "incorrect length check" in str(exc):
                    # the member's trailer: all its data was given out, and it is not what was written
                    raise _Damage(
                        "checksum", f"the checksum of the compressed content does not match ({exc})"
                    ) from None
                if members and not member_out and "incorrect header check" in str(exc):
                    raise _Damage(
                        "damaged-file",
                        f"the bytes after the end of the compressed data are not gzip ({exc})",
                    ) from None
                raise _Damage("damaged-file", f"the compressed data is damaged ({exc})") from None
            comp = d.unconsumed_tail
            if out:
                member_out += len(out)
                yield out
            if d.eof:  # a member ended; another may follow
                comp = d.unused_data
                d = zlib.decompressobj(31)
                in_member = False
                members += 1
                member_out = 0
        if in_member:
            raise _Damage(
                "truncated-file", "the compressed stream ends early (the file was cut short)"
            )


class _Blocks:
    """``(first line number, bytes)`` blocks of whole lines of a file, about ``_BLOCK_BYTES``
    each. After the iteration, ``damage`` is ``(reason, message, lines read)`` when the file
    ended in damage: the lines before it were all yielded, the line it cut is dropped."""

    def __init__(self, path: Path, block_bytes: int | None = None):
        self.path = path
        self.block_bytes = block_bytes or _BLOCK_BYTES
        self.damage: tuple[str, str, int] | None = None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        pending: list[bytes] = []
        size = 0
        line_no = 1
        first = True
        try:
            # chunks of an eighth of a block: blocks end close to block_bytes (an even split
            # over the two parsing threads)
            for chunk in _decompressed(self.path, max(self.block_bytes // 8, 1)):
                if first:
                    first = False
                    if chunk.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, not text
                        chunk = chunk[3:]
                    why = _binary_content(chunk[:_SAMPLE_BYTES])
                    if why:
                        raise TraceFormatError(
                            str(self.path), f"{why}; an SWF trace is text, optionally gzipped"
                        )
                pending.append(chunk)
                size += len(chunk)
                if size < self.block_bytes:
                    continue
                data = b"".join(pending)
                cut = data.rfind(b"\n")
                if cut < 0:
                    if len(data) > _MAX_LINE_BYTES:
                        raise TraceFormatError(
                            str(self.path),
                            f"line {line_no} is longer than "
                            f"{_MAX_LINE_BYTES >> 20} MiB: not an SWF trace",
                            line=line_no,
                        )
                    pending = [data]
                    continue
                block, rest = data[: cut + 1], data[cut + 1 :]
                pending, size = ([rest] if rest else []), len(rest)
                yield line_no, block
                line_no += block.count(b"\n")
        except _Damage as exc:
            data = b"".join(pending)
            cut = len(data) - 1 if exc.reason == "checksum" else data.rfind(b"\n")
            if cut >= 0:
                block = data[: cut + 1]
                yield line_no, block
                line_no += block.count(b"\n")
            if line_no == 1 and exc.reason != "checksum":
                raise TraceFormatError(
                    str(self.path), f"{exc.message}: nothing could be read"
                ) from None
            self.damage = (exc.reason, exc.message, line_no - 1)
            return
        if pending:
            yield line_no, b"".join(pending)


def read_swf_header(path: str | Path) -> SwfHeader:
    """Parse the ``; Key: value`` comment lines at the top of an SWF file (those before any
    damage: a cut or corrupt ``.gz`` gives the header it still holds)."""
    path = Path(path)
    _check_file(path)
    header = SwfHeader()
    buffer = b""
    try:
        for _, block in _Blocks(path, 1 << 16):
            buffer += block
            lines = buffer.split(b"\n")
            buffer = lines.pop()  # the last line may continue in the next block
            for raw in lines:
                if not _header_line(header, raw):
                    return header
        if buffer:
            _header_line(header, buffer)
    except OSError as exc:
        raise TraceFormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return header


def _header_line(header: SwfHeader, raw: bytes) -> bool:
    """Add one header line; False at the first line that is not a comment (the header ended)."""
    line = raw.decode("utf-8", errors="replace").strip()
    if not line:
        return True
    if not line.startswith(";"):
        return False
    body = line.lstrip(";").strip()
    if ":" in body:
        key, value = body.split(":", 1)
        header.entries.setdefault(key.strip().lower(), []).append(value.strip())
    return True


def system_from_swf_header(path: str | Path, resource: str = "core") -> System:
    """A homogeneous system from the header: MaxNodes nodes x (MaxProcs / MaxNodes) cores."""
    header = read_swf_header(path)
    values = {}
    problems = []
    for key in ("MaxNodes", "MaxProcs"):
        text = header.first(key)
        number = header.leading_int(key)
        if text is None:
            problems.append(f"it lacks {key}")
        elif not number:
            problems.append(f"its {key} is '{text}', not a positive number")
        values[key] = number
    if problems:
        raise ConfigError(
            f"{path}: cannot derive a system from the SWF header: {' and '.join(problems)}; "
            "give --system a preset or a TOML file instead"
        )
    nodes, procs = values["MaxNodes"], values["MaxProcs"]
    assert nodes and procs
    if procs % nodes:
        raise ConfigError(
            f"{path}: cannot derive a homogeneous system from the SWF header: MaxProcs {procs} "
            f"is not a multiple of MaxNodes {nodes}; give --system a preset or a TOML file instead"
        )
    name = Path(path).name.split(".swf")[0]
    try:
        return System(
            name=f"from-trace:{name}",
            resources=(resource,),
            node_types=(NodeType(name="node", count=nodes, capacity={resource: procs // nodes}),),
            description=f"derived from the SWF header of {Path(path).name}: MaxNodes {nodes}, MaxProcs {procs}",
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: cannot derive a system from the SWF header: {exc}") from None


# --------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------


@dataclass
class SwfRecords:
    """The raw numeric fields of every well-formed record, plus their 1-based line numbers.

    ``truncated_after``: when the file ends in damage (a ``.gz`` cut short or corrupt), the
    number of lines read before it (all kept); ``damage``: what the damage is, and
    ``damage_reason`` its skip reason (``truncated-file`` or ``damaged-file``; ``checksum``
    when the whole content was read and its gzip checksum does not match)."""

    values: np.ndarray  # (n, 18) float64
    lines: np.ndarray  # (n,) int64
    malformed: list[tuple[int, str]]
    truncated_after: int | None = None
    damage: str | None = None
    damage_reason: str = "truncated-file"


def _lines_of(block: bytes, kind: pa.DataType) -> pa.Array:
    """The lines of ``block`` (split at ``\\n``; a block ending in one gives a last empty line)."""
    offsets = pa.py_buffer(np.array([0, len(block)], dtype=np.int32))
    whole = pa.Array.from_buffers(kind, 1, [None, offsets, pa.py_buffer(block)])
    return pc.split_pattern(whole, "\n").flatten()


def _not_text_lines(block: bytes, raw: pa.Array) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Lines holding bytes that are not text: ``(mask over the lines, [(line index, message)])``
    for the record lines among them (comment lines may hold any text; they are only masked)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    ok = np.zeros(256, dtype=bool)
    ok[list(_TEXT_BYTES)] = True
    bad_pos = np.flatnonzero(~ok[buf])
    newlines = np.flatnonzero(buf == 10)
    line_idx = np.searchsorted(newlines, bad_pos)
    lines, first = np.unique(line_idx, return_index=True)
    mask = np.zeros(len(raw), dtype=bool)
    mask[lines] = True
    messages = []
    for li, pos in zip(lines.tolist(), bad_pos[first].tolist()):
        if raw[li].as_py().lstrip().startswith(b";"):
            continue
        start = int(newlines[li - 1]) + 1 if li > 0 else 0
        messages.append((li, f"byte 0x{block[pos]:02x} at column {pos - start + 1} is not text"))
    return mask, messages


def _parse_block(
    first_line: int, block: bytes
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]:
    malformed: list[tuple[int, str]] = []
    if not block.translate(None, _TEXT_BYTES):  # the usual case: text only
        text = _lines_of(block, pa.string())
        line_numbers = np.arange(first_line, first_line + len(text), dtype=np.int64)
    else:  # a line with a stray byte is skipped, the others are read
        raw = _lines_of(block, pa.binary())
        line_numbers = np.arange(first_line, first_line + len(raw), dtype=np.int64)
        bad, messages = _not_text_lines(block, raw)
        malformed.extend((first_line + li, msg) for li, msg in messages)
        text = raw.filter(arrow_array(~bad)).cast(pa.string())
        line_numbers = line_numbers[~bad]
    text = pc.ascii_trim_whitespace(text)
    # (numpy <-> Arrow through the buffers, Arrow scalars: pyarrow would import pandas; _util)
    skip = pc.or_(pc.equal(pc.binary_length(text), arrow_scalar(0)), pc.starts_with(text, ";"))
    skip_np = numpy_array(skip)
    if skip_np.any():
        keep = arrow_array(~skip_np)
        text = text.filter(keep)
        line_numbers = line_numbers[~skip_np]
    tokens = pc.ascii_split_whitespace(text)
    counts = numpy_array(pc.list_value_length(tokens))
    bad = counts != _N_FIELDS
    if bad.any():
        for ln, c in zip(line_numbers[bad].tolist(), counts[bad].tolist()):
            malformed.append((ln, f"has {c} fields, an SWF record has {_N_FIELDS}"))
        tokens = tokens.filter(arrow_array(~bad))
        line_numbers = line_numbers[~bad]
    flat = pc.list_flatten(tokens)
    try:
        values = numpy_array(pc.cast(flat, pa.float64()))
    except pa.ArrowInvalid:
        values, line_numbers, more = _numbers_of_good_rows(tokens, line_numbers)
        malformed.extend(more)
    return values.reshape(-1, _N_FIELDS), line_numbers, malformed


def _numbers_of_good_rows(
    tokens: pa.Array, line_numbers: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list]:
    """The values of the rows whose 18 tokens are all numbers, and a message for each other row."""
    flat = pc.list_flatten(tokens)
    ok = numpy_array(pc.match_substring_regex(flat, _NUMBER, ignore_case=True))
    row_ok = ok.reshape(-1, _N_FIELDS).all(axis=1)
    try:
        values = numpy_array(
            pc.cast(pc.list_flatten(tokens.filter(arrow_array(row_ok))), pa.float64())
        )
    except pa.ArrowInvalid:  # a token the pattern takes for a number and Arrow does not: bisect
        for i in _rows_that_fail(tokens, np.flatnonzero(row_ok)):
            row_ok[i] = False
            for k in range(_N_FIELDS):
                try:
                    pc.cast(tokens[i].values[k : k + 1], pa.float64())
                except pa.ArrowInvalid:
                    ok[i * _N_FIELDS + k] = False
        values = numpy_array(
            pc.cast(pc.list_flatten(tokens.filter(arrow_array(row_ok))), pa.float64())
        )
    messages = []
    for row in np.flatnonzero(~row_ok).tolist():
        k = int(np.flatnonzero(~ok[row * _N_FIELDS : (row + 1) * _N_FIELDS])[0])
        token = tokens[row].values[k].as_py()
        messages.append(
            (int(line_numbers[row]), f"field {_field_label(k)} is not a number: {token!r}")
        )
    return values, line_numbers[row_ok], messages


def _rows_that_fail(tokens: pa.Array, rows: np.ndarray) -> list[int]:
    """The rows among ``rows`` whose tokens Arrow cannot cast to numbers (halving the rows)."""
    try:
        pc.cast(
            pc.list_flatten(tokens.take(arrow_array(np.asarray(rows, dtype=np.int64)))),
            pa.float64(),
        )
        return []
    except pa.ArrowInvalid:
        if len(rows) == 1:
            return [int(rows[0])]
        half = len(rows) // 2
        return _rows_that_fail(tokens, rows[:half]) + _rows_that_fail(tokens, rows[half:])


def read_swf_records(path: str | Path) -> SwfRecords:
    """Read every record of an SWF file. Malformed lines are collected, never fatal; a
    ``.gz`` that is cut short or corrupt keeps every line before the damage."""
    path = Path(path)
    _check_file(path)
    futures: deque[Future[tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]]] = deque()
    parts = []
    blocks = _Blocks(path)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for first, block in blocks:
                futures.append(pool.submit(_parse_block, first, block))
                if len(futures) > _BLOCKS_IN_FLIGHT:  # (not the whole file's text at once)
                    parts.append(futures.popleft().result())
            parts.extend(f.result() for f in futures)
    except OSError as exc:
        raise TraceFormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if parts:
        values = np.concatenate([p[0] for p in parts])
        lines = np.concatenate([p[1] for p in parts])
        malformed = [m for p in parts for m in p[2]]
    else:
        values, lines, malformed = np.zeros((0, _N_FIELDS)), np.zeros(0, dtype=np.int64), []
    malformed.sort()
    del parts, futures
    # Arrow's allocator keeps the parse buffers pooled (about 190 MB after RICC's 447k
    # lines); nothing else here uses Arrow, so hand them back to the system
    pa.default_memory_pool().release_unused()
    records = SwfRecords(values=values, lines=lines, malformed=malformed)
    if blocks.damage is not None:
        records.damage_reason, records.damage, records.truncated_after = blocks.damage
    return records


# --------------------------------------------------------------------------------------
# records -> jobs
# --------------------------------------------------------------------------------------


def _col(name: str) -> int:
    return _SWF_FIELDS.index(name)


def _malformed_kind(message: str) -> str:
    if message.startswith("has "):
        return "wrong number of fields"
    if " is not a number" in message:
        return message.split(" is not a number")[0] + " not a number"
    if message.endswith(" is not text"):
        return "bytes that are not text"
    return message


def _malformed_notes(malformed: list[tuple[int, str]], shown: int = 5) -> list[str]:
    """One note per kind of malformed line: how many, their first line numbers, an example."""
    kinds: dict[str, list[tuple[int, str]]] = {}
    for ln, message in malformed:
        kinds.setdefault(_malformed_kind(message), []).append((ln, message))
    notes = []
    for kind, items in kinds.items():
        numbers = ", ".join(str(ln) for ln, _ in items[:shown]) + (
            ", ..." if len(items) > shown else ""
        )
        ln, message = items[0]
        notes.append(
            f"malformed, {kind}: {len(items)} line{'s' if len(items) > 1 else ''} ({numbers}); "
            f"line {ln}: {message}"
        )
    return notes


def load_swf(path: str | Path, system: System, options: SwfOptions | None = None) -> Workload:
    """Read an SWF trace and map it onto ``system`` (see the module docstring)."""
    options = options or SwfOptions()
    path = Path(path)
    header = read_swf_header(path)
    records = read_swf_records(path)
    damaged = records.truncated_after is not None
    lost_line = damaged and records.damage_reason != "checksum"
    report = SkipReport(total_records=len(records.lines) + len(records.malformed) + int(lost_line))
    if records.malformed:
        report.skip("malformed", [ln for ln, _ in records.malformed])
        report.notes.extend(_malformed_notes(records.malformed))
    if damaged and records.damage_reason == "checksum":
        first_bad = (
            f"; the first malformed line, {records.malformed[0][0]}, may be where it starts"
            if records.malformed
            else ""
        )
        report.notes.append(
            f"the file is damaged: {records.damage}, so some of its content is not what was written; "
            f"the records that read correctly were kept, and some of them may be wrong{first_bad}"
        )
    elif damaged:
        n = records.truncated_after
        kind = "truncated" if records.damage_reason == "truncated-file" else "damaged"
        report.notes.append(
            f"the file is {kind} after line {n}: {records.damage}; the {n} lines before it were read, "
            "whatever followed is lost"
        )
        report.skip(records.damage_reason, [n + 1])

    v = records.values
    lines = records.lines
    keep = np.ones(len(lines), dtype=bool)

    def drop(mask: np.ndarray, reason: str, name: str | None = None) -> None:
        """Skip the records of ``mask`` not skipped yet; for a reason about a value, a note
        shows the first one (field ``name``)."""
        nonlocal keep
        hit = mask & keep
        if hit.any():
            if name is not None and reason not in report.skipped:
                i = int(np.flatnonzero(hit)[0])
                report.notes.append(
                    f"{reason}: line {int(lines[i])}, field {_field_label(_col(name))} is "
                    f"{v[i, _col(name)]:g}"
                    + ("" if reason == "not-a-number" else f" (values up to 2^{_MAX_EXP} are read)")
                )
            report.skip(reason, lines[hit])
            keep &= ~hit

    def column(name: str, too_large: str | None) -> np.ndarray:
        """Field ``name`` as integers; a record where it is NaN (or, when ``too_large`` names
        the reason, beyond ``MAX_FIELD``) is skipped. Values are clipped to +-``MAX_FIELD``."""
        x = v[:, _col(name)]
        if not (np.abs(x) <= _MAX_FIELD).all():
            nan = np.isnan(x)
            drop(nan, "not-a-number", name)
            if too_large is not None:
                drop(x > _MAX_FIELD, too_large, name)
            x = np.clip(np.where(nan, 0.0, x), -_MAX_FIELD, _MAX_FIELD)
        return np.rint(x).astype(np.int64)

    ids = column("job", "id-too-large")
    submit = column("submit", "submit-too-large")
    run = column("run_time", "runtime-too-large")
    req_t = column("requested_time", "walltime-too-large")
    queue = column("queue", "queue-too-large")
    drop(submit < 0, "submit<0")
    drop(run <= 0, "runtime<=0")
    first, other = ("requested_processors", "allocated_processors")
    if options.processors != "requested":
        first, other = other, first
    primary = column(first, "processors-too-large")
    # the other field only counts where the chosen one is missing
    secondary_raw = v[:, _col(other)]
    consulted = primary <= 0
    drop(consulted & np.isnan(secondary_raw), "not-a-number", other)
    drop(consulted & (secondary_raw > _MAX_FIELD), "processors-too-large", other)
    secondary = np.rint(
        np.clip(np.nan_to_num(secondary_raw, nan=0.0), -_MAX_FIELD, _MAX_FIELD)
    ).astype(np.int64)
    use_secondary = consulted & (secondary > 0)
    procs = np.where(use_secondary, secondary, primary)
    report.patch(
        f"processors taken from field {'5 (allocated)' if options.processors == 'requested' else '8 (requested)'}",
        int((use_secondary & keep).sum()),
    )
    drop(procs <= 0, "processors<=0")
    named = {
        name: column(name, f"{name}-too-large")
        for name in ("user", "group", "executable", "partition")
    }

    # duplicate ids: keep the first occurrence in file order
    order = np.argsort(ids, kind="stable")
    dup = np.zeros(len(ids), dtype=bool)
    sorted_ids = ids[order]  # the stable sort keeps the first occurrence first
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
            wall[missing] = hdr_max if hdr_max and hdr_max <= _MAX_FIELD else int(run[keep].max())
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
            raise ConfigError(
                f"memory='{options.memory}' needs a 'mem' resource; system '{system.name}' has none"
            )
        mem_name = "requested_memory" if options.memory == "requested" else "used_memory"
        mem_field = _col(mem_name)
        kb = v[:, mem_field]
        if not (np.abs(kb) <= _MAX_FIELD).all():
            drop(np.isnan(kb), "not-a-number", mem_name)
            drop(kb > _MAX_FIELD, "memory-too-large", mem_name)
            kb = np.clip(np.nan_to_num(kb, nan=0.0), -_MAX_FIELD, _MAX_FIELD)
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
        report.notes.append(
            f"max_jobs={options.max_jobs}: only the first {len(order)} jobs by submit time are used"
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
        w = waits[(queues == q) & (waits >= 0) & (waits <= _MAX_FIELD)]
        if len(w):
            queue_ewt[int(q)] = float(w.mean())
    fields = {
        "id": ids,
        "submit": submit,
        "run_time": run,
        "wall_time": wall,
        "units": units,
        "unit_request": unit_req,
        "queue": queue,
        "processors": procs,
        **named,
    }
    # the jobs stay columns: Job objects are built only if something asks for them
    return Workload.of_plain_columns(
        {name: values[order] for name, values in fields.items()},
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
    pn = (
        np.zeros((n, len(system.resources)), np.int64)
        if per_node is None
        else np.asarray(per_node, dtype=np.int64)
    )
    ct = np.zeros(n, bool) if contiguous is None else np.asarray(contiguous, dtype=bool)
    mp = np.zeros(n, np.int64) if max_per_node is None else np.asarray(max_per_node, dtype=np.int64)
    special = np.flatnonzero((nc > 0) | ct | pn.any(axis=1))
    cap = system.capacity
    for i in special.tolist():
        out[i] = request_fits(
            cap, unit_req[i], int(units[i]), int(mp[i]), int(nc[i]), pn[i], bool(ct[i])
        )
    return out


def _fits_empty_plain(
    units: np.ndarray, unit_req: np.ndarray, system: System, max_per_node: np.ndarray | None
) -> np.ndarray:
    caps = np.array(
        [[nt.capacity.get(r, 0) for r in system.resources] for nt in system.node_types],
        dtype=np.int64,
    )
    counts = np.array([nt.count for nt in system.node_types], dtype=np.int64)
    big = np.iinfo(np.int64).max // 4
    with np.errstate(divide="ignore"):
        per = np.where(
            unit_req[:, None, :] > 0, caps[None, :, :] // np.maximum(unit_req[:, None, :], 1), big
        )
    per_type = per.min(axis=2)  # (jobs, types)
    if max_per_node is not None:
        limit = np.where(max_per_node > 0, max_per_node, big)
        per_type = np.minimum(per_type, limit[:, None])
    all_zero = (unit_req <= 0).all(axis=1)
    per_type = np.where(all_zero[:, None], big, per_type)
    capacity_units = (np.minimum(per_type, big // max(int(counts.max()), 1)) * counts[None, :]).sum(
        axis=1
    )
    return capacity_units >= units


def write_swf(workload: Workload, path: str | Path, processors_per_unit_column: int = 0) -> None:
    """Write a workload as SWF (processors = units x per-unit cores of column ``processors_per_unit_column``).

    Used to hand exactly the simulated jobs to peer simulators in benchmarks.
    """
    with open(path, "w") as fh:
        fh.write("; Version: 2.2\n; Note: written by hpcdispatch\n")
        for j in workload.jobs:
            procs = j.units * j.unit_request[processors_per_unit_column]
            fields = [
                j.id,
                j.submit,
                -1,
                j.run_time,
                procs,
                -1,
                -1,
                procs,
                j.wall_time,
                -1,
                1,
                j.user,
                j.group,
                j.executable,
                j.queue,
                j.partition,
                -1,
                -1,
            ]
            fh.write(" ".join(str(int(x)) for x in fields) + "\n")


def _cleaning_comments(workload: Workload) -> list[str]:
    """What the reader skipped and patched on the way in, as SWF header comments, so that a
    reader of the converted file elsewhere knows what changed (counts, rules, first lines)."""
    report = workload.report
    out = [f"; Note: hpcdispatch read {report.total_records} records, skipped {report.n_skipped}"]
    for reason, n in sorted(report.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
        first = ", ".join(map(str, report.first_lines.get(reason, [])))
        out.append(f"; Note: skipped {n} x {reason} (first records: {first})")
    for what, n in sorted(report.patched.items()):
        out.append(f"; Note: patched {n} x {what}")
    options = {k: v for k, v in workload.source.options.items() if v is not None}
    if options:
        rules = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
        out.append(f"; Note: reader options: {rules}")
    for note in report.notes:
        out.append("; Note: " + " ".join(str(note).split()))
    return out


def swf_text(
    workload: Workload, system: System | None = None, processors_column: str = "core"
) -> str:
    """A workload as SWF text: the 18 fields per job and a header (Version, Computer,
    UnixStartTime when the workload recorded one, MaxJobs, MaxRecords, MaxNodes and MaxProcs
    when ``system`` is given, Queue/Partition names from ``workload.labels``).

    Processors (fields 5 and 8) are ``Job.processors`` (else units x the per-unit amount of
    ``processors_column``); wait (3) is unknown (-1) and status (11) 1. SWF has no node
    counts, GPUs or other per-node amounts: a Slurm-style CSV keeps them.
    """
    col = (
        workload.resources.index(processors_column)
        if processors_column in workload.resources
        else 0
    )
    lines = ["; Version: 2.2", f"; Computer: {system.name if system is not None else 'unknown'}"]
    if "UnixStartTime" in workload.header or "unixstarttime" in workload.header:
        lines.append(
            f"; UnixStartTime: {workload.header.get('UnixStartTime', workload.header.get('unixstarttime'))}"
        )
    lines += [f"; MaxJobs: {len(workload)}", f"; MaxRecords: {len(workload)}"]
    if system is not None:
        lines.append(f"; MaxNodes: {system.n_nodes}")
        if processors_column in system.resources:
            lines.append(
                f"; MaxProcs: {int(system.total_capacity[system.resource_index(processors_column)])}"
            )
    for key, field_name in (("Queue", "queue"), ("Partition", "partition")):
        for i, name in sorted(workload.labels.get(field_name, {}).items()):
            lines.append(f"; {key}: {i} {name}")
    lines.append(
        f"; Note: converted by hpcdispatch from {workload.source.kind} {workload.source.spec}"
    )
    lines += _cleaning_comments(workload)
    for j in workload.jobs:
        procs = j.processors if j.processors > 0 else j.units * j.unit_request[col]
        fields = [
            j.id,
            j.submit,
            -1,
            j.run_time,
            procs,
            -1,
            -1,
            procs,
            j.wall_time,
            -1,
            1,
            j.user,
            j.group,
            j.executable,
            j.queue,
            j.partition,
            -1,
            -1,
        ]
        lines.append(" ".join(str(int(x)) for x in fields))
    return "\n".join(lines) + "\n"
