"""The outcome of a simulation: per-job arrays, allocation segments, the decision log."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hpcdispatch._util import arrow_array, arrow_scalar
from hpcdispatch.protocol import describe_identity
from hpcdispatch.sim.execution import ExecutionSummary
from hpcdispatch.sim.info_log import InfoLog
from hpcdispatch.sim.options import SimulationOptions
from hpcdispatch.sim.segments import AllocationRows, SegmentLog
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.system.model import System
from hpcdispatch.vocabulary import JobStatus
from hpcdispatch.workload.job import Workload

if (
    TYPE_CHECKING
):  # (pandas only for the *_frame methods: a run imports it only when asked for a frame)
    import pandas as pd

#: a status code's text in the job table (``completed``, ``rejected``, ...)
STATUS_NAMES = {int(status): status.name.lower() for status in JobStatus}
_STATUS_TEXT = np.array([STATUS_NAMES[k] for k in range(len(STATUS_NAMES))], dtype=object)


@dataclass(frozen=True, slots=True)
class JournalUse:
    """The decision journal a run used (:mod:`hpcdispatch.sim.journal`)."""

    path: str
    replayed: int  #: dispatcher calls replayed from it
    recorded: int  #: dispatcher calls appended to it


@dataclass(frozen=True, slots=True)
class CheckpointUse:
    """The checkpoint file a run used (:mod:`hpcdispatch.sim.checkpoint`)."""

    path: str
    every_s: float  #: wall-clock seconds between writes
    writes: int
    #: where the run resumed from it (``t``, ``done``, ``jobs``, ``queued``, ``calls``,
    #: ``wall_s``), or ``None`` when it started afresh
    resumed_at: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class RunNotes:
    """How a run was carried out, beside its schedule: the engine, the predictor's cost, the
    prediction corrections, the execution model's totals, the journal and the checkpoint it
    used, and what the runner adds (its wall time, the validation's verdict). ``None``: not
    recorded by whatever made the result. ``summary.json`` holds them as flat keys
    (:meth:`summary_fields`)."""

    engine: str | None = None  #: ``python`` or ``compiled``
    prediction_time_s: float | None = None  #: wall-clock seconds in the predictor
    prediction_correction: str | None = None  #: the correction's name, when one was on
    prediction_revisions: int | None = None  #: planned ends revised by the correction
    execution: ExecutionSummary | None = None  #: runs with jobs with an application model
    journal: JournalUse | None = None
    checkpoint: CheckpointUse | None = None
    sim_wall_s: float | None = None  #: the runner's wall-clock seconds for the simulation
    #: the runner's validation: whether the schedule is valid (``None``: not validated);
    #: recorded with ``sim_wall_s``
    valid: bool | None = None
    #: a learning environment's episode (:mod:`hpcdispatch.rl`): its first job, jobs,
    #: decisions, invalid actions and engine
    rl_episode: dict[str, Any] | None = None

    def summary_fields(self) -> dict[str, Any]:
        """The notes as ``summary.json`` keys (the keys of the former ``extra`` dict)."""
        out: dict[str, Any] = {}
        if self.prediction_time_s is not None:
            out["prediction_time_s"] = self.prediction_time_s
        if self.execution is not None:
            out.update(self.execution.summary_fields())
        if self.prediction_correction is not None:
            out["prediction_correction"] = self.prediction_correction
            out["prediction_revisions"] = self.prediction_revisions
        if self.journal is not None:
            out["journal"] = asdict(self.journal)
        if self.checkpoint is not None:
            out["checkpoint"] = asdict(self.checkpoint)
        if self.engine is not None:
            out["engine"] = self.engine
        if self.sim_wall_s is not None:
            out["sim_wall_s"] = self.sim_wall_s
            out["valid"] = self.valid
        if self.rl_episode is not None:
            out["rl_episode"] = dict(self.rl_episode)
        return out


@dataclass
class SimulationResult:
    """What a run produced (either engine). Metrics: :func:`hpcdispatch.metrics.summarize`;
    check: :func:`hpcdispatch.validation.validate_result`; write: :func:`hpcdispatch.results.write_result`."""

    system: System
    workload: Workload
    dispatcher: dict[str, Any]  # identity: {"name": ..., "params": {...}}
    predictor: str
    options: SimulationOptions
    start: np.ndarray
    end: np.ndarray
    killed: np.ndarray
    status: np.ndarray
    planned: np.ndarray
    segment_log: SegmentLog
    reject_reason: dict[int, str]
    resize_log: list[tuple[float, int, int, bool]]
    decisions: dict[str, Any]
    #: how the run was carried out (engine, costs, journal, checkpoint, validation)
    notes: RunNotes = field(default_factory=RunNotes)
    #: job index -> why it was cancelled at its deadline (``deadline-waiting`` / ``deadline-running``)
    cancel_reason: dict[int, str] = field(default_factory=dict)
    #: the dispatcher's advance reservations (:class:`~hpcdispatch.protocol.Booking`), if it made any
    bookings: list[Any] = field(default_factory=list)
    #: the dispatcher's tags (``Tags`` as a dict): what it declared it does (e.g. ``rejects``)
    tags: dict[str, bool] = field(default_factory=dict)
    _rows: AllocationRows | None = field(default=None, init=False, repr=False, compare=False)
    _segments: dict[int, list[tuple[float, Allocation]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def dispatcher_name(self) -> str:
        return str(self.dispatcher["name"])

    def describe_dispatcher(self) -> str:
        """``name(key=value, ...)``, for people."""
        return describe_identity(self.dispatcher)

    def allocation_rows(self) -> AllocationRows:
        """The allocation segments as flat columns (built once, then cached)."""
        if self._rows is None:
            self._rows = self.segment_log.rows(self.end)
        return self._rows

    @property
    def segments(self) -> dict[int, list[tuple[float, Allocation]]]:
        """``job index -> [(from, Allocation)]``: what every started job held, segment by
        segment (built from the compact log on first use, then cached)."""
        if self._segments is None:
            self._segments = self.segment_log.by_job()
        return self._segments

    # ---- tables ------------------------------------------------------------------------
    def jobs_frame(self, allocation_text: bool = True) -> pd.DataFrame:
        """One row per job: times, request, outcome and (``allocation_text``) the allocation
        as ``"node:units node:units | ..."`` (segments separated by ``|``)."""
        import pandas as pd

        return pd.DataFrame(self.jobs_columns(allocation_text))

    # ---- in a notebook ------------------------------------------------------------------

    def _repr_html_(self) -> str | None:
        """Jupyter shows a result as a table: what ran, and its headline metrics (None, so
        the plain repr, when the notebook views are not installed)."""
        return _VIEWS["html"](self) if "html" in _VIEWS else None

    def gantt(
        self, window: tuple[float, float] | None = None, nodes: tuple[int, int] | None = None
    ) -> Any:
        """Node occupancy as a matplotlib Figure (``window``: seconds after the first
        submission; ``nodes``: first and last node)."""
        return _view("gantt")(self, window, nodes)

    def utilisation(self) -> Any:
        """Utilisation per resource and queue length over time, as a matplotlib Figure."""
        return _view("utilisation")(self)

    def jobs_columns(self, allocation_text: bool = True) -> dict[str, np.ndarray]:
        """The columns of :meth:`jobs_frame`; some are the result's own arrays (read only,
        or wrap them with ``pd.DataFrame(columns, copy=False)`` for a read-only frame)."""
        w = self.workload
        status = _STATUS_TEXT[np.asarray(self.status, dtype=np.int64)]
        status[(self.status == JobStatus.COMPLETED) & self.killed] = "killed"
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
        reason = np.full(len(w), "", dtype=object)
        for idx, why in self.reject_reason.items():
            reason[idx] = why
        data["reject_reason"] = reason
        if w.has_deadlines:  # deadline workloads: the job's window and why it was cancelled
            data["earliest_start"] = np.array([j.ready_at for j in w.jobs], dtype=np.float64)
            data["deadline"] = np.array(
                [np.inf if j.deadline is None else j.deadline for j in w.jobs], dtype=np.float64
            )
            cancel = np.full(len(w), "", dtype=object)
            for idx, why in self.cancel_reason.items():
                cancel[idx] = why
            data["cancel_reason"] = cancel
        data["user"] = w.users
        data["queue"] = w.queues
        if allocation_text:
            data["allocation"] = allocation_text_array(self.allocation_rows(), len(w)).to_numpy(
                zero_copy_only=False
            )
        return data

    def jobs_table(self) -> pa.Table:
        """:meth:`jobs_columns` as an Arrow table (what ``jobs.parquet`` and ``jobs.csv``
        hold), its allocation text built and kept in Arrow (no Python string per job)."""
        table = arrow_table(self.jobs_columns(allocation_text=False))
        return table.append_column(
            "allocation", allocation_text_array(self.allocation_rows(), len(self.workload))
        )

    def allocations_frame(self) -> pd.DataFrame:
        """One row per job, allocation segment and node: ``[from, to)`` and the amounts held
        (``units x unit_request + per_node_request``)."""
        import pandas as pd

        return pd.DataFrame(self.allocations_columns())

    def allocations_columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`allocations_frame` (some are the cached allocation rows: read
        only, as :meth:`jobs_columns`)."""
        w = self.workload
        rows = self.allocation_rows()
        frame: dict[str, np.ndarray] = {
            "job_id": w.ids[rows.job],
            "segment": rows.segment,
            "node": rows.node,
            "units": rows.units,
            "from": rows.t_from,
            "to": rows.t_to,
        }
        for r, name in enumerate(w.resources):
            frame[name] = rows.held(w, r)
        return frame

    def bookings_columns(self) -> dict[str, np.ndarray]:
        """One row per booking and node: ``job_id, made, start, end, released, node``
        (``bookings.parquet``; empty columns when the dispatcher booked nothing)."""
        b = self.bookings
        ids = self.workload.ids
        counts = np.array([len(x.nodes) for x in b], dtype=np.int64)

        def rep(vals: list, dtype: type) -> np.ndarray:
            return np.repeat(np.array(vals, dtype=dtype), counts) if b else np.zeros(0, dtype)

        return {
            "job_id": rep([ids[x.job] for x in b], np.int64),
            "made": rep([x.made for x in b], np.float64),
            "start": rep([x.start for x in b], np.float64),
            "end": rep([x.end for x in b], np.float64),
            "released": rep([x.released for x in b], np.float64),
            "node": np.array([n for x in b for n in x.nodes], dtype=np.int64),
        }

    def decisions_frame(self) -> pd.DataFrame:
        return self.decisions_table().to_pandas()

    def decisions_table(self) -> pa.Table:
        """One row per dispatcher call (``decisions.parquet``): time, queue length, running,
        started, wall time of the call, and its info as JSON text ("" when empty)."""
        d = self.decisions
        info = d["info"]
        return arrow_table(
            {
                "time": d["time"],
                "queue_length": d["queue_length"],
                "running": d["running"],
                "started": d["started"],
                "elapsed_s": d["elapsed"],
                "info": (
                    info.json_text_array()
                    if isinstance(info, InfoLog)
                    else arrow_array(
                        np.array(
                            [json.dumps(i, default=str) if i else "" for i in info], dtype=object
                        )
                    )
                ),
            }
        )


def arrow_table(columns: dict[str, Any]) -> pa.Table:
    """An Arrow table of numpy columns (or Arrow arrays), missing values as pandas writes them:
    NaN in a float column and ``None`` in a text column are nulls (an empty CSV cell), text
    columns are strings; numbers are taken without a copy. (Built from the columns' buffers:
    pyarrow's own conversion would import pandas, :func:`hpcdispatch._util.arrow_array`.)"""
    return pa.Table.from_arrays(
        [arrow_array(values) for values in columns.values()], names=list(columns)
    )


#: what follows a row's text: nothing (the job's last row), the end of a segment, a row
_SEPARATORS = arrow_array(np.array(["", " | ", " "], dtype=object))
_NOTHING = arrow_scalar("")


def _number_texts(values: np.ndarray, suffix: str) -> pa.Array:
    """``str(value) + suffix`` per value of an integer column, as an Arrow string array: the
    texts of ``0 .. max`` written once and picked by value when that table is no longer than
    the column (node ids, units per node), else Arrow's cast."""
    top = int(values.max()) if len(values) else 0
    if len(values) and int(values.min()) >= 0 and top < len(values):
        table = arrow_array(np.array([f"{k}{suffix}" for k in range(top + 1)], dtype=object))
        return table.take(arrow_array(values))
    text = pc.cast(arrow_array(values), pa.string())
    return pc.binary_join_element_wise(text, arrow_scalar(suffix), _NOTHING) if suffix else text


def allocation_text_array(rows: AllocationRows, n_jobs: int) -> pa.Array:
    """Per job ``"node:units node:units | node:units"`` ("" for jobs without rows) as an Arrow
    string array, built in one pass over all rows: every row's text with the separator that
    follows it, one string buffer, cut at job boundaries."""
    if len(rows) == 0:
        return arrow_array(np.full(n_jobs, "", dtype=object))
    last_of_job = np.r_[rows.job[1:] != rows.job[:-1], True]
    last_of_segment = last_of_job | np.r_[rows.segment[1:] != rows.segment[:-1], True]
    sep = np.where(last_of_job, 0, np.where(last_of_segment, 1, 2)).astype(
        np.int8
    )  # (Arrow picks the texts)
    text = pc.binary_join_element_wise(
        _number_texts(rows.node, ":"),
        _number_texts(rows.units, ""),
        pc.take(_SEPARATORS, arrow_array(sep)),
        _NOTHING,
    )
    # a job's text is the bytes from its first row's offset to its last row's end offset
    _, offsets_buffer, data_buffer = text.buffers()
    row_offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[
        text.offset : text.offset + len(text) + 1
    ].astype(np.int64)
    job_end = np.flatnonzero(last_of_job)
    job_offsets = row_offsets[np.r_[0, job_end + 1]]
    per_job = pa.LargeStringArray.from_buffers(len(job_end), pa.py_buffer(job_offsets), data_buffer)
    job_of_text = rows.job[
        job_end
    ]  # rows are in start order: job order only when the jobs started in it
    if len(job_end) == n_jobs and (job_of_text == np.arange(n_jobs)).all():
        return per_job.cast(pa.string())  # (FIFO on a trace, say: no reordering needed)
    position = np.full(n_jobs, -1, dtype=np.int64)  # each job's text among per_job's, -1: none
    position[job_of_text] = np.arange(len(job_end))
    texts = pc.take(per_job, arrow_array(position, missing=position < 0))
    return pc.fill_null(
        texts.cast(pa.string()), _NOTHING
    )  # (a scalar of the array's type: no conversion)


#: a result's notebook views (an HTML table, figures), which live with the reports: the
#: report layer installs them (hpcdispatch.report.notebook, imported by the package's face),
#: so that nothing here imports upward. ``name -> function(result, ...)``.
_VIEWS: dict[str, Callable[..., Any]] = {}


def install_views(**views: Callable[..., Any]) -> None:
    """Install the notebook views of :class:`SimulationResult` (``html``, ``gantt``,
    ``utilisation``); called by :mod:`hpcdispatch.report.notebook` when it is imported."""
    _VIEWS.update(views)


def _view(name: str) -> Callable[..., Any]:
    if name not in _VIEWS:
        raise RuntimeError(
            f"result.{name}() draws with the reports: import hpcdispatch.report.notebook (or use "
            "the package's face, `import hpcdispatch as h; h.simulate(...)`, which does)"
        )
    return _VIEWS[name]
