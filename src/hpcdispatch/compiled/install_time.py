"""Compiles the engine's entry points into an installation, so that its first run does not:
``setup.py`` runs ``python install_time.py BUILD_LIB`` when it builds hpcdispatch (``pip
install .`` or a wheel), and the code lands in ``hpcdispatch/compiled/engine/``
(:mod:`hpcdispatch.compiled.disk_cache`) and, compiled ahead of time into a module that runs
without numba, in ``hpcdispatch/compiled/_engine_aot*.so`` (:mod:`hpcdispatch.compiled.aot`).

It runs in the build's own environment, which has numpy and numba but not the project's other
dependencies: it loads only :mod:`hpcdispatch.compiled.kernels` and the modules it imports (``layout``,
``disk_cache``, ``aot``) from BUILD_LIB, under empty parent packages, and
compiles every function of :func:`~hpcdispatch.compiled.kernels.entry_signatures`, after
removing what an earlier build in the same directory left (:func:`clean`).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import types
from pathlib import Path


def load_kernels(build_lib: Path):
    """``hpcdispatch.compiled.kernels`` from ``build_lib`` without the packages' ``__init__``."""
    for name in ("hpcdispatch", "hpcdispatch.compiled"):
        if name in sys.modules:
            raise RuntimeError(f"install_time: {name} is already imported")
        package = types.ModuleType(name)
        package.__path__ = [str(build_lib.joinpath(*name.split(".")))]
        sys.modules[name] = package
    from hpcdispatch.compiled import kernels

    return kernels


def clean(build_lib: Path, engines: bool = True) -> None:
    """Removes from ``build_lib`` numba's own caches of the kernels the entry points call
    (``__pycache__``: compiling the entry points writes them, and an installation never uses
    them) and, with ``engines``, what an earlier build there left (setuptools does not empty
    it): the engines of other sources."""
    compiled = build_lib / "hpcdispatch" / "compiled"
    if engines:
        shutil.rmtree(compiled / "engine", ignore_errors=True)
        for path in compiled.glob("_engine_aot*"):
            path.unlink()
    for path in (compiled / "__pycache__").glob("*.nb[ic]"):
        path.unlink()


def compile_entries(kernels) -> list[str]:
    """Compiles each entry point for its signature; returns one line per function."""
    from hpcdispatch.compiled.disk_cache import has_compiled

    lines = []
    for name, signature in kernels.entry_signatures().items():
        function = getattr(kernels, name)
        if not kernels.ON_DISK[name]:
            raise RuntimeError(f"install_time: no writable directory for the compiled {name}")
        started = time.perf_counter()
        function.compile(signature)
        if not has_compiled(function, signature):
            raise RuntimeError(f"install_time: {name} was compiled but is not in its cache")
        lines.append(f"{name}: {time.perf_counter() - started:.1f} s")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: install_time.py BUILD_LIB", file=sys.stderr)
        return 2
    sys.path[:] = [
        p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent
    ]
    build_lib = Path(argv[0]).resolve()
    clean(build_lib)
    kernels = load_kernels(build_lib)
    started = time.perf_counter()
    lines = compile_entries(kernels)
    from hpcdispatch.compiled.aot import build_engine

    ahead_started = time.perf_counter()
    try:
        ahead = build_engine(kernels, build_lib / "hpcdispatch" / "compiled").name
        lines.append(f"ahead of time: {time.perf_counter() - ahead_started:.1f} s")
    except Exception as err:  # numba without pycc, no C compiler: runs use numba's engine
        if os.environ.get("HPCDISPATCH_REQUIRE_AOT", "") not in ("", "0"):
            raise  # (CI: the module must be built)
        ahead = "no ahead-of-time module"
        print(
            f"hpcdispatch: the engine was not compiled ahead of time ({type(err).__name__}: "
            f"{err}); runs will load numba's compiled engine instead (65 MB and 0.3 s more)",
            file=sys.stderr,
        )
    clean(build_lib, engines=False)
    from hpcdispatch.compiled.disk_cache import PACKAGE_DIR

    print(
        f"hpcdispatch: compiled the simulation engine into {PACKAGE_DIR} and {ahead} in "
        f"{time.perf_counter() - started:.0f} s ({'; '.join(lines)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
