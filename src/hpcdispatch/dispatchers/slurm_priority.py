"""Slurm job priorities, shared by SLURM/BF and AUCSCHED (``priority=`` option of both).

The AUCSCHED plug-in copies each job's Slurm priority into its program (``P_j =
job_ptr->priority``) and sorts its window by it; the paper does not say which priority
plugin its emulated Slurm used. :class:`SlurmPriority` computes them under one of
:data:`MODES`: ``basic`` (Slurm's FIFO ``priority/basic``), ``age`` (``priority_base`` plus the
age) or ``multifactor`` (age and job-size factors: ``weight_age``, ``weight_size``,
``max_age``, ``favor_small``).

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
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
