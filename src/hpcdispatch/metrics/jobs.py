"""Per-job quality-of-service metrics.

- wait = start - submit
- run = end - start (what the job actually ran: its run time, or its wall-time when killed)
- turnaround = end - submit
- slowdown = turnaround / run
- bounded slowdown = max(1, turnaround / max(run, tau)), tau = 10 s by default

Workloads never contain jobs of zero run time (readers skip them), so ``run >= 1 s``; the
functions still guard the division with ``max(run, 1 s)`` so that a zero-length job gets a
ratio, never seconds.
"""

from __future__ import annotations

import numpy as np

BSLD_TAU = 10.0


def wait_times(submit: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Each job's wait: start - submit."""
    return start - submit


def slowdowns(submit: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each job's slowdown: (end - submit) / run time, run times under 1 s counted as 1 s."""
    run = np.maximum(end - start, 1.0)
    return (end - submit) / run


def bounded_slowdowns(
    submit: np.ndarray, start: np.ndarray, end: np.ndarray, tau: float = BSLD_TAU
) -> np.ndarray:
    """Each job's bounded slowdown: max(1, (end - submit) / max(run time, tau))."""
    run = np.maximum(end - start, tau)
    return np.maximum(1.0, (end - submit) / run)


def job_metrics(
    submit: np.ndarray, start: np.ndarray, end: np.ndarray, tau: float = BSLD_TAU
) -> dict[str, np.ndarray]:
    """All per-job metrics for the jobs that ran (NaN start/end rows are dropped)."""
    ran = ~np.isnan(start)
    s, b, e = submit[ran].astype(np.float64), start[ran], end[ran]
    return {
        "wait": wait_times(s, b),
        "run": e - b,
        "turnaround": e - s,
        "slowdown": slowdowns(s, b, e),
        "bounded_slowdown": bounded_slowdowns(s, b, e, tau),
    }
