"""Jobs and workloads.

A job requests ``units`` identical units, each needing ``unit_request[r]`` of resource ``r``
(the papers' model: ``req_{i,r} / rn_i`` per unit). Units of a job may share a node unless
``max_units_per_node`` limits it (1 = every unit on its own node, as Slurm's ``-N``).

Three optional fields express Slurm-style requests (defaults change nothing):

- ``node_count``: the job uses exactly this many distinct nodes, each holding at least one
  unit (Slurm's ``-N``; 0 = any number);
- ``per_node_request``: amounts needed on every node the job uses, on top of its units
  (Slurm's ``--gres=gpu:X``: X GPUs per node; ``()`` = nothing);
- ``contiguous``: the nodes used are consecutive indices of the linear node order
  (Slurm's ``--contiguous``).

The amounts a job holds on a node are ``units_on_node x unit_request + per_node_request``.
Slurm's three request types map onto this model as follows (``workload/slurm.py``):
``-n C`` = C one-core units; ``-N N -n C --gres=gpu:g`` = C one-core units on exactly N nodes
with g GPUs per node; ``-N N --ntasks-per-node=c --gres=gpu:g`` = N units of (c cores, g
GPUs), one per node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from operator import attrgetter, is_not
from typing import Any, NamedTuple

import numpy as np

from hpcdispatch._util import gc_paused
from hpcdispatch.errors import ConfigError


@dataclass(frozen=True, slots=True)
class GrowthRequest:
    """A running job asking for ``units`` more units ``after`` seconds from its start.

    The simulator turns it into a resize event; the dispatcher's ``on_resize`` grants an
    allocation or refuses (deadline-oriented "leak" allocation builds on this).
    """

    after: float
    units: int


#: the declared peak of a dynamic job's process count over its nominal one, 3/2 (exact
#: integer arithmetic); the execution model's default growth factors end at 1.5
PEAK_GROWTH_NUM, PEAK_GROWTH_DEN = 3, 2


@dataclass(frozen=True, slots=True)
class AppSpec:
    """What a deadline job's application is (Linnert, De Rose, Heiss 2024, Table 1, sec. 5.2):
    its behaviour type (0 static without communication, 1 static with a regular pattern,
    2 dynamic on local nodes, 3 dynamic on local and remote nodes), its communication pattern
    (``async``: asynchronous send with synchronous receive; ``sync``: synchronous sends) and
    its process count (the trace size, one process per core).

    The simulator runs such a job through the execution model
    (:mod:`hpcdispatch.sim.execution`): its run time ``R`` is its time on a compact partition
    of the empty machine, and where it really runs decides how long it takes (docs/DEADLINE.md).
    """

    behaviour: int
    comm: str
    processes: int

    def __post_init__(self) -> None:
        if self.behaviour not in (0, 1, 2, 3):
            raise ConfigError(f"behaviour type must be 0, 1, 2 or 3, got {self.behaviour!r}")
        if self.comm not in ("async", "sync"):
            raise ConfigError(f"communication pattern must be 'async' or 'sync', got {self.comm!r}")
        if self.processes < 1:
            raise ConfigError(f"processes must be >= 1, got {self.processes!r}")

    @property
    def peak_processes(self) -> int:
        """The most processes the application runs at once, as a user would declare it: the
        nominal count for the static types 0, 1; ``ceil(PEAK_GROWTH x n)`` for the dynamic
        types 2, 3, whose phases fork up to the execution model's largest growth factor
        (1.5 by default, :class:`~hpcdispatch.sim.execution.AppModelParams`). What a static
        strategy books with ``static_request=peak`` (design note Revision 2, A10)."""
        if self.behaviour in (2, 3):
            return -(-self.processes * PEAK_GROWTH_NUM // PEAK_GROWTH_DEN)
        return self.processes


def peak_units(app: AppSpec, units: int, cores: int, n_nodes: int) -> int:
    """Whole nodes of ``cores`` cores for ``app``'s peak process count
    (:attr:`AppSpec.peak_processes`), at least its request ``units`` and at most the
    machine's ``n_nodes``: what a static strategy books with ``static_request=peak``, and the
    other node count (besides ``units``) a deadline job may start on under such a strategy."""
    return max(units, min(n_nodes, -(-app.peak_processes // cores)))


class Job(NamedTuple):
    """One job. Immutable (a named tuple: cheap to build for traces of half a million jobs).

    ``index`` is the job's position in its workload, set by :class:`Workload`.
    """

    id: int
    submit: int
    run_time: int
    wall_time: int
    units: int
    unit_request: tuple[int, ...]
    user: int = -1
    group: int = -1
    queue: int = -1
    partition: int = -1
    executable: int = -1
    name: str | None = None
    processors: int = -1
    max_units_per_node: int = 0  # 0 = no limit
    deadline: float | None = None
    growth: tuple[GrowthRequest, ...] = ()
    node_count: int = 0  # 0 = any number of nodes; > 0 = exactly this many distinct nodes
    per_node_request: tuple[int, ...] = ()  # () = nothing extra on each used node
    contiguous: bool = False  # used nodes must be consecutive indices
    earliest_start: float | None = None  # never started before this time (None: at submission)
    app: AppSpec | None = None  # the application model of a deadline job (docs/DEADLINE.md)
    index: int = -1

    @property
    def ready_at(self) -> float:
        """The earliest time the job may start: its submission, or its earliest start when later."""
        est = self.earliest_start
        return float(self.submit) if est is None or est < self.submit else float(est)

    @property
    def total_request(self) -> tuple[int, ...]:
        """Total amounts when the node count is known (``node_count``), else the units' total."""
        tot = [self.units * a for a in self.unit_request]
        if self.per_node_request and self.node_count:
            tot = [t + self.node_count * p for t, p in zip(tot, self.per_node_request)]
        return tuple(tot)

    @property
    def constrained(self) -> bool:
        """True for Slurm-style jobs: a node count, per-node extras or contiguity."""
        return bool(
            self.node_count
            or self.contiguous
            or (self.per_node_request and any(self.per_node_request))
        )

    @property
    def exact_nodes(self) -> int:
        """The number of nodes the job must use when it is fixed (``node_count``, or ``units``
        when every unit must be on its own node), else 0."""
        if self.node_count:
            return self.node_count
        return self.units if self.max_units_per_node == 1 else 0

    @property
    def slurm_type(self) -> int:
        """The paper's request type: 1 = total cores only (no node count); 3 = nodes and a
        fixed amount per node (every node holds exactly one unit); 2 = nodes and a total
        spread over them (each node at least one unit)."""
        n = self.exact_nodes
        if n == 0:
            return 1
        return 3 if self.units == n else 2

    def duration(self, walltime_kill: bool = True) -> int:
        """How long the job really runs: its run time, or its wall-time when it would be killed."""
        return min(self.run_time, self.wall_time) if walltime_kill else self.run_time


@dataclass
class SkipReport:
    """Records that were dropped (per reason, with their first line numbers) or patched."""

    total_records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    first_lines: dict[str, list[int]] = field(default_factory=dict)
    patched: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    keep_lines: int = 5

    def skip(self, reason: str, lines: Iterable[int]) -> None:
        lines = list(lines)
        if not lines:
            return
        self.skipped[reason] = self.skipped.get(reason, 0) + len(lines)
        first = self.first_lines.setdefault(reason, [])
        first.extend(sorted(int(x) for x in lines)[: self.keep_lines])
        first.sort()
        del first[self.keep_lines :]

    def patch(self, what: str, count: int) -> None:
        if count:
            self.patched[what] = self.patched.get(what, 0) + int(count)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def describe(self) -> str:
        lines = [f"{self.total_records} records read, {self.n_skipped} skipped"]
        for reason, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            shown = ", ".join(map(str, self.first_lines.get(reason, [])))
            lines.append(f"  skipped {n} x {reason} (first lines: {shown})")
        for what, n in sorted(self.patched.items()):
            lines.append(f"  patched {n} x {what}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_records": self.total_records,
            "skipped": dict(self.skipped),
            "first_lines": {k: list(v) for k, v in self.first_lines.items()},
            "patched": dict(self.patched),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class WorkloadSource:
    """Where a workload came from, precise enough to load it again (the validator does)."""

    kind: str  # "swf", "synthetic", "table", "memory"
    spec: str  # the string given on the command line (path or synthetic:...)
    options: dict[str, Any] = field(default_factory=dict)


class Workload:
    """An ordered, immutable collection of jobs that all use the same resource columns.

    Jobs are kept in submission order (ties keep their source order); ``job.index`` is the
    position. Columnar numpy views (``submit``, ``units``, ``unit_requests`` ...) are built
    on first use.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        resources: Sequence[str],
        source: WorkloadSource | None = None,
        report: SkipReport | None = None,
        queue_names: dict[int, str] | None = None,
        header: dict[str, str] | None = None,
        queue_ewt: dict[int, float] | None = None,
        labels: dict[str, dict[int, str]] | None = None,
    ):
        jobs = list(jobs)
        self._describe(len(jobs), resources, source, report, queue_names, header, queue_ewt, labels)
        n_res = len(self.resources)
        lengths = {len(j.unit_request) for j in jobs}
        if lengths - {n_res}:
            bad = next(j for j in jobs if len(j.unit_request) != n_res)
            raise ConfigError(
                f"job {bad.id}: unit_request has {len(bad.unit_request)} entries, "
                f"the workload has resources {list(self.resources)}"
            )
        for j in jobs:
            if j.node_count or j.contiguous or j.per_node_request:
                _check_constraints(j, n_res)
        self._refuse_duplicate_ids(
            np.fromiter((j.id for j in jobs), dtype=np.int64, count=len(jobs))
        )
        submit = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=len(jobs))
        in_order = len(jobs) < 2 or bool((np.diff(submit) >= 0).all())
        if not in_order:
            order = np.argsort(submit, kind="stable").tolist()
            jobs = [jobs[i] for i in order]
        if any(j.index != pos for pos, j in enumerate(jobs)):
            jobs = [j if j.index == pos else j._replace(index=pos) for pos, j in enumerate(jobs)]
        self._jobs: tuple[Job, ...] | None = tuple(jobs)
        self._plain_fields: dict[str, np.ndarray] = {}

    def _describe(
        self,
        n_jobs: int,
        resources: Sequence[str],
        source: WorkloadSource | None,
        report: SkipReport | None,
        queue_names: dict[int, str] | None,
        header: dict[str, str] | None,
        queue_ewt: dict[int, float] | None,
        labels: dict[str, dict[int, str]] | None,
    ) -> None:
        """Everything but the jobs (shared by both ways of building a workload)."""
        self._n_jobs = n_jobs
        self.resources = tuple(resources)
        #: names behind integer job fields, per field (``"user"``, ``"group"``, ``"partition"``):
        #: ``{id: name}``; a Slurm file's ``user=alice`` becomes ``Job.user = 1`` with
        #: ``labels["user"][1] == "alice"``
        self.labels = {k: dict(v) for k, v in (labels or {}).items()}
        #: expected waiting time per queue (mean recorded wait of the trace, SWF field 3);
        #: empty when the source records no waits. Used by the CP dispatchers' v1/v2 objective.
        self.queue_ewt = dict(queue_ewt or {})
        self.source = source or WorkloadSource(kind="memory", spec="<memory>")
        self.report = report or SkipReport(total_records=n_jobs)
        self.queue_names = dict(queue_names or {})
        self.header = dict(header or {})

    def _refuse_duplicate_ids(self, ids: np.ndarray) -> None:
        sorted_ids = np.sort(ids)
        dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
        if len(dup):
            raise ConfigError(
                f"duplicate job id {int(sorted_ids[dup[0]])} in workload {self.source.spec}"
            )

    #: the fields of a plain job (:meth:`of_plain_columns`) given as columns; the others are
    #: Job's defaults (no deadline, growth, node constraints or application model)
    PLAIN_FIELDS = (
        "id",
        "submit",
        "run_time",
        "wall_time",
        "units",
        "unit_request",
        "user",
        "group",
        "queue",
        "partition",
        "executable",
        "processors",
    )

    @classmethod
    def of_plain_columns(
        cls,
        fields: dict[str, np.ndarray],
        resources: Sequence[str],
        source: WorkloadSource | None = None,
        report: SkipReport | None = None,
        queue_names: dict[int, str] | None = None,
        header: dict[str, str] | None = None,
        queue_ewt: dict[int, float] | None = None,
        labels: dict[str, dict[int, str]] | None = None,
    ) -> Workload:
        """A workload of plain jobs held as columns (``fields``: one array per name of
        :attr:`PLAIN_FIELDS`, in submission order; ``unit_request`` of shape ``(n_jobs,
        n_resources)``), as a trace reader holds them. The :class:`Job` objects are built only
        when something asks for them (``jobs``, iteration, indexing): a run on the compiled
        engine reads only the columns, and a trace of 200,000 jobs is not turned into 200,000
        Python objects for nothing. Refused like :class:`Workload`'s jobs: duplicate ids, a
        request of another width, submissions out of order."""
        missing = [name for name in cls.PLAIN_FIELDS if name not in fields]
        if missing:
            raise ValueError(
                f"of_plain_columns needs the columns {list(cls.PLAIN_FIELDS)}; missing {missing}"
            )
        n = len(fields["id"])
        self = cls.__new__(cls)
        self._describe(n, resources, source, report, queue_names, header, queue_ewt, labels)
        plain = {}
        for name in cls.PLAIN_FIELDS:
            given = np.asarray(fields[name])
            if given.dtype.kind not in "iu" and not (given.size == 0 and given.dtype.kind == "f"):
                raise ConfigError(
                    f"column {name} holds {given.dtype} values; job fields are integers"
                )
            arr = np.array(given, dtype=np.int64)  # (a copy: the caller's arrays stay its own)
            expected = (n, len(self.resources)) if name == "unit_request" else (n,)
            if arr.shape != expected:
                raise ConfigError(
                    f"column {name} has shape {arr.shape}, expected {expected} "
                    f"({n} jobs, resources {list(self.resources)})"
                )
            arr.flags.writeable = False
            plain[name] = arr
        self._refuse_duplicate_ids(plain["id"])
        if n > 1 and not bool((np.diff(plain["submit"]) >= 0).all()):
            raise ValueError("of_plain_columns: the jobs must be in submission order")
        self._jobs = None
        self._plain_fields = plain
        zeros, no_contiguity = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        no_extras = np.zeros((n, len(self.resources)), dtype=np.int64)
        for arr in (zeros, no_contiguity, no_extras):
            arr.flags.writeable = False
        self.__dict__.update(  # what the cached properties would compute from the jobs
            ids=plain["id"],
            submit=plain["submit"],
            run_time=plain["run_time"],
            wall_time=plain["wall_time"],
            units=plain["units"],
            unit_requests=plain["unit_request"],
            users=plain["user"],
            queues=plain["queue"],
            max_units_per_node=zeros,
            node_counts=zeros,
            contiguous=no_contiguity,
            per_node_requests=no_extras,
            has_deadlines=False,
            has_apps=False,
            has_constraints=False,
            has_growth=False,
        )
        return self

    @property
    def jobs(self) -> tuple[Job, ...]:
        """The jobs, in submission order (built on first use when the workload holds columns;
        once, also when threads ask at the same time)."""
        if self._jobs is None:
            with _BUILDING:
                if self._jobs is None:
                    self._jobs = self._plain_jobs()
        return self._jobs

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "jobs" in state:  # pickled by a version that kept the jobs as an attribute
            state = dict(state)
            jobs = state.pop("jobs")
            state.update(_jobs=jobs, _n_jobs=len(jobs), _plain_fields={})
        self.__dict__.update(state)

    @property
    def jobs_built(self) -> bool:
        """Whether the :class:`Job` objects exist (always, but for a workload of columns that
        nothing has asked for its jobs yet)."""
        return self._jobs is not None

    def _plain_jobs(self) -> tuple[Job, ...]:
        f, n = self._plain_fields, self._n_jobs
        with gc_paused():  # (millions of new ints and tuples: the collector would walk them all)
            columns = [
                f[name].tolist() for name in ("id", "submit", "run_time", "wall_time", "units")
            ]
            requests = list(map(tuple, f["unit_request"].tolist()))
            named = [
                f[name].tolist() for name in ("user", "group", "queue", "partition", "executable")
            ]
            jobs = tuple(
                map(
                    make_job,
                    zip(
                        *columns,
                        requests,
                        *named,
                        [None] * n,
                        f["processors"].tolist(),
                        [0] * n,
                        [None] * n,
                        [()] * n,
                        [0] * n,
                        [()] * n,
                        [False] * n,
                        [None] * n,
                        [None] * n,
                        range(n),
                    ),
                )
            )
        return jobs

    def __len__(self) -> int:
        return self._n_jobs

    def __iter__(self):
        return iter(self.jobs)

    def __getitem__(self, i: int) -> Job:
        return self.jobs[i]

    #: the columns a reader may hand over with :meth:`known_columns` (name -> dtype)
    COLUMNS = {
        "ids": np.int64,
        "submit": np.int64,
        "run_time": np.int64,
        "wall_time": np.int64,
        "units": np.int64,
        "unit_requests": np.int64,
        "users": np.int64,
        "queues": np.int64,
        "max_units_per_node": np.int64,
        "node_counts": np.int64,
        "contiguous": bool,
        "per_node_requests": np.int64,
    }

    def known_columns(self, **columns: np.ndarray) -> Workload:
        """Hand over columns a reader already holds as arrays (one value per job, in the
        workload's order), so that they are not rebuilt from the jobs; returns ``self``."""
        for name, values in columns.items():
            arr = np.array(
                values, dtype=self.COLUMNS[name]
            )  # (a copy: the caller's array stays its own)
            if len(arr) != len(self):
                raise ValueError(f"column {name} has {len(arr)} values for {len(self)} jobs")
            arr.flags.writeable = False
            self.__dict__[name] = arr  # what the cached property would compute
        return self

    def _column(self, name: str, dtype: Any) -> np.ndarray:
        arr = np.fromiter((getattr(j, name) for j in self.jobs), dtype=dtype, count=len(self.jobs))
        arr.flags.writeable = False
        return arr

    @cached_property
    def ids(self) -> np.ndarray:
        return self._column("id", np.int64)

    @cached_property
    def submit(self) -> np.ndarray:
        return self._column("submit", np.int64)

    @cached_property
    def run_time(self) -> np.ndarray:
        return self._column("run_time", np.int64)

    @cached_property
    def wall_time(self) -> np.ndarray:
        return self._column("wall_time", np.int64)

    @cached_property
    def units(self) -> np.ndarray:
        return self._column("units", np.int64)

    @cached_property
    def unit_requests(self) -> np.ndarray:
        """``(n_jobs, n_resources)`` per-unit request."""
        arr = np.array([j.unit_request for j in self.jobs], dtype=np.int64).reshape(
            len(self.jobs), len(self.resources)
        )
        arr.flags.writeable = False
        return arr

    @cached_property
    def per_node_requests(self) -> np.ndarray:
        """``(n_jobs, n_resources)`` amounts needed on every used node on top of the units."""
        arr = np.zeros((len(self.jobs), len(self.resources)), dtype=np.int64)
        for j in self.jobs:
            if j.per_node_request:
                arr[j.index] = j.per_node_request
        arr.flags.writeable = False
        return arr

    @cached_property
    def users(self) -> np.ndarray:
        return self._column("user", np.int64)

    @cached_property
    def queues(self) -> np.ndarray:
        return self._column("queue", np.int64)

    @cached_property
    def max_units_per_node(self) -> np.ndarray:
        return self._column("max_units_per_node", np.int64)

    @cached_property
    def node_counts(self) -> np.ndarray:
        return self._column("node_count", np.int64)

    @cached_property
    def contiguous(self) -> np.ndarray:
        return self._column("contiguous", bool)

    @cached_property
    def has_deadlines(self) -> bool:
        """True when any job has a deadline or an earliest start (a deadline workload)."""
        # (map and attrgetter: the loops in C, 10x a generator's speed on 200,000 jobs)
        return _any_set(self.jobs, "deadline") or _any_set(self.jobs, "earliest_start")

    @cached_property
    def has_apps(self) -> bool:
        """True when any job has an application model (its run time is the execution
        model's output, :mod:`hpcdispatch.sim.execution`)."""
        return _any_set(self.jobs, "app")

    @cached_property
    def has_constraints(self) -> bool:
        """True when any job has a node count, per-node extras or contiguity."""
        jobs = self.jobs  # (Job.constrained, field by field, the loops in C)
        return (
            any(map(attrgetter("node_count"), jobs))
            or any(map(attrgetter("contiguous"), jobs))
            or any(map(any, map(attrgetter("per_node_request"), jobs)))
        )

    @cached_property
    def has_growth(self) -> bool:
        """True when any job has growth requests."""
        return any(map(attrgetter("growth"), self.jobs))

    def window(self, start: int, length: int) -> Workload:
        """Jobs ``start .. start + length - 1`` (in submission order), as an episode of a
        learning environment takes them; the source records ``first_job`` and ``jobs``, so the
        window can be taken again from the source (:func:`~hpcdispatch.workload.loader.
        workload_from_source`)."""
        n = len(self)
        if not 0 <= start < n or length < 1:
            raise ConfigError(f"no jobs {start}..{start + length - 1} in a workload of {n} jobs")
        stop = min(start + length, n)
        return self._rows(start, stop, {"first_job": int(start), "jobs": int(stop - start)})

    def subset(self, n: int) -> Workload:
        """The first ``n`` jobs (in submission order); the source records ``max_jobs=n``."""
        return self._rows(0, n, {"max_jobs": n})

    def _rows(self, start: int, stop: int, recorded: dict[str, Any]) -> Workload:
        """Jobs ``start:stop`` as a workload of their own whose source adds ``recorded``."""
        source = WorkloadSource(
            self.source.kind, self.source.spec, {**self.source.options, **recorded}
        )
        if self._jobs is None:  # still columns: so are the rows
            return Workload.of_plain_columns(
                {name: values[start:stop] for name, values in self._plain_fields.items()},
                self.resources,
                source,
                self.report,
                self.queue_names,
                self.header,
                self.queue_ewt,
                self.labels,
            )
        return Workload(
            self.jobs[start:stop],
            self.resources,
            source,
            self.report,
            self.queue_names,
            self.header,
            self.queue_ewt,
            self.labels,
        )

    def jittered(self, seconds: int, seed: int) -> Workload:
        """The same jobs with each submission time moved by a whole number of seconds drawn
        uniformly from ``[-seconds, +seconds]`` (seeded), never before the first submission;
        a job's deadline and earliest start move with it. Replicas of one trace for measuring how far a metric
        moves under perturbations too small to matter (scheduling simulations are chaotic:
        Tsafrir and Feitelson 2006). The source records ``submit_jitter`` and ``jitter_seed``."""
        if seconds < 0:
            raise ConfigError(f"submit jitter must be >= 0 seconds, got {seconds}")
        if seconds == 0 or not len(self):
            return self
        rng = np.random.default_rng(seed)
        shift = rng.integers(-seconds, seconds + 1, size=len(self))
        old_submit = self.submit
        submit = np.maximum(old_submit.min(), old_submit + shift)
        order = np.argsort(submit, kind="stable")  # (the order Workload() would sort them into)
        options = {**self.source.options, "submit_jitter": int(seconds), "jitter_seed": int(seed)}
        report = replace(
            self.report,
            skipped=dict(self.report.skipped),
            patched=dict(self.report.patched),
            first_lines={k: list(v) for k, v in self.report.first_lines.items()},
            notes=[*self.report.notes, f"submit times jittered by up to {seconds} s (seed {seed})"],
        )
        source = WorkloadSource(self.source.kind, self.source.spec, options)
        if (
            self._jobs is None
        ):  # still columns (plain jobs): so is the replica, each column reordered once
            fields = {name: values[order] for name, values in self._plain_fields.items()}
            fields["submit"] = submit[order]
            return Workload.of_plain_columns(
                fields,
                self.resources,
                source,
                report,
                self.queue_names,
                self.header,
                self.queue_ewt,
                self.labels,
            )
        submit_l, moved_l = submit.tolist(), (submit - old_submit).tolist()
        # the replica built in its final order, each job's index set, in one pass: a plain job
        # is its tuple with the new submission and index (the fields are Job's, in order)
        new_plain = partial(tuple.__new__, Job)
        jobs: list[Job] = []
        for pos, i in enumerate(order.tolist()):
            job = self.jobs[i]
            if job.deadline is None and job.earliest_start is None:
                jobs.append(new_plain((job[0], submit_l[i], *job[2:-1], pos)))
                continue
            moved = moved_l[i]
            jobs.append(
                job._replace(
                    submit=submit_l[i],
                    index=pos,
                    deadline=None if job.deadline is None else job.deadline + moved,
                    earliest_start=None
                    if job.earliest_start is None
                    else job.earliest_start + moved,
                )
            )
        replica = Workload(
            jobs,
            self.resources,
            source,
            report,
            self.queue_names,
            self.header,
            self.queue_ewt,
            self.labels,
        )
        # every column the original holds (and those the engine always needs) in the new order
        wanted = {"ids", "run_time", "wall_time", "units", "unit_requests"} | set(self.__dict__)
        known = {
            name: getattr(self, name)[order]
            for name in self.COLUMNS
            if name in wanted and name != "submit"
        }
        return replica.known_columns(submit=submit[order], **known)

    def offered_load(self, total_capacity: np.ndarray) -> np.ndarray:
        """Offered load per resource: sum(request x run time) / (capacity x submission span);
        per-node extras count on the job's node count (at least one node)."""
        if not len(self):
            return np.zeros(len(self.resources))
        span = max(float(self.submit[-1] - self.submit[0]), 1.0)
        work = (self.unit_requests * self.units[:, None] * self.run_time[:, None]).sum(axis=0)
        if self.has_constraints:  # per-node extras (--gres) on the job's fewest nodes
            nodes = np.maximum(self.node_counts, 1)[:, None]
            work = work + (self.per_node_requests * nodes * self.run_time[:, None]).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total_capacity > 0, work / (total_capacity * span), 0.0)


def _check_constraints(job: Job, n_res: int) -> None:
    if job.per_node_request and len(job.per_node_request) != n_res:
        raise ConfigError(
            f"job {job.id}: per_node_request has {len(job.per_node_request)} entries, the workload "
            f"has {n_res} resources"
        )
    if job.per_node_request and min(job.per_node_request) < 0:
        raise ConfigError(f"job {job.id}: negative per_node_request {list(job.per_node_request)}")
    if job.node_count < 0:
        raise ConfigError(f"job {job.id}: node_count must be >= 0, got {job.node_count}")
    if job.node_count:
        if job.units < job.node_count:
            raise ConfigError(
                f"job {job.id}: {job.units} unit(s) cannot cover {job.node_count} nodes (each needs one)"
            )
        if job.max_units_per_node and job.max_units_per_node * job.node_count < job.units:
            raise ConfigError(
                f"job {job.id}: {job.units} units do not fit on {job.node_count} nodes with at most "
                f"{job.max_units_per_node} per node"
            )
    if job.growth and job.constrained:
        raise ConfigError(
            f"job {job.id}: growth requests are not supported for jobs with node constraints"
        )


_JOB_FIELDS = len(Job._fields)
#: held while a workload of columns builds its jobs
_BUILDING = threading.Lock()


def make_job(fields: tuple) -> Job:
    """Build a :class:`Job` from a full tuple of its fields in declaration order (fast path;
    a tuple of another length -- a reader written for other fields -- is refused)."""
    if len(fields) != _JOB_FIELDS:
        raise ValueError(
            f"make_job needs the {_JOB_FIELDS} fields of Job {Job._fields}, got {len(fields)}"
        )
    return tuple.__new__(Job, fields)


def _any_set(jobs: Sequence[Job], field: str) -> bool:
    """Whether any job's ``field`` is not ``None``."""
    return any(map(partial(is_not, None), map(attrgetter(field), jobs)))
