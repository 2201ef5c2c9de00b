"""numpy <-> Arrow through the arrays' buffers (hpcdispatch._util): the same arrays pyarrow's
own conversion makes, without pyarrow importing pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from helpers import pythonpath
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hpcdispatch._util import arrow_array, arrow_scalar, numpy_array

number_dtypes = st.sampled_from(
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64]
)


@settings(deadline=None, max_examples=120)
@given(
    number_dtypes.flatmap(lambda dt: hnp.arrays(dt, st.integers(0, 40))),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_numbers_round_trip_as_pyarrow_converts_them(values, start, stop):
    made = arrow_array(values)
    made.validate(full=True)
    assert made.equals(pa.array(values, from_pandas=True))  # NaN is null, as pandas writes it
    part = made.slice(min(start, len(values)), stop)  # (an offset into the buffers)
    expected = part.to_numpy(zero_copy_only=False)
    got = numpy_array(part)
    assert got.dtype == expected.dtype or (values.dtype.kind != "f" and got.dtype == values.dtype)
    assert np.array_equal(got, expected, equal_nan=values.dtype.kind == "f")


@settings(deadline=None)
@given(hnp.arrays(np.bool_, st.integers(0, 70)), st.integers(0, 9))
def test_booleans_round_trip(values, start):
    made = arrow_array(values)
    made.validate(full=True)
    assert made.equals(pa.array(values))
    assert np.array_equal(numpy_array(made.slice(start)), values[start:])


@pytest.mark.slow
@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.one_of(
            st.none(), st.just(float("nan")), st.text(max_size=5), st.sampled_from(["done", "é"])
        ),
        max_size=60,
    ),
    st.integers(1, 40),
)
def test_texts_are_strings_missing_ones_null(texts, repeat):
    """One by one, or (few distinct texts, as a status column) each written once and picked."""
    for items in (texts, texts[:3] * repeat):
        values = np.array(items + ["x"], dtype=object)[:-1] if items else np.array([], dtype=object)
        made = arrow_array(values)
        made.validate(full=True)
        assert made.type == pa.string() and made.equals(
            pa.array(values, pa.string(), from_pandas=True)
        )


def test_missing_marks_more_nulls_and_scalars_are_arrow_scalars():
    made = arrow_array(np.array([3, 4, 5]), missing=np.array([False, True, False]))
    assert made.to_pylist() == [3, None, 5]
    assert arrow_scalar(0).equals(pa.scalar(0)) and arrow_scalar("a:").equals(pa.scalar("a:"))
    with pytest.raises(ValueError, match="one column"):
        arrow_array(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="with nulls"):
        numpy_array(pa.array([1, None]))


@pytest.mark.slow
def test_a_compiled_simulation_of_a_trace_never_imports_pandas(tmp_path):
    """The point of the helpers: reading an SWF trace, simulating on the compiled engine,
    validating and writing the run directory pay nothing for pandas (0.16 s)."""
    from helpers import trace

    path = trace("KTH-SP2-1996-2.1-cln.swf.gz")
    code = (
        "import sys\nfrom hpcdispatch.cli.main import main\n"
        f"try:\n    main(['simulate', '-w', {str(path)!r}, '-d', 'easy', '--engine', 'compiled', '-q', '--csv', "
        f"'-o', {str(tmp_path / 'o')!r}])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('PANDAS', 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **pythonpath()},
    )
    assert "PANDAS False" in out.stdout, out.stdout[-500:] + out.stderr[-1500:]
    assert (tmp_path / "o" / "jobs.csv").is_file()


def test_reading_a_damaged_trace_never_imports_pandas(tmp_path):
    """The reader's slow paths (a stray byte, a line of 17 fields, a field that is no number)
    convert through the buffers too, and still say what they skipped."""
    ok = "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1"
    lines = [
        ok,
        "2 10 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1",
        "3 20 5 x 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1",
        "4 30 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 -1 -1 -1\x01",
        "5" + ok[1:].replace(" 0 ", " 40 ", 1),
    ]
    path = tmp_path / "damaged.swf"
    path.write_bytes(("; MaxNodes: 2\n; MaxProcs: 8\n" + "\n".join(lines) + "\n").encode())
    code = (
        "import sys\nfrom hpcdispatch.workload.loader import load_workload, resolve_system\n"
        f"w = load_workload({str(path)!r}, resolve_system('from-trace', {str(path)!r}))\n"
        "print('JOBS', w.ids.tolist(), sorted(w.report.skipped.items()))\n"
        "print('PANDAS', 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **pythonpath()},
    )
    assert "JOBS [1, 5] [('malformed', 3)]" in out.stdout, out.stdout + out.stderr[-1500:]
    assert "PANDAS False" in out.stdout


def test_texts_beyond_one_string_array_are_chunks_of_strings(monkeypatch):
    """More bytes than one Arrow string array holds (2 GiB; 10 bytes here) become a chunked
    array of ``string`` pieces, in order, none over the limit, the few-distinct path too."""
    import hpcdispatch._util as util

    monkeypatch.setattr(util, "STRING_ARRAY_BYTES", 10)
    values = np.array(["abc", None, "defgh", "ij", "klmnopq", "r", "", "stuvwxyz"], dtype=object)
    made = arrow_array(values)
    assert (
        isinstance(made, pa.ChunkedArray)
        and made.type == pa.string()
        and made.to_pylist() == values.tolist()
    )
    assert all(
        len("".join(t or "" for t in chunk.to_pylist()).encode()) <= 10 for chunk in made.chunks
    )
    repeated = np.array(["abcd", "ef"] * 20, dtype=object)  # few distinct values, 120 bytes in all
    made = arrow_array(repeated)
    assert isinstance(made, pa.ChunkedArray) and made.to_pylist() == repeated.tolist()
    with pytest.raises(ValueError, match="more than an Arrow string holds"):
        arrow_array(np.array(["x" * 11], dtype=object))


def test_texts_stand_for_themselves_and_bad_requests_are_refused():
    import pandas as pd

    mixed = np.array(
        [True, 1, 1.0, -0.0, 0.0, b"ab", pd.NA, np.float32("nan"), None] * 3, dtype=object
    )
    assert (
        arrow_array(mixed).to_pylist()
        == ["True", "1", "1.0", "-0.0", "0.0", "ab", None, None, None] * 3
    )
    with pytest.raises(ValueError, match="missing has shape"):
        arrow_array(np.arange(3), missing=np.array([True]))
    with pytest.raises(TypeError, match="64-bit number"):
        arrow_scalar(2**70)
    assert numpy_array(pa.chunked_array([[1, 2], [3]])).tolist() == [1, 2, 3]
