"""Job-duration predictors: one small protocol the simulator drives.

``predict(job, now)`` is called once when the job is submitted; the value is the planning
duration every dispatcher sees (``view.planned_duration``). ``learn(job, run_time, now)`` is
called when a job ends, so a predictor only ever learns from jobs that have ended (on-line,
no look-ahead). The jobs still run their real duration (or are killed at their wall-time).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from hpcdispatch.workload.job import Job, Workload


class Predictor(ABC):
    name: ClassVar[str] = "predictor"
    short: ClassVar[str] = "?"

    def reset(self, workload: Workload) -> None:
        """Forget everything (called once before a simulation)."""

    @abstractmethod
    def predict(self, job: Job, now: float) -> float:
        """Expected duration of ``job`` in seconds (> 0)."""

    def learn(self, job: Job, run_time: float, now: float) -> None:
        """``job`` ended at ``now`` after running ``run_time`` seconds."""


class WallTimePredictor(Predictor):
    """W: the requested wall-time."""

    name = "walltime"
    short = "W"

    def predict(self, job: Job, now: float) -> float:
        return float(job.wall_time)
