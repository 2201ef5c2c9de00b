"""hpcdispatch: design, simulate, compare and run on-line HPC job dispatchers.

The entry points for a script::

    import hpcdispatch as h

    system = h.load_system("eurora")
    workload = h.load_workload("synthetic:lublin,jobs=500,seed=7,load=0.9", system)
    result = h.simulate(system, workload, "easy:allocator=best-fit")
    assert h.validate(result).ok
    print(h.summarize(result)["bounded_slowdown_mean"])

A dispatcher of your own needs one import line: ``from hpcdispatch.protocol import
Dispatcher, DispatchView, Decision, Start`` (``docs/ADD_A_DISPATCHER.md``).
"""

from hpcdispatch._version import __version__
from hpcdispatch.dispatchers import DispatcherSpec, make_dispatcher
from hpcdispatch.engine import simulate
from hpcdispatch.errors import HpcDispatchError
from hpcdispatch.metrics import summarize
from hpcdispatch.results import write_result
from hpcdispatch.sim import SimulationOptions, SimulationResult
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate
from hpcdispatch.workload import load_workload

__all__ = [
    "DispatcherSpec",
    "HpcDispatchError",
    "SimulationOptions",
    "SimulationResult",
    "__version__",
    "load_system",
    "load_workload",
    "make_dispatcher",
    "simulate",
    "summarize",
    "validate",
    "write_result",
]
