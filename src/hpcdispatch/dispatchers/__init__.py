"""Dispatchers: the policies. Importing this package registers the built-in ones.

Where a new dispatcher goes: one module here, a class deriving from
:class:`~hpcdispatch.protocol.Dispatcher` with ``@register`` (see ``docs/ARCHITECTURE.md``
and ``docs/ADD_A_DISPATCHER.md``), imported below. :mod:`hpcdispatch.dispatchers.spec` turns
what a user writes (``easy:allocator=best-fit``, a sweep table) into a typed
:class:`DispatcherSpec` and builds dispatchers from it. ``DISPATCHERS`` is the registry of
names (from :mod:`hpcdispatch.protocol`). The RL papers' pick heuristics are ``HEURISTICS``
(:mod:`~hpcdispatch.dispatchers.pick`); a learned policy scores ``N_FEATURES`` features of
a window of ``DEFAULT_WINDOW`` jobs, waits scaled by ``DEFAULT_WAIT_SCALE``
(:mod:`~hpcdispatch.dispatchers.policy`).
"""

from hpcdispatch.dispatchers import (  # noqa: F401  (registration)
    aucsched,
    conservative,
    cp,
    deadline,
    easy,
    leak,
    pick,
    policy,
    priority,
    slurm_bf,
)
from hpcdispatch.dispatchers.aucsched import Aucsched
from hpcdispatch.dispatchers.conservative import Conservative
from hpcdispatch.dispatchers.easy import EASY
from hpcdispatch.dispatchers.pick import HEURISTICS, PickBase, requested_processors  # noqa: E402
from hpcdispatch.dispatchers.policy import (  # noqa: E402
    DEFAULT_WAIT_SCALE,
    DEFAULT_WINDOW,
    N_FEATURES,
    job_features,
)
from hpcdispatch.dispatchers.priority import FIFO, SJF
from hpcdispatch.dispatchers.slurm_bf import SlurmBackfill
from hpcdispatch.dispatchers.spec import (
    DispatcherSpec,
    label_for,
    make_dispatcher,
    parse_dispatcher_list,
    split_dispatcher_list,  # noqa: E402
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
    "DEFAULT_WAIT_SCALE",
    "DEFAULT_WINDOW",
    "DISPATCHERS",
    "Dispatcher",
    "DispatcherSpec",
    "EASY",
    "FIFO",
    "HEURISTICS",
    "N_FEATURES",
    "PickBase",
    "SJF",
    "Scratch",
    "SlurmBackfill",
    "Tags",
    "dispatcher_class",
    "dispatcher_function",
    "job_features",
    "label_for",
    "make_dispatcher",
    "parse_dispatcher_list",
    "register",
    "requested_processors",
    "split_dispatcher_list",
    "split_suffix",
]
