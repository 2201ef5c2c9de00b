"""Small shared helpers."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Building half a million job tuples otherwise triggers dozens of full collections and
    costs more than the objects themselves. Reference counting still frees memory.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)`` for numpy scalars and arrays; anything else as text."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


@contextmanager
def sigint_held() -> Iterator[None]:
    """Hold back a Ctrl-C that arrives inside the block and deliver it at the block's end.

    A lazily imported extension module is imported in the middle of a run; a
    ``KeyboardInterrupt`` raised inside its initialisation was swallowed (OR-Tools' pybind11
    module: about 1 Ctrl-C in 30 was lost in tests/test_interrupt.py, and the run went on).
    Outside the main thread (where no Python signal handler runs) the block runs as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if arrived:
        if callable(previous):
            previous(signal.SIGINT, None)  # (Python's default handler raises KeyboardInterrupt)
        elif previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)  # what it would have done: end the process


class LazyModule:
    """A module imported on its first attribute access: ``cp_model = LazyModule("ortools.sat.python.cp_model")``
    keeps OR-Tools (about 0.3 s to import) out of the runs and commands that never solve a
    model, while the code reads as if it had been imported at the top."""

    def __init__(self, name: str):
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            import importlib

            with sigint_held():
                self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name}{' (imported)' if self._module is not None else ''}>"


def read_utf8_file(path: Any, what: str) -> str:
    """The text of the file ``path`` (a :class:`~pathlib.Path`), for a reader of ``what`` ("a
    sweep file", "a system file"): a directory, a missing or unreadable file, or a byte that is
    not UTF-8 is a :class:`~hpcdispatch.errors.ConfigError` of one line naming the file (and
    the line of the byte)."""
    from hpcdispatch.errors import ConfigError

    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError as exc:  # a name too long ...
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if is_dir:
        raise ConfigError(f"{path}: is a directory, not {what}")
    if not is_file:
        raise ConfigError(f"{path}: does not exist ({what} was expected)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}, line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text "
                          f"({what} is TOML)") from None
