"""Run a sweep: skip finished cells, run the others on an executor, keep the summary current."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hpcdispatch.sweep.executors import DaskExecutor, LocalExecutor
from hpcdispatch.sweep.spec import SweepSpec
from hpcdispatch.sweep.store import SweepLocked, SweepStore, sweep_lock

# (done, failed, to_run) after every finished cell, and the cell's record
ProgressCallback = Callable[[int, int, int, dict[str, Any]], None]


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did: cells run, skipped, done, failed and still pending."""

    cells: int
    skipped_done: int
    skipped_failed: int
    ran: int
    done: int  # done cells in the store at the end (this run and earlier ones)
    failed: int
    pending: int
    summary: pd.DataFrame
    set_aside: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def failed_labels(self) -> list[str]:
        f = self.summary[self.summary["status"] == "failed"]
        return [f"{lab}: {err}" for lab, err in zip(f["label"], f["error"])]


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    executor: LocalExecutor | DaskExecutor | None = None,
    retry_failed: bool = False,
    progress: ProgressCallback | None = None,
    summary_interval_s: float = 2.0,
    note: Callable[[str], None] | None = None,
) -> SweepOutcome:
    """Run every unfinished cell of ``spec`` into ``out``; returns the counts and the summary.

    Finished cells (``done``, and ``failed`` unless ``retry_failed``) are skipped. The
    executor is closed at the end (default: :class:`LocalExecutor` on every core). The run
    holds ``out``'s lock (:func:`~hpcdispatch.sweep.store.sweep_lock`): a second sweep on the
    same directory is refused; ``note`` hears about a dead sweep's lock taken over.
    """
    out = Path(out).resolve()  # workers may run elsewhere (another working directory, another host)
    try:
        with sweep_lock(out, note):
            return _run_sweep(spec, out, executor, retry_failed, progress, summary_interval_s)
    except SweepLocked:
        if executor is not None:
            executor.close()
        raise


def _run_sweep(
    spec: SweepSpec,
    out: Path,
    executor: LocalExecutor | DaskExecutor | None,
    retry_failed: bool,
    progress: ProgressCallback | None,
    summary_interval_s: float,
) -> SweepOutcome:
    t0 = time.perf_counter()
    store = SweepStore(out)
    store.write_manifest(spec)
    store.clean_stale()
    order = {c.id: c.index for c in spec.cells}
    labels = {c.id: c.labels for c in spec.cells}
    scan = store.scan(spec.cell_ids(), set_aside_broken=True)
    records: dict[str, dict[str, Any]] = {**scan.done, **scan.failed}
    to_run = [
        c for c in spec.cells if c.id in scan.pending or (retry_failed and c.id in scan.failed)
    ]
    store.write_summary(list(records.values()), order, labels)
    executor = executor or LocalExecutor()
    done = failed = 0
    last_write = time.monotonic()
    try:
        if to_run:
            for cell, record in executor.run(to_run, out, retry_failed):
                records[cell.id] = record
                if record["status"] == "done":
                    done += 1
                else:
                    failed += 1
                if progress is not None:
                    progress(done, failed, len(to_run), record)
                if time.monotonic() - last_write >= summary_interval_s:
                    store.write_summary(list(records.values()), order, labels)
                    last_write = time.monotonic()
    finally:
        executor.close()
        # the final summary is read back from the cells: it also holds cells that another
        # process (a second sweep on the same directory, an orphaned worker) published meanwhile
        final = store.scan(spec.cell_ids())
        summary = store.write_summary([*final.done.values(), *final.failed.values()], order, labels)
        store.clean_stale()
    statuses = summary["status"].value_counts().to_dict() if len(summary) else {}
    return SweepOutcome(
        cells=len(spec.cells),
        skipped_done=len(scan.done),
        skipped_failed=len(scan.failed) if not retry_failed else 0,
        ran=done + failed,
        done=int(statuses.get("done", 0)),
        failed=int(statuses.get("failed", 0)),
        pending=len(spec.cells) - len(summary),
        summary=summary,
        set_aside=scan.broken,
        wall_seconds=time.perf_counter() - t0,
    )


@dataclass
class SweepStatus:
    """A sweep directory's state: done, failed, pending and running cells, and foreign ones."""

    name: str
    cells: int
    done: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    pending: list[dict[str, Any]]  # manifest entries
    running: list[tuple[str, int, str]]  # (cell id, pid, host) of cells being written now
    foreign: list[str]  # finished cells in the directory that the current spec does not list
    summary_rows: int | None
    entries: list[dict[str, Any]] = field(
        default_factory=list
    )  # every cell of the manifest, in order
    #: (cell id, pid, host) of temporary directories left by writers that died (a kill, a
    #: crash); the next ``sweep run`` removes them and runs those cells again
    abandoned: list[tuple[str, int, str]] = field(default_factory=list)


def sweep_status(out: str | Path) -> SweepStatus:
    """The state of the sweep in directory ``out`` (read from its manifest and cells)."""
    store = SweepStore(out)
    manifest = store.read_manifest()
    entries = manifest["cells"]
    ids = [e["id"] for e in entries]
    scan = store.scan(ids)
    by_id = {e["id"]: e for e in entries}
    known = set(ids)
    foreign = []
    if store.cells.is_dir():
        foreign = sorted(
            p.name
            for p in store.cells.iterdir()
            if not p.name.startswith(".") and p.name not in known and store.read(p.name)
        )
    live, stale = store.writers()
    try:
        rows: int | None = len(store.read_summary())
    except Exception:
        rows = None
    return SweepStatus(
        name=manifest.get("name", ""),
        cells=len(ids),
        done=[scan.done[i] for i in ids if i in scan.done],
        failed=[scan.failed[i] for i in ids if i in scan.failed],
        pending=[by_id[i] for i in scan.pending],
        running=[(cid, pid, host) for _p, cid, pid, host in live],
        foreign=foreign,
        summary_rows=rows,
        entries=entries,
        abandoned=[(cid, pid, host) for _p, cid, pid, host in stale],
    )
