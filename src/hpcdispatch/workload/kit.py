"""A KIT ForHLR II-like workload (``synthetic:kit,...``), for the ``kit-forhlr2`` preset.

PCP'20 (sec. 4, Table 1, Fig. 4) ran its dispatchers on KIT ForHLR II: 1,152 thin nodes
(20 cores, 64 GiB) and 21 fat nodes (48 cores, 4 GPUs, 1 TiB), 24,048 cores in all; 114,355
jobs from June 2016 to January 2018, 66.26 % of them short (< 1 h). Only the trace's header is
public, so everything else is taken from the largest archive trace we have, CEA Curie
(``CEA-Curie-2011-2.1-cln.swf.gz``: 93,312 cores, 16-core thin nodes; statistics by
``benchmarks/kit_eurora_stats.py``), or is a stated assumption. The choices, one by one, are in the docs page below.

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import System
from hpcdispatch.workload._synthetic_parts import (
    apply_load,
    check_common,
    check_share,
    class_run_times,
    columns_to_workload,
    draw_log2_sizes,
    poisson_submits,
)
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.lublin import walltime_estimates

_THIN_CORES = 20
_THIN_MEM_PER_CORE = 3072  # MiB: 60 GiB of a thin node's 64 GiB for 20 cores
_GPU_UNIT = (12, 262144, 1)  # cores, MiB, GPUs: a quarter of a fat node
# Curie, log2 classes of cores (1, 2-3, 4-7, ...); the last one is 4,096 and more
_CURIE_CORE_SHARES = (
    0.208,
    0.057,
    0.034,
    0.075,
    0.098,
    0.096,
    0.078,
    0.106,
    0.090,
    0.071,
    0.031,
    0.019,
    0.038,
)
_CURIE_POW2_SHARE = 0.796
_CURIE_RUN_CLASSES = ((4.08, 2.27), (8.98, 0.48), (10.80, 0.52))  # (mu, sigma) of log run time
_GPU_UNITS = (1, 2, 4, 8, 16)
_GPU_UNIT_SHARES = (0.40, 0.20, 0.30, 0.07, 0.03)
_QUEUES = {0: "singlenode", 1: "multinode", 2: "fat"}


@dataclass(frozen=True)
class KitSpec:
    """Parameters of ``synthetic:kit`` (keys of the spec string, same names)."""

    jobs: int = 2000
    seed: int = 1
    load: float | None = None
    interarrival: float = 460.0
    short_share: float = 0.6626
    medium_share: float = 0.1707
    long_share: float = 0.1667
    gpu_share: float = 0.04
    max_nodes: int = 256
    max_walltime: int = 259200
    p_max_walltime: float = 0.15
    overestimate_max: float = 10.0

    def __post_init__(self) -> None:
        where = "synthetic:kit"
        check_common(
            where,
            self.jobs,
            self.load,
            self.interarrival,
            self.p_max_walltime,
            self.overestimate_max,
            (self.short_share, self.medium_share, self.long_share),
            self.max_walltime,
        )
        check_share("gpu_share", self.gpu_share, where)
        if not 1 <= self.max_nodes <= 1152:
            raise ConfigError(f"{where}: max_nodes must be in [1, 1152], got {self.max_nodes}")


def _kit_columns(
    spec: KitSpec, resources: tuple[str, ...], total_cores: int
) -> dict[str, np.ndarray]:
    """The generated jobs as columns (before the fit check and sorting); ``load`` is relative
    to ``total_cores``."""
    rng = np.random.default_rng([spec.seed, 36, 1])
    n = spec.jobs
    run = class_run_times(rng, spec, _CURIE_RUN_CLASSES)
    top = spec.max_nodes * _THIN_CORES
    n_classes = max(1, int(math.floor(math.log2(top))) + 1)
    shares = np.array(_CURIE_CORE_SHARES[:n_classes], dtype=np.float64)
    if n_classes < len(_CURIE_CORE_SHARES):
        shares[-1] += sum(_CURIE_CORE_SHARES[n_classes:])
    cores = draw_log2_sizes(rng, n, shares, _CURIE_POW2_SHARE, top)
    gpu = rng.random(n) < spec.gpu_share
    gpu_units = rng.choice(
        _GPU_UNITS, size=n, p=np.asarray(_GPU_UNIT_SHARES) / sum(_GPU_UNIT_SHARES)
    )
    core_col, mem_col, gpu_col = (resources.index(r) for r in ("core", "mem", "gpu"))
    unit_req = np.zeros((n, len(resources)), dtype=np.int64)
    single = cores <= _THIN_CORES
    units = np.where(single, 1, -(-cores // _THIN_CORES))
    per_unit_cores = np.where(single, cores, _THIN_CORES)
    unit_req[:, core_col] = per_unit_cores
    unit_req[:, mem_col] = per_unit_cores * _THIN_MEM_PER_CORE
    queue = np.where(single, 0, 1)
    units = np.where(gpu, gpu_units, units)
    unit_req[gpu] = 0
    unit_req[gpu, core_col], unit_req[gpu, mem_col], unit_req[gpu, gpu_col] = _GPU_UNIT
    queue = np.where(gpu, 2, queue)
    processors = np.where(gpu, units * _GPU_UNIT[0], cores)
    submit = poisson_submits(rng, n, spec.interarrival)
    held_cores = units * unit_req[:, core_col]
    submit = apply_load(submit, held_cores * run, total_cores, spec.load)
    wall = walltime_estimates(
        run,
        np.random.default_rng([spec.seed, 36, 2]),
        spec.max_walltime,
        spec.p_max_walltime,
        spec.overestimate_max,
    )
    return {
        "submit": submit,
        "run_time": run,
        "wall_time": wall,
        "units": units.astype(np.int64),
        "unit_request": unit_req,
        "processors": processors.astype(np.int64),
        "queue": queue.astype(np.int64),
    }


def _kit_workload(system: System, spec: KitSpec, spec_string: str | None = None) -> Workload:
    """A KIT ForHLR II-like workload on ``system`` (needs resources core, mem, gpu; sized
    for the ``kit-forhlr2`` preset: on a smaller system, jobs that do not fit are skipped)."""
    missing = [r for r in ("core", "mem", "gpu") if r not in system.resources]
    if missing:
        raise ConfigError(
            f"synthetic:kit needs a system with resources core, mem and gpu "
            f"(system '{system.name}' lacks {missing}; use --system kit-forhlr2)"
        )
    cols = _kit_columns(
        spec, tuple(system.resources), int(system.total_capacity[system.resource_index("core")])
    )
    load = f",load={spec.load:g}" if spec.load is not None else ""
    return columns_to_workload(
        system,
        cols,
        spec_string or f"synthetic:kit,jobs={spec.jobs},seed={spec.seed}{load}",
        _QUEUES,
    )
