"""Metrics against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cores_system, job, simulate
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.metrics import bounded_slowdowns, queue_length_profile, slowdowns, summarize


def test_slowdown_and_bounded_slowdown():
    submit, start, end = np.array([0.0, 0.0]), np.array([10.0, 0.0]), np.array([15.0, 2.0])
    assert slowdowns(submit, start, end).tolist() == [3.0, 1.0]
    # bsld: max(1, 15 / max(5, 10)) = 1.5; max(1, 2 / 10) = 1
    assert bounded_slowdowns(submit, start, end).tolist() == [1.5, 1.0]


def test_zero_length_job_gets_a_ratio_not_seconds():
    assert slowdowns(np.array([0.0]), np.array([30.0]), np.array([30.0])).tolist() == [30.0]


def test_queue_length_profile():
    # submits at 0, 0, 5; starts at 0, 10, 10
    times, length = queue_length_profile(
        np.array([0, 0, 5]), np.array([0.0, 10.0, 10.0]), np.ones(3, bool)
    )
    assert times.tolist() == [0, 5, 10] and length.tolist() == [1, 2, 0]


def test_run_summary_by_hand():
    # 1 node x 1 core: J1 [0, 10), J2 waits 10 -> [10, 15), J3 (submit 20) [20, 30)
    r = simulate(cores_system(1, 1), [job(1, 0, 10), job(2, 0, 5), job(3, 20, 10)], "fifo")
    s = summarize(r)
    assert s["wait_mean"] == pytest.approx(10 / 3)
    assert s["slowdown_mean"] == pytest.approx((1 + 3 + 1) / 3)
    assert s["bounded_slowdown_mean"] == pytest.approx((1 + 1.5 + 1) / 3)
    assert s["makespan"] == 30 and s["utilization_core"] == pytest.approx(25 / 30)
    # queue: length 1 on [0, 10), 0 afterwards -> mean 10 / 30
    assert s["queue_length_mean"] == pytest.approx(10 / 30) and s["queue_length_max"] == 1


@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.one_of(st.none(), st.integers(0, 6)), st.booleans()),
        max_size=40,
    )
)
def test_queue_length_profile_is_the_length_after_each_event_time(jobs):
    """The queue length after each event time, computed by hand: submissions of accepted jobs
    in, starts out, one value per distinct time (the length after all of its events)."""
    submit = np.array([s for s, _, _ in jobs], dtype=np.float64)
    start = np.array([np.nan if w is None else s + w for s, w, _ in jobs], dtype=np.float64)
    accepted = np.array([a for _, _, a in jobs], dtype=bool)
    events = sorted(
        [(s, -1) for s, a in zip(start, accepted) if a and not np.isnan(s)]
        + [(s, +1) for s, a in zip(submit, accepted) if a]
    )
    times, lengths, length = [], [], 0
    for t, d in events:
        length += d
        if times and times[-1] == t:
            lengths[-1] = length
        else:
            times.append(t)
            lengths.append(length)
    qt, ql = queue_length_profile(submit, start, accepted)
    assert qt.tolist() == times and ql.tolist() == lengths


def test_a_run_is_repeatable_unless_a_solver_was_stopped_by_the_wall_clock():
    from hpcdispatch.metrics.summary import repeatable

    assert repeatable({}) and repeatable({"uses_solver": False})
    assert repeatable(
        {"uses_solver": True}
    )  # a solver that declares nothing about its limits: run to the end
    assert repeatable({"uses_solver": True, "deterministic": True})
    assert not repeatable({"uses_solver": True, "deterministic": False})
