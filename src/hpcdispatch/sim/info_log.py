"""The decision log's ``info`` column: one free-form dict per dispatcher call, stored by key.

A whole-trace run makes hundreds of thousands of calls; keeping every call's ``info`` dict
costs about 200 bytes of dict per call before its values (RICC with EASY: about 100 MB).
:class:`InfoLog` keeps one list per key instead (8 bytes per call and key) and gives the
dicts back on access, so it reads like the list of dicts it replaces: ``len``, indexing
(also negative), iteration, equality with a list of dicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, cast

from hpcdispatch._util import arrow_array, arrow_scalar


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"

    def __reduce__(
        self,
    ) -> str:  # pickled as the module's one instance (it is compared by identity)
        return "MISSING"


MISSING: Any = _Missing()


class NumericColumn:
    """One key's values as a numpy array (int64 or float64) and where a call set it: what the
    compiled engine records, kept as arrays (no Python object per call until one is read)."""

    __slots__ = ("values", "present")

    def __init__(self, values: Any, present: Any) -> None:
        if values.dtype.kind not in "if" or values.shape != present.shape or values.ndim != 1:
            raise ValueError(
                "a numeric info column needs 1-D int or float values and a mask of their shape"
            )
        self.values = values
        self.present = present

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> Any:
        return self.values[i].item() if self.present[i] else MISSING

    def __iter__(self) -> Iterator[Any]:
        for value, present in zip(self.values.tolist(), self.present.tolist()):
            yield value if present else MISSING


class InfoLog(Sequence[dict[str, Any]]):
    """The decision log's per-call info, held by key (one column per key): a sequence of dicts."""

    __slots__ = ("_columns", "_n")

    def __init__(self, infos: Sequence[dict[str, Any]] = ()) -> None:
        # key -> one value (or MISSING) per call; a compiled run's numeric keys as arrays
        self._columns: dict[str, list[Any] | NumericColumn] = {}
        self._n = 0
        for info in infos:
            self.append(info)

    @classmethod
    def from_columns(cls, n: int, columns: dict[str, list[Any] | NumericColumn]) -> InfoLog:
        """A log of ``n`` calls from one list per key (``MISSING`` where a call set no value)
        or one :class:`NumericColumn`."""
        log = cls()
        for key, values in columns.items():
            if len(values) != n:
                raise ValueError(f"info column '{key}' has {len(values)} values for {n} calls")
        log._columns = {}
        for key, values in columns.items():
            if isinstance(values, NumericColumn):
                if values.present.any():
                    log._columns[key] = values
            elif any(v is not MISSING for v in values):
                log._columns[key] = list(values)
        log._n = n
        return log

    @classmethod
    def empty(cls, n: int) -> InfoLog:
        """A log of ``n`` calls that recorded nothing."""
        log = cls()
        log._n = n
        return log

    def append(self, info: dict[str, Any]) -> None:
        n = self._n
        for key, numeric in self._columns.items():
            if isinstance(numeric, NumericColumn):  # (appending to a compiled run's log)
                self._columns[key] = list(numeric)
        columns = cast(dict[str, list[Any]], self._columns)  # every column is a list now
        if not info and not columns:  # dispatchers that record nothing: just count the call
            self._n = n + 1
            return
        complete = len(info) == len(columns)
        for key, value in info.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = [MISSING] * n
                complete = False
            column.append(value)
        if not complete:  # a key of earlier calls is absent from this one
            for column in columns.values():
                if len(column) == n:
                    column.append(MISSING)
        self._n = n + 1

    def __len__(self) -> int:
        return self._n

    def _at(self, i: int) -> dict[str, Any]:
        return {key: column[i] for key, column in self._columns.items() if column[i] is not MISSING}

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._at(k) for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("decision index out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._at(i) for i in range(self._n))

    def json_texts(self) -> list[str]:
        """Each call's dict as ``json.dumps(info, default=str)`` writes it ("" for an empty
        one): :meth:`json_text_array` as Python strings."""
        return self.json_text_array().to_pylist()

    def json_text_array(self):
        """Each call's dict as ``json.dumps(info, default=str)`` writes it ("" for an empty
        one), as an Arrow string array, built key by key: each distinct value is serialised
        once, not once per call (a whole-trace run has hundreds of thousands of calls with a
        handful of distinct values), and the calls' texts are joined by Arrow."""
        import numpy as np
        import pyarrow as pa

        n = self._n
        if not self._columns:
            return arrow_array(np.full(n, "", dtype=object))
        if n <= TEXT_PIECE_CALLS:
            return _json_texts(self._columns)
        # a piece of calls at a time (a ChunkedArray): Arrow's joins make several times the
        # texts' size at once (a whole RICC run: 22 MB of texts, 97 MB at once in one piece)
        return pa.chunked_array(
            [
                _json_texts(
                    {
                        key: _piece(column, a, a + TEXT_PIECE_CALLS)
                        for key, column in self._columns.items()
                    }
                )
                for a in range(0, n, TEXT_PIECE_CALLS)
            ],
            pa.string(),
        )

    def keys(self) -> list[str]:
        """Every key any call used, in order of first use."""
        return list(self._columns)

    def column(self, key: str) -> list[Any]:
        """The values of ``key`` call by call (``None`` where a call did not set it)."""
        values = self._columns.get(key)
        if values is None:
            return [None] * self._n
        return [None if v is MISSING else v for v in values]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InfoLog | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"InfoLog({self._n} calls, keys {self.keys()})"


#: calls per piece of :meth:`InfoLog.json_text_array` (a longer log's texts: a ChunkedArray)
TEXT_PIECE_CALLS = 1 << 16


def _piece(column: list[Any] | NumericColumn, a: int, b: int) -> list[Any] | NumericColumn:
    """Calls ``a`` to ``b`` of a column (a numeric one's arrays: views)."""
    if isinstance(column, NumericColumn):
        return NumericColumn(column.values[a:b], column.present[a:b])
    return column[a:b]


def _json_texts(columns: dict[str, list[Any] | NumericColumn]) -> Any:
    """Per call, the JSON text of the keys' values it set (:meth:`InfoLog.json_text_array`
    for the calls of ``columns``)."""
    import pyarrow.compute as pc

    body = None  # the keys' texts so far, null where a call set none of them
    for key, column in columns.items():
        part = _key_texts(key, column)
        if body is None:
            body = part
            continue
        both = pc.binary_join_element_wise(body, part, arrow_scalar(", "))  # (null where either is)
        body = pc.if_else(pc.is_null(body), part, pc.if_else(pc.is_null(part), body, both))
    # (Arrow scalars and arrays from buffers: given Python values pyarrow imports pandas)
    nothing = arrow_scalar("")
    wrapped = pc.binary_join_element_wise(arrow_scalar("{"), body, arrow_scalar("}"), nothing)
    return pc.fill_null(wrapped, nothing)


def _key_texts(key: str, column: list[Any] | NumericColumn) -> Any:
    """``'"key": value'`` per call as an Arrow string array (null where the call did not set
    ``key``); each distinct value serialised once. Columns of plain ints or floats are
    mapped through their distinct values by numpy (a float by its bits, so 0.0 and -0.0
    keep their own texts); others value by value."""
    import numpy as np

    prefix = json.dumps(key) + ": "
    if isinstance(column, NumericColumn):  # the compiled engine's arrays
        return _numeric_texts(prefix, column.values[column.present], column.present)
    kinds = {type(v) for v in column}
    kinds.discard(_Missing)
    if len(kinds) == 1 and next(iter(kinds)) in (int, float):
        kind = next(iter(kinds))
        present = np.fromiter((v is not MISSING for v in column), dtype=bool, count=len(column))
        try:
            arr = np.array(
                [v for v in column if v is not MISSING],
                dtype=np.int64 if kind is int else np.float64,
            )
        except OverflowError:  # an int beyond 64 bits: value by value below
            arr = None
        if arr is not None:
            return _numeric_texts(prefix, arr, present)
    memo: dict[tuple[type, Any], str] = {}
    frag: list[str | None] = []
    for v in column:
        if v is MISSING:
            frag.append(None)
            continue
        try:  # (floats by their text: 0.0 and -0.0 are equal but written apart)
            mkey = (float, repr(v)) if type(v) is float else (type(v), v)
            text = memo.get(mkey)
            if text is None:
                text = memo[mkey] = prefix + json.dumps(v, default=str)
        except TypeError:  # an unhashable value (a list, a dict)
            text = prefix + json.dumps(v, default=str)
        frag.append(text)
    return arrow_array(np.array(frag, dtype=object))


def _numeric_texts(prefix: str, values: Any, present: Any) -> Any:
    """``prefix + json.dumps(value)`` for the calls where ``present``, each distinct value of
    the int64 or float64 ``values`` (the present calls' values, in order) serialised once (a
    float by its bits: 0.0 and -0.0 keep their own texts); null elsewhere."""
    import numpy as np

    bits = values if values.dtype.kind == "i" else values.view(np.int64)
    _, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
    # json.dumps writes an int as repr does, a finite float as float.__repr__ does (only NaN and
    # the infinities are its own): repr is several times faster on thousands of distinct values
    distinct = values[first].tolist()
    finite = values.dtype.kind == "i" or bool(np.isfinite(values[first]).all())
    texts = arrow_array(
        np.array(
            [prefix + t for t in (map(repr, distinct) if finite else map(json.dumps, distinct))],
            dtype=object,
        )
    )
    at = np.full(len(present), -1, dtype=np.int64)  # each call's text among the distinct ones
    at[present] = inverse.reshape(-1)
    return texts.take(arrow_array(at, missing=~present))
