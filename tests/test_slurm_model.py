"""Slurm-style jobs in the job model: node count, per-node extras, contiguity -- the request
types, the simulator's checks, the allocators, the validator, the readers and the paper's
workload generator."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers import placement, simulate, starts, system_of

from hpcdispatch.allocators import make_allocator
from hpcdispatch.errors import ConfigError, InvalidDecisionError, TraceFormatError
from hpcdispatch.metrics import summarize
from hpcdispatch.protocol.decision import Start
from hpcdispatch.results.store import workload_frame
from hpcdispatch.sim import Simulator
from hpcdispatch.system import load_system
from hpcdispatch.system.allocation import Allocation, request_fits
from hpcdispatch.validation import validate_tables
from hpcdispatch.workload import load_workload
from hpcdispatch.workload.job import Job, Workload
from hpcdispatch.workload.slurm import (
    AucschedSpec,
    SlurmRequest,
    aucsched_requests,
    read_slurm_requests,
    request_of,
    slurm_job,
    theoretical_runtime,
    write_slurm_requests,
)
from hpcdispatch.workload.swf import fits_empty_system

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

RES = ("core", "gpu")


def gpu_system(nodes=4, cores=8, gpus=2):
    return system_of([(nodes, {"core": cores, "gpu": gpus})], RES)


# ---- request types ------------------------------------------------------------------------


def test_the_three_request_types_map_onto_units():
    t1 = SlurmRequest(ntasks=12).job_fields(RES)
    assert t1 == {
        "units": 12,
        "unit_request": (1, 0),
        "max_units_per_node": 0,
        "node_count": 0,
        "per_node_request": (),
        "contiguous": False,
    }
    t2 = SlurmRequest(ntasks=10, nodes=3, gpus_per_node=1, contiguous=True).job_fields(RES)
    assert t2 == {
        "units": 10,
        "unit_request": (1, 0),
        "max_units_per_node": 0,
        "node_count": 3,
        "per_node_request": (0, 1),
        "contiguous": True,
    }
    t3 = SlurmRequest(nodes=4, ntasks_per_node=2, gpus_per_node=2).job_fields(RES)
    assert t3 == {
        "units": 4,
        "unit_request": (2, 2),
        "max_units_per_node": 1,
        "node_count": 4,
        "per_node_request": (),
        "contiguous": False,
    }
    assert [
        SlurmRequest(ntasks=1).request_type,
        SlurmRequest(ntasks=4, nodes=2).request_type,
        SlurmRequest(nodes=2, ntasks_per_node=4).request_type,
    ] == [1, 2, 3]
    # -n C --ntasks-per-node c (no -N) and -N alone are type 3
    assert SlurmRequest(ntasks=8, ntasks_per_node=4).normalized() == (3, 2, 4, 8)
    assert SlurmRequest(nodes=5).normalized() == (3, 5, 1, 5)


@pytest.mark.parametrize(
    "request_, message",
    [
        (SlurmRequest(), "neither ntasks nor nodes"),
        (SlurmRequest(ntasks=3, nodes=4), "smaller than nodes"),
        (SlurmRequest(ntasks=9, ntasks_per_node=4), "not a multiple"),
        (SlurmRequest(ntasks=9, nodes=2, ntasks_per_node=4), "!= nodes"),
        (SlurmRequest(ntasks=0), "positive"),
    ],
)
def test_inconsistent_requests_are_refused(request_, message):
    with pytest.raises(ValueError, match=message):
        request_.normalized()


def test_job_type_and_round_trip_to_a_request():
    for req in (
        SlurmRequest(ntasks=12),
        SlurmRequest(ntasks=10, nodes=3, gpus_per_node=1),
        SlurmRequest(nodes=4, ntasks_per_node=2, gpus_per_node=2, contiguous=True),
    ):
        job = slurm_job(1, req, 60, RES)
        assert job.slurm_type == req.request_type
        assert request_of(job, RES).normalized() == req.normalized()
        assert request_of(job, RES).gpus_per_node == req.gpus_per_node


def test_workload_refuses_inconsistent_constraints():
    with pytest.raises(ConfigError, match="cannot cover 3 nodes"):
        Workload([Job(1, 0, 5, 5, 2, (1, 0), node_count=3)], RES)
    with pytest.raises(ConfigError, match="per_node_request has 1 entries"):
        Workload([Job(1, 0, 5, 5, 2, (1, 0), per_node_request=(1,))], RES)
    with pytest.raises(ConfigError, match="at most 1 per node"):
        Workload([Job(1, 0, 5, 5, 4, (1, 0), node_count=2, max_units_per_node=1)], RES)


# ---- fits and allocators ------------------------------------------------------------------


def test_request_fits_by_hand():
    free = np.array([[8, 2], [1, 0], [8, 1], [3, 2], [0, 2]])
    req = np.array([1, 0])
    assert request_fits(free, req, 20)  # 8 + 1 + 8 + 3
    assert not request_fits(free, req, 21)
    assert request_fits(free, req, 11, per_node=np.array([0, 1]))  # nodes 0, 2, 3: 19 cores
    assert request_fits(free, req, 11, per_node=np.array([0, 2]))  # nodes 0 and 3: 8 + 3 cores
    assert not request_fits(free, req, 12, per_node=np.array([0, 2]))
    assert request_fits(free, req, 11, node_count=2, per_node=np.array([0, 2]))
    assert not request_fits(free, req, 12, node_count=2, per_node=np.array([0, 2]))
    assert request_fits(free, req, 20, contiguous=True)  # nodes 0-3: 20 in a row
    assert not request_fits(free, req, 21, contiguous=True)
    assert not request_fits(free, req, 12, node_count=2, contiguous=True)  # pairs: 9, 9, 11, 3
    assert request_fits(free, req, 11, node_count=2, contiguous=True)
    assert not request_fits(free, req, 3, node_count=3, contiguous=True, per_node=np.array([0, 1]))


@pytest.mark.parametrize("allocator", ["first-fit", "best-fit", "slurm-linear"])
def test_allocators_honour_every_constraint(allocator):
    system = gpu_system(nodes=6)
    alloc = make_allocator(allocator, system)
    free = np.array([[8, 2], [2, 0], [8, 2], [5, 1], [8, 2], [1, 2]])
    req = np.array([1, 0])
    cases = [
        dict(units=10, node_count=3, per_node=np.array([0, 1])),
        dict(units=12, node_count=2),
        dict(units=9, contiguous=True),
        dict(units=3, node_count=3, contiguous=True),
        dict(units=13, per_node=np.array([0, 2])),
    ]
    for case in cases:
        units = case["units"]
        kw = {k: v for k, v in case.items() if k != "units"}
        a = alloc.allocate(
            units,
            req,
            free,
            0,
            kw.get("node_count", 0),
            kw.get("per_node"),
            kw.get("contiguous", False),
        )
        assert a is not None, (allocator, case)
        assert a.total_units == units and (a.units >= 1).all()
        if kw.get("node_count"):
            assert len(a.nodes) == kw["node_count"]
        if kw.get("contiguous"):
            assert a.nodes[-1] - a.nodes[0] + 1 == len(a.nodes)
        pn = kw.get("per_node", np.zeros(2, np.int64))
        held = a.units[:, None] * req + pn
        assert (held <= free[a.nodes]).all(), (allocator, case, a)
    # impossible requests give None
    assert alloc.allocate(10, req, free, 0, 2, np.array([0, 2]), True) is None  # nodes 4-5 hold 9
    assert alloc.allocate(33, req, free, 0, 0, None, False) is None


def test_first_fit_and_best_fit_choices_by_hand():
    system = gpu_system(nodes=5)
    free = np.array([[8, 2], [3, 2], [8, 2], [2, 2], [8, 2]])
    req = np.array([1, 0])
    ff = make_allocator("first-fit", system)
    bf = make_allocator("best-fit", system)
    # node count 2, 5 cores: first fit takes the first two usable nodes
    assert ff.allocate(5, req, free, 0, 2).pairs() == [(0, 4), (1, 1)]
    # best fit takes the fullest nodes (3 and 1 free cores), they hold 5
    assert bf.allocate(5, req, free, 0, 2).pairs() == [(1, 3), (3, 2)]
    # contiguous 3 nodes, 12 cores: first fit [0, 3); best fit the window with the least left over
    assert ff.allocate(12, req, free, 0, 3, None, True).nodes.tolist() == [0, 1, 2]
    assert bf.allocate(12, req, free, 0, 3, None, True).nodes.tolist() == [1, 2, 3]


# ---- the simulator refuses what the job does not allow ------------------------------------


def _run_with(system, job, alloc):
    from hpcdispatch.protocol import Dispatcher

    class Scripted(Dispatcher):
        name = "scripted-alloc"

        def __init__(self, allocator: str = "first-fit"):
            self.allocator = allocator

        def _dispatch(self, view):
            return [Start(j, alloc) for j in view.queue]

    return Simulator(system, Workload([job], system.resources), Scripted()).run()


@pytest.mark.parametrize(
    "alloc, message",
    [
        (Allocation([0, 1], [2, 2]), "exactly 3"),
        (Allocation([0, 1, 3], [2, 1, 1]), "contiguous"),
        (Allocation([0, 1, 2], [4, 0, 0]), "non-positive"),
    ],
)
def test_simulator_checks_node_count_and_contiguity(alloc, message):
    system = gpu_system(nodes=4)
    job = slurm_job(1, SlurmRequest(ntasks=4, nodes=3, contiguous=True), 10, RES)
    with pytest.raises(InvalidDecisionError, match=message):
        _run_with(system, job, alloc)


def test_simulator_takes_the_per_node_extras():
    system = gpu_system(nodes=2, gpus=1)
    job = slurm_job(1, SlurmRequest(ntasks=2, nodes=2, gpus_per_node=1), 10, RES)
    r = _run_with(system, job, Allocation([0, 1], [1, 1]))
    frame = r.allocations_frame()
    assert frame["gpu"].tolist() == [1, 1] and frame["core"].tolist() == [1, 1]
    job2 = slurm_job(1, SlurmRequest(ntasks=2, nodes=1, gpus_per_node=2), 10, RES)
    with pytest.raises(InvalidDecisionError, match="gpu"):
        _run_with(system, job2, Allocation([0], [2]))


# ---- the validator catches corrupted Slurm-style schedules --------------------------------


@pytest.fixture()
def slurm_tables():
    system = gpu_system(nodes=6)
    jobs = [
        slurm_job(1, SlurmRequest(ntasks=6, nodes=3, gpus_per_node=1, contiguous=True), 10, RES),
        slurm_job(2, SlurmRequest(nodes=2, ntasks_per_node=4, gpus_per_node=2), 10, RES, submit=1),
        slurm_job(3, SlurmRequest(ntasks=4), 5, RES, submit=2),
    ]
    r = simulate(system, jobs, "fifo")
    return system, workload_frame(r), r.jobs_frame(), r.allocations_frame()


def test_a_valid_slurm_schedule_passes(slurm_tables):
    system, wl, jobs, allocs = slurm_tables
    assert validate_tables(system, wl, jobs, allocs).ok
    assert set(allocs[allocs.job_id == 1]["gpu"]) == {1}


def test_wrong_node_count_is_caught(slurm_tables):
    system, wl, jobs, allocs = slurm_tables
    a = allocs.copy()
    rows = a.index[a.job_id == 1]
    a.loc[rows[0], "units"] += a.loc[rows[1], "units"]
    a.loc[rows[0], "core"] += a.loc[rows[1], "core"]
    a = a.drop(index=rows[1])
    report = validate_tables(system, wl, jobs, a)
    assert any(
        v.kind == "node-count" and "job 1 uses 2 node(s)" in v.message for v in report.violations
    )


def test_broken_contiguity_is_caught(slurm_tables):
    system, wl, jobs, allocs = slurm_tables
    a = allocs.copy()
    rows = a.index[a.job_id == 1]
    a.loc[rows[-1], "node"] = 5  # move the last node away
    report = validate_tables(system, wl, jobs, a)
    assert any(
        v.kind == "contiguous" and "job 1 requests contiguous nodes" in v.message
        for v in report.violations
    )


def test_missing_per_node_extras_are_caught(slurm_tables):
    system, wl, jobs, allocs = slurm_tables
    a = allocs.copy()
    a.loc[a.job_id == 1, "gpu"] = 0
    report = validate_tables(system, wl, jobs, a)
    assert any(
        v.kind == "amount" and "per-node request [0, 1]" in v.message for v in report.violations
    )


# ---- fits on the empty system ------------------------------------------------------------


def test_fits_empty_system_with_constraints():
    system = system_of(
        [(2, {"core": 8, "gpu": 2}), (1, {"core": 8, "gpu": 0}), (2, {"core": 8, "gpu": 2})], RES
    )
    jobs = [
        slurm_job(
            1, SlurmRequest(nodes=4, ntasks_per_node=1, gpus_per_node=1), 5, RES
        ),  # nodes 0,1,3,4
        slurm_job(
            2, SlurmRequest(nodes=3, ntasks_per_node=1, gpus_per_node=1, contiguous=True), 5, RES
        ),  # no 3 in a row
        slurm_job(3, SlurmRequest(ntasks=17, contiguous=True), 5, RES),  # 40 cores in a row: fits
        slurm_job(4, SlurmRequest(ntasks=20, nodes=2), 5, RES),  # 16 at most on two nodes
    ]
    w = Workload(jobs, RES)
    ok = fits_empty_system(
        w.units,
        w.unit_requests,
        system,
        np.array([j.max_units_per_node for j in jobs]),
        w.node_counts,
        w.per_node_requests,
        w.contiguous,
    )
    assert ok.tolist() == [True, False, True, False]


# ---- request files ------------------------------------------------------------------------


def test_csv_request_file_with_bad_lines(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(
        "id,submit,run_time,ntasks,nodes,ntasks_per_node,gres,contiguous\n"
        "1,0,100,16,,,,0\n"
        "2,5,200,,4,2,gpu:1,1\n"
        "3,5,200,10,2,,2,no\n"
        "4,5,abc,8,,,,\n"  # bad run time
        "5,6,50,,,,,\n"  # no request
        "6,6,50,9,2,4,,\n"  # inconsistent
        "7,7,50,,200,1,,\n"  # too big
        "1,8,50,4,,,,\n"  # duplicate id
        "9,9,50,4,,,,maybe\n"  # bad boolean
    )
    system = gpu_system(nodes=8)
    w = read_slurm_requests(path, system)
    assert [j.id for j in w] == [1, 2, 3]
    assert [j.slurm_type for j in w] == [1, 3, 2]
    assert w.jobs[1].contiguous and w.jobs[1].unit_request == (2, 1)
    assert w.jobs[2].per_node_request == (0, 2) and w.jobs[2].node_count == 2
    rep = w.report
    assert rep.skipped == {
        "bad-run_time": 1,
        "bad-request": 2,
        "too-big": 1,
        "duplicate-id": 1,
        "bad-contiguous": 1,
    }
    assert rep.first_lines["bad-run_time"] == [5]
    assert any("line 5" in n and "'run_time'" in n for n in rep.notes)
    assert any("line 8" in n and "does not fit" in n for n in rep.notes)


def test_jsonl_request_file_and_round_trip(tmp_path):
    system = load_system("machine-s")
    w = load_workload("synthetic:aucsched,workload=V,version=2,seed=4,runtime_h=0.5", system)
    for suffix in ("jsonl", "csv"):
        path = tmp_path / f"w.{suffix}"
        write_slurm_requests(w, path)
        back = load_workload(str(path), system)
        assert len(back) == len(w) and back.report.n_skipped == 0
        for a, b in zip(w.jobs, back.jobs):
            assert (
                a.units,
                a.unit_request,
                a.max_units_per_node,
                a.node_count,
                a.per_node_request,
                a.contiguous,
                a.run_time,
                a.wall_time,
            ) == (
                b.units,
                b.unit_request,
                b.max_units_per_node,
                b.node_count,
                b.per_node_request,
                b.contiguous,
                b.run_time,
                b.wall_time,
            )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"ntasks": 4, "run_time": 10}\nnot json\n[1, 2]\n{"ntasks": 4, "run_time": 10, "colour": 1}\n'
    )
    w2 = read_slurm_requests(bad, system)
    assert len(w2) == 1 and w2.report.skipped == {"malformed": 3}
    with pytest.raises(TraceFormatError, match="unknown column"):
        p = tmp_path / "x.csv"
        p.write_text("id,cores\n1,4\n")
        read_slurm_requests(p, system)


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_stray_byte_skips_its_line_and_keeps_the_others(tmp_path, suffix):
    system = gpu_system(nodes=8)
    if suffix == "csv":
        rows = [
            b"id,submit,run_time,ntasks",
            b"1,0,100,16",
            b"2,5,2\xff00,4",
            b"3,5,200,8",
            b"4,6,50\x00,2",
            b"5,7,50,\r2",
            b"6,8,60,2\r",
        ]
    else:
        rows = [
            b'{"id": 1, "run_time": 100, "ntasks": 16}',
            b'{"id": 2, "run_time": 2\xff00, "ntasks": 4}',
            b'{"id": 3, "run_time": 200, "ntasks": 8}',
            b'{"id": 4, "run_time": 50, "ntasks": 2}\x00',
            b"[" * 100000,
            b'{"id": 6, "run_time": 60, "ntasks": 2}\r',
            b'{"id": 7, "run_time": 1' + b"0" * 5000 + b"}",
        ]
    path = tmp_path / f"jobs.{suffix}"
    path.write_bytes(b"\n".join(rows) + b"\n")
    w = read_slurm_requests(path, system)
    assert [j.id for j in w] == [1, 3, 6]
    bad = next(k for k, row in enumerate(rows, start=1) if b"\xff" in row)
    if suffix == "csv":  # a NUL makes its field bad; a lone CR inside a line is no CSV
        assert w.report.skipped == {"malformed": 2, "bad-run_time": 1}
        assert w.report.first_lines == {"malformed": [3, 6], "bad-run_time": [5]}
    else:  # a NUL after the object, nesting too deep, a 5000-digit number
        assert w.report.skipped == {"malformed": 4} and w.report.first_lines["malformed"] == [
            2,
            4,
            5,
            7,
        ]
    assert len(w) + w.report.n_skipped == w.report.total_records == len(rows) - (suffix == "csv")
    column = rows[bad - 1].index(b"\xff") + 1
    assert f"{path}, line {bad}: byte 0xff at column {column} is not UTF-8 text" in w.report.notes


def test_a_request_file_that_is_not_text_is_one_clear_error(tmp_path):
    system = gpu_system()
    for name, data in (
        ("bin.csv", bytes(range(256)) * 4),
        ("bin.jsonl", b"\x1f\x8b\x08\x00" + bytes(500)),
        ("one.csv", b"\x1f"),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(TraceFormatError, match=re.escape(str(path)) + ": is not a text file"):
            read_slurm_requests(path, system)
    header = tmp_path / "header.csv"
    header.write_bytes(b"id,run_t\xefme,ntasks\n1,10,4\n")
    with pytest.raises(
        TraceFormatError, match=re.escape(str(header)) + ", line 1: the header line is not text"
    ):
        read_slurm_requests(header, system)
    twice = tmp_path / "twice.csv"
    twice.write_text("id,run_time,runtime,ntasks\n1,10,20,4\n")
    with pytest.raises(
        TraceFormatError,
        match="line 1, field runtime: columns 'run_time' and 'runtime' are the same",
    ):
        read_slurm_requests(twice, system)
    with pytest.raises(TraceFormatError, match=re.escape(str(tmp_path)) + ": is a directory"):
        read_slurm_requests(tmp_path, system)


def test_values_too_large_for_a_time_are_named(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text(
        '{"id": 1, "run_time": 100, "ntasks": 4}\n{"id": 2, "run_time": 1e30, "ntasks": 4}\n'
        '{"id": 3, "run_time": 10, "submit": ' + "9" * 400 + ', "ntasks": 4}\n'
        '{"id": 4, "run_time": NaN, "ntasks": 4}\n'
    )
    w = read_slurm_requests(path, gpu_system())
    assert [j.id for j in w] == [1]
    assert w.report.skipped == {"run_time-too-large": 1, "submit-too-large": 1, "bad-run_time": 1}
    assert any("line 2: column 'run_time': 1e+30 is too large" in n for n in w.report.notes)


# ---- the paper's workload generator -------------------------------------------------------


def test_generator_follows_table_4():
    system = load_system("machine-s")
    for name, mix in {
        "I": (1, 0, 0, 0),
        "II": (0, 1, 0, 0),
        "III": (0.5, 0.5, 0, 0),
        "IV": (0.4, 0.4, 0.2, 0),
        "V": (1 / 3, 1 / 3, 1 / 6, 1 / 6),
    }.items():
        reqs = aucsched_requests(system, AucschedSpec(workload=name, seed=3))
        kinds = np.array(
            [
                0 if r.nodes is None else (1 if not r.gpus_per_node else 1 + r.gpus_per_node)
                for r, _ in reqs
            ]
        )
        shares = np.bincount(kinds, minlength=4) / len(kinds)
        assert np.allclose(shares, mix, atol=0.06), (name, shares)
        for r, run in reqs:
            assert 60 <= run <= 600 and r.cores % 8 == 0 and r.cores <= 128
            if r.nodes is not None and not r.gpus_per_node:
                assert r.ntasks_per_node in (4, 8)
            if r.gpus_per_node:
                assert r.ntasks_per_node in (
                    r.gpus_per_node,
                    2 * r.gpus_per_node,
                )  # 1 or 2 cores per GPU


def test_generator_work_versions_and_reproducibility():
    system = load_system("machine-s")
    w1 = load_workload("synthetic:aucsched,workload=IV,version=1,seed=2", system)
    w2 = load_workload("synthetic:aucsched,workload=IV,version=2,seed=2", system)
    w3 = load_workload("synthetic:aucsched,workload=IV,version=3,seed=2", system)
    again = load_workload("synthetic:aucsched,workload=IV,version=2,seed=2", system)
    assert 4 * 3600 <= theoretical_runtime(w1, system) < 4 * 3600 + 600 * 128 / 1024 + 1
    assert [j.contiguous for j in w1].count(True) == 0 and all(j.contiguous for j in w3)
    assert 0.4 < np.mean([j.contiguous for j in w2]) < 0.6
    assert [j.contiguous for j in w2] == [j.contiguous for j in again]
    strip = lambda w: [(j.units, j.unit_request, j.node_count, j.run_time) for j in w]  # noqa: E731
    assert strip(w1) == strip(w2) == strip(w3)  # same jobs, only the contiguity differs
    assert all(j.submit == 0 for j in w1) and all(
        j.wall_time % 60 == 0 and j.wall_time >= j.run_time for j in w1
    )
    assert strip(load_workload("synthetic:aucsched,workload=IV,version=1,seed=3", system)) != strip(
        w1
    )


def test_generator_spec_errors():
    system = load_system("machine-s")
    with pytest.raises(ConfigError, match="workload must be one of"):
        load_workload("synthetic:aucsched,workload=VI", system)
    with pytest.raises(ConfigError, match="unknown key"):
        load_workload("synthetic:aucsched,jobs=3", system)
    cores_only = system_of([(4, {"core": 8})], ("core",))
    with pytest.raises(ConfigError, match="GPU"):
        load_workload("synthetic:aucsched,workload=IV", cores_only)


# ---- baselines run Slurm-style workloads ----------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "fifo",
        "sjf",
        "easy",
        "conservative",
        "easy:allocator=best-fit",
        "conservative:allocator=slurm-linear",
    ],
)
def test_baselines_run_slurm_style_workloads(name):
    system = load_system("machine-s")
    w = load_workload("synthetic:aucsched,workload=V,version=2,seed=1,runtime_h=0.4", system)
    r = simulate(system, w, name)  # validated
    assert not np.isnan(r.start).any()
    s = summarize(r)
    assert s["fragmentation_mean"] >= 1 and s["spread_mean"] >= 1


def test_jobs_frame_and_summary_of_a_contiguous_workload():
    system = load_system("machine-s")
    w = load_workload("synthetic:aucsched,workload=III,version=3,seed=1,runtime_h=0.3", system)
    r = simulate(system, w, "easy")
    s = summarize(r)
    assert s["fragmentation_mean"] == 1.0 and s["fragmentation_std"] == 0.0
    assert s["spread_mean"] == 1.0 and s["spread_std"] == 0.0
    assert s["theoretical_runtime_s"] == pytest.approx(theoretical_runtime(w, system))
    assert json.dumps({k: v for k, v in s.items() if isinstance(v, float | int)})
    assert placement(r) and starts(r)
