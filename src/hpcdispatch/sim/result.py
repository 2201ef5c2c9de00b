"""The outcome of a simulation: per-job arrays, allocation segments, the decision log."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hpcdispatch.sim.allocation import Allocation
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Workload

if TYPE_CHECKING:
    from hpcdispatch.sim.simulator import SimulationOptions

STATUS_NAMES = {0: "pending", 1: "queued", 2: "running", 3: "completed", 4: "rejected"}


@dataclass
class SimulationResult:
    system: System
    workload: Workload
    dispatcher: str  # description with parameters
    dispatcher_name: str
    predictor: str
    options: SimulationOptions
    start: np.ndarray
    end: np.ndarray
    killed: np.ndarray
    status: np.ndarray
    planned: np.ndarray
    segments: dict[int, list[tuple[float, Allocation]]]
    reject_reason: dict[int, str]
    resize_log: list[tuple[float, int, int, bool]]
    decisions: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    # ---- tables ------------------------------------------------------------------------
    def jobs_frame(self) -> pd.DataFrame:
        """One row per job: times, request, outcome and allocation (``"node:units ..."``)."""
        w = self.workload
        status = np.array([STATUS_NAMES[int(s)] for s in self.status], dtype=object)
        status[(self.status == 3) & self.killed] = "killed"
        data: dict[str, Any] = {
            "job_id": w.ids,
            "submit": w.submit.astype(np.float64),
            "start": self.start,
            "end": self.end,
            "run_time": w.run_time,
            "wall_time": w.wall_time,
            "planned_duration": self.planned,
            "status": status,
            "killed": self.killed,
            "units": w.units,
        }
        for r, name in enumerate(w.resources):
            data[f"unit_{name}"] = w.unit_requests[:, r]
        data["user"] = np.fromiter((j.user for j in w.jobs), dtype=np.int64, count=len(w))
        data["queue"] = np.fromiter((j.queue for j in w.jobs), dtype=np.int64, count=len(w))
        alloc_str = [""] * len(w)
        for idx, segs in self.segments.items():
            alloc_str[idx] = " | ".join(a.describe() for _, a in segs)
        data["allocation"] = alloc_str
        return pd.DataFrame(data)

    def allocations_frame(self) -> pd.DataFrame:
        """One row per job, allocation segment and node: ``[from, to)`` and the amounts held
        (``units x unit_request + per_node_request``)."""
        w = self.workload
        job_col, seg_col, node_col, units_col, from_col, to_col = [], [], [], [], [], []
        for idx, segs in self.segments.items():
            to = float(self.end[idx])
            for k, (t_from, alloc) in enumerate(segs):
                m = len(alloc.nodes)
                job_col.append(np.full(m, idx))
                seg_col.append(np.full(m, k))
                node_col.append(alloc.nodes)
                units_col.append(alloc.units)
                from_col.append(np.full(m, t_from, dtype=np.float64))
                to_col.append(np.full(m, to, dtype=np.float64))
        if job_col:
            jidx = np.concatenate(job_col)
            units = np.concatenate(units_col)
            frame = {
                "job_id": w.ids[jidx],
                "segment": np.concatenate(seg_col),
                "node": np.concatenate(node_col),
                "units": units,
                "from": np.concatenate(from_col),
                "to": np.concatenate(to_col),
            }
            req = w.unit_requests[jidx]
            extra = w.per_node_requests[jidx] if w.has_constraints else None
            for r, name in enumerate(w.resources):
                frame[name] = units * req[:, r] if extra is None else units * req[:, r] + extra[:, r]
        else:
            frame = {k: np.zeros(0, dtype=np.int64) for k in ("job_id", "segment", "node", "units")}
            frame["from"] = np.zeros(0)
            frame["to"] = np.zeros(0)
            for name in w.resources:
                frame[name] = np.zeros(0, dtype=np.int64)
        return pd.DataFrame(frame)

    def decisions_frame(self) -> pd.DataFrame:
        d = self.decisions
        return pd.DataFrame(
            {
                "time": d["time"],
                "queue_length": d["queue_length"],
                "running": d["running"],
                "started": d["started"],
                "elapsed_s": d["elapsed"],
                "info": [json.dumps(i, default=str) if i else "" for i in d["info"]],
            }
        )

    def summary(self) -> dict[str, Any]:
        from hpcdispatch.metrics.summary import summarize

        return summarize(self)
