"""Slurm job priorities, shared by SLURM/BF and AUCSCHED (``priority=`` option of both).

The AUCSCHED plug-in (``sched/aucsched``, Soner and Özturan's sources) copies each job's
Slurm priority into the program, ``P_j = job_ptr->priority``, takes the window from the
queue sorted by that priority (``sort_job_queue2``: priority descending, then job id) and
sets ``alpha = P_min / (|B| + 1)``. The paper does not say which priority plugin its
emulated Slurm used. The modes:

- ``basic`` -- Slurm's ``priority/basic`` (FIFO; ``PriorityType``'s default in the Slurm 2.x
  releases the paper used): every submitted job gets the previous job's priority minus 1,
  starting below ``TOP_PRIORITY = 0xffff0000``, and keeps it. Here job ``k`` of the
  workload (0-based submission order) has ``P = TOP_PRIORITY - 1 - k``. All priorities of
  a window are within ``window`` of each other and about 4.29e9, so in eq. 1 the number of
  jobs started dominates, then the preference values (``alpha F`` is about 1.4e7 F), and the
  submission order only breaks the remaining ties (earlier jobs worth 1 more per place).
- ``age`` -- ``priority_base + floor(age in seconds)``: the issue's "priorities from job
  age". With a whole workload submitted at t = 0 every job of a window has the same
  priority, so eq. 1 maximises the number of jobs started, then the preference values; no
  order at all among the jobs of a window.
- ``multifactor`` -- Slurm's ``priority/multifactor`` with only the age and job-size
  factors (no fair-share, partition, QOS or nice): ``P = max(1, floor(weight_age * min(age,
  max_age) / max_age + weight_size * js))``, with Slurm's job-size factor ``js = (nodes / N +
  cpus / total cpus) / 2`` (``PriorityFavorSmall=NO``: larger jobs higher) or ``js = ((N -
  nodes) / N + (total cpus - cpus) / total cpus) / 2`` (``favor_small``); ``nodes`` is the
  job's ``-N`` (1 when it gives none), ``cpus`` its cores. Slurm's own default weights are
  0 (every priority 1); the defaults here (1000 and 1000, ``PriorityMaxAge`` 7 days) make
  the job size dominate over a few hours of age.

SLURM/BF orders its queue by the same priority (descending, then submission order), so a
``multifactor`` comparison changes both schedulers alike; ``basic`` and ``age`` are both
FIFO for SLURM/BF (the order of a whole workload submitted at once is its submission order).
"""

from __future__ import annotations

import math

import numpy as np

from hpcdispatch.protocol.constraints import (
    Boolean,
    Interval,
    OneOf,
    ParamConstraint,
    check_params,
)
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job

TOP_PRIORITY = 0xFFFF0000  # Slurm's slurmctld/job_mgr.c: "large, but leave headroom for higher"
MODES = ("basic", "age", "multifactor")
#: the constraints of the priority parameters (slurm-bf's and aucsched's)
PRIORITY_CONSTRAINTS: dict[str, ParamConstraint] = {
    "priority": OneOf(*MODES),
    "weight_age": Interval(float, 0, None),
    "weight_size": Interval(float, 0, None),
    "max_age": Interval(float, 0, None, closed="neither", unit="seconds"),
    "favor_small": Boolean(),
}


class SlurmPriority:
    """Priorities of jobs at time ``now`` under one of :data:`MODES` (see the module doc)."""

    def __init__(
        self,
        mode: str,
        system: System,
        *,
        priority_base: float = 1.0,
        weight_age: float = 1000.0,
        weight_size: float = 1000.0,
        max_age: float = 7 * 86400.0,
        favor_small: bool = False,
    ):
        check_params(
            "Slurm priority",
            {
                "priority": mode,
                "weight_age": weight_age,
                "weight_size": weight_size,
                "max_age": max_age,
                "favor_small": favor_small,
            },
            PRIORITY_CONSTRAINTS,
        )
        self.mode = mode
        self.priority_base = priority_base
        self.weight_age = float(weight_age)
        self.weight_size = float(weight_size)
        self.max_age = float(max_age)
        self.favor_small = bool(favor_small)
        self.n_nodes = system.n_nodes
        try:
            self._core = system.resource_index("core")
        except Exception:  # a system without a "core" resource: the first resource
            self._core = 0
        self.total_cpus = int(system.total_capacity[self._core])
        self._size: dict[int, float] = {}

    @property
    def fifo(self) -> bool:
        """True when the priority order is the submission order at every instant."""
        return self.mode in ("basic", "age")

    def job_size_factor(self, job: Job) -> float:
        js = self._size.get(job.index)
        if js is None:
            nodes = job.exact_nodes or 1
            cpus = job.total_request[self._core]
            if job.per_node_request and not job.node_count and job.exact_nodes:
                cpus += job.exact_nodes * job.per_node_request[self._core]
            if self.favor_small:
                js = (
                    (self.n_nodes - nodes) / self.n_nodes
                    + (self.total_cpus - cpus) / self.total_cpus
                ) / 2
            else:
                js = (nodes / self.n_nodes + cpus / self.total_cpus) / 2
            js = self._size[job.index] = min(max(js, 0.0), 1.0)
        return js

    def of(self, job: Job, now: float) -> int:
        age = max(now - job.submit, 0.0)
        if self.mode == "basic":
            return int(TOP_PRIORITY - 1 - job.index)
        if self.mode == "age":
            return int(self.priority_base + math.floor(age))
        p = self.weight_age * min(
            age, self.max_age
        ) / self.max_age + self.weight_size * self.job_size_factor(job)
        return max(1, int(math.floor(p)))

    def of_all(self, jobs: list[Job], now: float) -> list[int]:
        return [self.of(j, now) for j in jobs]

    def order(self, jobs: list[Job], now: float) -> list[Job]:
        """``jobs`` by priority, highest first, then submission order (Slurm's queue sort)."""
        if self.fifo:
            return list(jobs)
        prio = np.asarray(self.of_all(jobs, now), dtype=np.int64)
        idx = np.lexsort((np.asarray([j.index for j in jobs], dtype=np.int64), -prio))
        return [jobs[i] for i in idx.tolist()]
