"""Metrics against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import cores_system, job, simulate

from hpcdispatch.metrics import bounded_slowdowns, queue_length_profile, slowdowns
from hpcdispatch.metrics import summarize


def test_slowdown_and_bounded_slowdown():
    submit, start, end = np.array([0.0, 0.0]), np.array([10.0, 0.0]), np.array([15.0, 2.0])
    assert slowdowns(submit, start, end).tolist() == [3.0, 1.0]
    # bsld: max(1, 15 / max(5, 10)) = 1.5; max(1, 2 / 10) = 1
    assert bounded_slowdowns(submit, start, end).tolist() == [1.5, 1.0]


def test_zero_length_job_gets_a_ratio_not_seconds():
    assert slowdowns(np.array([0.0]), np.array([30.0]), np.array([30.0])).tolist() == [30.0]


def test_queue_length_profile():
    # submits at 0, 0, 5; starts at 0, 10, 10
    times, length = queue_length_profile(np.array([0, 0, 5]), np.array([0.0, 10.0, 10.0]), np.ones(3, bool))
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
