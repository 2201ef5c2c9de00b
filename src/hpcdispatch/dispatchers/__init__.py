"""Dispatchers: the policies. Importing this package registers the built-in ones.

Where a new dispatcher goes: one module here, a class deriving from
:class:`~hpcdispatch.dispatchers.base.Dispatcher` with ``@register`` (see
``docs/ARCHITECTURE.md`` and ``docs/ADD_A_DISPATCHER.md``).
"""

from hpcdispatch.dispatchers import aucsched, conservative, cp, easy, priority, slurm_bf  # noqa: F401  (registration)
from hpcdispatch.dispatchers.base import DISPATCHERS, Dispatcher, Scratch, Tags, dispatcher_function, register
from hpcdispatch.dispatchers.conservative import Conservative
from hpcdispatch.dispatchers.easy import EASY
from hpcdispatch.dispatchers.priority import FIFO, SJF
from hpcdispatch.planning.profile import AvailabilityProfile
from hpcdispatch.dispatchers.aucsched import Aucsched
from hpcdispatch.dispatchers.slurm_bf import SlurmBackfill
from hpcdispatch.dispatchers.registry import dispatcher_class, make_dispatcher, split_dispatcher_list

__all__ = [
    "Aucsched",
    "DISPATCHERS",
    "EASY",
    "FIFO",
    "SJF",
    "SlurmBackfill",
    "AvailabilityProfile",
    "Conservative",
    "Dispatcher",
    "Scratch",
    "Tags",
    "dispatcher_class",
    "dispatcher_function",
    "make_dispatcher",
    "register",
    "split_dispatcher_list",
]
