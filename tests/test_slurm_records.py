"""Slurm's records read back (squeue --json, jobcomp/filetxt; recorded from a real 16-node
cluster in tests/data/slurm/), the replay's sbatch options and time limits, and the schedule
built from the records, validated with the replay's time tolerance (no daemons needed).

The recording: ``hpcdispatch slurm up --system machine-s --nodes 16``, four jobs by hand
(Slurm ids 1-4), then ``slurm replay tests/data/slurm/replay-25.csv -x 0.1`` (Slurm ids 5-29 =
workload ids 1-25, t0 = 1795774502), then ``squeue --json -t all`` and the jobcomp file.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system, job
from hypothesis import given
from hypothesis import strategies as st

from hpcdispatch.errors import TraceFormatError
from hpcdispatch.results.store import write_result
from hpcdispatch.slurm.config import first_nodes
from hpcdispatch.slurm.records import (
    expand_hostlist,
    parse_jobcomp,
    parse_squeue_json,
    read_jobcomp,
)
from hpcdispatch.slurm.replay import (
    _build_result,
    _ReplayClock,
    _sbatch_options,
    plan_submissions,
    time_limit_minutes,
)
from hpcdispatch.system.io import load_system
from hpcdispatch.validation.validator import validate_run_dir, validate_tables
from hpcdispatch.workload.loader import load_workload
from hpcdispatch.workload.slurm import SlurmRequest

DATA = Path(__file__).parent / "data" / "slurm"
T0 = 1795774502
SCALE = 0.1


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    """jobcomp/filetxt writes local time; the recording machine ran in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_expand_hostlist() -> None:
    assert expand_hostlist("n0000") == ["n0000"]
    assert expand_hostlist("n[0002-0003]") == ["n0002", "n0003"]
    assert expand_hostlist("n[0001,0005-0007],x9") == ["n0001", "n0005", "n0006", "n0007", "x9"]
    with pytest.raises(ValueError, match="bad range"):
        expand_hostlist("n[a-b]")


@given(st.lists(st.integers(0, 9999), min_size=1, max_size=30, unique=True))
def test_expand_hostlist_inverts_ranges(numbers: list[int]) -> None:
    numbers.sort()
    body = ",".join(f"{n:04d}" for n in numbers)
    assert expand_hostlist(f"n[{body}]") == [f"n{n:04d}" for n in numbers]


def test_squeue_json_recorded() -> None:
    records = parse_squeue_json((DATA / "squeue-all.json").read_text())
    assert [r.job_id for r in records] == list(range(1, 30))
    by_id = {r.job_id: r for r in records}
    # sbatch -N2 --ntasks-per-node=4 --gres=gpu:1: 4 cores on each of two nodes
    assert by_id[1].cores == {"n0000": 4, "n0001": 4} and by_id[1].gres_per_node == "gres:gpu:1"
    # sbatch -N2 -n 5 --gres=gpu:2: 5 cores over two nodes, as Slurm packed them
    assert by_id[2].cores == {"n0002": 4, "n0003": 1}
    assert (by_id[2].submit, by_id[2].start, by_id[2].end) == (1795774356, 1795774357, 1795774359)
    # sbatch -N16 --ntasks-per-node=8: every core of the cluster
    assert by_id[4].cores == {f"n{i:04d}": 8 for i in range(16)}
    assert by_id[29].name == "hpcd-25" and by_id[29].time_limit_min == 1
    assert {r.state for r in records} == {"COMPLETED"}


def test_squeue_json_damage_names_the_field() -> None:
    with pytest.raises(TraceFormatError, match="not JSON"):
        parse_squeue_json("{", "out.json")
    with pytest.raises(TraceFormatError, match="no 'jobs' list"):
        parse_squeue_json('{"meta": {}}', "out.json")
    with pytest.raises(
        TraceFormatError, match=r"out.json, field job_state: jobs\[0\] \(job 7\): missing"
    ):
        parse_squeue_json('{"jobs": [{"job_id": 7, "submit_time": 1}]}', "out.json")


def test_jobcomp_recorded_agrees_with_squeue(utc: None) -> None:
    comp, problems = read_jobcomp(DATA / "jobcomp.txt")
    assert problems == [] and len(comp) == 29
    three = next(c for c in comp if c.job_id == 3)
    # JobId=3 ... StartTime=2026-11-27T10:12:37 EndTime=2026-11-27T10:12:38 NodeList=n0000 ProcCnt=3
    assert (three.start, three.end, three.nodes, three.proc_count) == (
        1795774357,
        1795774358,
        ["n0000"],
        3,
    )
    squeue = {r.job_id: r for r in parse_squeue_json((DATA / "squeue-all.json").read_text())}
    for c in comp:
        s = squeue[c.job_id]
        assert (c.state, c.submit, c.start, c.end, sorted(c.nodes)) == (
            s.state,
            s.submit,
            s.start,
            s.end,
            sorted(s.cores),
        )


def test_jobcomp_damaged_line_is_reported_and_the_rest_kept(utc: None) -> None:
    lines = (DATA / "jobcomp.txt").read_text().splitlines()[:3]
    lines.insert(1, lines[0].replace("StartTime=2026-11-27T10:12:37", "StartTime=yesterday"))
    comp, problems = parse_jobcomp("\n".join(lines) + "\n", "jobcomp.txt")
    assert len(comp) == 3
    assert problems == ["jobcomp.txt, line 2, field StartTime: bad value 'yesterday'"]


def test_time_limit_minutes() -> None:
    # ceil((wall x scale + 2 s) / 60), at least one minute
    assert time_limit_minutes(120, 0.1) == 1  # 12 s + 2 s
    assert time_limit_minutes(580, 0.1) == 1  # 58 s + 2 s = 60 s
    assert time_limit_minutes(590, 0.1) == 2  # 61 s
    assert time_limit_minutes(3600, 1.0) == 61
    assert time_limit_minutes(1, 0.001) == 1


def test_sbatch_options_by_request_type() -> None:
    system = load_system("machine-s")  # core, gpu
    # type 3: 3 nodes x (4 cores, 1 GPU), one unit per node
    assert _sbatch_options(
        job(1, 0, 10, units=3, req=(4, 1), node_count=3, max_units_per_node=1), system
    ) == ("--nodes=3", "--ntasks-per-node=4", "--gres=gpu:1")
    # type 2: 5 one-core units on exactly 2 nodes, 2 GPUs per node
    assert _sbatch_options(
        job(2, 0, 10, units=5, req=(1, 0), node_count=2, per_node_request=(0, 2)), system
    ) == ("--nodes=2", "--ntasks=5", "--gres=gpu:2")
    # type 1: 6 units of 2 cores, at most 2 per node, contiguous
    assert _sbatch_options(
        job(3, 0, 10, units=6, req=(2, 0), max_units_per_node=2, contiguous=True), system
    ) == ("--ntasks=6", "--cpus-per-task=2", "--ntasks-per-node=2", "--contiguous")
    # type 1 with a GPU per unit
    assert _sbatch_options(job(4, 0, 10, units=2, req=(1, 1)), system) == (
        "--ntasks=2",
        "--gpus-per-task=1",
    )
    eurora = load_system("eurora")  # core, mem, gpu, mic
    assert _sbatch_options(job(5, 0, 10, units=4, req=(1, 512, 0, 0)), eurora) == (
        "--ntasks=4",
        "--mem-per-cpu=512",
    )
    assert _sbatch_options(
        job(6, 0, 10, units=2, req=(8, 1024, 2, 0), node_count=2, max_units_per_node=1), eurora
    ) == ("--nodes=2", "--ntasks-per-node=8", "--mem=1024", "--gres=gpu:2")


def test_sbatch_options_refuse_what_sbatch_cannot_say() -> None:
    from hpcdispatch.errors import ConfigError

    system = load_system("machine-s")
    with pytest.raises(ConfigError, match="job 9: its units hold no core"):
        _sbatch_options(job(9, 0, 10, units=1, req=(0, 1)), system)
    # one GPU per one-core unit, spread over exactly 2 nodes: neither --gres (per node) nor
    # --gpus-per-task with -N says "units of (1 core, 1 GPU) on exactly 2 nodes"
    with pytest.raises(ConfigError, match="job 8: its units hold generic resources"):
        _sbatch_options(job(8, 0, 10, units=4, req=(1, 1), node_count=2), system)
    # -N 2 -n 4 -c 2 is a Slurm request (tasks of 2 cores on exactly 2 nodes)
    assert _sbatch_options(job(7, 0, 10, units=4, req=(2, 0), node_count=2), system) == (
        "--nodes=2",
        "--ntasks=4",
        "--cpus-per-task=2",
    )


def _parse_options(options: tuple[str, ...]) -> SlurmRequest:
    """sbatch's long options back into a request (the test's own reading of them)."""
    values = dict(
        o.removeprefix("--").split("=", 1) if "=" in o else (o.removeprefix("--"), "")
        for o in options
    )
    gres, gpus = [], 0
    for item in filter(None, values.get("gres", "").split(",")):
        name, _, count = item.rpartition(":")
        if name == "gpu":
            gpus = int(count)
        else:
            gres.append((name, int(count)))

    def number(key: str) -> int | None:
        return int(values[key]) if key in values else None

    return SlurmRequest(
        ntasks=number("ntasks"),
        nodes=number("nodes"),
        ntasks_per_node=number("ntasks-per-node"),
        gpus_per_node=gpus,
        contiguous="contiguous" in values,
        cpus_per_task=number("cpus-per-task") or 1,
        gres=tuple(gres),
        mem=number("mem"),
        mem_per_cpu=number("mem-per-cpu"),
    )


@given(
    kind=st.sampled_from([1, 2, 3]),
    nodes=st.integers(1, 4),
    tasks=st.integers(1, 16),
    cpt=st.integers(1, 3),
    gpus=st.integers(0, 2),
    mics=st.integers(0, 2),
    mem=st.sampled_from([None, "mem", "mem_per_cpu"]),
    contiguous=st.booleans(),
)
def test_sbatch_options_say_exactly_the_request(
    kind: int,
    nodes: int,
    tasks: int,
    cpt: int,
    gpus: int,
    mics: int,
    mem: str | None,
    contiguous: bool,
) -> None:
    from hypothesis import assume

    from hpcdispatch.workload.slurm import slurm_job

    resources = ("core", "mem", "gpu", "mic")  # eurora's
    memory = {"mem": {"mem": 2048}, "mem_per_cpu": {"mem_per_cpu": 300}}.get(mem or "", {})
    shape = {
        1: {"ntasks": tasks},
        2: {"ntasks": max(tasks, nodes), "nodes": nodes},
        3: {"nodes": nodes, "ntasks_per_node": tasks},
    }[kind]
    request = SlurmRequest(
        **shape,
        gpus_per_node=gpus,
        gres=(("mic", mics),) if mics else (),
        cpus_per_task=cpt,
        contiguous=contiguous,
        **memory,
    )
    try:
        original = slurm_job(1, request, 60, resources)
    except ValueError:
        assume(False)
    system = load_system("eurora")
    back = slurm_job(1, _parse_options(_sbatch_options(original, system)), 60, resources)
    fields = (
        "units",
        "unit_request",
        "max_units_per_node",
        "node_count",
        "per_node_request",
        "contiguous",
    )
    assert {f: getattr(back, f) for f in fields} == {f: getattr(original, f) for f in fields}


def _recorded_replay():
    system = first_nodes(load_system("machine-s"), 16)
    workload = load_workload(str(DATA / "replay-25.csv"), system)
    subs = plan_submissions(workload, system, SCALE)
    squeue = {r.job_id: r for r in parse_squeue_json((DATA / "squeue-all.json").read_text())}
    records = {j.index: squeue[int(j.id) + 4] for j in workload.jobs}
    clock = _ReplayClock(T0, float(workload.submit.min()), SCALE)
    return system, workload, subs, records, clock


def _write(tmp: Path, system, workload, subs, records, clock) -> Path:
    result, problems = _build_result(
        system, workload, records, clock, subs, {"name": "slurm-real", "params": {}}
    )
    assert problems == []
    # (as slurm replay writes it: its record with the time scale, the tolerance beside it)
    write_result(
        result, tmp, run_extra={"replay": {"time_scale": SCALE}, "time_tolerance": 3.0 / SCALE}
    )
    return tmp


def test_recorded_replay_as_a_run_directory(tmp_path: Path) -> None:
    system, workload, subs, records, clock = _recorded_replay()
    # job 1 sleeps min(60, 120) x 0.1 = 6 s, -t ceil((12 + 2) / 60) = 1 minute; submitted at t0
    assert (subs[0].job_id, subs[0].offset_s, subs[0].sleep_s, subs[0].time_limit_min) == (
        1,
        0.0,
        6.0,
        1,
    )
    assert subs[0].options == ("--nodes=1", "--ntasks=5", "--gres=gpu:1")
    # job 25 (run 150 > wall-time 120) sleeps its wall-time: 12 s, submitted (295 - 20) x 0.1 =
    # 27.5 s after t0, rounded up to the whole second 28; job 6 at (75 - 20) x 0.1 = 5.5 -> 6
    assert (subs[-1].job_id, subs[-1].offset_s, subs[-1].sleep_s) == (25, 28.0, 12.0)
    assert [(s.job_id, s.offset_s) for s in subs[5:7]] == [(6, 6.0), (7, 6.0)]
    out = _write(tmp_path / "run", system, workload, subs, records, clock)
    report = validate_run_dir(out)
    assert report.ok, report.describe()
    assert any("time tolerance of 30 s" in n for n in report.notes)
    import pandas as pd

    jobs = pd.read_parquet(out / "jobs.parquet").set_index("job_id")
    # Slurm job 29 (workload job 25): start 1795774530, end 1795774542 -> 20 + 28 / 0.1, 20 + 40 / 0.1
    assert (jobs.loc[25, "start"], jobs.loc[25, "end"], jobs.loc[25, "status"]) == (
        300.0,
        420.0,
        "killed",
    )
    # Slurm job 16 (workload job 12, -n 20): n0004:4 n0005:5 n0006:7 n0007:4 cores = one-core units
    assert jobs.loc[12, "allocation"] == "4:4 5:5 6:7 7:4"


def test_the_tolerance_lets_no_real_violation_pass(tmp_path: Path) -> None:
    system, workload, subs, records, clock = _recorded_replay()
    by_id = {int(workload.jobs[i].id): i for i in records}
    # workload job 16 (3 cores on n0009, 190-240) moved onto n0011, where job 20 holds all 8
    # cores from 230 to 260: 11 cores on an 8-core node during [230, 240)
    moved = dict(records)
    i16 = by_id[16]
    moved[i16] = dataclasses.replace(records[i16], cores={"n0011": 3})
    report = validate_run_dir(_write(tmp_path / "over", system, workload, subs, moved, clock))
    assert [v.kind for v in report.violations] == ["capacity"]
    assert "node 11 (n0011) at t=230: 11 core in use, capacity 8" in report.violations[0].message
    # a job that ran 4 s (40 workload s) longer than it should: beyond the 3 s (30 s) tolerance
    late = dict(records)
    i4 = by_id[4]
    late[i4] = dataclasses.replace(records[i4], end=records[i4].end + 4)
    report = validate_run_dir(_write(tmp_path / "long", system, workload, subs, late, clock))
    assert [v.kind for v in report.violations] == ["duration"]
    assert "job 4 ran 50 s" in report.violations[0].message


def test_validator_time_tolerance_covers_only_starts_and_durations() -> None:
    import pandas as pd

    system = cores_system(1, 2)
    workload = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit": [10.0, 10.0],
            "run_time": [5, 5],
            "wall_time": [5, 5],
            "units": [2, 1],
            "unit_core": [1, 1],
        }
    )
    # job 1 starts 0.5 s before its submission and runs 5.4 s; job 2 overlaps it on the 2-core node
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2],
            "start": [9.5, 12.0],
            "end": [14.9, 17.0],
            "status": ["completed", "completed"],
        }
    )
    alloc = pd.DataFrame(
        {
            "job_id": [1, 2],
            "segment": [0, 0],
            "node": [0, 0],
            "units": [2, 1],
            "from": [9.5, 12.0],
            "to": [14.9, 17.0],
            "core": [2, 1],
        }
    )
    exact = validate_tables(system, workload, jobs, alloc)
    assert sorted(v.kind for v in exact.violations) == ["capacity", "duration", "early"]
    loose = validate_tables(system, workload, jobs, alloc, time_tolerance=1.0)
    assert [v.kind for v in loose.violations] == ["capacity"]
    assert np.isclose(loose.violations[0].time, 12.0)
