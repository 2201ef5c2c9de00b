"""The output directory of a run, written atomically and read back.

``OUT_DIR/`` holds:

- ``jobs.parquet`` (and ``jobs.csv`` with ``csv``): one row per job (submit, start, end,
  status, request; with ``csv`` the allocation as ``"node:units ..."``);
- ``allocations.parquet``: one row per job, allocation segment and node with the amounts of
  every resource held during ``[from, to)`` (what the validator replays);
- ``decisions.parquet``: one row per dispatcher call (time, queue length, started, wall time);
- ``summary.json``: the run's metrics; ``run.json``: how to reproduce it (system, workload
  source and options, dispatcher, predictor, simulation options, versions);
- ``system.toml``: the system, so the directory is self-contained;
- ``workload.parquet``: the jobs as simulated (submit, run time, wall-time, request);
- ``prediction_accuracy.parquet``: per job, the planned (predicted) and the real duration
  and the accuracy ``real / predicted`` (CP'19 Fig. 1).

The directory is written as a whole (:mod:`hpcdispatch.results.outdir`): into a temporary
directory beside it, then renamed, so a reader -- and an interrupted run -- sees the old
directory or the new one, never a mix; an existing result is replaced only with ``force``.
Single files written elsewhere (reports) go to a temporary name and are renamed. Everything
gets the permissions the user's umask gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from hpcdispatch._util import available_cores, json_default, return_free_memory
from hpcdispatch._version import __version__
from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics import summarize
from hpcdispatch.results.outdir import atomic_dir, make_readable
from hpcdispatch.sim.result import SimulationResult, arrow_table
from hpcdispatch.system.io import dump_system, load_system
from hpcdispatch.system.model import System

if (
    TYPE_CHECKING
):  # (pandas where frames are read or given: writing a run's own tables does without it)
    import pandas as pd


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        make_readable(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it to ``path``."""
    _atomic(path, write)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file + rename)."""
    _atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON, written atomically."""

    def _w(p: Path) -> None:
        p.write_text(json.dumps(data, indent=2, default=json_default, allow_nan=True) + "\n")

    _atomic(path, _w)


def write_frame(path: Path, frame: pd.DataFrame | pa.Table) -> None:
    """``frame`` as Parquet or CSV (by ``path``'s suffix), atomically. An Arrow table (a run's
    own tables) is written as it is, without a pandas frame in between."""
    if isinstance(frame, pa.Table):
        if path.suffix == ".parquet":
            text = [
                f.name
                for f in frame.schema
                if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            ]
            _atomic(path, lambda p: pq.write_table(frame, p, use_dictionary=text))
        else:
            _atomic(path, lambda p: pa_csv.write_csv(frame, p))
        return
    import pandas as pd

    if path.suffix == ".parquet":
        # dictionary encoding only where it pays, the text columns (status, info, user, ...):
        # on numeric columns it costs about half the writing time and saves next to nothing
        # (a whole HPC2N run's five tables: 0.29 s -> 0.16 s, the same size within 3 %)
        text = [
            str(c)
            for c in frame.columns
            if not (pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]))
        ]
        _atomic(path, lambda p: frame.to_parquet(p, index=False, use_dictionary=text))
    else:
        _atomic(path, lambda p: frame.to_csv(p, index=False))


def write_csv_arrow(path: Path, frame: pd.DataFrame | pa.Table) -> None:
    """CSV of a frame whose columns have one type each, by Arrow's writer (several times
    faster than pandas' for the half-million-row job tables of whole traces; strings quoted,
    booleans as ``true``/``false``, missing values empty)."""
    table = (
        frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    )
    _atomic(path, lambda p: pa_csv.write_csv(table, p))


def workload_frame(result: SimulationResult) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(workload_columns(result))


def workload_columns(result: SimulationResult) -> dict[str, np.ndarray]:
    """The columns of :func:`workload_frame`; some are the workload's own arrays (read only)."""
    w = result.workload
    data: dict[str, Any] = {
        "job_id": w.ids,
        "submit": w.submit,
        "run_time": w.run_time,
        "wall_time": w.wall_time,
        "units": w.units,
        "max_units_per_node": w.max_units_per_node,
    }
    for r, name in enumerate(w.resources):
        data[f"unit_{name}"] = w.unit_requests[:, r]
    # Slurm-style constraints (zeros / False for plain jobs)
    data["node_count"] = w.node_counts
    data["contiguous"] = w.contiguous
    for r, name in enumerate(w.resources):
        data[f"pernode_{name}"] = w.per_node_requests[:, r]
    if w.has_deadlines:  # deadline workloads: the window and whether the job takes whole nodes
        data["earliest_start"] = np.array([j.ready_at for j in w.jobs], dtype=np.float64)
        data["deadline"] = np.array(
            [np.inf if j.deadline is None else j.deadline for j in w.jobs], dtype=np.float64
        )
        data["whole_nodes"] = np.array([j.app is not None for j in w.jobs], dtype=bool)
    return data


def shared_frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """A frame over ``columns`` without copying them, for read-only use (writing, validating):
    a whole-trace schedule's tables are hundreds of MB, and copies of them set the run's peak
    memory."""
    import pandas as pd

    return pd.DataFrame(columns, copy=False)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def workload_record(source: Any) -> dict[str, Any]:
    """``run.json``'s ``workload``: kind, spec and options as given, and for a workload read
    from a file its absolute ``path`` and ``sha256`` (the validator re-reads that file, from
    any current directory, and refuses to call a run valid when its bytes changed)."""
    record: dict[str, Any] = {"kind": source.kind, "spec": source.spec, "options": source.options}
    spec = str(source.spec)
    if not spec.startswith("synthetic:") and source.kind != "memory":
        path = Path(spec).expanduser()
        if path.is_file():
            record["path"] = str(path.resolve())
            record["sha256"] = file_sha256(path)
    return record


def run_record(result: SimulationResult) -> dict[str, Any]:
    src = result.workload.source
    return {
        "hpcdispatch_version": __version__,
        "python": platform.python_version(),
        "system": result.system.name,
        "workload": workload_record(src),
        "workload_report": result.workload.report.to_dict(),
        "dispatcher": result.dispatcher,  # identity: {"name": ..., "params": {...}}
        "dispatcher_tags": result.tags,  # what it declared (``rejects``: it may turn jobs away)
        "predictor": result.predictor,
        "options": result.options.to_dict(),
        "resources": list(result.workload.resources),
    }


def write_result(
    result: SimulationResult,
    out_dir: str | Path,
    csv: bool = True,
    force: bool = False,
    run_extra: dict[str, Any] | None = None,
    alongside: Callable[[], None] | None = None,
    beside: bool | None = None,
) -> dict[str, Any]:
    """Write every output of ``result`` into the directory ``out_dir``, as a whole (an
    existing result there is replaced only with ``force``); returns the summary.
    ``run_extra``: more top-level fields of ``run.json`` (a replay on a real Slurm records its
    time scale and ``time_tolerance`` there; :mod:`hpcdispatch.slurm.replay`).
    ``alongside``: work done before the summary is computed (the runner validates); it may
    record in ``result.notes`` (that goes into ``summary.json``; the tables do not read it) and
    must not change anything else. Its exception is raised here, and nothing is written then.
    ``beside``: do ``alongside`` and the summary on a second thread while the tables are
    written (``None``: when this process may use more than one core)."""
    with atomic_dir(out_dir, force) as out:
        return _write_files(
            result,
            out,
            csv,
            run_extra or {},
            alongside,
            available_cores() > 1 if beside is None else beside,
        )


def _write_files(
    result: SimulationResult,
    out: Path,
    csv: bool,
    run_extra: dict[str, Any],
    alongside: Callable[[], None] | None,
    beside: bool,
) -> dict[str, Any]:
    # With a spare core, ``alongside`` and the summary on a second thread while the tables are
    # written: Arrow writes and numpy sorts without Python's lock, so a whole HPC2N run's
    # validation and summary (0.25 s) take almost no time of their own. (Without one, the
    # two threads would only share a core and hold both sides' memory at once.)
    given_up = threading.Event()  # the write failed: what has not started yet is not started
    done: dict[str, Any] = {}

    def summary_after() -> None:
        try:
            if alongside is not None and not given_up.is_set():
                alongside()
            if not given_up.is_set():
                done["summary"] = summarize(result)
                return_free_memory()  # its temporaries, before the tables' (or beside them)
        except BaseException as exc:  # raised on the writing thread, below
            done["error"] = exc

    if beside:
        result.allocation_rows()  # both sides read them, and they are cached on first use: built first
        # A failed write (a full disk, Ctrl-C) is raised at once, without joining: a validation
        # under way finishes on its own (it only reads), the rest is skipped; a daemon, so that
        # the process exits without waiting for it.
        thread = threading.Thread(target=summary_after, name="hpcdispatch-summary", daemon=True)
        thread.start()
        try:
            _write_tables(result, out, csv, run_extra)
        except BaseException:
            given_up.set()
            raise
        thread.join()
    else:
        summary_after()
        if "error" not in done:
            _write_tables(result, out, csv, run_extra)
    if "error" in done:
        raise done["error"]
    write_json(out / "summary.json", done["summary"])
    return done["summary"]


def _write_tables(
    result: SimulationResult, out: Path, csv: bool, run_extra: dict[str, Any]
) -> None:
    # the run's tables go to Arrow straight from their numpy columns (no pandas frame; missing
    # values are nulls, as pandas writes them)
    # the allocation text ("node:units ...", also in allocations.parquet) comes with jobs.csv
    jobs = result.jobs_table() if csv else arrow_table(result.jobs_columns(allocation_text=False))
    write_frame(out / "jobs.parquet", jobs)
    if csv:
        write_csv_arrow(out / "jobs.csv", jobs)
    del jobs
    return_free_memory()  # (after each big table: what its making freed, before the next)
    write_frame(out / "allocations.parquet", arrow_table(result.allocations_columns()))
    return_free_memory()
    write_frame(out / "decisions.parquet", result.decisions_table())
    return_free_memory()
    if result.bookings:  # advance reservations (deadline strategies): the validator re-checks them
        write_frame(out / "bookings.parquet", arrow_table(result.bookings_columns()))
    write_frame(out / "workload.parquet", arrow_table(workload_columns(result)))
    _atomic(out / "system.toml", lambda p: dump_system(result.system, p))
    write_json(out / "run.json", {**run_record(result), **run_extra})
    real = result.end - result.start
    started = ~np.isnan(real)
    write_frame(
        out / "prediction_accuracy.parquet",
        arrow_table(
            {
                "job_id": result.workload.ids[started],
                "predicted": result.planned[started],
                "real": real[started],
                "accuracy": real[started] / np.maximum(result.planned[started], 1e-9),
            }
        ),
    )


@dataclass
class StoredRun:
    """A run read back from its output directory."""

    path: Path
    system: System
    run: dict[str, Any]
    summary: dict[str, Any]
    jobs: pd.DataFrame
    allocations: pd.DataFrame
    workload: pd.DataFrame
    #: the advance-reservation strategies' bookings (``bookings.parquet``), None without one
    bookings: pd.DataFrame | None = None

    def decisions(self) -> pd.DataFrame:
        import pandas as pd

        return pd.read_parquet(self.path / "decisions.parquet")


#: columns every run directory's tables have (the validator and the reports read them)
REQUIRED_COLUMNS = {
    "jobs.parquet": ("job_id", "submit", "start", "end", "status"),
    "allocations.parquet": ("job_id", "segment", "node", "units", "from", "to"),
    "workload.parquet": ("job_id", "submit", "run_time", "wall_time", "units"),
}


def read_run(out_dir: str | Path) -> StoredRun:
    """A run directory read back; a damaged or incomplete one is a :class:`ConfigError`
    naming the file (and the column)."""
    out = Path(out_dir)
    if not out.is_dir():
        raise ConfigError(f"{out}: not a directory")
    needed = ["run.json", "system.toml", "jobs.parquet", "allocations.parquet", "workload.parquet"]
    missing = [n for n in needed if not (out / n).is_file()]
    if missing:
        raise ConfigError(
            f"{out}: not a complete hpcdispatch output directory (missing {', '.join(missing)})"
        )
    summary_path = out / "summary.json"
    system = load_system(out / "system.toml")
    stored = StoredRun(
        path=out,
        system=system,
        run=_checked_run_record(out / "run.json", _read_json(out / "run.json")),
        summary=_read_json(summary_path) if summary_path.is_file() else {},
        jobs=_read_table(out / "jobs.parquet"),
        allocations=_read_table(out / "allocations.parquet"),
        workload=_read_table(out / "workload.parquet"),
        bookings=_read_table(out / "bookings.parquet")
        if (out / "bookings.parquet").is_file()
        else None,
    )
    for name, frame, columns in (
        ("allocations.parquet", stored.allocations, system.resources),
        ("workload.parquet", stored.workload, [f"unit_{r}" for r in system.resources]),
    ):
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise ConfigError(
                f"{out / name}: column {absent[0]} is missing (the system has resources "
                f"{', '.join(system.resources)})"
            )
    return stored


#: the shape of run.json's fields that readers use: field -> (types, what it must be)
_RUN_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "system": ((str,), "the system's name"),
    "workload": ((dict,), "a table (kind, spec, options)"),
    "workload.kind": ((str,), "a string"),
    "workload.spec": ((str,), "a string"),
    "workload.options": ((dict,), "a table"),
    "options": ((dict,), "a table"),
    "options.walltime_kill": ((bool,), "true or false"),
    "dispatcher": ((dict, str), "a table (name, params)"),
    "dispatcher_tags": ((dict, type(None)), "a table of true/false"),
    "time_tolerance": ((int, float), "a number of seconds"),
}


def _checked_run_record(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    """``run`` when every field readers use has its type (absent fields are allowed: older
    runs lack some), else a :class:`ConfigError` naming the file and the field."""
    for name, (kinds, what) in _RUN_FIELDS.items():
        parent, _, key = name.rpartition(".")
        holder = run.get(parent) if parent else run
        if not isinstance(holder, dict) or key not in holder:
            continue
        value = holder[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ConfigError(
                f"{path}: field '{name}' must be {what}, got {json.dumps(value)[:60]}"
            )
    workload = run.get("workload")
    if isinstance(workload, dict) and "kind" in workload and "spec" not in workload:
        raise ConfigError(
            f"{path}: field 'workload.spec' is missing (the workload's {workload['kind']} source)"
        )
    tol = run.get("time_tolerance")
    if tol is not None and not (
        isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 <= tol < float("inf")
    ):
        raise ConfigError(
            f"{path}: field 'time_tolerance' must be a finite number of seconds >= 0, got {json.dumps(tol)[:60]}"
        )
    tags = run.get("dispatcher_tags")
    if isinstance(tags, dict) and not all(isinstance(v, bool) for v in tags.values()):
        raise ConfigError(
            f"{path}: field 'dispatcher_tags' must be a table of true/false, got {json.dumps(tags)[:60]}"
        )
    return run


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """A library's message on one line (pyarrow's span several), at most ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: damaged ({type(exc).__name__}: {_one_line(exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: damaged (a JSON object was expected, got {type(data).__name__})"
        )
    return data


def _read_table(path: Path) -> pd.DataFrame:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors for a truncated or foreign file
        raise ConfigError(
            f"{path}: damaged Parquet file ({type(exc).__name__}: {_one_line(exc)})"
        ) from None
    absent = [c for c in REQUIRED_COLUMNS.get(path.name, ()) if c not in frame.columns]
    if absent:
        raise ConfigError(f"{path}: column {absent[0]} is missing")
    return _typed(path, frame)


#: the kind of value of each column the readers use (others are left as they are): times are
#: numbers (NaN where a job has none), ids and counts integers, flags true/false, status text
_NUMBER_COLUMNS = (
    "submit",
    "start",
    "end",
    "planned_duration",
    "from",
    "to",
    "made",
    "released",
    "deadline",
    "earliest_start",
)
_FLAG_COLUMNS = ("killed", "contiguous")
_TEXT_COLUMNS = ("status",)
_INT_PREFIXES = ("unit_", "pernode_")
_INT_COLUMNS = (
    "job_id",
    "segment",
    "node",
    "units",
    "run_time",
    "wall_time",
    "user",
    "queue",
    "max_units_per_node",
    "node_count",
)


def _typed(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each known column in its kind (see above); a value of another kind is a
    :class:`ConfigError` naming the file, column and row. Resource columns of the allocations
    table (every column not listed above) are integers too."""
    import pandas as pd

    for name in frame.columns:
        column = frame[name]
        if name in _TEXT_COLUMNS:
            kind = "text"
            bad = ~column.map(lambda v: isinstance(v, str)).to_numpy(bool)
        elif name in _FLAG_COLUMNS:
            if pd.api.types.is_bool_dtype(column.dtype) and not column.hasnans:
                continue
            kind = "true/false"
            bad = ~column.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(bool)
            if not bad.any():
                frame[name] = column.astype(bool)
        else:
            is_int = (
                name in _INT_COLUMNS
                or name.startswith(_INT_PREFIXES)
                or (path.name == "allocations.parquet" and name not in _NUMBER_COLUMNS)
            )
            if name not in _NUMBER_COLUMNS and not is_int:
                continue
            if (is_int and pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans) or (
                not is_int
                and pd.api.types.is_float_dtype(column.dtype)
                and column.dtype == np.float64
            ):
                continue
            values = pd.to_numeric(
                column.where(~column.map(lambda v: isinstance(v, (bool, np.bool_)))),
                errors="coerce",
            ).to_numpy(np.float64, na_value=np.nan)
            bad = column.notna().to_numpy(bool) & np.isnan(values)
            if is_int:
                kind = "integers"
                bad |= (
                    ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) > 2.0**62)
                )
            else:
                kind = "numbers"
            if not bad.any():
                frame[name] = values.astype(np.int64) if is_int else values
        if bad.any():
            rows = np.flatnonzero(bad)
            raise ConfigError(
                f"{path}: column '{name}' must hold {kind}; row {rows[0]} is {column.iloc[rows[0]]!r}"
                + (f" ({len(rows)} rows in all)" if len(rows) > 1 else "")
            )
    return frame
