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
    """Hold back a Ctrl-C (or a handled SIGTERM) that arrives inside the block and deliver it
    at the block's end.

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
    # (SIGTERM too, where it is handled: the CLI raises Terminated, a KeyboardInterrupt, for it)
    held = [signal.SIGINT] + (
        [signal.SIGTERM] if callable(signal.getsignal(signal.SIGTERM)) else []
    )
    previous = {
        sig: signal.signal(sig, lambda signum, frame: arrived.append(signum)) for sig in held
    }
    try:
        yield
    finally:
        for sig in held:
            signal.signal(sig, previous[sig])
    if arrived:
        sig = arrived[0]
        handler = previous[sig]
        if callable(handler):
            handler(sig, None)  # (Python's default handler raises KeyboardInterrupt)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(sig)  # what it would have done: end the process


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
        return getattr(self.load(), attr)

    def load(self) -> Any:
        """Import the module now (if not yet) and return it: a dispatcher's ``setup`` calls it
        so that the import is not paid inside its first timed decision."""
        if self._module is None:
            import importlib

            with sigint_held():
                self._module = importlib.import_module(self._name)
        return self._module

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
        raise ConfigError(
            f"{path}, line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text ({what} is TOML)"
        ) from None


# ---- numpy <-> Arrow without pyarrow's pandas check ---------------------------------------
# pyarrow imports pandas (0.16 s) the first time it converts a numpy array or a Python value
# (``pa.array``, ``pa.scalar``, ``pa.table`` of arrays, ``Array.to_numpy``, a compute function
# given a Python value), to ask whether it is a pandas object. A run that never makes a frame
# (``hpcdispatch simulate`` on the compiled engine) converts through the arrays' buffers
# instead, with pyarrow's documented ``Array.from_buffers`` and ``Array.buffers``.


#: the most bytes one Arrow ``string`` array holds (its offsets are 32-bit)
STRING_ARRAY_BYTES = 2**31 - 1


def text_or_none(value: Any) -> str | None:
    """A value of a text column as its text, ``None`` when it stands for "missing": ``None``,
    a NaN of any kind (float, numpy, Decimal), pandas' ``NA`` and ``NaT``; bytes are decoded."""
    if value is None:
        return None
    if type(value) is str:
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        if value != value:  # NaN, NaT
            return None
    except (TypeError, ValueError):  # pandas' NA: its comparisons are NA, whose truth is an error
        if type(value).__name__ == "NAType":
            return None
    return str(value)


def arrow_array(values: Any, missing: Any = None) -> Any:
    """A numpy column as a ``pyarrow.Array`` built from its buffers: integers and floats share
    the column's memory, booleans are packed into bits; NaN in a float column is null (as
    pandas writes it); texts (objects, or numpy ``str_``) become UTF-8 strings, missing ones
    null (:func:`text_or_none`), as a ``ChunkedArray`` of strings when they hold more than 2 GiB.
    ``missing``: more positions to make null (one boolean per value). An Arrow array is
    returned as it is."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"arrow_array takes one column, got an array of shape {values.shape}")
    n = len(values)
    kind = values.dtype.kind
    extra = None if missing is None else np.asarray(missing, dtype=bool)
    if extra is not None and extra.shape != (n,):
        raise ValueError(f"arrow_array: missing has shape {extra.shape}, the column {n} values")

    if kind in "iuf":
        data = np.ascontiguousarray(values)
        if not data.dtype.isnative:
            data = data.astype(data.dtype.newbyteorder("="))
        gone = np.isnan(data) if kind == "f" else None
        if extra is not None:
            gone = extra if gone is None else gone | extra
        bits, nulls = _validity(gone)
        return pa.Array.from_buffers(
            pa.from_numpy_dtype(data.dtype), n, [bits, pa.py_buffer(data)], null_count=nulls
        )
    if kind == "b":
        bits, nulls = _validity(extra)
        return pa.Array.from_buffers(pa.bool_(), n, [bits, _packed_bits(values)], null_count=nulls)
    if kind in "OU":
        listed = values.tolist()
        # a column of texts only (statuses, reasons: the usual case) needs no conversion per value
        texts = listed if set(map(type, listed)) <= {str} else [text_or_none(v) for v in listed]
        if extra is not None:
            texts = [None if gone else t for t, gone in zip(texts, extra.tolist())]
        distinct = set(texts)
        if 0 < len(distinct) <= max(1, n // 4):
            # few distinct texts (statuses, reasons): each written once, then picked by code
            table = list(distinct)
            code_of = {t: k for k, t in enumerate(table)}
            codes = np.fromiter(map(code_of.__getitem__, texts), np.int64, n)
            sizes = np.array(
                [0 if t is None else len(t.encode("utf-8")) for t in table], dtype=np.int64
            )
            if int(sizes[codes].sum()) <= STRING_ARRAY_BYTES:
                return _texts_array(table).take(arrow_array(codes))
        return _texts_array(texts)
    raise TypeError(f"arrow_array: no Arrow type for numpy dtype {values.dtype}")


def _texts_array(texts: list[str | None]) -> Any:
    """UTF-8 strings of ``texts`` (``None``: null); a ``ChunkedArray`` of strings when they
    hold more bytes than one string array can."""
    import numpy as np
    import pyarrow as pa

    n = len(texts)
    encoded = [b"" if t is None else t.encode("utf-8") for t in texts]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, n), out=offsets[1:])
    if offsets[-1] > STRING_ARRAY_BYTES:  # pieces of at most the limit each, in order
        if n == 1:
            raise ValueError(
                f"a text of {int(offsets[-1]):,} bytes: more than an Arrow string holds"
            )
        cuts = [0]
        while cuts[-1] < n:
            end = (
                int(np.searchsorted(offsets, offsets[cuts[-1]] + STRING_ARRAY_BYTES, side="right"))
                - 1
            )
            cuts.append(min(n, max(end, cuts[-1] + 1)))
        return pa.chunked_array(
            [_texts_array(texts[a:b]) for a, b in zip(cuts[:-1], cuts[1:])], pa.string()
        )
    bits, nulls = _validity(np.fromiter((t is None for t in texts), bool, n))
    return pa.Array.from_buffers(
        pa.string(),
        n,
        [bits, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))],
        null_count=nulls,
    )


def _packed_bits(flags: Any) -> Any:
    """Booleans as an Arrow bit buffer (least significant bit first, Arrow's order)."""
    import numpy as np
    import pyarrow as pa

    return pa.py_buffer(np.packbits(flags, bitorder="little"))


def _validity(gone: Any) -> tuple[Any, int]:
    """An Arrow validity buffer (``None`` when nothing is missing) and the null count, for
    ``gone`` (one boolean per value, ``None``: nothing missing)."""
    if gone is None or not gone.any():
        return None, 0
    return _packed_bits(~gone), int(gone.sum())


def _unpacked_bits(buffer: Any, offset: int, n: int) -> Any:
    """``n`` booleans from an Arrow bit buffer, from bit ``offset`` on."""
    import numpy as np

    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")[
        offset : offset + n
    ].astype(bool)


def arrow_scalar(value: Any) -> Any:
    """An Arrow scalar of a number (64 bits at most) or a text (give these to compute
    functions, not Python values: see above)."""
    import numpy as np

    if isinstance(value, str):
        return arrow_array(np.array([value], dtype=object))[0]
    number = np.array([value])
    if number.dtype.kind not in "iufb":
        raise TypeError(f"arrow_scalar: {value!r} is neither a text nor a 64-bit number")
    return arrow_array(number)[0]


def numpy_array(array: Any) -> Any:
    """A numeric or boolean ``pyarrow.Array`` as a numpy array, read from its buffers (numbers
    without a copy): a null is NaN in a float array; integer and boolean arrays must have none."""
    import numpy as np
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, offset = len(array), array.offset
    buffers = array.buffers()
    if pa.types.is_boolean(array.type):
        if array.null_count:
            raise ValueError("numpy_array: a boolean array with nulls")
        return _unpacked_bits(buffers[1], offset, n)
    dtype = np.dtype(array.type.to_pandas_dtype())
    if dtype.kind not in "iuf":
        raise TypeError(f"numpy_array: {array.type} is not a number type")
    values = np.frombuffer(buffers[1], dtype=dtype)[offset : offset + n]
    if array.null_count:
        if dtype.kind != "f":
            raise ValueError(f"numpy_array: an {array.type} array with nulls")
        values = np.where(_unpacked_bits(buffers[0], offset, n), values, np.nan)
    return values


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm job's or a container's
    share, not the machine's count)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_MALLOC_TRIM: list[Any] = []  # glibc's malloc_trim once looked up ([None]: this C library has none)


def return_free_memory() -> None:
    """Give the pages the C heap holds free back to the system (glibc's ``malloc_trim``;
    nothing elsewhere). numpy's arrays of a whole trace's rows (a few MB each, under glibc's
    threshold for their own mapping once a bigger one was freed) are freed into the heap,
    which keeps them: without this, the next phase of a run (validating, writing) comes on
    top of what the previous one freed. A few ms: called between a run's phases."""
    if not _MALLOC_TRIM:
        import ctypes

        try:
            trim = ctypes.CDLL(None).malloc_trim
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl; Windows: TypeError)
            trim = None
        _MALLOC_TRIM.append(trim)
    if _MALLOC_TRIM[0] is not None:
        _MALLOC_TRIM[0](0)
