"""What the KIT-like and Eurora-like generators share: run times drawn by duration class,
sizes drawn by log2 class, Poisson arrivals, the ``load`` knob and the columns -> Workload step.

The CP papers (CP'19 sec. 5, PCP'20 sec. 4) describe their workloads by the share of *short*
(< 1 h), *medium* (1-5 h) and *long* (> 5 h) jobs. A run time is drawn in two steps: its class
with those shares, then ``exp(N(mu, sigma))`` truncated to the class's bounds (redrawn until
inside), with ``mu, sigma`` the mean and standard deviation of the log run times of that class
in an archive trace (each generator says which). Sizes are drawn the same way: a log2 class
``[2^k, 2^(k+1))`` with the trace's share, then its lower end (a power of two) with the trace's
power-of-two share, else a uniform integer of the class.

Arrivals are a Poisson process (exponential inter-arrival times with the mean the paper's
job count and period give); the daily cycle is left out. ``load=x`` rescales all submission
times so that the offered core load ``sum(cores x run) / (system cores x span)`` is ``x``,
as ``synthetic:lublin`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpcdispatch._util import gc_paused
from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource, make_job
from hpcdispatch.workload.swf import fits_empty_system

SHORT_MAX = 3600  # s: "short" jobs run under 1 h (CP'19, PCP'20)
MEDIUM_MAX = 5 * 3600  # s: "medium" 1-5 h, "long" over 5 h (CP'19 sec. 5)


@dataclass(frozen=True)
class LogNormalClass:
    """Run times of one duration class: ``exp(N(mu, sigma))`` within ``[low, high)`` seconds."""

    low: float
    high: float
    mu: float
    sigma: float


def class_bounds(max_run: int) -> tuple[tuple[float, float], ...]:
    """``[low, high)`` of the short, medium and long classes; long ends at ``max_run``."""
    return ((1.0, SHORT_MAX), (SHORT_MAX, MEDIUM_MAX), (MEDIUM_MAX, float(max_run) + 1.0))


def draw_run_times(
    rng: np.random.Generator, n: int, shares: Sequence[float], classes: Sequence[LogNormalClass]
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` run times (whole seconds >= 1) and their class (0 short, 1 medium, 2 long)."""
    p = np.asarray(shares, dtype=np.float64)
    cls = rng.choice(len(classes), size=n, p=p / p.sum())
    run = np.zeros(n)
    for c, spec in enumerate(classes):
        todo = np.flatnonzero(cls == c)
        while len(todo):
            value = np.exp(rng.normal(spec.mu, spec.sigma, size=len(todo)))
            ok = (value >= spec.low) & (value < spec.high)
            run[todo[ok]] = value[ok]
            todo = todo[~ok]
    out = np.floor(run).astype(np.int64)
    # flooring may move a value just under a class's lower bound below it: keep the class
    lows = np.array([s.low for s in classes])[cls]
    return np.maximum(out, np.ceil(lows).astype(np.int64)), cls


def draw_log2_sizes(
    rng: np.random.Generator, n: int, shares: Sequence[float], pow2_share: float, top: int
) -> np.ndarray:
    """``n`` sizes: class ``k`` (``[2^k, 2^(k+1))``, the last one cut at ``top``) with
    ``shares[k]``; the class's power of two with probability ``pow2_share``, else uniform."""
    p = np.asarray(shares, dtype=np.float64)
    k = rng.choice(len(p), size=n, p=p / p.sum())
    low = np.left_shift(1, k).astype(np.int64)
    high = np.minimum(np.left_shift(1, k + 1) - 1, top).astype(np.int64)
    uniform = low + np.floor(rng.random(n) * (high - low + 1)).astype(np.int64)
    sizes = np.where(rng.random(n) < pow2_share, low, uniform)
    return np.minimum(sizes, top)


def poisson_submits(rng: np.random.Generator, n: int, mean_interarrival: float) -> np.ndarray:
    """Submission times (float seconds, the first at 0) of a Poisson process."""
    gaps = rng.exponential(mean_interarrival, size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def apply_load(
    submit: np.ndarray, core_seconds: np.ndarray, cores: int, load: float | None
) -> np.ndarray:
    """Whole-second submission times, rescaled so that the offered core load is ``load``
    (unchanged when ``load`` is None)."""
    if load is not None and len(submit) > 1:
        span = max(float(submit[-1] - submit[0]), 1.0)
        offered = float(core_seconds.sum()) / (cores * span)
        submit = (submit - submit[0]) * offered / load
    return np.floor(submit).astype(np.int64)


def check_share(name: str, value: float, where: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where}: {name} must be in [0, 1], got {value}")


def check_common(
    where: str,
    jobs: int,
    load: float | None,
    interarrival: float,
    p_max_walltime: float,
    overestimate_max: float,
    shares: Sequence[float],
    max_walltime: int,
) -> None:
    """The checks every generator's parameter dataclass makes (one-line ConfigErrors)."""
    if max_walltime <= 5 * 3600:
        raise ConfigError(
            f"{where}: max_walltime must exceed 5 h (18000 s) for long jobs, got {max_walltime}"
        )
    if jobs <= 0:
        raise ConfigError(f"{where}: jobs must be positive, got {jobs}")
    if load is not None and not (0 < load < 100):
        raise ConfigError(f"{where}: load must be in (0, 100), got {load}")
    if not interarrival > 0:
        raise ConfigError(f"{where}: interarrival must be > 0 seconds, got {interarrival}")
    check_share("p_max_walltime", p_max_walltime, where)
    if overestimate_max < 1:
        raise ConfigError(f"{where}: overestimate_max must be >= 1, got {overestimate_max}")
    for name, value in zip(("short_share", "medium_share", "long_share"), shares):
        check_share(name, value, where)
    if sum(shares) <= 0:
        raise ConfigError(f"{where}: the short, medium and long shares sum to 0")


def columns_to_workload(
    system: System,
    cols: dict[str, np.ndarray],
    spec_string: str,
    queue_names: dict[int, str],
    queue_ewt: dict[int, float] | None = None,
) -> Workload:
    """A :class:`Workload` from generated columns (``submit``, ``run_time``, ``wall_time``,
    ``units``, ``unit_request`` (n x resources), ``processors``, ``queue``). A job that does
    not fit the empty system is skipped and counted (``too-big``); the generators draw none."""
    n = len(cols["submit"])
    units, unit_req = cols["units"], cols["unit_request"]
    fits = fits_empty_system(units, unit_req, system)
    report = SkipReport(total_records=n)
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
                    int(cols["wall_time"][i]),
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
    source = WorkloadSource(kind="synthetic", spec=spec_string, options={})
    return Workload(
        jobs,
        system.resources,
        source=source,
        report=report,
        queue_names=queue_names,
        queue_ewt=queue_ewt,
    )


def class_run_times(
    rng: np.random.Generator, spec: Any, class_params: Sequence[tuple[float, float]]
) -> np.ndarray:
    """``spec.jobs`` run times: a short, medium or long class by ``spec``'s shares, then a
    log-normal within the class (``class_params``: (mu, sigma) per class, bounds from
    :func:`class_bounds` of ``spec.max_walltime``)."""
    classes = [
        LogNormalClass(lo, hi, mu, sd)
        for (lo, hi), (mu, sd) in zip(class_bounds(spec.max_walltime), class_params)
    ]
    run, _ = draw_run_times(
        rng, spec.jobs, (spec.short_share, spec.medium_share, spec.long_share), classes
    )
    return run
