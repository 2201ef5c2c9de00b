"""The decision log's by-key info store reads exactly like the list of dicts it replaces."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.sim.info_log import InfoLog

infos = st.lists(
    st.dictionaries(
        st.sampled_from(["status", "shadow", "head", "vars", "fallback"]),
        st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)),
        max_size=5,
    ),
    max_size=30,
)


@pytest.mark.slow
@settings(deadline=None)  # a loaded machine must not turn a slow example into a failure
@given(infos)
def test_info_log_equals_the_list_of_dicts(dicts):
    log = InfoLog()
    for d in dicts:
        log.append(d)
    assert len(log) == len(dicts)
    assert list(log) == dicts and log == dicts
    for i in range(-len(dicts), len(dicts)):
        assert log[i] == dicts[i]
    assert log[1:4] == dicts[1:4]
    for key in log.keys():
        assert log.column(key) == [d.get(key) for d in dicts]


def test_a_none_value_is_kept_and_an_absent_key_stays_absent():
    log = InfoLog([{"a": None}, {"b": 1}])
    assert log[0] == {"a": None} and log[1] == {"b": 1}
    assert "b" not in log[0] and "a" not in log[1]


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["a", "status", "n", "x y", "é"]),
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(-5, 5),
                st.floats(allow_nan=True),
                st.text(max_size=4),
                st.lists(st.integers(0, 3), max_size=2),
            ),
            max_size=4,
        ),
        max_size=30,
    )
)
def test_json_texts_are_json_dumps_of_each_call(infos):
    import json

    log = InfoLog(infos + [{"a": 0.0}, {"a": -0.0}, {"a": True}, {"a": 1}])
    assert log.json_texts() == [json.dumps(i, default=str) if i else "" for i in log]


@settings(deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70)), max_size=40),
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0])), max_size=40
    ),
)
def test_json_texts_of_keys_holding_only_ints_or_only_floats(ints, floats):
    """The by-distinct-value path for int and float keys: big ints, 0.0 against -0.0, NaN
    and infinities written as json.dumps writes them; a call without either key gives ""."""
    import json

    n = max(len(ints), len(floats))
    calls = []
    for i in range(n):
        call = {}
        if i < len(ints) and ints[i] is not None:
            call["count"] = ints[i]
        if i < len(floats) and floats[i] is not None:
            call["shadow"] = floats[i]
        calls.append(call)
    log = InfoLog(calls)
    order = log.keys()
    assert log.json_texts() == [
        json.dumps({k: c[k] for k in order if k in c}) if c else "" for c in calls
    ]


@settings(deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.integers(min_value=-(2**62), max_value=2**62)),
        min_size=1,
        max_size=40,
    ),
    st.lists(
        st.one_of(st.none(), st.floats(allow_nan=False), st.sampled_from([0.0, -0.0])),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.dictionaries(st.just("x"), st.integers(0, 3), max_size=1), max_size=3),
)
def test_numeric_columns_read_and_write_as_the_lists_they_stand_for(ints, floats, more):
    """A log of :class:`NumericColumn` arrays (what the compiled engine records) equals the log
    of the same values as lists: dicts, columns, JSON texts, equality; appending turns it into
    lists and goes on as a list log does."""
    import json

    import numpy as np

    from hpcdispatch.sim.info_log import MISSING, NumericColumn

    n = max(len(ints), len(floats))
    ints = ints + [None] * (n - len(ints))
    floats = floats + [None] * (n - len(floats))
    calls = [
        {k: v for k, v in (("count", a), ("shadow", b)) if v is not None}
        for a, b in zip(ints, floats)
    ]
    as_lists = InfoLog.from_columns(
        n,
        {
            "count": [MISSING if v is None else v for v in ints],
            "shadow": [MISSING if v is None else v for v in floats],
        },
    )
    as_arrays = InfoLog.from_columns(
        n,
        {
            "count": NumericColumn(
                np.array([0 if v is None else v for v in ints], dtype=np.int64),
                np.array([v is not None for v in ints]),
            ),
            "shadow": NumericColumn(
                np.array([0.0 if v is None else v for v in floats], dtype=np.float64),
                np.array([v is not None for v in floats]),
            ),
        },
    )
    assert as_arrays == calls and as_arrays == as_lists
    assert as_arrays.keys() == as_lists.keys()  # (a key no call set is dropped by both)
    for key in ("count", "shadow"):
        assert as_arrays.column(key) == as_lists.column(key)
    assert as_arrays.json_texts() == as_lists.json_texts()
    assert as_arrays.json_texts() == [
        json.dumps({k: c[k] for k in as_arrays.keys() if k in c}) if c else "" for c in calls
    ]
    for d in more:
        as_arrays.append(d)
        calls.append(d)
    assert as_arrays == calls


def test_a_numeric_column_refuses_what_it_cannot_hold():
    import numpy as np
    import pytest

    from hpcdispatch.sim.info_log import NumericColumn

    with pytest.raises(ValueError, match="1-D int or float"):
        NumericColumn(np.array(["a"]), np.array([True]))
    with pytest.raises(ValueError, match="1-D int or float"):
        NumericColumn(np.zeros(3), np.ones(2, dtype=bool))
