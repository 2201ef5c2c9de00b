"""R: the oracle predictor (a baseline: it reads the future)."""

from __future__ import annotations

import numpy as np

from hpcdispatch.protocol.predictor import Predictor
from hpcdispatch.workload.job import Job, Workload


class OraclePredictor(Predictor):
    """R: the real duration (the run time, or the wall-time when the job will be killed).

    A baseline only: it reads the future.
    """

    name = "oracle"
    short = "R"
    aliases = ("real",)
    timed = False
    static = True

    def predict(self, job: Job, now: float) -> float:
        return float(min(job.run_time, job.wall_time) if self.walltime_kill else job.run_time)

    def predict_all(self, workload: Workload) -> np.ndarray:
        if type(self).predict is not OraclePredictor.predict:  # a subclass predicts its own way
            return super().predict_all(workload)
        run = workload.run_time
        return (np.minimum(run, workload.wall_time) if self.walltime_kill else run).astype(
            np.float64
        )
