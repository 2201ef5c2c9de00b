"""List schedulers: FIFO and SJF.

Both walk the queue in priority order and start jobs while they fit; with ``blocking=True``
(the default, as in AccaSim) they stop at the first job that does not fit, so a job is
never overtaken by a lower-priority one. With ``blocking=False`` they skip it and keep going
(greedy list scheduling, which can starve large jobs).
"""

from __future__ import annotations

from hpcdispatch.dispatchers.base import Dispatcher, Scratch, Tags, register
from hpcdispatch.sim.decision import Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.workload.job import Job


def start_in_order(jobs, scratch: Scratch, blocking: bool) -> None:
    for job in jobs:
        if scratch.try_start(job) is None:
            if blocking:
                return
            if scratch.nothing_free():
                return


@register
class FIFO(Dispatcher):
    """First come, first served: queue order (submit time, then workload order)."""

    name = "fifo"
    tags = Tags(needs_walltime=False)

    def __init__(self, allocator: str = "first-fit", blocking: bool = True):
        self.allocator = allocator
        self.blocking = blocking

    def _dispatch(self, view: DispatchView) -> list[Start]:
        scratch = Scratch(view, self._allocator)
        start_in_order(view.queue, scratch, self.blocking)
        return scratch.starts


@register
class SJF(Dispatcher):
    """Shortest job first by planned (predicted) duration; ties by queue order."""

    name = "sjf"

    def __init__(self, allocator: str = "first-fit", blocking: bool = True):
        self.allocator = allocator
        self.blocking = blocking

    def _dispatch(self, view: DispatchView) -> list[Start]:
        scratch = Scratch(view, self._allocator)
        planned = view.planned_duration
        order: list[Job] = sorted(view.queue, key=lambda j: (planned(j), j.index))
        start_in_order(order, scratch, self.blocking)
        return scratch.starts
