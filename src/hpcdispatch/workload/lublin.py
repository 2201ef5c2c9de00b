"""Synthetic workloads from the Lublin-Feitelson model (JPDC 2003), seeded, no file needed.

The model (parameters from the authors' reference generator ``m_lublin99.c``):

- **Type**: interactive and batch jobs arrive as two independent streams; a job takes the
  type of the stream whose next arrival comes first (queue 0 = interactive, 1 = batch).
- **Arrivals**: inter-arrival times ``exp(g)``, ``g ~ Gamma(aarr * arar, barr)`` (the rush-hour
  rate), stretched by a **daily cycle**: the day has 48 half-hour buckets whose weights are
  ``F(i + 0.5) - F(i - 0.5)`` of ``Gamma(anum, bnum)`` for ``i`` in 11..58 moved cyclically
  (the cycle starts at 11:00), normalised to mean 1; a job "pays" the weights of the buckets
  it spans. Submission starts at midnight.
- **Size**: serial with probability ``serial_prob``; otherwise ``log2(size)`` follows a
  two-stage uniform ``U(ulow, umed)`` with probability ``uprob``, else ``U(umed, uhi)``; with
  probability ``pow2_prob`` it is rounded to a power of two. ``uhi = log2(P)`` for a system of
  ``P`` processors (interactive: ``uhi - 1.5``), ``umed = uhi - 2.5`` (batch) /
  ``uhi - 2.5`` capped at the interactive ``uhi`` (the generator's recommendation).
- **Run time**: ``exp(hg)`` with ``hg`` hyper-gamma: ``Gamma(a1, b1)`` with probability
  ``p = pa * size + pb`` (clipped to [0, 1]), else ``Gamma(a2, b2)``; values above
  ``exp(12)`` s (about 45 h) are redrawn.
- **Load**: ``load=x`` rescales all submit times so that the offered load
  sum(size x run) / (P x span) equals ``x`` (the model's own load is left as is otherwise).

Wall-times come from :func:`walltime_estimates` (documented there). Processor counts become
units with the same :class:`~hpcdispatch.workload.mapping.UnitMapping` as SWF traces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hpcdispatch._util import gc_paused
from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource, make_job
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.swf import fits_empty_system

_BUCKETS = 48
_SECONDS_IN_BUCKET = 86400 // _BUCKETS
_CYCLIC_DAY_START = 11
_TOO_MUCH_TIME = 12.0  # log of the longest run time (about 45 h)
_TOO_MUCH_ARRIVE_TIME = 13.0

# (interactive, batch) parameters of m_lublin99.c
_SERIAL_PROB = (0.1541, 0.2927)
_POW2_PROB = (0.625, 0.6686)
_ULOW = (1.0, 1.2)
_UPROB = (0.705, 0.875)
_A1 = (3.8351, 6.57)
_B1 = (0.6605, 0.823)
_A2 = (7.073, 639.1)
_B2 = (0.6856, 0.0156)
_PA = (-0.0118, -0.003)
_PB = (0.9156, 0.6986)
_AARR = (6.5510, 6.0415)
_BARR = (0.6621, 0.8531)
_ANUM = (8.9186, 6.1271)
_BNUM = (3.6680, 5.2740)
_ARAR = (0.9797, 1.0519)

# canonical wall-time values users pick (seconds): 5 min ... 48 h
_CANONICAL_WALLTIMES = np.array(
    [
        300,
        600,
        900,
        1200,
        1800,
        2700,
        3600,
        5400,
        7200,
        10800,
        14400,
        21600,
        28800,
        36000,
        43200,
        57600,
        64800,
        86400,
        108000,
        129600,
        172800,
    ],
    dtype=np.int64,
)


@dataclass(frozen=True)
class LublinSpec:
    """Parameters of ``synthetic:lublin`` (keys of the spec string, same names)."""

    jobs: int = 2000
    seed: int = 1
    load: float | None = None
    interactive: bool = True  # include the interactive stream
    max_walltime: int = 172800
    p_max_walltime: float = 0.15
    overestimate_max: float = 10.0
    units: UnitMapping = field(default_factory=UnitMapping)

    def __post_init__(self) -> None:
        if self.jobs <= 0:
            raise ConfigError(f"synthetic workload: jobs must be positive, got {self.jobs}")
        if self.load is not None and not (0 < self.load < 100):
            raise ConfigError(f"synthetic workload: load must be in (0, 100), got {self.load}")
        if not 0 <= self.p_max_walltime <= 1:
            raise ConfigError(
                f"synthetic workload: p_max_walltime must be in [0, 1], got {self.p_max_walltime}"
            )
        if self.overestimate_max < 1:
            raise ConfigError(
                f"synthetic workload: overestimate_max must be >= 1, got {self.overestimate_max}"
            )


def _bucket_weights(anum: float, bnum: float) -> np.ndarray:
    """Daily-cycle weights of the 48 buckets, normalised to mean 1 (``arrive_init``)."""
    from scipy.special import gammainc  # (here: a run of a trace never pays for importing scipy)

    weights = np.zeros(_BUCKETS)
    for i in range(_CYCLIC_DAY_START, _BUCKETS + _CYCLIC_DAY_START):
        idx = (i - 1) % _BUCKETS
        # Gamma(anum, scale=bnum) cdf: regularised lower incomplete gamma
        weights[idx] = gammainc(anum, (i + 0.5) / bnum) - gammainc(anum, (i - 0.5) / bnum)
    return weights / weights.mean()


class _ArrivalStream:
    """The stateful arrival process of one job type (``calc_next_arrive``)."""

    def __init__(self, rng: np.random.Generator, kind: int):
        self.rng = rng
        self.alpha = _AARR[kind] * _ARAR[kind]
        self.beta = _BARR[kind]
        self.weights = _bucket_weights(_ANUM[kind], _BNUM[kind])
        self.bucket = 0  # simulation starts at midnight
        self.points = 0.0
        self.reminder = 0.0
        self.time = 0.0
        self.advance()

    def advance(self) -> None:
        while True:
            gam = self.rng.gamma(self.alpha, self.beta)
            if gam <= _TOO_MUCH_ARRIVE_TIME:
                break
        self.points += math.exp(gam) / _SECONDS_IN_BUCKET
        next_arrive = 0.0
        bucket = self.bucket
        while self.points > self.weights[bucket]:
            self.points -= self.weights[bucket]
            bucket = (bucket + 1) % _BUCKETS
            next_arrive += _SECONDS_IN_BUCKET
        new_reminder = self.points / self.weights[bucket]
        next_arrive += _SECONDS_IN_BUCKET * (new_reminder - self.reminder)
        self.reminder = new_reminder
        self.time += next_arrive
        self.bucket = bucket


def _two_stage_uniform(
    rng: np.random.Generator, low: float, med: float, hi: float, prob: float
) -> float:
    if rng.random() <= prob:
        return rng.uniform(low, med)
    return rng.uniform(med, hi)


def lublin_jobs(spec: LublinSpec, processors: int) -> dict[str, np.ndarray]:
    """Draw ``spec.jobs`` jobs for a machine of ``processors`` processors: columns as arrays."""
    if processors < 1:
        raise ConfigError("synthetic workload: the system has no processors")
    rng = np.random.default_rng(spec.seed)
    uhi_batch = math.log2(processors)
    uhi_inter = max(uhi_batch - 1.5, 1.0)
    uhi = (uhi_inter, uhi_batch)
    umed = (min(max(uhi_batch - 2.5, _ULOW[0]), uhi_inter), max(uhi_batch - 2.5, _ULOW[1]))
    streams = [_ArrivalStream(rng, 0), _ArrivalStream(rng, 1)]
    n = spec.jobs
    submit = np.zeros(n)
    size = np.zeros(n, dtype=np.int64)
    run = np.zeros(n, dtype=np.int64)
    kind_col = np.zeros(n, dtype=np.int64)
    for i in range(n):
        kind = 1 if (not spec.interactive or streams[1].time < streams[0].time) else 0
        submit[i] = streams[kind].time
        streams[kind].advance()
        u = rng.random()
        if u <= _SERIAL_PROB[kind] or uhi[kind] <= _ULOW[kind]:
            nodes = 1
        else:
            par = _two_stage_uniform(rng, _ULOW[kind], umed[kind], uhi[kind], _UPROB[kind])
            if u <= _SERIAL_PROB[kind] + _POW2_PROB[kind]:
                par = float(int(par + 0.5))
            nodes = int(2.0**par + 0.5)
        nodes = max(1, min(nodes, processors))
        p = min(max(_PA[kind] * nodes + _PB[kind], 0.0), 1.0)
        while True:
            if rng.random() <= p:
                hg = rng.gamma(_A1[kind], _B1[kind])
            else:
                hg = rng.gamma(_A2[kind], _B2[kind])
            if hg <= _TOO_MUCH_TIME:
                break
        size[i] = nodes
        run[i] = max(1, int(math.exp(hg)))
        kind_col[i] = kind
    submit_int = np.floor(submit).astype(np.int64)
    if spec.load is not None:
        span = max(float(submit_int[-1] - submit_int[0]), 1.0)
        offered = float((size * run).sum()) / (processors * span)
        submit_int = np.floor((submit - submit[0]) * offered / spec.load).astype(np.int64)
    return {"submit": submit_int, "processors": size, "run_time": run, "queue": kind_col}


def walltime_estimates(
    run_time: np.ndarray,
    rng: np.random.Generator,
    max_walltime: int = 172800,
    p_max: float = 0.15,
    overestimate_max: float = 10.0,
) -> np.ndarray:
    """User wall-time requests for given run times (a documented over-estimation model).

    Follows the observations of Tsafrir, Etsion and Feitelson (2005) on user estimates:
    with probability ``p_max`` the user asks for the maximum (``max_walltime``); otherwise
    the run time is multiplied by a factor drawn log-uniformly from ``[1, overestimate_max]``
    and rounded *up* to the next canonical value (5, 10, 15, 20, 30, 45 min, 1, 1.5, 2, 3, 4,
    6, 8, 10, 12, 16, 18, 24, 30, 36, 48 h). The result is never below the run time (so
    synthetic jobs are not killed) and never above ``max_walltime`` unless the run time is.
    """
    run = np.asarray(run_time, dtype=np.int64)
    factor = np.exp(rng.uniform(0.0, math.log(overestimate_max), size=run.shape))
    wanted = np.ceil(run * factor).astype(np.int64)
    canon = _CANONICAL_WALLTIMES[_CANONICAL_WALLTIMES <= max_walltime]
    idx = np.searchsorted(canon, wanted, side="left")
    rounded = np.where(idx < len(canon), canon[np.minimum(idx, len(canon) - 1)], max_walltime)
    use_max = rng.random(size=run.shape) < p_max
    wall = np.where(use_max, max_walltime, rounded)
    return np.maximum(wall, run)


def _lublin_workload(system: System, spec: LublinSpec, spec_string: str | None = None) -> Workload:
    """A Lublin-Feitelson workload mapped onto ``system`` (cores only)."""
    core_col = system.resource_index(spec.units.core_resource)
    processors = int(system.total_capacity[core_col])
    cols = lublin_jobs(spec, processors)
    wall = walltime_estimates(
        cols["run_time"],
        np.random.default_rng([spec.seed, 7919]),
        spec.max_walltime,
        spec.p_max_walltime,
        spec.overestimate_max,
    )
    units, per_unit = spec.units.map(cols["processors"], system)
    unit_req = np.zeros((spec.jobs, len(system.resources)), dtype=np.int64)
    unit_req[:, core_col] = per_unit
    fits = fits_empty_system(units, unit_req, system)
    report = SkipReport(total_records=spec.jobs)
    report.skip("too-big", (np.flatnonzero(~fits) + 1).tolist())
    keep = np.flatnonzero(fits)
    order = keep[np.argsort(cols["submit"][keep], kind="stable")]
    with gc_paused():
        jobs = [
            make_job(
                (
                    int(i) + 1,
                    int(cols["submit"][i]),
                    int(cols["run_time"][i]),
                    int(wall[i]),
                    int(units[i]),
                    tuple(int(x) for x in unit_req[i]),
                    -1,
                    -1,
                    int(cols["queue"][i]),
                    -1,
                    -1,
                    None,
                    int(cols["processors"][i]),
                    0,
                    None,
                    (),
                    0,
                    (),
                    False,
                    None,
                    None,
                    k,
                )
            )
            for k, i in enumerate(order.tolist())
        ]
        source = WorkloadSource(
            kind="synthetic",
            spec=spec_string or f"synthetic:lublin,jobs={spec.jobs},seed={spec.seed}",
            options={"units": spec.units.mode, "cores_per_unit_max": spec.units.cores_per_unit_max},
        )
        return Workload(
            jobs,
            system.resources,
            source=source,
            report=report,
            queue_names={0: "interactive", 1: "batch"},
        )
