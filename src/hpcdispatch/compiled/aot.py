"""The engine compiled ahead of time: a plain extension module, built when hpcdispatch is
installed, that runs the event loop without numba.

numba's disk cache keeps compiled machine code, but loading it needs numba itself (its
dispatcher, runtime and LLVM bindings: 65 MB and 0.3 s of every run). An installation therefore
also builds :func:`~hpcdispatch.compiled.kernels.run_steps` with numba's ahead-of-time compiler
(``numba.pycc``) into ``hpcdispatch/compiled/_engine_aot*.so``, which needs only numpy;
``install_time.py`` calls :func:`build_engine`. A run loads it with :func:`load_engine` when it
was built from the same sources (it reports their :func:`source_stamp`), else the run uses
numba's cached engine, as an editable installation does. The two are the same code compiled
by the same compiler: ``tests/test_compiled.py`` checks that they give the same schedules.

``HPCDISPATCH_ENGINE=jit`` makes a run use numba's engine; ``NUMBA_DISABLE_JIT=1`` (numba's
switch for debugging) runs the kernels as Python.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any

#: the module's name inside ``hpcdispatch.compiled``
MODULE = "_engine_aot"
#: the entry points it holds
ENTRY_POINTS = ("run_steps",)
_HERE = Path(__file__).resolve().parent


def source_stamp(py_file: str | Path) -> str:
    """The SHA-256 of the engine's source: ``py_file`` and, for the kernels, the state layout
    whose constants are frozen into their code (``layout.py`` beside them)."""
    path = Path(py_file)
    digest = hashlib.sha256(path.read_bytes())
    layout = path.with_name("layout.py")
    if path.name == "kernels.py" and layout.is_file():
        digest.update(layout.read_bytes())
    return "sha256:" + digest.hexdigest()


def stamp_number(stamp: str) -> int:
    """The stamp as the int64 the module returns (the first 60 bits of the hash)."""
    return int(stamp.removeprefix("sha256:")[:15], 16)


def build_engine(kernels: ModuleType, out_dir: Path) -> Path:
    """Builds the ahead-of-time engine from ``kernels`` (compiled for :func:`entry_signatures`
    first, to learn each entry point's return type) into ``out_dir``; returns its path."""
    import warnings

    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():  # numba.pycc: pending deprecation since numba 0.57
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        from numba.pycc import CC

    cc = CC(MODULE)
    cc.output_dir = str(out_dir)
    cc.verbose = False
    signatures = kernels.entry_signatures()
    for name in ENTRY_POINTS:
        dispatcher = getattr(kernels, name)
        dispatcher.compile(signatures[name])
        cc.export(name, dispatcher.overloads[signatures[name]].signature)(dispatcher.py_func)
    namespace: dict[str, Any] = {}
    exec(  # noqa: S102  # a constant function: the stamp of the sources compiled into it
        f"def source_stamp():\n    return {stamp_number(source_stamp(kernels.__file__))}\n",
        namespace,
    )
    cc.export("source_stamp", "int64()")(namespace["source_stamp"])
    cc.compile()
    built = sorted(out_dir.glob(MODULE + ".*"))
    if not built:
        raise RuntimeError(f"numba.pycc wrote no {MODULE} module into {out_dir}")
    return built[0]


def load_engine() -> ModuleType | None:
    """The ahead-of-time engine, when this installation has one built from its sources and
    the run may use it; ``None`` otherwise (an editable installation has none; a module built
    from other sources, or one that does not load, is said in a warning)."""
    log = logging.getLogger("hpcdispatch")
    choice = os.environ.get("HPCDISPATCH_ENGINE", "").strip().lower()
    if choice not in ("", "jit"):
        log.warning("HPCDISPATCH_ENGINE=%s is not 'jit' (the only choice): ignored", choice)
    if choice == "jit" or jit_disabled():
        return None
    name = f"hpcdispatch.compiled.{MODULE}"
    if importlib.util.find_spec(name) is None:
        return None
    try:
        module = importlib.import_module(name)
        expected = stamp_number(source_stamp(_HERE / "kernels.py"))
    except (ImportError, OSError) as err:  # (numpy's ABI; sources not installed)
        log.warning("the ahead-of-time engine does not load (%s): using numba's", err)
        return None
    if module.source_stamp() != expected:
        log.warning("the ahead-of-time engine was built from other sources: using numba's")
        return None
    return module


def jit_disabled() -> bool:
    """Whether ``NUMBA_DISABLE_JIT`` is set (anything but empty or ``0``): the compiled engine
    is then refused (``eligibility.py``), and nothing compiled is used."""
    return os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")


def check_state_types(state: tuple[Any, ...], example: tuple[Any, ...]) -> None:
    """Raises ``TypeError`` unless each array of ``state`` has the dtype, dimensions, C order
    and writability of ``example``'s (``layout.example_state``): the ahead-of-time engine was
    compiled for exactly those and, unlike numba's, does not check what it is given."""
    for name, got, want in zip(type(state)._fields, state, example):  # type: ignore[attr-defined]
        if (
            got.dtype != want.dtype
            or got.ndim != want.ndim
            or not got.flags.c_contiguous
            or got.flags.writeable != want.flags.writeable
        ):
            raise TypeError(
                f"engine state '{name}': {got.dtype} {got.ndim}-d "
                f"(C order {got.flags.c_contiguous}, writable {got.flags.writeable}); the engine "
                f"was compiled for {want.dtype} {want.ndim}-d, C order, writable {want.flags.writeable}"
            )
