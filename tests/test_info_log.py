"""The decision log's by-key info store reads exactly like the list of dicts it replaces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.sim.info_log import InfoLog

infos = st.lists(st.dictionaries(st.sampled_from(["status", "shadow", "head", "vars", "fallback"]),
                                 st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)),
                                 max_size=5), max_size=30)


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


@given(st.lists(st.dictionaries(st.sampled_from(["a", "status", "n", "x y", "é"]),
                                st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                                          st.text(max_size=4), st.lists(st.integers(0, 3), max_size=2)),
                                max_size=4), max_size=30))
def test_json_texts_are_json_dumps_of_each_call(infos):
    import json

    log = InfoLog(infos + [{"a": 0.0}, {"a": -0.0}, {"a": True}, {"a": 1}])
    assert log.json_texts() == [json.dumps(i, default=str) if i else "" for i in log]


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70)), max_size=40),
       st.lists(st.one_of(st.none(), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0])), max_size=40))
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
    assert log.json_texts() == [json.dumps({k: c[k] for k in order if k in c}) if c else "" for c in calls]
