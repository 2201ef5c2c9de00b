"""A run as Batsim's ``jobs.csv``, the file Evalys and Batsim users' scripts read.

>>> from hpcdispatch.results.batsim import export_batsim
>>> export_batsim("out/easy", "out/easy-batsim")        # doctest: +SKIP

writes ``out/easy-batsim/jobs.csv`` with Batsim's output columns, in Batsim's order:
``job_id, workload_name, profile, submission_time, requested_number_of_resources,
requested_time, success, final_state, starting_time, execution_time, finish_time,
waiting_time, turnaround_time, stretch, allocated_resources, consumed_energy, metadata``.

- ``allocated_resources``: the node ids the job held (any segment), as a Batsim interval set
  (``"0-3 8"``); ``requested_number_of_resources``: the cores it asked for (units x cores
  per unit; Batsim's ``res``, as in a Batsim workload hpcdispatch writes).
- ``final_state``: completed -> ``COMPLETED_SUCCESSFULLY``, killed at its wall time ->
  ``COMPLETED_WALLTIME_REACHED``, cancelled while running (a deadline, a booking conflict) ->
  ``COMPLETED_KILLED``, rejected or cancelled before it started -> ``REJECTED`` (Batsim has no
  state for a job that expired waiting; ``metadata`` says which). Jobs that never ran leave
  the time columns and ``allocated_resources`` empty, as Batsim does.
- ``stretch`` is Batsim's: turnaround / execution time, the *unbounded* slowdown; hpcdispatch's
  bounded slowdown (``max(1, turnaround / max(run, 10 s))``) is in ``metadata``.
- ``metadata``: a JSON object with what Batsim has no column for: units, the request per unit
  (cores, GPUs ...), the status, the cancel or reject reason and the bounded slowdown.
- ``consumed_energy``: -1 (no energy model), as Batsim writes without its energy plugin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hpcdispatch.results.outdir import atomic_dir
from hpcdispatch.results.store import StoredRun, read_run, write_text

if TYPE_CHECKING:  # (pandas is imported where it is used: the package stays light)
    import pandas as pd

__all__ = ["BATSIM_COLUMNS", "batsim_jobs_frame", "export_batsim", "interval_set"]

#: Batsim's jobs.csv columns, in its order
BATSIM_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)
#: the bounded slowdown's threshold (seconds), as in the run summary
_BSLD_TAU = 10.0


def interval_set(ids: np.ndarray) -> str:
    """Sorted distinct integers as Batsim's interval set text: ``[0, 1, 2, 3, 8] -> "0-3 8"``."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if not len(ids):
        return ""
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    parts = []
    for run in np.split(ids, breaks):
        a, b = int(run[0]), int(run[-1])
        parts.append(str(a) if a == b else f"{a}-{b}")
    return " ".join(parts)


def _final_state(status: str, cancel: str) -> str:
    if status == "completed":
        return "COMPLETED_SUCCESSFULLY"
    if status == "killed":
        return "COMPLETED_WALLTIME_REACHED"
    if status == "cancelled" and cancel != "deadline-waiting":
        return "COMPLETED_KILLED"
    return "REJECTED"


def batsim_jobs_frame(run: StoredRun, workload_name: str | None = None) -> pd.DataFrame:
    """The run's jobs in Batsim's ``jobs.csv`` columns (see the module's docstring)."""
    import pandas as pd

    jobs = run.jobs
    w = run.workload.set_index("job_id").reindex(jobs["job_id"])
    name = workload_name or Path(str(run.run.get("workload", {}).get("spec", "w0"))).name
    alloc = run.allocations
    nodes_of: dict[int, str] = {}
    if len(alloc):
        pairs = alloc[["job_id", "node"]].drop_duplicates().sort_values(["job_id", "node"])
        for job_id, group in pairs.groupby("job_id", sort=False):
            nodes_of[int(job_id)] = interval_set(group["node"].to_numpy())
    status = jobs["status"].astype(str).to_numpy()
    cancel = (
        jobs["cancel_reason"].fillna("").astype(str).to_numpy()
        if "cancel_reason" in jobs
        else np.full(len(jobs), "", dtype=object)
    )
    reject = jobs.get("reject_reason", pd.Series([""] * len(jobs))).fillna("").astype(str)
    ran = np.isin(status, ("completed", "killed")) | (
        (status == "cancelled") & (cancel != "deadline-waiting") & np.isfinite(jobs["start"])
    )
    submit = jobs["submit"].to_numpy(dtype=float)
    start = jobs["start"].to_numpy(dtype=float)
    end = jobs["end"].to_numpy(dtype=float)
    execution = end - start
    turnaround = end - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = np.where(execution > 0, turnaround / execution, np.nan)
        run_time = jobs["run_time"].to_numpy(dtype=float)
        bsld = np.maximum(1.0, turnaround / np.maximum(np.minimum(execution, run_time), _BSLD_TAU))
    unit_cols = [c for c in run.workload.columns if c.startswith("unit_")]
    units = jobs["units"].to_numpy(dtype=np.int64)
    processors = units * w["unit_core"].to_numpy(dtype=np.int64) if "unit_core" in w else units
    metadata = []
    for i in range(len(jobs)):
        meta: dict[str, object] = {
            "units": int(units[i]),
            "per_unit": {c[5:]: int(w[c].iat[i]) for c in unit_cols},
            "status": status[i],
        }
        if cancel[i]:
            meta["cancel_reason"] = cancel[i]
        if reject.iat[i]:
            meta["reject_reason"] = reject.iat[i]
        if ran[i]:
            meta["bounded_slowdown"] = round(float(bsld[i]), 6)
        metadata.append(json.dumps(meta, sort_keys=True, separators=(",", ":")))
    ids = jobs["job_id"].to_numpy(dtype=np.int64)

    def when_ran(values: np.ndarray) -> pd.Series:
        return pd.Series(np.where(ran, values, np.nan))

    frame = pd.DataFrame(
        {
            "job_id": ids.astype(str),
            "workload_name": name,
            "profile": [f"delay{int(r)}" for r in jobs["run_time"].to_numpy()],
            "submission_time": submit,
            "requested_number_of_resources": processors,
            "requested_time": jobs["wall_time"].to_numpy(dtype=float),
            "success": (status == "completed").astype(int),
            "final_state": [_final_state(s, c) for s, c in zip(status, cancel)],
            "starting_time": when_ran(start),
            "execution_time": when_ran(execution),
            "finish_time": when_ran(end),
            "waiting_time": when_ran(start - submit),
            "turnaround_time": when_ran(turnaround),
            "stretch": when_ran(stretch),
            "allocated_resources": [
                nodes_of.get(int(j), "") if r else "" for j, r in zip(ids, ran)
            ],
            "consumed_energy": -1,
            "metadata": metadata,
        },
        columns=list(BATSIM_COLUMNS),
    )
    return frame


def export_batsim(
    run_dir: str | Path, out_dir: str | Path, force: bool = False, workload_name: str | None = None
) -> Path:
    """Write the run in ``run_dir`` as ``out_dir/jobs.csv`` (Batsim's format), atomically:
    the directory is written whole, and an existing one is replaced only with ``force``.
    Returns the path of ``jobs.csv``."""
    run = read_run(run_dir)
    frame = batsim_jobs_frame(run, workload_name)
    with atomic_dir(out_dir, force) as tmp:
        write_text(tmp / "jobs.csv", frame.to_csv(index=False, float_format="%.6f"))
    return Path(out_dir) / "jobs.csv"
