"""Dispatchers: the policies. Importing this package registers the built-in ones.

Where a new dispatcher goes: one module here, a class deriving from
:class:`~hpcdispatch.protocol.Dispatcher` with ``@register`` (see ``docs/ARCHITECTURE.md``
and ``docs/ADD_A_DISPATCHER.md``), imported below. :mod:`hpcdispatch.dispatchers.spec` turns
what a user writes (``easy:allocator=best-fit``, a sweep table) into a typed
:class:`DispatcherSpec` and builds dispatchers from it. ``DISPATCHERS`` is the registry of
names (from :mod:`hpcdispatch.protocol`).
"""

from hpcdispatch.dispatchers import (  # noqa: F401  (registration)
    aucsched,
    conservative,
    cp,
    deadline,
    easy,
    leak,
    priority,
    slurm_bf,
)
from hpcdispatch.dispatchers.aucsched import Aucsched
from hpcdispatch.dispatchers.conservative import Conservative
from hpcdispatch.dispatchers.easy import EASY
from hpcdispatch.dispatchers.priority import FIFO, SJF
from hpcdispatch.dispatchers.slurm_bf import SlurmBackfill
from hpcdispatch.dispatchers.spec import (
    DispatcherSpec,
    label_for,
    make_dispatcher,
    parse_dispatcher_list,
    split_suffix,
)
from hpcdispatch.protocol import (
    DISPATCHERS,
    Dispatcher,
    Scratch,
    Tags,
    dispatcher_class,
    dispatcher_function,
    register,
)

__all__ = [
    "Aucsched",
    "Conservative",
    "DISPATCHERS",
    "Dispatcher",
    "DispatcherSpec",
    "EASY",
    "FIFO",
    "SJF",
    "Scratch",
    "SlurmBackfill",
    "Tags",
    "dispatcher_class",
    "dispatcher_function",
    "label_for",
    "split_suffix",
    "make_dispatcher",
    "parse_dispatcher_list",
    "register",
]
