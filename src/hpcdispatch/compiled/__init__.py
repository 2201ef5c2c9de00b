"""The compiled engine: the simulator's event loop and the baseline policies (FIFO, EASY)
with first fit and best fit, compiled with numba, for plain runs on whole traces.

:func:`refusal` says why a simulation cannot run on it (``None`` when it can);
:func:`hpcdispatch.simulate` then uses it (``engine="auto"``, the default) or the Python loop. The compiled
engine takes the same decisions as the Python classes and applies them with the same
checks; ``tests/test_compiled.py`` compares the two on random workloads. Importing this
package does not import numba; :mod:`hpcdispatch.compiled.runner` does. ``AUTO_MIN_JOBS``:
the smallest workload ``engine="auto"`` compiles for.
"""

from hpcdispatch.compiled.eligibility import AUTO_MIN_JOBS, refusal

__all__ = ["AUTO_MIN_JOBS", "refusal"]
