"""Job classes for per-class metrics: by run time and by size.

By run time, the classes of CP'19 (Galleguillos, Kiziltan, Sirbu, Babaoglu, CP 2019, Sect. 5,
"HPC System and its Workload Dataset", and its Fig. 4): *short* jobs run under 1 h, *medium*
jobs between 1 and 5 h, *long* jobs over 5 h. The paper gives no rule for the boundaries
themselves; here a job of exactly 1 h is medium and one of exactly 5 h is long
(``short: run < 3,600 s``, ``medium: 3,600 s <= run < 18,000 s``, ``long: run >= 18,000 s``).
The run time is the job's real run time from the workload (what it ran, or would have run
without a wall-time kill), so a job is in the same class for every dispatcher.

By size, in cores (the ``core`` resource, else the system's first resource; a job's request
is ``units x unit request``, per-node extras not counted): *1 core*; *<= 1 node*: more than one
core but no more than the largest node holds (it could run on one node); *> 1 node*: more
than the largest node holds (it must span nodes). These classes are ours, not a paper's.

A class no job falls in has no mean (NaN); reports leave it out rather than draw it empty.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOUR = 3600.0
SHORT_LIMIT_S = 1 * HOUR  # CP'19: short jobs run under 1 h
LONG_LIMIT_S = 5 * HOUR  # CP'19: medium jobs run between 1 and 5 h, long jobs over 5 h

RUN_TIME_CLASSES = ("short (< 1 h)", "medium (1-5 h)", "long (>= 5 h)")
SIZE_CLASSES = ("1 core", "<= 1 node", "> 1 node")


@dataclass(frozen=True)
class JobClasses:
    """``names[code[i]]`` is the class of job ``i``."""

    title: str
    names: tuple[str, ...]
    code: np.ndarray  # int per job, index into names

    def counts(self) -> np.ndarray:
        return np.bincount(self.code, minlength=len(self.names))


def run_time_classes(run_time: np.ndarray) -> JobClasses:
    """CP'19's short / medium / long by real run time [s]."""
    r = np.asarray(run_time, dtype=np.float64)
    code = np.where(r < SHORT_LIMIT_S, 0, np.where(r < LONG_LIMIT_S, 1, 2))
    return JobClasses("run time", RUN_TIME_CLASSES, code.astype(np.int64))


def size_classes(cores: np.ndarray, cores_per_node: float) -> JobClasses:
    """1 core / <= 1 node / > 1 node by requested cores; ``cores_per_node``: the largest node's."""
    c = np.asarray(cores, dtype=np.float64)
    code = np.where(c <= 1, 0, np.where(c <= cores_per_node, 1, 2))
    return JobClasses("size", SIZE_CLASSES, code.astype(np.int64))


def class_means(values: np.ndarray, classes: JobClasses) -> np.ndarray:
    """Mean of ``values`` per class (NaN for an empty class)."""
    v = np.asarray(values, dtype=np.float64)
    n = classes.counts()
    total = np.bincount(classes.code, weights=v, minlength=len(classes.names))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


__all__ = [
    "LONG_LIMIT_S",
    "RUN_TIME_CLASSES",
    "SHORT_LIMIT_S",
    "SIZE_CLASSES",
    "JobClasses",
    "class_means",
    "run_time_classes",
    "size_classes",
]
