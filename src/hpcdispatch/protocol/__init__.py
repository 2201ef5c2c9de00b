"""The protocol: everything the simulator shares with the dispatchers and predictors it drives.

A dispatcher needs one import line::

    from hpcdispatch.protocol import Decision, Dispatcher, DispatchView, Start

- :class:`DispatchView`: the read-only view a dispatcher gets at every call (free capacity,
  the queue, the running jobs with their planned ends, what changed since the last call);
  :class:`QueueView`; :class:`ReleaseOrder`, the running jobs' holdings in planned-end order;
- :class:`Decision` (:class:`Start` jobs now, ask for a ``wakeup``), :class:`Admission`
  (``ACCEPT``: the admission that takes a job as it is),
  :class:`RunningJob`, and :class:`Allocation` (which nodes, how many units on each);
- :class:`Dispatcher`, its :class:`Tags` and :class:`KernelSpec`; :class:`Scratch`, a working
  copy of the free capacity for one decision; :func:`register` / :func:`dispatcher_function`
  and the registry of names, ``DISPATCHERS``;
- :attr:`Dispatcher.parameter_constraints` and their kinds (:class:`OneOf`,
  :class:`Interval`, :class:`Boolean`, :class:`Text`, ``ALLOCATOR``; ``ParamConstraint`` is
  any of them), checked by :func:`check_params` (:mod:`hpcdispatch.protocol.constraints`);
- :class:`Predictor` (what a duration predictor offers) and its default,
  :class:`WallTimePredictor`.

Nothing here assumes simulated time: a bridge to a live cluster builds the same view.
The protocol imports the models below it (system, workload, allocators) and nothing above.
"""

from hpcdispatch.protocol.constraints import (
    ALLOCATOR,
    Boolean,
    Constraint,
    Interval,
    OneOf,
    ParamConstraint,
    Text,
    check_params,
    check_value,
)
from hpcdispatch.protocol.decision import (
    ACCEPT,
    Admission,
    Booking,
    Decision,
    ForkRequest,
    RunningJob,
    Start,
)
from hpcdispatch.protocol.dispatcher import Dispatcher, KernelSpec, Tags, describe_identity
from hpcdispatch.protocol.predictor import Predictor, WallTimePredictor
from hpcdispatch.protocol.registry import (
    DISPATCHERS,
    dispatcher_class,
    dispatcher_function,
    register,
)
from hpcdispatch.protocol.release_order import ReleaseOrder
from hpcdispatch.protocol.scratch import Scratch
from hpcdispatch.protocol.view import DispatchView, QueueView
from hpcdispatch.system.allocation import Allocation

__all__ = [
    "ALLOCATOR",
    "Boolean",
    "Constraint",
    "Interval",
    "OneOf",
    "ParamConstraint",
    "Text",
    "check_params",
    "check_value",
    "Booking",
    "ForkRequest",
    "ACCEPT",
    "Admission",
    "Allocation",
    "DISPATCHERS",
    "Decision",
    "DispatchView",
    "Dispatcher",
    "KernelSpec",
    "Predictor",
    "QueueView",
    "ReleaseOrder",
    "RunningJob",
    "Scratch",
    "Start",
    "Tags",
    "WallTimePredictor",
    "describe_identity",
    "dispatcher_class",
    "dispatcher_function",
    "register",
]
