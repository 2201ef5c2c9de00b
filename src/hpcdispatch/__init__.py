"""hpcdispatch: design, simulate, compare and run on-line HPC job dispatchers.

The entry points for a script::

    import hpcdispatch as h

    system = h.load_system("eurora")
    workload = h.load_workload("synthetic:lublin,jobs=500,seed=7,load=0.9", system)
    result = h.simulate(system, workload, "easy:allocator=best-fit")
    assert h.validate(result).ok
    print(h.summarize(result)["bounded_slowdown_mean"])
    h.compare(system, workload, "fifo,easy")   # in a notebook: a table; .qos_ecdf() a figure

A dispatcher of your own needs one import line: ``from hpcdispatch.protocol import
Dispatcher, DispatchView, Decision, Start`` (``docs/ADD_A_DISPATCHER.md``). ``__version__`` is the package's version.
"""

from typing import TYPE_CHECKING, Any

from hpcdispatch._version import __version__
from hpcdispatch.errors import HpcDispatchError

#: name -> module that defines it: imported on first use, so that ``import hpcdispatch`` (and
#: the command line's ``--help``) does not pay for numpy, pandas, pyarrow and OR-Tools
_LAZY = {
    "compare": "hpcdispatch.report.notebook",
    "DispatcherSpec": "hpcdispatch.dispatchers",
    "make_dispatcher": "hpcdispatch.dispatchers",
    "simulate": "hpcdispatch.engine",
    "summarize": "hpcdispatch.metrics",
    "write_result": "hpcdispatch.results",
    "SimulationOptions": "hpcdispatch.sim",
    "SimulationResult": "hpcdispatch.sim",
    "load_system": "hpcdispatch.system",
    "validate": "hpcdispatch.validation",
    "load_workload": "hpcdispatch.workload",
    "WorkloadSpec": "hpcdispatch.workload",
}

if TYPE_CHECKING:  # what type checkers and IDEs see
    from hpcdispatch.dispatchers import DispatcherSpec, make_dispatcher
    from hpcdispatch.engine import simulate
    from hpcdispatch.metrics import summarize
    from hpcdispatch.report.notebook import compare
    from hpcdispatch.results import write_result
    from hpcdispatch.sim import SimulationOptions, SimulationResult
    from hpcdispatch.system import load_system
    from hpcdispatch.validation import validate
    from hpcdispatch.workload import WorkloadSpec, load_workload


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        if name in ("simulate", "compare", "SimulationResult"):
            # a result's notebook tables and figures (installed by the report layer)
            import hpcdispatch.report.notebook  # noqa: F401
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hpcdispatch' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DispatcherSpec",
    "HpcDispatchError",
    "SimulationOptions",
    "SimulationResult",
    "WorkloadSpec",
    "__version__",
    "compare",
    "load_system",
    "load_workload",
    "make_dispatcher",
    "simulate",
    "summarize",
    "validate",
    "write_result",
]
