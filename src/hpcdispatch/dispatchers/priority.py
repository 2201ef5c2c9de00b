"""List schedulers: FIFO and SJF.

Both walk the queue in priority order and start jobs while they fit; with ``blocking=True``
(the default, as in AccaSim) they stop at the first job that does not fit, so a job is
never overtaken by a lower-priority one. With ``blocking=False`` they skip it and keep going
(greedy list scheduling, which can starve large jobs).
"""

from __future__ import annotations

from typing import ClassVar

from hpcdispatch.protocol import (
    Boolean,
    Dispatcher,
    DispatchView,
    KernelSpec,
    ParamConstraint,
    Scratch,
    Start,
    Tags,
    register,
)
from hpcdispatch.workload.job import Job


def start_in_order(jobs, scratch: Scratch, blocking: bool) -> Job | None:
    """Start ``jobs`` in order while they fit; return the job that blocked (``blocking``)."""
    for job in jobs:
        if scratch.try_start(job) is None:
            if blocking:
                return job
            if scratch.nothing_free():
                return None
    return None


@register
class FIFO(Dispatcher):
    """First come, first served: queue order (submit time, then workload order)."""

    name = "fifo"
    tags = Tags(memoryless=True)  # _blocked is a shortcut cache

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "blocking": Boolean(),
    }

    def __init__(self, allocator: str = "first-fit", blocking: bool = True):
        self.allocator = allocator
        self.blocking = blocking

    def _setup(self, system) -> None:
        self._blocked: Job | None = None  # the head that did not fit at the last call

    def kernel(self) -> KernelSpec | None:
        if type(self) is not FIFO:  # a subclass may decide differently
            return None
        return KernelSpec("fifo", (1.0 if self.blocking else 0.0,))

    def _dispatch(self, view: DispatchView) -> list[Start]:
        if (
            self.blocking
            and self._blocked is not None
            and not view.ended_jobs
            and view.queue.head() is self._blocked
        ):
            # nothing ended since the head failed to fit (submissions and growth only take
            # capacity away): it fails again, and blocking FIFO starts nothing behind it
            return []
        scratch = Scratch(view, self._allocator)
        self._blocked = start_in_order(view.queue, scratch, self.blocking)
        return scratch.starts


@register
class SJF(Dispatcher):
    """Shortest job first by planned (predicted) duration; ties by queue order."""

    name = "sjf"
    tags = Tags(memoryless=True)

    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "blocking": Boolean(),
    }

    def __init__(self, allocator: str = "first-fit", blocking: bool = True):
        self.allocator = allocator
        self.blocking = blocking

    def _dispatch(self, view: DispatchView) -> list[Start]:
        scratch = Scratch(view, self._allocator)
        planned = view.planned_duration
        order: list[Job] = sorted(view.queue, key=lambda j: (planned(j), j.index))
        start_in_order(order, scratch, self.blocking)
        return scratch.starts
