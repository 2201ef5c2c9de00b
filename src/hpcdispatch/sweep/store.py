"""The results store of a sweep: one directory per finished cell, and a Parquet summary.

Layout of ``OUT/``::

    sweep.json          the cells of the current spec (ids, labels, configurations)
    sweep.toml          a copy of the spec file
    cells/<id>/         a finished cell: the run's outputs (see results/store.py) and cell.json
    cells/.tmp-...      a cell being written (ignored by readers)
    summary.parquet     one row per finished cell of the current spec (done or failed)
    sweep.lock          while a sweep runs: its host and pid (:func:`sweep_lock`)

A cell is written into a temporary directory and published by renaming that directory to
``cells/<id>``; ``cell.json`` (status, configuration, summary, error, file sizes) is the last
file written into it. So ``cells/<id>`` either does not exist or is complete: a sweep killed at
any instant never leaves a half cell that counts as done. ``summary.parquet`` is derived from
the ``cell.json`` files (rewritten atomically while the sweep runs and at its end), keyed by
cell id: no cell appears twice.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hpcdispatch._version import __version__
from hpcdispatch.errors import ConfigError
from hpcdispatch.results.outdir import remove_stale_writing_dirs
from hpcdispatch.results.store import write_frame, write_json, write_text
from hpcdispatch.sweep.spec import SweepSpec

CELLS = "cells"
RECORD = "cell.json"
MANIFEST = "sweep.json"
SPEC_COPY = "sweep.toml"
SUMMARY = "summary.parquet"
LOCK = "sweep.lock"
TMP_PREFIX = ".tmp-"
OLD_PREFIX = ".old-"
STATUSES = ("done", "failed")

# columns that measure wall-clock time or where a cell ran: they differ between two runs of
# the same cell; every other column is a function of the cell's configuration
NONDETERMINISTIC_COLUMNS = (
    "sim_wall_s",
    "prediction_time_s",
    "cell_wall_s",
    "worker",
    "finished_at",
    "started_at",
)
NONDETERMINISTIC_PREFIXES = ("decision_time_",)


def deterministic_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` that a rerun reproduces (wall-clock timings, worker and
    times of day left out)."""
    return [
        c
        for c in frame.columns
        if c not in NONDETERMINISTIC_COLUMNS and not c.startswith(NONDETERMINISTIC_PREFIXES)
    ]


def worker_tag() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def temp_dir_name(cell_id: str) -> str:
    return f"{TMP_PREFIX}{cell_id}-{os.getpid()}-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"


def parse_temp_name(name: str) -> tuple[str, int, str] | None:
    """``(cell id, pid, host)`` of a temporary cell directory name."""
    if not name.startswith(TMP_PREFIX) or "@" not in name:
        return None
    left, _, host = name[len(TMP_PREFIX) :].partition("@")
    parts = left.split("-")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), host


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_start(pid: int) -> int | None:
    """When the process started (clock ticks after boot, /proc/PID/stat): tells a live
    holder of a lock from another process that got its pid later. None off Linux."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


class SweepLocked(ConfigError):
    """Another sweep runs on the same output directory (or may: its lock cannot be judged)."""


def _lock_holder(path: Path) -> dict[str, Any] | None:
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(holder, dict) and isinstance(holder.get("pid"), int)
    return holder if ok and isinstance(holder.get("host"), str) else None


def _holder_alive(holder: dict[str, Any]) -> bool:
    """Whether the lock's process (on this host) still runs: its pid is alive and, where the
    lock recorded it, started when the lock's process did (not a later process with its pid)."""
    pid = holder["pid"]
    if not _pid_alive(pid):
        return False
    started = holder.get("process_start")
    return started is None or _process_start(pid) in (None, started)


@contextmanager
def sweep_lock(root: str | Path, note: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold ``ROOT/sweep.lock`` while a sweep runs there: two sweeps on one directory would
    compute the same cells twice. The lock is created atomically (``O_CREAT | O_EXCL``) and
    names this host and pid. A lock held by a live process, or by a process on another host
    (which this host cannot check), is a :class:`SweepLocked` error saying what to do; a lock
    left by a process of this host that died is taken over (``note`` says so). Released at the
    block's end; taken again by the process that holds it, it is left to the outer block."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK
    host, pid = socket.gethostname(), os.getpid()
    me = {
        "host": host,
        "pid": pid,
        "process_start": _process_start(pid),
        "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "version": __version__,
    }
    held_here = False
    for _attempt in range(10):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = _lock_holder(path)
            if holder is None:
                if not path.exists():
                    continue  # released meanwhile
                raise SweepLocked(
                    f"{path}: a sweep lock that cannot be read; if no sweep runs on {root}, "
                    f"remove it (rm {path}) and run again"
                ) from None
            if holder["host"] == host and holder["pid"] == pid:  # this process holds it
                held_here = True
                break
            who = f"pid {holder['pid']} on {holder['host']}, since {holder.get('since', '?')}"
            if holder["host"] != host:
                raise SweepLocked(
                    f"{root} is locked by a sweep on another host ({who}), which this host "
                    f"cannot check; if no sweep runs there any more, remove {path} and run again"
                ) from None
            if _holder_alive(holder):
                raise SweepLocked(
                    f"{root} is in use by another sweep ({who}): two sweeps on one directory "
                    f"compute the same cells twice; wait for it to end or stop it (kill "
                    f"{holder['pid']})"
                ) from None
            # a dead process's lock: set it aside under a name of our own (one taker wins the
            # rename), make sure it is the lock judged dead, and try again
            aside = path.with_name(f".{LOCK}.stale-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(path, aside)
            except FileNotFoundError:
                continue  # another sweep took it over first
            if _lock_holder(aside) != holder:  # a new lock was created in between: put it back
                try:
                    os.link(aside, path)
                except FileExistsError:
                    pass
                aside.unlink(missing_ok=True)
                continue
            aside.unlink(missing_ok=True)
            if note is not None:
                note(
                    f"note: took over {path} from a sweep that died ({who}); "
                    "its unfinished cells run again"
                )
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(me) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        break
    else:
        raise SweepLocked(f"{path}: could not take the lock (other sweeps keep changing it)")
    if held_here:  # by an outer block of this process: it releases the lock
        yield path
        return
    try:
        yield path
    finally:
        if _lock_holder(path) == me:
            path.unlink(missing_ok=True)


def read_record(cell_dir: Path) -> dict[str, Any] | None:
    """The cell's record if ``cell_dir`` holds a complete cell, else None."""
    path = cell_dir / RECORD
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(rec, dict)
        or rec.get("id") != cell_dir.name
        or rec.get("status") not in STATUSES
    ):
        return None
    for f in rec.get("files", []):
        p = cell_dir / f["name"]
        try:
            if p.stat().st_size != f["bytes"]:
                return None
        except OSError:
            return None
    return rec


@dataclass
class StoreScan:
    done: dict[str, dict[str, Any]]
    failed: dict[str, dict[str, Any]]
    pending: list[str]
    broken: list[str]  # cells/<id> directories that are not complete cells (set aside)


class SweepStore:
    """A sweep's output directory: its manifest, published cells and the Parquet summary."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.cells = self.root / CELLS

    def cell_dir(self, cid: str) -> Path:
        return self.cells / cid

    # ---- manifest ------------------------------------------------------------------------
    def write_manifest(self, spec: SweepSpec) -> None:
        self.cells.mkdir(parents=True, exist_ok=True)
        write_json(
            self.root / MANIFEST,
            {
                "name": spec.name,
                "description": spec.description,
                "spec_path": str(spec.path) if spec.path else None,
                "spec_sha256": spec.sha256,
                "hpcdispatch_version": __version__,
                "cells": [{"id": c.id, "labels": c.labels, "config": c.config} for c in spec.cells],
            },
        )
        if spec.text:
            write_text(self.root / SPEC_COPY, spec.text)

    def read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.is_file():
            raise ConfigError(f"{self.root}: not a sweep output directory (no {MANIFEST})")
        try:
            return json.loads(path.read_text())
        except ValueError as exc:
            raise ConfigError(f"{path}: unreadable ({exc})") from None

    # ---- cells ---------------------------------------------------------------------------
    def read(self, cid: str) -> dict[str, Any] | None:
        return read_record(self.cell_dir(cid))

    def scan(self, ids: list[str], set_aside_broken: bool = False) -> StoreScan:
        done: dict[str, dict[str, Any]] = {}
        failed: dict[str, dict[str, Any]] = {}
        pending: list[str] = []
        broken: list[str] = []
        for cid in ids:
            d = self.cell_dir(cid)
            rec = read_record(d)
            if rec is None:
                if d.exists():
                    broken.append(cid)
                    if set_aside_broken:
                        d.rename(self.cells / f"{OLD_PREFIX}{cid}-broken-{int(time.time())}")
                pending.append(cid)
            elif rec["status"] == "done":
                done[cid] = rec
            else:
                failed[cid] = rec
        return StoreScan(done, failed, pending, broken)

    def temp_dirs(self) -> list[tuple[Path, str, int, str]]:
        """Cells being written: ``(path, cell id, pid, host)``."""
        out = []
        if self.cells.is_dir():
            for p in self.cells.iterdir():
                parsed = parse_temp_name(p.name)
                if parsed is not None:
                    out.append((p, *parsed))
        return out

    def writers(
        self, max_age_s: float = 86400.0
    ) -> tuple[list[tuple[Path, str, int, str]], list[tuple[Path, str, int, str]]]:
        """The cells' temporary directories as ``(live, stale)`` lists of ``(path, cell id,
        pid, host)``: stale ones were left by a process that died (this host: the process is gone;
        another host: untouched for ``max_age_s``), which :meth:`clean_stale` removes."""
        live, stale = [], []
        host = socket.gethostname()
        now = time.time()
        for path, cid, pid, h in self.temp_dirs():
            try:
                age = now - path.stat().st_mtime
            except OSError:
                continue  # (published or removed meanwhile)
            # this host: the process itself says (a live cell may run for days: its directory
            # keeps the mtime of its start until it is published); another host: its age
            dead = not _pid_alive(pid) if h == host else age > max_age_s
            (stale if dead else live).append((path, cid, pid, h))
        return live, stale

    def clean_stale(self, max_age_s: float = 86400.0) -> list[Path]:
        """Remove temporary directories left by processes that died (same host: the process is
        gone; another host: untouched for ``max_age_s``) and set-aside old cells."""
        removed = []
        _live, stale = self.writers(max_age_s)
        for path, _cid, _pid, _h in stale:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        if self.cells.is_dir():
            for p in self.cells.iterdir():
                if p.name.startswith(OLD_PREFIX) and "-replaced-" in p.name:
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p)
            removed += remove_stale_writing_dirs(self.cells)  # a run directory's, half written
        return removed

    # ---- summary -------------------------------------------------------------------------
    def write_summary(
        self,
        records: list[dict[str, Any]],
        order: dict[str, int],
        labels: dict[str, dict[str, Any]] | None = None,
    ) -> pd.DataFrame:
        frame = summary_frame(records, order, labels)
        write_frame(self.root / SUMMARY, frame)
        return frame

    def read_summary(self) -> pd.DataFrame:
        path = self.root / SUMMARY
        if not path.is_file():
            raise ConfigError(f"{self.root}: no {SUMMARY} (has the sweep run?)")
        return pd.read_parquet(path)


def publish(tmp: Path, final: Path, replace_failed: bool) -> dict[str, Any]:
    """Rename the complete temporary cell directory ``tmp`` to ``final``; returns the record
    that is now in ``final`` (ours, or an identical cell another process published first)."""
    try:
        os.rename(tmp, final)
        return read_record(final) or _raise(final)
    except OSError:
        pass
    existing = read_record(final)
    if existing is not None and (existing["status"] == "done" or not replace_failed):
        shutil.rmtree(tmp, ignore_errors=True)  # the same cell was finished by another process
        return existing
    aside = final.parent / f"{OLD_PREFIX}{final.name}-replaced-{uuid.uuid4().hex[:8]}"
    os.rename(final, aside)
    os.rename(tmp, final)
    shutil.rmtree(aside, ignore_errors=True)
    return read_record(final) or _raise(final)


def _raise(path: Path) -> dict[str, Any]:
    raise RuntimeError(f"{path}: published cell is not readable")


def _flat(value: Any) -> Any:
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def record_row(rec: dict[str, Any], labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """One summary row; ``labels`` (the current spec's, if given) win over the record's own."""
    lab = labels or rec.get("labels", {})
    err = rec.get("error") or {}
    row: dict[str, Any] = {
        "cell_id": rec["id"],
        "status": rec["status"],
        "label": lab.get("label"),
        "system_spec": lab.get("system"),
        "workload_label": lab.get("workload"),
        "seed": lab.get("seed"),
        "dispatcher_label": lab.get("dispatcher"),
        "run_label": lab.get("run"),
        "predictor": lab.get("predictor"),
        "repetition": lab.get("repetition"),
        "error_type": err.get("type"),
        "error": err.get("message"),
    }
    for key, value in (rec.get("summary") or {}).items():
        if key not in row or row[key] is None:
            row[key] = _flat(value)
    row["config"] = json.dumps(rec.get("config"), sort_keys=True)
    row["cell_wall_s"] = rec.get("cell_wall_s")
    row["worker"] = rec.get("worker")
    row["finished_at"] = rec.get("finished_at")
    return row


def summary_frame(
    records: list[dict[str, Any]],
    order: dict[str, int],
    labels: dict[str, dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """One row per record, in the spec's cell order."""
    recs = sorted(records, key=lambda r: order.get(r["id"], len(order)))
    rows = [record_row(r, (labels or {}).get(r["id"])) for r in recs]
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame({"cell_id": pd.Series(dtype=str), "status": pd.Series(dtype=str)})
    frame.insert(1, "cell_index", [order.get(r["id"], -1) for r in recs])
    for col in frame.columns:
        if frame[col].dtype == object:
            kinds = {
                type(v)
                for v in frame[col]
                if v is not None and not (isinstance(v, float) and v != v)
            }
            if len(kinds) > 1 and not kinds <= {int, float}:
                frame[col] = [None if v is None else str(v) for v in frame[col]]
    return frame
