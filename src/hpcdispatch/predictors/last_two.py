"""L2: the mean run time of the user's last two completed jobs (Tsafrir, Etsion, Feitelson 2007)."""

from __future__ import annotations

from collections import deque

from hpcdispatch.protocol.predictor import Predictor
from hpcdispatch.workload.job import Job, Workload


class LastTwoPredictor(Predictor):
    """Mean of the real run times of the same user's last two completed jobs, capped by the
    job's wall-time; the wall-time when the user has no completed job yet (with one completed
    job, its run time). "Last" is by completion time, as the knowledge base only grows when
    jobs end."""

    name = "last-two"
    short = "L2"
    aliases = ("lasttwo", "last2")

    def reset(self, workload: Workload, walltime_kill: bool = True) -> None:
        super().reset(workload, walltime_kill)
        self._history: dict[int, deque[float]] = {}

    def predict(self, job: Job, now: float) -> float:
        hist = self._history.get(job.user)
        if not hist:
            return float(job.wall_time)
        return max(1.0, min(float(job.wall_time), sum(hist) / len(hist)))

    def learn(self, job: Job, run_time: float, now: float) -> None:
        hist = self._history.get(job.user)
        if hist is None:
            hist = self._history[job.user] = deque(maxlen=2)
        hist.append(float(run_time))
