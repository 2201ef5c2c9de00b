"""Where cells run: local processes (default) or a Dask distributed cluster.

An executor takes the cells to run and yields ``(cell, record)`` as cells finish, in any
order. The record is what :func:`hpcdispatch.sweep.cell.run_cell` returned, or, when the
worker itself died (a crash, the out-of-memory killer, a lost Dask worker), a failure record
built here.

- :class:`LocalExecutor`: a pool of ``workers`` processes (``spawn``; default: every core this
  process may use). When a worker process dies, the cells that were in the pool at that moment
  are run again one at a time, each in a fresh single-process pool, so the crash is pinned on
  the cell that caused it (recorded as failed) and the others finish normally. Workers exit
  when the sweep process disappears (SIGKILL included).
- :class:`DaskExecutor`: an existing scheduler (``tcp://host:8786``), a
  ``distributed.Client`` you built (e.g. on a ``dask_jobqueue.SLURMCluster``), or a
  ``LocalCluster`` it starts and stops (``local:N``). Nothing else: no home-made protocol.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Protocol

from hpcdispatch._util import available_cores
from hpcdispatch.errors import ConfigError
from hpcdispatch.sweep.cell import run_cell
from hpcdispatch.sweep.spec import Cell
from hpcdispatch.sweep.store import RECORD, read_record, worker_tag

CellRecord = dict[str, Any]


class Executor(Protocol):
    description: str

    def run(
        self, cells: list[Cell], out_root: Path, replace_failed: bool
    ) -> Iterator[tuple[Cell, CellRecord]]: ...

    def close(self) -> None: ...


def worker_died_record(cell: Cell, out_root: Path, message: str) -> CellRecord:
    """Write and return a failure record for a cell whose worker process died."""
    from hpcdispatch.results.store import write_json
    from hpcdispatch.sweep.store import CELLS, publish, temp_dir_name

    cells = Path(out_root) / CELLS
    tmp = cells / temp_dir_name(cell.id)
    tmp.mkdir(parents=True)
    record = {
        "id": cell.id,
        "status": "failed",
        "labels": cell.labels,
        "config": cell.config,
        "summary": None,
        "error": {"type": "WorkerDied", "message": message, "traceback": ""},
        "files": [],
        "worker": worker_tag(),
        "started_at": None,
        "finished_at": None,
        "cell_wall_s": None,
    }
    write_json(tmp / RECORD, record)
    return publish(tmp, cells / cell.id, replace_failed=True)


# ---------------------------------------------------------------------------------------
# local processes
# ---------------------------------------------------------------------------------------


def _watch_parent(parent: int) -> None:
    import time

    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)  # the sweep process is gone: do not live on as an orphan


def _worker_init(parent: int) -> None:
    # Ctrl-C and SIGTERM (to the whole process group too) are the sweep process's business:
    # it stops, and ends its workers itself (close)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="parent-watch").start()


class LocalExecutor:
    """Runs cells in local worker processes (one per available core unless told)."""

    def __init__(self, workers: int | None = None):
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {workers}")
        self.workers = workers or available_cores()
        self.description = f"{self.workers} local process{'es' if self.workers > 1 else ''}"
        self._pools: list[ProcessPoolExecutor] = []

    def _pool(self, workers: int) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        self._pools.append(pool)
        return pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        pool.shutdown(wait=False, cancel_futures=True)
        if pool in self._pools:
            self._pools.remove(pool)

    def run(
        self, cells: list[Cell], out_root: Path, replace_failed: bool
    ) -> Iterator[tuple[Cell, CellRecord]]:
        todo = list(reversed(cells))  # pop() from the end keeps the spec order
        window = 2 * self.workers
        # a cell validates beside its writing only on a core no other worker uses (results.store)
        beside = self.workers < available_cores()
        pool = self._pool(self.workers)
        running: dict[Future[CellRecord], Cell] = {}
        empty_breaks = 0
        try:
            while todo or running:
                broken = False
                while todo and len(running) < window:
                    try:
                        fut = pool.submit(run_cell, todo[-1], str(out_root), replace_failed, beside)
                    except BrokenProcessPool:  # a worker died since the last look
                        broken = True
                        break
                    running[fut] = todo.pop()
                if not broken:
                    finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for fut in finished:
                        try:
                            record = fut.result()
                        except BrokenProcessPool:
                            broken = True
                            continue
                        yield running.pop(fut), record
                if broken:
                    # every cell still in the pool is a suspect: which one killed the worker is unknown
                    suspects = list(running.values())
                    running.clear()
                    self._drop(pool)
                    empty_breaks = 0 if suspects else empty_breaks + 1
                    if empty_breaks > 1:
                        raise RuntimeError("the local worker processes die before running any cell")
                    yield from self._run_alone(suspects, out_root, replace_failed)
                    if todo:
                        pool = self._pool(self.workers)
        finally:
            self.close()

    def _run_alone(
        self, cells: list[Cell], out_root: Path, replace_failed: bool
    ) -> Iterator[tuple[Cell, CellRecord]]:
        """One cell at a time in a single-process pool: a worker death names its cell."""
        pool: ProcessPoolExecutor | None = None
        try:
            for cell in cells:
                pool = pool or self._pool(1)
                try:
                    record = pool.submit(
                        run_cell, cell, str(out_root), replace_failed, None
                    ).result()
                except BrokenProcessPool:
                    self._drop(pool)
                    pool = None
                    record = worker_died_record(
                        cell,
                        out_root,
                        "the worker process died while running this cell "
                        "alone (crash, out of memory or killed)",
                    )
                yield cell, record
        finally:
            if pool is not None:
                self._drop(pool)

    def close(self) -> None:
        for pool in list(self._pools):
            procs = list(getattr(pool, "_processes", {}).values())  # stop running cells now
            pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                if p.is_alive():
                    p.kill()  # (a worker ignores SIGTERM; a cell is published whole or not)
            for p in procs:
                p.join(timeout=5)
        self._pools.clear()


# ---------------------------------------------------------------------------------------
# Dask
# ---------------------------------------------------------------------------------------


def _dask_task(
    cell: Cell, out_root: str, replace_failed: bool, beside: bool | None = None
) -> CellRecord:
    return run_cell(cell, out_root, replace_failed, beside)


class DaskExecutor:
    """Cells as Dask tasks: ``address`` is ``tcp://...`` or ``local:N``; or pass a ``client``."""

    def __init__(self, address: str | None = None, client: Any = None):
        try:
            import distributed
        except ImportError as exc:  # pragma: no cover - a project dependency
            raise ConfigError(f"--dask needs the 'distributed' package: {exc}") from None
        self._cluster = None
        self._own_client = client is None
        # a cell validates beside its writing only on a spare core: decided on the worker (its
        # affinity) for a remote cluster, here for a local one (its workers share these cores)
        self._beside: bool | None = None
        if client is not None:
            self.client = client
            self.description = f"Dask client {client.scheduler.address}"
        elif address is not None and address.startswith("local:"):
            n = address.partition(":")[2]
            if not n.isdigit() or int(n) < 1:
                raise ConfigError(
                    f"--dask local:N needs a positive number of workers, got '{address}'"
                )
            self._cluster = distributed.LocalCluster(
                n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = distributed.Client(self._cluster)
            self.description = f"Dask LocalCluster of {n} workers"
            self._beside = int(n) < available_cores()
        elif address:
            try:
                self.client = distributed.Client(address, timeout="20s")
            except (OSError, TimeoutError, ValueError) as exc:  # ValueError: not an address at all
                raise ConfigError(
                    f"cannot reach the Dask scheduler at '{address}' (tcp://HOST:PORT or local:N): "
                    f"{exc}"
                ) from None
            self.description = f"Dask scheduler {address}"
        else:
            raise ConfigError(
                "DaskExecutor needs an address (tcp://host:port or local:N) or a client"
            )

    def run(
        self, cells: list[Cell], out_root: Path, replace_failed: bool
    ) -> Iterator[tuple[Cell, CellRecord]]:
        from distributed import as_completed

        futures = {}
        for cell in cells:
            fut = self.client.submit(
                _dask_task,
                cell,
                str(out_root),
                replace_failed,
                self._beside,
                key=f"hpcdispatch-cell-{cell.id}-{uuid.uuid4().hex[:8]}",
                pure=False,
            )
            futures[fut] = cell
        try:
            for fut in as_completed(futures):
                cell = futures[fut]
                try:
                    record = fut.result()
                except Exception as exc:  # the task did not return: its worker was lost
                    record = worker_died_record(
                        cell, out_root, f"the Dask task failed: {type(exc).__name__}: {exc}"
                    )
                else:
                    if read_record(Path(out_root) / "cells" / cell.id) is None:
                        raise ConfigError(
                            f"cell {cell.id} finished on worker {record.get('worker')} but its directory is not "
                            f"visible under {out_root}: the output directory must be on a file system shared "
                            "by the Dask workers and this process"
                        )
                yield cell, record
        finally:
            for fut in futures:
                fut.cancel()

    def close(self) -> None:
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def make_executor(
    workers: int | None = None, dask: str | None = None
) -> LocalExecutor | DaskExecutor:
    """Local processes (``workers``) or a Dask scheduler (``dask``), never both."""
    if dask is not None and workers is not None:
        raise ConfigError("give either --workers (local processes) or --dask, not both")
    if dask is not None:
        return DaskExecutor(dask)
    return LocalExecutor(workers)
