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

number_dtypes = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64])


@settings(deadline=None, max_examples=120)
@given(number_dtypes.flatmap(lambda dt: hnp.arrays(dt, st.integers(0, 40))), st.integers(0, 5), st.integers(0, 5))
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


@settings(deadline=None, max_examples=150)
@given(st.lists(st.one_of(st.none(), st.just(float("nan")), st.text(max_size=5), st.sampled_from(["done", "é"])),
                max_size=60), st.integers(1, 40))
def test_texts_are_strings_missing_ones_null(texts, repeat):
    """One by one, or (few distinct texts, as a status column) each written once and picked."""
    for items in (texts, texts[:3] * repeat):
        values = np.array(items + ["x"], dtype=object)[:-1] if items else np.array([], dtype=object)
        made = arrow_array(values)
        made.validate(full=True)
        assert made.type == pa.string() and made.equals(pa.array(values, pa.string(), from_pandas=True))


def test_missing_marks_more_nulls_and_scalars_are_arrow_scalars():
    made = arrow_array(np.array([3, 4, 5]), missing=np.array([False, True, False]))
    assert made.to_pylist() == [3, None, 5]
    assert arrow_scalar(0).equals(pa.scalar(0)) and arrow_scalar("a:").equals(pa.scalar("a:"))
    with pytest.raises(ValueError, match="one column"):
        arrow_array(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="with nulls"):
        numpy_array(pa.array([1, None]))


def test_a_compiled_simulation_of_a_trace_never_imports_pandas(tmp_path):
    """The point of the helpers: reading an SWF trace, simulating on the compiled engine,
    validating and writing the run directory pay nothing for pandas (0.16 s)."""
    from helpers import trace

    path = trace("KTH-SP2-1996-2.1-cln.swf.gz")
    code = ("import sys\nfrom hpcdispatch.cli.main import main\n"
            f"try:\n    main(['simulate', '-w', {str(path)!r}, '-d', 'easy', '--engine', 'compiled', '-q', "
            f"'-o', {str(tmp_path / 'o')!r}])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('PANDAS', 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **pythonpath()})
    assert "PANDAS False" in out.stdout, out.stdout[-500:] + out.stderr[-1500:]
    assert (tmp_path / "o" / "jobs.csv").is_file()
