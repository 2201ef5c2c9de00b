"""The compiled engine: the simulator's event loop and the baseline policies (FIFO, EASY)
with first fit and best fit, compiled with numba, for plain runs on whole traces.

:func:`refusal` says why a simulation cannot run on it (``None`` when it can);
:func:`hpcdispatch.simulate` then uses it (``engine="auto"``, the default) or the Python loop. The compiled
engine takes the same decisions as the Python classes and applies them with the same
checks; ``tests/test_compiled.py`` compares the two on random workloads. Importing this
package does not import numba; :func:`run_compiled` (runner.py) and the disk cache's
:func:`load_compiled` / :func:`load_numba_registries` do, on first use. ``AUTO_MIN_JOBS``:
the smallest workload ``engine="auto"`` compiles for.
"""

from typing import TYPE_CHECKING, Any

from hpcdispatch.compiled.eligibility import AUTO_MIN_JOBS, refusal

#: name -> module that defines it: imported on first use (these modules import numba)
_LAZY = {
    "run_compiled": "hpcdispatch.compiled.runner",
    "load_compiled": "hpcdispatch.compiled.disk_cache",
    "load_numba_registries": "hpcdispatch.compiled.disk_cache",
}

if TYPE_CHECKING:
    from hpcdispatch.compiled.disk_cache import load_compiled, load_numba_registries
    from hpcdispatch.compiled.runner import run_compiled


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hpcdispatch.compiled' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["AUTO_MIN_JOBS", "load_compiled", "load_numba_registries", "refusal", "run_compiled"]
