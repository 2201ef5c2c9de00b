"""hpcdispatch: design, simulate, compare and run on-line HPC job dispatchers.

The public entry points are re-exported here so that a script can write::

    from hpcdispatch import load_system, load_workload, Simulator, make_dispatcher
"""

from hpcdispatch.errors import HpcDispatchError

__version__ = "0.1.0"

__all__ = ["HpcDispatchError", "__version__"]
