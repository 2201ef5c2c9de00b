"""What a dispatcher returns: jobs to start now and where, plus admission and resize answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from hpcdispatch.system.allocation import Allocation
from hpcdispatch.workload.job import Job


class Start(NamedTuple):
    """Start ``job`` now on ``allocation``."""

    job: Job
    allocation: Allocation


@dataclass
class Decision:
    """The outcome of one dispatcher call.

    ``starts``: jobs to start now, applied in order. ``cancels``: running jobs to stop now,
    each with a reason (a static deadline strategy cancels a job that outlived its booking
    when the next booking on its nodes begins, design note A19), applied before the starts.
    ``wakeup``: a time at which the
    dispatcher wants to be called again even if no event happens (e.g. a reservation that
    begins then, a solver that wants another round). ``info``: free-form per-decision record
    (model size, solver status ...) written to the decision log.
    """

    starts: list[Start] = field(default_factory=list)
    wakeup: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    cancels: Sequence[
        tuple[Job, str]
    ] = ()  # (last: positional callers; a tuple: no list per decision)


@dataclass(frozen=True)
class Admission:
    """Answer to a job's submission: accept it into the queue, or reject it with a reason."""

    accept: bool = True
    reason: str = ""


ACCEPT = Admission(True, "")


class ForkRequest(NamedTuple):
    """A running deadline job forks a process and has no free core for it on its nodes
    (:mod:`hpcdispatch.sim.execution`): it asks for one whole free node, the fork's parent
    running on ``parent_node``. Passed to ``Dispatcher.on_resize`` of a dispatcher whose tags
    say ``forks``; the answer is an allocation of exactly one whole free node, or ``None``
    (the child then shares its parent's node)."""

    parent_node: int
    nodes: int = 1


class RunningJob(NamedTuple):
    """A running job as dispatchers see it (the real end time is not part of it)."""

    job: Job
    start: float
    allocation: Allocation
    planned_end: float  # start + planned duration (the predictor's estimate at submit time)


class Booking(NamedTuple):
    """An advance reservation a dispatcher made (deadline strategies): job ``job`` (its
    workload index), booked at time ``made`` for ``[start, end)`` on whole ``nodes``;
    ``released``: when the nodes were given back before ``end`` (the job ended early), else
    ``end``. The simulator hands the dispatcher's bookings to the result and the validator
    checks the schedule against them."""

    job: int
    made: float
    start: float
    end: float
    nodes: tuple[int, ...]
    released: float
