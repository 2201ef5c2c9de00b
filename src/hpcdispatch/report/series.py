"""Time series of a run for the reports: resource usage and queue length as step functions,
and their time-weighted means over bins (what a figure of several dispatchers on one time
axis draws: a step function with thousands of steps per dispatcher hides the others).

A step function is ``(times, values)``: ``values[i]`` holds on ``[times[i], times[i + 1])``,
0 before ``times[0]`` and ``values[-1]`` after the last time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def usage_over_time(
    alloc: Mapping[str, Any], resource: str, capacity: float
) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the share of ``resource`` in use: ``(times, share from each time on)``.

    ``alloc``: the allocation rows (a DataFrame or a mapping of columns ``from``, ``to`` and
    ``resource``: the amount held during ``[from, to)``); at equal times ends are applied
    before starts, so the value after each time is exact.
    """
    if len(alloc["from"]) == 0 or capacity <= 0:
        return np.zeros(0), np.zeros(0)
    amount = np.asarray(alloc[resource], dtype=float)
    times = np.r_[np.asarray(alloc["from"], dtype=float), np.asarray(alloc["to"], dtype=float)]
    delta = np.r_[amount, -amount]
    order = np.lexsort((delta, times))
    times, delta = times[order], delta[order]
    used = np.cumsum(delta)
    last = np.r_[times[1:] != times[:-1], True]
    return times[last], np.maximum(used[last], 0.0) / capacity


def step_integral(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The integral of the step function from -inf to each of ``at``."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    x = np.asarray(at, dtype=float)
    if len(t) == 0:
        return np.zeros(len(x))
    area = np.r_[0.0, np.cumsum(v[:-1] * np.diff(t))]  # integral up to times[i]
    j = np.searchsorted(t, x, side="right") - 1
    inside = j >= 0
    jj = np.maximum(j, 0)
    return np.where(inside, area[jj] + v[jj] * (x - t[jj]), 0.0)


def binned_means(times: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean of the step function over each bin ``[edges[k], edges[k + 1])``."""
    e = np.asarray(edges, dtype=float)
    widths = np.diff(e)
    integral = step_integral(times, values, e)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(widths > 0, np.diff(integral) / np.where(widths > 0, widths, 1.0), np.nan)


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit a time axis of ``span_s`` seconds reads best in: ``(name, seconds per unit)``."""
    if span_s >= 3 * 86400:
        return "days", 86400.0
    if span_s >= 3 * 3600:
        return "h", 3600.0
    if span_s >= 180:
        return "min", 60.0
    return "s", 1.0


def duration_text(seconds: float) -> str:
    """A duration in the largest unit it reaches: ``2.06 h``, ``45 min``, ``1.5 days``."""
    for name, per in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= per:
            return f"{seconds / per:.3g} {name}"
    return f"{seconds:.3g} s"


__all__ = ["binned_means", "duration_text", "step_integral", "time_unit", "usage_over_time"]
