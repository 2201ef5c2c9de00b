"""Deadline workloads (workload/deadline.py): the generator of design note §3.2, its common
random numbers, JSON lines, and one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.deadline import (
    DeadlineWorkloadParams,
    deadline_columns,
    parse_deadline_spec,
    write_deadline_jsonl,
)
from hpcdispatch.workload.job import AppSpec
from hpcdispatch.workload.loader import load_workload

GRID = load_system("hlrn2-grid")


def test_spec_keys_and_defaults():
    p = parse_deadline_spec("synthetic:deadline,jobs=20,seed=3,load=heavy,types=2,comm=sync")
    assert (p.jobs, p.seed, p.load, p.types, p.comm) == (20, 3, "heavy", "2", "sync")
    assert p.interarrival == 150.0
    assert parse_deadline_spec("synthetic:deadline,load=very-heavy").interarrival == 1.0
    assert parse_deadline_spec("synthetic:deadline,load=42.5").interarrival == 42.5
    assert DeadlineWorkloadParams().runtime_scale == 16.0  # the C1 calibration, frozen


@pytest.mark.parametrize(
    "spec, words",
    [
        ("synthetic:deadline,jobz=3", ["unknown key 'jobz'"]),
        ("synthetic:deadline,load=medium", ["'load'", "medium"]),
        ("synthetic:deadline,types=4", ["'types'", "uniform"]),
        ("synthetic:deadline,comm=maybe", ["'comm'"]),
        ("synthetic:deadline,jobs=ten", ["'jobs' must be int"]),
        ("synthetic:deadline,load=-5", ["'load'", "> 0"]),
    ],
)
def test_bad_specs_are_one_line_errors(spec, words):
    with pytest.raises(ConfigError) as err:
        load_workload(spec, GRID)
    msg = str(err.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


def test_jobs_take_whole_nodes_and_carry_their_times():
    w = load_workload("synthetic:deadline,jobs=200,seed=2,types=uniform", GRID)
    cols = deadline_columns(parse_deadline_spec("synthetic:deadline,jobs=200,seed=2"))
    assert len(w) == 200
    for j in w.jobs:
        k = j.id - 1
        assert (
            j.units == math.ceil(cols["processes"][k] / 4)
            and j.unit_request == (4,)
            and j.max_units_per_node == 1
        )
        assert j.run_time == j.wall_time == cols["run_time"][k] >= 60
        assert j.earliest_start == j.submit == cols["submit"][k]  # lead_days = 0: est = submit
        assert j.app.processes == cols["processes"][k]
        slack = (j.deadline - j.earliest_start) / j.run_time - 1
        assert 0.05 - 1 / j.run_time <= slack  # floored to the second
    assert w.jobs[0].submit == 0
    assert {j.app.behaviour for j in w.jobs} == {0, 1, 2, 3}


def test_slack_grows_with_size():
    cols = deadline_columns(DeadlineWorkloadParams(jobs=3000, seed=5))
    slack = (cols["deadline"] - cols["earliest_start"]) / cols["run_time"] - 1
    small, big = slack[cols["processes"] <= 2], slack[cols["processes"] >= 128]
    # A17: mean 0.25 + 0.75 log2(n) / 9 -> about 0.25-0.33 for n <= 2, >= 0.83 for n >= 128
    assert small.mean() < 0.4 < 0.75 < big.mean()


def test_interarrival_means_follow_the_load():
    for load, mean in (("normal", 1500), ("heavy", 150)):
        cols = deadline_columns(DeadlineWorkloadParams(jobs=4000, seed=1, load=load))
        gaps = np.diff(cols["submit"])
        assert (
            abs(gaps.mean() - mean) < 0.06 * mean
        )  # exponential, 4,000 draws: sd of the mean 1.6 %


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    types=st.sampled_from(["0", "1", "2", "3", "uniform"]),
    comm=st.sampled_from(["async", "sync"]),
)
def test_common_random_numbers_across_types_and_patterns(seed, types, comm):
    base = deadline_columns(DeadlineWorkloadParams(jobs=60, seed=seed))
    other = deadline_columns(DeadlineWorkloadParams(jobs=60, seed=seed, types=types, comm=comm))
    for key in ("processes", "run_time", "submit", "earliest_start", "deadline"):
        assert np.array_equal(base[key], other[key]), key
    if types != "uniform":
        assert set(other["behaviour"].tolist()) == {int(types)}


def test_lead_days_moves_earliest_start_and_deadline_with_it():
    a = deadline_columns(DeadlineWorkloadParams(jobs=100, seed=4))
    b = deadline_columns(DeadlineWorkloadParams(jobs=100, seed=4, lead_days=2))
    lead = b["earliest_start"] - b["submit"]
    assert (lead >= 0).all() and (lead < 2 * 86400).all() and lead.max() > 86400
    assert np.array_equal(b["deadline"] - b["earliest_start"], a["deadline"] - a["earliest_start"])


def test_jsonl_round_trip(tmp_path):
    w = load_workload("synthetic:deadline,jobs=50,seed=7,types=3,comm=sync", GRID)
    path = tmp_path / "w.deadline.jsonl"
    write_deadline_jsonl(w, path)
    back = load_workload(str(path), GRID)
    assert back.jobs == w.jobs
    assert back.jobs[0].app == AppSpec(3, "sync", w.jobs[0].app.processes)


def test_jsonl_bad_lines_are_skipped_and_named(tmp_path):
    path = tmp_path / "bad.deadline.jsonl"
    path.write_text(
        '{"id": 1, "submit": 0, "run_time": 100, "earliest_start": 10, "deadline": 200, '
        '"processes": 8, "behaviour": 0, "comm": "async"}\n'
        '{"id": 2, "submit": 0, "run_time": "x", "deadline": 200, "processes": 8, "behaviour": 0}\n'
        "not json\n"
        '{"id": 3, "submit": 0, "run_time": 100, "deadline": 200, "processes": 8, "behaviour": 7}\n'
        '{"id": 4, "submit": 0, "run_time": 100, "deadline": 200, "processes": 8, "behaviour": 1, "colour": 1}\n'
        '{"id": 5, "submit": 0, "run_time": 100, "deadline": 200, "processes": 600, "behaviour": 1}\n'
    )
    w = load_workload(str(path), GRID)
    assert [j.id for j in w.jobs] == [1]
    assert w.jobs[0].units == 2 and w.jobs[0].earliest_start == 10.0 and w.jobs[0].deadline == 200.0
    rep = w.report
    assert rep.skipped == {"bad-run_time": 1, "malformed": 2, "bad-app": 1, "too-big": 1}
    assert any(f"{path}, line 2: field run_time" in n for n in rep.notes)
    assert any("line 5: field 'colour'" in n for n in rep.notes)
    empty = tmp_path / "none.deadline.jsonl"
    empty.write_text("nope\n")
    with pytest.raises(TraceFormatError, match="line 1"):
        load_workload(str(empty), GRID)


def test_other_workloads_have_no_deadlines():
    w = load_workload("synthetic:lublin,jobs=30,seed=1", GRID)
    assert not w.has_deadlines
    assert all(j.deadline is None and j.earliest_start is None and j.app is None for j in w.jobs)


def test_auto_system_of_deadline_workloads_is_hlrn2_grid(tmp_path):
    from hpcdispatch.workload.loader import resolve_system

    assert resolve_system("auto", "synthetic:deadline,jobs=5").name == "hlrn2-grid"
    assert resolve_system("auto", str(tmp_path / "w.deadline.jsonl")).name == "hlrn2-grid"
    assert resolve_system("auto", "synthetic:lublin,jobs=5").name == "machine-s"
