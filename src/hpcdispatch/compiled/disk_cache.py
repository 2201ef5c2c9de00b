"""Where the compiled engine is kept on disk, so that numba compiles it once per installation:
at install time when hpcdispatch is installed from source or a wheel (``setup.py`` runs
:mod:`hpcdispatch.compiled.install_time`, which compiles the engine into the package), else
on the first run, which says so.

numba's own cache (``cache=True``) keeps compiled code in ``__pycache__`` beside the source or
in a user-wide directory, and older numba versions stamp it with the source file's
modification time, which an installation does not keep. The engine's entry points (the event
loop :func:`hpcdispatch.compiled.kernels.run_steps` and conservative backfilling's two profile
kernels, each holding the kernels it calls compiled into it) are cached instead by
:class:`EngineCacheLocator` (how: the docs page below).

Design notes, decisions and measurements: docs/PERFORMANCE.md,
"From the module docstrings".
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from numba.core import config
from numba.core.caching import CompileResultCacheImpl, FunctionCache, _CacheLocator
from numba.core.compiler_lock import global_compiler_lock
from numba.core.runtime import rtsys

# the stamp numba compares before it uses a cached engine: the sources' SHA-256 (the kernels and
# the state layout they read), shared with the ahead-of-time engine
from hpcdispatch.compiled.aot import source_stamp

#: the directory an installation ships the compiled engine in (one subdirectory per source)
PACKAGE_DIR = Path(__file__).with_name("engine")
#: numba's file names: ``<module>.<function>-<line>.py<version>.nbi`` (index), ``.nbc`` (code)
CACHE_SUFFIXES = (".nbi", ".nbc")


def user_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hpcdispatch" / "engine"


def writable(path: Path) -> bool:
    """Whether files can be written in ``path`` (made when missing)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def stamp_dir(stamp: str) -> str:
    """The subdirectory of one source's engine: two installations (or versions) sharing a
    cache directory keep their engines apart instead of overwriting each other's index."""
    return stamp.removeprefix("sha256:")[:16]


def cache_dir(
    stamp: str,
    numba_cache_dir: str = "",
    package_dir: Path = PACKAGE_DIR,
    user: Path | None = None,
    is_writable: Callable[[Path], bool] | None = None,
) -> Path | None:
    """The directory the engine of the source stamped ``stamp`` is read from and saved in
    (``None``: no writable one, numba then compiles it on every run). Order:
    ``NUMBA_CACHE_DIR``, the package, the user's cache directory seeded from the package."""
    is_writable = writable if is_writable is None else is_writable
    sub = stamp_dir(stamp)
    if numba_cache_dir:
        path = Path(numba_cache_dir) / "hpcdispatch-engine" / sub
        return path if is_writable(path) else None
    if is_writable(package_dir / sub):
        return package_dir / sub
    path = (user_dir() if user is None else user) / sub
    if not is_writable(path):
        return None
    seed(package_dir / sub, path)
    return path


def seed(shipped: Path, user: Path) -> list[str]:
    """Copies the shipped engine files (of one source) into ``user`` when it holds none (each
    file written under a temporary name, then renamed); returns the names copied. A copy
    that fails leaves what it could not copy to be compiled."""
    if not shipped.is_dir() or any(p.suffix in CACHE_SUFFIXES for p in user.iterdir()):
        return []
    copied = []
    for path in sorted(shipped.iterdir()):
        if path.suffix not in CACHE_SUFFIXES:
            continue
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=user, prefix=path.name + ".")
            os.close(fd)
            shutil.copyfile(path, tmp)
            os.replace(tmp, user / path.name)
        except OSError:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            return copied
        copied.append(path.name)
    return copied


class EngineCacheLocator(_CacheLocator):
    """numba's cache locator for the engine (see the module's docstring)."""

    def __init__(self, py_func, py_file: str, path: Path, stamp: str):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._path = path
        self._stamp = stamp

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str):
        stamp = source_stamp(py_file)
        path = cache_dir(stamp, config.CACHE_DIR)
        return None if path is None else cls(py_func, py_file, path, stamp)


class _EngineCacheImpl(CompileResultCacheImpl):
    _locator_classes = [EngineCacheLocator]


class NotOnDisk(Exception):
    """The on-disk cache does not hold the function for the signature asked for."""


class EngineCache(FunctionCache):
    _impl_class = _EngineCacheImpl
    #: set by :func:`load_compiled` for the one call it makes
    load_without_registries = False

    def load_overload(self, sig, target_context):
        if not self.load_without_registries:
            return super().load_overload(sig, target_context)
        rtsys.initialize(
            target_context
        )  # the runtime compiled code calls (what numba's refresh does first)
        cres = self._load_overload(sig, target_context)
        if cres is None:
            raise NotOnDisk(str(sig))
        return cres


def load_numba_registries() -> None:
    """Lets numba load its registries (before it compiles a function, or loads one that
    :func:`load_compiled` could not), without its BLAS probe (:func:`blas_probe_answered_no`)."""
    from numba.core.registry import cpu_target

    with blas_probe_answered_no():
        cpu_target.target_context.refresh()


def load_compiled(dispatcher, signature) -> bool:
    """Loads ``dispatcher`` compiled for ``signature`` from its on-disk cache, the way numba
    does on a function's first call but without loading numba's registries first: before it
    loads or compiles anything numba installs every typing and lowering rule it has (and
    imports the modules that define them: 0.3 s, a tenth of a whole-HPC2N run), which
    compiling needs and loaded machine code does not; the code needs only numba's runtime,
    initialised here. Returns ``False`` (nothing loaded, nothing compiled) when the cache does
    not hold it, or the dispatcher does not keep its code with :class:`EngineCache`: the
    caller then lets numba load its registries and compile as usual. numba's statistics
    count the load as a cache hit, as numba's own load would."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, EngineCache):
        return False
    with global_compiler_lock:  # (numba's: no other thread compiles while the cache loads this way)
        cache.load_without_registries = True
        try:
            with (
                blas_probe_answered_no()
            ):  # (code using numpy's routines rebuilds numba.np.arraymath)
                dispatcher.compile(signature)
        except NotOnDisk:
            return False
        finally:
            cache.load_without_registries = False
    return True


def keep_on_disk(dispatcher) -> bool:
    """Makes the numba dispatcher cache its compiled code with :class:`EngineCacheLocator`
    (``False``: no writable directory, it compiles on every run; or not a numba dispatcher,
    as under ``NUMBA_DISABLE_JIT=1``)."""
    if not hasattr(dispatcher, "py_func") or not hasattr(dispatcher, "_cache"):
        return False
    try:
        dispatcher._cache = EngineCache(dispatcher.py_func)
    except (RuntimeError, OSError):  # numba: "no locator available"; an unreadable source
        return False
    return True


def has_compiled(dispatcher, signature) -> bool | None:
    """Whether the on-disk cache holds ``dispatcher`` compiled for ``signature`` on this CPU
    and numba version, read from the index without loading the code (``None``: cannot tell)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except (AttributeError, OSError, EOFError, ValueError):
        return None


@contextmanager
def blas_probe_answered_no() -> Iterator[None]:
    """While numba imports ``numba.np.arraymath`` (its registries, or code that calls numpy's
    routines), its probe for BLAS is answered "no": the module imports ``scipy.linalg``
    (0.23 s, 7 % of a whole-HPC2N run) only to learn whether its inner products
    (``np.correlate``, ``np.convolve`` in compiled code) may call BLAS, which the engine never
    does. The probe is answered by marking ``scipy.linalg.cython_blas`` absent, unless scipy's
    BLAS or ``numba.np.arraymath`` is loaded already; numba then uses its own loop for those
    two functions in this process, and scipy imports as usual afterwards. Only in the main
    thread (elsewhere nothing is blocked): another thread importing ``scipy.linalg`` at that
    moment would fail, so a program that does both in threads loads scipy's BLAS first."""
    name = "scipy.linalg.cython_blas"
    blocked = (
        name not in sys.modules
        and "numba.np.arraymath" not in sys.modules
        and threading.current_thread() is threading.main_thread()
    )
    if blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # (Python's way to make an import fail)
    try:
        yield
    finally:
        if blocked and sys.modules.get(name, 0) is None:
            del sys.modules[name]
