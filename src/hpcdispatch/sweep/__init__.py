"""Experiment sweeps: a TOML spec expanded into cells, run locally or on Dask, resumable.

- :mod:`~hpcdispatch.sweep.spec`: the TOML schema, validation, cells and their stable ids;
- :mod:`~hpcdispatch.sweep.cell`: running one cell in a worker and publishing it atomically;
- :mod:`~hpcdispatch.sweep.store`: the output directory (its cells under ``CELLS``) and the
  Parquet summary;
- :mod:`~hpcdispatch.sweep.executors`: local processes or Dask;
- :mod:`~hpcdispatch.sweep.run`: :func:`run_sweep` and :func:`sweep_status`;
- :mod:`~hpcdispatch.plugins`: user modules that register dispatchers.
"""

from hpcdispatch.sweep.executors import DaskExecutor, LocalExecutor, make_executor
from hpcdispatch.sweep.run import SweepOutcome, SweepStatus, run_sweep, sweep_status
from hpcdispatch.sweep.spec import Cell, SweepSpec, SweepSpecError, cell_id, load_sweep, parse_sweep
from hpcdispatch.sweep.store import (
    CELLS,
    SweepStore,
    deterministic_columns,
    summary_frame,
    sweep_lock,
)

__all__ = [
    "CELLS",
    "Cell",
    "DaskExecutor",
    "LocalExecutor",
    "SweepOutcome",
    "SweepSpec",
    "SweepSpecError",
    "SweepStatus",
    "SweepStore",
    "cell_id",
    "deterministic_columns",
    "load_sweep",
    "make_executor",
    "parse_sweep",
    "run_sweep",
    "summary_frame",
    "sweep_lock",
    "sweep_status",
]
