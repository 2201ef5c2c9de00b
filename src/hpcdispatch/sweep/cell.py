"""Run one cell where a worker runs it (a local process or a Dask worker).

:func:`run_cell` never raises for a problem of the cell itself (bad trace, solver error,
invalid schedule, a bug in a dispatcher): it records the error in the cell's ``cell.json``
with status ``failed`` and returns the record. It writes into a temporary directory under
``OUT/cells`` and publishes it by renaming it (see :mod:`hpcdispatch.sweep.store`); the output
directory must therefore be visible to the workers (shared file system on a cluster).
"""

from __future__ import annotations

import shutil
import time
import traceback
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hpcdispatch._version import __version__
from hpcdispatch.errors import HpcDispatchError
from hpcdispatch.plugins import load_plugins
from hpcdispatch.results.store import write_json
from hpcdispatch.sweep.spec import Cell
from hpcdispatch.sweep.store import CELLS, RECORD, publish, read_record, temp_dir_name, worker_tag

# the last workloads loaded by this process: cells that share a workload (the dispatchers of
# one trace) do not read it again, and perturbed replicas of a trace (submit_jitter seeds) are
# made from one reading of it. Simulations do not modify a Workload.
_CACHE: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
_CACHE_SIZE = 4
_JITTER_KEYS = ("submit_jitter", "jitter_seed")


def _cached(key: tuple[str, str, str], make: Any) -> Any:
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = make()
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def _inputs(cell: Cell) -> tuple[Any, Any]:
    from dataclasses import replace

    from hpcdispatch.workload.loader import load_workload, resolve_system

    options = cell.swf_options()
    plain = {k: v for k, v in cell.swf.items() if k not in _JITTER_KEYS}

    def read() -> tuple[Any, Any]:
        system = resolve_system(cell.system_spec, cell.workload)
        return system, load_workload(
            cell.workload, system, replace(options, submit_jitter=0, jitter_seed=0)
        )

    system, workload = _cached(
        (cell.system_spec, cell.workload_spec, repr(sorted(plain.items()))), read
    )
    if options.submit_jitter:  # (as load_workload does: max_jobs first, then the jitter)
        workload = _cached(
            (cell.system_spec, cell.workload_spec, repr(sorted(cell.swf.items()))),
            lambda: workload.jittered(options.submit_jitter, options.jitter_seed),
        )
    if len(workload) == 0:
        why = "; ".join(line.strip() for line in workload.report.describe().splitlines())
        raise HpcDispatchError(
            f"workload {cell.workload_spec} has no job that can run on system {system.name} ({why})"
        )
    return system, workload


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def run_cell(
    cell: Cell, out_root: str | Path, replace_failed: bool = False, beside: bool | None = None
) -> dict[str, Any]:
    """Run ``cell``, write its directory under ``out_root/cells`` and return its record.
    ``beside``: validate on a second thread while the outputs are written (the executor says
    whether this worker has a core to itself for it; ``None``: when this process may use more
    than one core)."""
    from hpcdispatch.runner import run_simulation

    cells = Path(out_root) / CELLS
    cells.mkdir(parents=True, exist_ok=True)
    final = cells / cell.id
    existing = read_record(final)
    if existing is not None and (existing["status"] == "done" or not replace_failed):
        return existing  # finished meanwhile (e.g. by a worker of an earlier, killed run)
    tmp = cells / temp_dir_name(cell.id)
    tmp.mkdir()
    started_at = _now()
    t0 = time.perf_counter()
    status, error, summary = "done", None, None
    try:
        load_plugins(cell.plugins)
        system, workload = _inputs(cell)
        outcome = run_simulation(
            system,
            workload,
            cell.dispatcher,
            cell.predictor,
            cell.simulation_options(),
            out_dir=tmp,
            validate_beside=beside,
        )
        summary = outcome.summary
        if not outcome.validation.ok:
            status = "failed"
            error = {
                "type": "InvalidSchedule",
                "message": outcome.validation.describe(),
                "traceback": "",
            }
    except Exception as exc:  # recorded, never raised: one bad cell must not stop a sweep
        status = "failed"
        error = {
            "type": type(exc).__name__,
            "message": str(exc) or type(exc).__name__,
            "traceback": "" if isinstance(exc, HpcDispatchError) else traceback.format_exc(),
        }
        if summary is None:  # discard partial outputs of a run that did not finish
            for p in tmp.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    files = sorted(p.name for p in tmp.iterdir() if p.is_file())
    record = {
        "id": cell.id,
        "status": status,
        "labels": cell.labels,
        "config": cell.config,
        "summary": summary,
        "error": error,
        "files": [{"name": n, "bytes": (tmp / n).stat().st_size} for n in files],
        "worker": worker_tag(),
        "started_at": started_at,
        "finished_at": _now(),
        "cell_wall_s": time.perf_counter() - t0,
        "hpcdispatch_version": __version__,
    }
    write_json(tmp / RECORD, record)
    return publish(tmp, final, replace_failed)
