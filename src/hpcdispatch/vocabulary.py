"""The run's vocabulary: a job's status, the simulator's event kinds and why a job was cancelled.

Every layer imports these names from here; no other module spells a status, an event kind or
a cancel reason as a bare literal. The compiled kernels keep their own integer constants
(numba's disk cache is stamped by ``compiled/kernels.py`` alone), and
``tests/test_vocabulary.py`` pins them to these enums.

>>> from hpcdispatch.vocabulary import JobStatus
>>> JobStatus.COMPLETED == 3, JobStatus(4).name
(True, 'REJECTED')
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = ["CancelReason", "EventKind", "JobStatus"]


class JobStatus(IntEnum):
    """A job's status in a run's result arrays (``SimulationResult.status``, ``jobs.parquet``)."""

    PENDING = 0  #: not yet submitted
    QUEUED = 1  #: submitted, waiting
    RUNNING = 2  #: started, not yet ended
    COMPLETED = 3  #: ran to its end (or to its wall-time kill)
    REJECTED = 4  #: refused at submission by the dispatcher, with a reason
    CANCELLED = 5  #: cancelled (at its deadline, or when a booking on its nodes began)


class EventKind(IntEnum):
    """The simulator's kinds of event. For the first four the value is also the heap priority
    at one instant (ends before submissions before resizes before wake-ups); the others share
    a priority (:attr:`heap_priority`)."""

    END = 0
    SUBMIT = 1
    RESIZE = 2
    WAKEUP = 3
    REVISE = 4  #: an expired prediction
    CANCEL = 5  #: a job's deadline
    PHASE = 6  #: a deadline job's phase boundary (its last boundary is an END)
    TICK = -1  #: an interval tick

    @property
    def heap_priority(self) -> int:
        """Order among events of one instant: REVISE, CANCEL and PHASE run with RESIZE (after
        the ends and submissions), TICK with WAKEUP."""
        if self in (EventKind.REVISE, EventKind.CANCEL, EventKind.PHASE):
            return int(EventKind.RESIZE)
        if self is EventKind.TICK:
            return int(EventKind.WAKEUP)
        return int(self)


class CancelReason(StrEnum):
    """Why a job was cancelled (``cancel_reason`` in a run's job table)."""

    DEADLINE_WAITING = "deadline-waiting"  #: it reached its deadline still waiting
    DEADLINE_RUNNING = "deadline-running"  #: it reached its deadline still running
    BOOKING_CONFLICT = "booking-conflict"  #: a static job overran into the next booking (A19)
