"""A Eurora-like workload (``synthetic:eurora,...``), for the ``eurora`` preset.

CP'19 (sec. 5) and PCP'20 (sec. 4) ran their dispatchers on CINECA's Eurora: 64 nodes with
2 octa-core CPUs (16 cores) and 16 GB, 32 of them with 2 GPUs and 32 with 2 MICs; over 400,000
jobs from March 2014 to August 2015 submitted to four queues, 93.14 % short (< 1 h), 6.10 %
medium (1-5 h), 0.75 % long (> 5 h). The trace is not public, so the rest is taken from
archive traces (statistics by ``benchmarks/kit_eurora_stats.py``) -- SDSC Blue Horizon
(``SDSC-BLUE-2000-4.2-cln.swf.gz``, 1,152 cores, the archive machine closest to Eurora's
1,024) and CEA Curie (``CEA-Curie-2011-2.1-cln.swf.gz``, 16-core nodes like Eurora's) -- or is
a stated assumption. Each job has ``rn`` identical units asking for cores, memory and
possibly GPUs or MICs (the papers' ``req_{i,r} / rn_i``). The choices, one by one, are in the docs page below.

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

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

_MEM_PER_CORE = 1024  # MiB
_BLUE_RUN_CLASSES = ((5.24, 1.36), (8.90, 0.43), (10.63, 0.55))  # (mu, sigma) of log run time
_BLUE_UNIT_SHARES = (0.502, 0.159, 0.125, 0.131, 0.040, 0.044)  # 1, 2-3, 4-7, 8-15, 16-31, 32
_BLUE_POW2_SHARE = 0.926
_CURIE_CORE_SHARES = (0.458, 0.126, 0.075, 0.164, 0.177)  # 1, 2-3, 4-7, 8-15, 16
_CURIE_POW2_SHARE = 0.796
_QUEUES = {0: "debug", 1: "parallel", 2: "longpar", 3: "reservation"}
_QUEUE_WALL_MAX = (1800, 21600)  # debug, parallel; longer: longpar
_QUEUE_EWT = {0: 1800.0, 1: 7200.0, 2: 21600.0, 3: 600.0}


@dataclass(frozen=True)
class EuroraSpec:
    """Parameters of ``synthetic:eurora`` (keys of the spec string, same names)."""

    jobs: int = 2000
    seed: int = 1
    load: float | None = None
    interarrival: float = 118.0
    short_share: float = 0.9314
    medium_share: float = 0.0610
    long_share: float = 0.0075
    gpu_share: float = 0.20
    mic_share: float = 0.10
    reservation_share: float = 0.02
    max_units: int = 32
    max_walltime: int = 86400
    p_max_walltime: float = 0.15
    overestimate_max: float = 10.0

    def __post_init__(self) -> None:
        where = "synthetic:eurora"
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
        for name in ("gpu_share", "mic_share", "reservation_share"):
            check_share(name, getattr(self, name), where)
        if self.gpu_share + self.mic_share > 1:
            raise ConfigError(
                f"{where}: gpu_share + mic_share must be <= 1, got {self.gpu_share + self.mic_share:g}"
            )
        if not 1 <= self.max_units <= 32:
            raise ConfigError(
                f"{where}: max_units must be in [1, 32] (32 nodes of each kind), got {self.max_units}"
            )


def _eurora_columns(
    spec: EuroraSpec, resources: tuple[str, ...], total_cores: int
) -> dict[str, np.ndarray]:
    """The generated jobs as columns (before the fit check and sorting); ``load`` is relative
    to ``total_cores``."""
    rng = np.random.default_rng([spec.seed, 36, 3])
    n = spec.jobs
    run = class_run_times(rng, spec, _BLUE_RUN_CLASSES)
    top_class = int(np.floor(np.log2(spec.max_units)))
    shares = np.array(_BLUE_UNIT_SHARES[: top_class + 1], dtype=np.float64)
    shares[-1] += sum(_BLUE_UNIT_SHARES[top_class + 1 :])
    units = draw_log2_sizes(rng, n, shares, _BLUE_POW2_SHARE, spec.max_units)
    cores = draw_log2_sizes(rng, n, _CURIE_CORE_SHARES, _CURIE_POW2_SHARE, 16)
    kind = rng.random(n)
    accel = rng.integers(1, 3, size=n)  # 1 or 2 accelerators per unit
    core_col, mem_col, gpu_col, mic_col = (
        resources.index(r) for r in ("core", "mem", "gpu", "mic")
    )
    unit_req = np.zeros((n, len(resources)), dtype=np.int64)
    unit_req[:, core_col] = cores
    unit_req[:, mem_col] = cores * _MEM_PER_CORE
    gpu = kind < spec.gpu_share
    mic = (kind >= spec.gpu_share) & (kind < spec.gpu_share + spec.mic_share)
    unit_req[gpu, gpu_col] = accel[gpu]
    unit_req[mic, mic_col] = accel[mic]
    submit = poisson_submits(rng, n, spec.interarrival)
    submit = apply_load(submit, units * cores * run, total_cores, spec.load)
    wall_rng = np.random.default_rng([spec.seed, 36, 4])
    wall = walltime_estimates(
        run, wall_rng, spec.max_walltime, spec.p_max_walltime, spec.overestimate_max
    )
    queue = np.where(wall <= _QUEUE_WALL_MAX[0], 0, np.where(wall <= _QUEUE_WALL_MAX[1], 1, 2))
    queue = np.where(wall_rng.random(n) < spec.reservation_share, 3, queue)
    return {
        "submit": submit,
        "run_time": run,
        "wall_time": wall,
        "units": units.astype(np.int64),
        "unit_request": unit_req,
        "processors": (units * cores).astype(np.int64),
        "queue": queue.astype(np.int64),
    }


def _eurora_workload(system: System, spec: EuroraSpec, spec_string: str | None = None) -> Workload:
    """A Eurora-like workload on ``system`` (needs resources core, mem, gpu, mic; sized for
    the ``eurora`` preset: on a smaller system, jobs that do not fit are skipped)."""
    missing = [r for r in ("core", "mem", "gpu", "mic") if r not in system.resources]
    if missing:
        raise ConfigError(
            f"synthetic:eurora needs a system with resources core, mem, gpu and mic "
            f"(system '{system.name}' lacks {missing}; use --system eurora)"
        )
    cols = _eurora_columns(
        spec, tuple(system.resources), int(system.total_capacity[system.resource_index("core")])
    )
    load = f",load={spec.load:g}" if spec.load is not None else ""
    return columns_to_workload(
        system,
        cols,
        spec_string or f"synthetic:eurora,jobs={spec.jobs},seed={spec.seed}{load}",
        _QUEUES,
        _QUEUE_EWT,
    )
