"""The predictor contract: one small protocol the simulator drives, and its default, W.

``predict(job, now)`` is called once, when the job is submitted; the value is the planning
duration every dispatcher sees (``view.planned_duration``). ``learn(job, run_time, now)`` is
called when a job ends, so a predictor only ever learns from jobs that have ended at the
time it predicts (on-line, no look-ahead). Jobs still run their real duration (or are killed
at their wall-time) whatever was predicted. The simulator times both calls and reports the
total as ``prediction_time_s`` (0 for W and R, which only read a field and are not timed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from hpcdispatch.workload.job import Job, Workload


class Predictor(ABC):
    """A job-duration predictor: ``predict`` a queued job's run time, ``learn`` from ended jobs."""

    name: ClassVar[str] = "predictor"
    short: ClassVar[str] = "?"
    aliases: ClassVar[tuple[str, ...]] = ()
    #: whether the simulator times every predict/learn call (``prediction_time_s``); False
    #: for the field lookups W and R, whose cost would be the timer's own
    timed: ClassVar[bool] = True
    #: whether ``predict`` depends on the job alone (not on ``now`` nor on what was learnt):
    #: the planned durations can then be computed before the run (the compiled engine does)
    static: ClassVar[bool] = False

    def reset(self, workload: Workload, walltime_kill: bool = True) -> None:
        """Forget everything (called once before a simulation)."""
        self.walltime_kill = walltime_kill

    @abstractmethod
    def predict(self, job: Job, now: float) -> float:
        """Expected duration of ``job`` in seconds (> 0)."""

    def learn(self, job: Job, run_time: float, now: float) -> None:  # noqa: B027 (optional hook)
        """``job`` ended at ``now`` after running ``run_time`` seconds."""

    def predict_all(self, workload: Workload) -> np.ndarray:
        """Every job's prediction at its submission, in workload order: for a :attr:`static`
        predictor, what ``predict`` returns during a run (the compiled engine plans with it).
        W and R read it from the workload's columns."""
        if not self.static:
            raise TypeError(f"predictor {self.name} is not static: it predicts during the run")
        return np.fromiter(
            (float(self.predict(job, float(job.submit))) for job in workload.jobs),
            dtype=np.float64,
            count=len(workload),
        )


class WallTimePredictor(Predictor):
    """W: the requested wall-time (the duration the baselines plan with by default)."""

    name = "walltime"
    short = "W"
    aliases = ("wall-time", "wall")
    timed = False
    static = True

    def predict(self, job: Job, now: float) -> float:
        return float(job.wall_time)

    def predict_all(self, workload: Workload) -> np.ndarray:
        if type(self).predict is not WallTimePredictor.predict:  # a subclass predicts its own way
            return super().predict_all(workload)
        return workload.wall_time.astype(np.float64)
