"""A dispatching instance: everything a CP dispatcher decides on at one time ``t``.

It is a plain snapshot (queued jobs with their arrival and planned duration, running jobs
with their allocations and planned ends, free and total capacity, the queues' expected
waiting times), built from a :class:`~hpcdispatch.protocol.view.DispatchView` or read back from
JSON, so the same instance can be solved by several dispatchers (``hpcdispatch instances
eval``, PCP'20 section 5.3).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.protocol.view import DispatchView


@dataclass(frozen=True)
class QueuedJob:
    """A queued job as the CP models see it: its request and planned (predicted) duration."""

    index: int
    id: int
    submit: float
    duration: float  # planned (predicted) duration, seconds
    units: int
    unit_request: tuple[int, ...]
    max_units_per_node: int = 0
    queue: int = -1
    user: int = -1

    @property
    def total_request(self) -> tuple[int, ...]:
        return tuple(self.units * a for a in self.unit_request)


@dataclass(frozen=True)
class RunningEntry:
    """A running job: where it runs (nodes, units on each) and its planned end."""

    index: int
    id: int
    start: float
    planned_end: float
    nodes: tuple[int, ...]
    units: tuple[int, ...]
    unit_request: tuple[int, ...]

    def amounts(self) -> np.ndarray:
        return (
            np.asarray(self.units, dtype=np.int64)[:, None]
            * np.asarray(self.unit_request, dtype=np.int64)[None, :]
        )


@dataclass
class DispatchInstance:
    """One dispatching decision's input as plain values: the time, capacity and free capacity,
    the queued jobs (arrival order) and the running ones."""

    time: float
    resources: tuple[str, ...]
    capacity: np.ndarray  # (nodes, resources)
    free: np.ndarray  # (nodes, resources)
    queued: list[QueuedJob]  # arrival order
    running: list[RunningEntry]
    queue_ewt: dict[int, float] = field(default_factory=dict)
    system: str = ""

    @property
    def n_nodes(self) -> int:
        return int(self.capacity.shape[0])

    @classmethod
    def from_view(cls, view: DispatchView) -> DispatchInstance:
        planned = view.planned_duration
        queued = [
            QueuedJob(
                j.index,
                j.id,
                float(j.submit),
                float(planned(j)),
                j.units,
                tuple(j.unit_request),
                j.max_units_per_node,
                j.queue,
                j.user,
            )
            for j in view.queue
        ]
        running = [
            RunningEntry(
                rj.job.index,
                rj.job.id,
                float(rj.start),
                float(rj.planned_end),
                tuple(rj.allocation.nodes.tolist()),
                tuple(rj.allocation.units.tolist()),
                tuple(rj.job.unit_request),
            )
            for rj in view.running.values()
        ]
        return cls(
            time=float(view.now),
            resources=tuple(view.system.resources),
            capacity=np.asarray(view.capacity),
            free=np.array(view.free),
            queued=queued,
            running=running,
            queue_ewt=dict(view.queue_ewt),
            system=view.system.name,
        )

    # ---- JSON --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "system": self.system,
            "resources": list(self.resources),
            "capacity": self.capacity.tolist(),
            "free": self.free.tolist(),
            "queue_ewt": {str(k): v for k, v in self.queue_ewt.items()},
            "queued": [asdict(q) for q in self.queued],
            "running": [asdict(r) for r in self.running],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DispatchInstance:
        return cls(
            time=float(d["time"]),
            resources=tuple(d["resources"]),
            capacity=np.asarray(d["capacity"], dtype=np.int64),
            free=np.asarray(d["free"], dtype=np.int64),
            queued=[
                QueuedJob(**{**q, "unit_request": tuple(q["unit_request"])}) for q in d["queued"]
            ],
            running=[
                RunningEntry(
                    **{
                        **r,
                        "nodes": tuple(r["nodes"]),
                        "units": tuple(r["units"]),
                        "unit_request": tuple(r["unit_request"]),
                    }
                )
                for r in d["running"]
            ],
            queue_ewt={int(k): float(v) for k, v in d.get("queue_ewt", {}).items()},
            system=d.get("system", ""),
        )

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> DispatchInstance:
        return cls.from_dict(json.loads(Path(path).read_text()))
