"""Fixtures and settings shared by the test modules.

``compiled_kernels`` (session scope): the numba kernels loaded, or compiled, once per test run
before the first test that uses them, so that each test's duration is its own. Modules whose
tests run compiled code (the engine, conservative backfilling's profile search and
compression, every CP dispatcher's ``setup``) use it with
``pytestmark = pytest.mark.usefixtures("compiled_kernels")``. The tests of compilation itself
(``test_compiled.py``: a first run, an installation, the jit disabled) compile in subprocesses
with caches of their own, which this fixture does not touch.

Hypothesis runs without its per-example deadline (200 ms) and without its "too slow" health
check in every test (the ``hpcdispatch`` profile, loaded here before the test modules make
their own settings, which inherit it): both time the examples, and on a loaded machine they
fail tests whose results are right. The tests check results; speed is for benchmarks/.

The suite runs on every core (pytest-xdist, ``-n auto --dist loadfile`` in ``pyproject.toml``:
a file's tests stay on one worker, so module fixtures such as an emulated Slurm cluster start
once). The files that take longest are handed out first, so that none of them starts last and
leaves one worker alone at the end. ``-n 0`` runs the suite in this one process (a debugger).

The session's parsed-trace cache (``workload/trace_cache.py``) is its own, a temporary
directory removed at the end: tests never read entries a user's runs left, and leave none in
``~/.cache``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "hpcdispatch", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("hpcdispatch")


@pytest.fixture(scope="session")
def compiled_kernels() -> None:
    """Every entry point of :func:`hpcdispatch.compiled.kernels.entry_signatures` (the engine's
    event loop and the two profile kernels, each holding the kernels it calls) loaded from the
    engine's on-disk cache, or compiled into it when the cache lacks it -- what an installation
    does at build time (``compiled/install_time.py``). Without it, the first test to reach a
    compiled path paid for the compilation: 98.7 s for the profile kernels on a loaded machine.
    Under ``NUMBA_DISABLE_JIT=1`` the kernels are plain functions and nothing is done."""
    from hpcdispatch.compiled import kernels
    from hpcdispatch.compiled.disk_cache import load_compiled, load_numba_registries

    for name, signature in kernels.entry_signatures().items():
        function = getattr(kernels, name)
        if not hasattr(function, "compile") or load_compiled(function, signature):
            continue  # NUMBA_DISABLE_JIT; or loaded from disk
        load_numba_registries()
        function.compile(signature)  # (kept on disk by the engine's cache when it can be)


@pytest.fixture(scope="session", autouse=True)
def _own_trace_cache():
    where = tempfile.mkdtemp(prefix="hpcdispatch-test-traces-")
    before = os.environ.get("HPCDISPATCH_TRACE_CACHE")
    os.environ["HPCDISPATCH_TRACE_CACHE"] = where  # (subprocesses inherit it)
    yield
    if before is None:
        os.environ.pop("HPCDISPATCH_TRACE_CACHE", None)
    else:
        os.environ["HPCDISPATCH_TRACE_CACHE"] = before
    shutil.rmtree(where, ignore_errors=True)


#: the files whose tests take longest in all (``--durations=0``, summed per file), longest
#: first: the emulated Slurm clusters (mostly waiting on the clusters' clock), CP solves, the
#: compilation tests, the CLI and browser tests
_LONGEST_FILES = (
    "test_slurm_bridge.py",
    "test_cp.py",
    "test_slurm_cluster.py",
    "test_compiled.py",
    "test_cli.py",
    "test_report_browser.py",
    "test_traces_slow.py",
    "test_interrupt.py",
    "test_checkpoint.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (a stable sort: within a file, and among the rest, the order of
    collection stays)."""
    rank = {name: i for i, name in enumerate(_LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
