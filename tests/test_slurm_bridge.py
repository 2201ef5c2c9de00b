"""``hpcdispatch slurm dispatch`` (external mode, :mod:`hpcdispatch.slurm.bridge`).

Unit tests read outputs recorded on a 4-node emulated cluster (``tests/data/slurm/bridge-*``):
a foreign job ``wrap`` (Slurm job 1, 3 cores on n0001 and n0003, pinned with MinCPUsNode=3),
``hpcd-77-2`` (job 2, ``--nodes=2 --ntasks-per-node=8 --gres=gpu:1``, pinned to n0000,n0002)
and ``hpcd-77-3`` (job 3, ``--ntasks=2 --cpus-per-task=2``, held).

The integration tests need a real Slurm, as ``tests/test_slurm_cluster.py`` (same skip /
``HPCDISPATCH_REQUIRE_SLURM`` mechanism); one 16-node cluster, torn down in a ``finally``:
EASY and PCP'20 on 20 jobs each end to end, a bridge killed with SIGKILL and resumed, a dispatcher that raises.
About 100 s in all.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.protocol import Decision, Dispatcher, Start
from hpcdispatch.slurm.bridge import (
    BridgeError,
    _BridgeJournal,
    _build_view,
    _call_due,
    _call_with_budget,
    _check_start,
    _hetjob_command,
    _is_uneven,
    _parse_sinfo_nodes,
    _Placement,
    _placement_check,
    _start_commands,
)
from hpcdispatch.slurm.config import first_nodes
from hpcdispatch.slurm.records import _merge_hetjob, _parse_squeue_text, parse_squeue_json
from hpcdispatch.slurm.replay import _ReplayClock, plan_submissions
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.system.io import load_system
from hpcdispatch.workload.loader import load_workload

DATA = Path(__file__).parent / "data" / "slurm"
HEADER = "id,submit,user,run_time,time_limit,ntasks,nodes,ntasks_per_node,gres,contiguous\n"


@pytest.fixture
def recorded(tmp_path: Path):
    system = first_nodes(load_system("machine-s"), 4)
    wl_file = tmp_path / "two.csv"
    # job 2 as hpcd-77-2 (2 nodes x 8 cores, a GPU on each); job 3: 2 tasks of 1 core (its held
    # record hpcd-77-3 holds no cores, its request does not matter to squeue's record)
    wl_file.write_text(HEADER + "2,0,u1,100,2,,2,8,gpu:1,\n3,10,u1,100,2,2,,,,\n")
    workload = load_workload(str(wl_file), system)
    records = {r.name: r for r in parse_squeue_json((DATA / "bridge-squeue.json").read_text())}
    ours = {0: records["hpcd-77-2"], 1: records["hpcd-77-3"]}
    nodes = _parse_sinfo_nodes((DATA / "bridge-sinfo.json").read_text())
    t0 = (
        records["hpcd-77-2"].start - 10
    )  # job 2 started 10 real s after t0: workload time 0 + 10 / 0.1 = 100
    clock = _ReplayClock(t0, 0.0, 0.1)
    return system, workload, ours, nodes, clock


def test_sinfo_nodes_as_recorded() -> None:
    nodes = _parse_sinfo_nodes((DATA / "bridge-sinfo.json").read_text())
    assert sorted(nodes) == ["n0000", "n0001", "n0002", "n0003"]
    assert [(n.cpus, n.alloc_cpus) for n in nodes.values()] == [(8, 8), (8, 3), (8, 8), (8, 3)]
    assert all(n.usable for n in nodes.values())


def test_sinfo_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"^sinfo --json, field cpus: nodes\[0\]: missing$"):
        _parse_sinfo_nodes('{"nodes": [{"name": "n0000", "state": "idle"}]}')
    with pytest.raises(TraceFormatError, match="no 'nodes' list"):
        _parse_sinfo_nodes('{"jobs": []}')
    from hpcdispatch.slurm.bridge import _NodeState

    assert (
        not _NodeState("n0", 8, 0, "idle", ("DRAIN",)).usable
        and not _NodeState("n0", 8, 0, "down").usable
    )


def test_view_from_recorded_cluster(recorded) -> None:
    system, workload, ours, nodes, clock = recorded
    now_epoch = clock.t0 + 12  # workload time 120
    view = _build_view(system, workload, clock, now_epoch, ours, nodes, [120.0, 120.0], decided={})
    assert view.now == pytest.approx(120.0)
    assert [j.id for j in view.queue] == [3]
    rj = view.running[0]
    assert rj.allocation.pairs() == [(0, 1), (2, 1)]  # one unit of 8 cores on n0000 and n0002
    assert rj.start == pytest.approx(100.0) and rj.planned_end == pytest.approx(220.0)
    core, gpu = system.resources.index("core"), system.resources.index("gpu")
    # n0000 / n0002: all 8 cores and 1 of 2 GPUs to job 2; n0001 / n0003: 3 cores to the foreign job
    assert view.free[:, core].tolist() == [0, 5, 0, 5]
    assert view.free[:, gpu].tolist() == [1, 2, 1, 2]
    assert view.free_total[core] == 10 and view.free_total[gpu] == 6
    assert [j.id for j in view.new_jobs] == [3]  # no previous call: every queued job is new


def test_released_job_holds_its_nodes_and_ended_jobs_are_reported(recorded) -> None:
    system, workload, ours, nodes, clock = recorded
    first = _build_view(
        system, workload, clock, clock.t0 + 12, ours, nodes, [120.0, 120.0], decided={}
    )
    # job 3 released at t=120 onto n0001 (2 units of 1 core), not started yet by Slurm
    released = {1: ours[1].__class__(**{**ours[1].__dict__, "state_reason": "None"})}
    decided = {1: _Placement((1,), (2,), 120.0)}
    view = _build_view(
        system,
        workload,
        clock,
        clock.t0 + 13,
        {0: ours[0], **released},
        nodes,
        [120.0, 120.0],
        decided,
        previous=first,
    )
    assert list(view.queue) == [] and view.new_jobs == ()
    assert view.running[1].allocation.pairs() == [(1, 2)] and view.running[1].start == 120.0
    assert view.free[1, system.resources.index("core")] == 3  # 8 - 3 (foreign) - 2
    assert view.running_version == first.running_version + 1
    # killed between journal and release: still held in Slurm, yet its nodes are taken
    resumed = _build_view(
        system, workload, clock, clock.t0 + 13, ours, nodes, [120.0, 120.0], decided
    )
    assert list(resumed.queue) == [] and resumed.running[1].allocation.pairs() == [(1, 2)]
    assert resumed.free[1, system.resources.index("core")] == 3
    # job 2 ends
    done = {0: ours[0].__class__(**{**ours[0].__dict__, "state": "COMPLETED"}), **released}
    later = _build_view(
        system, workload, clock, clock.t0 + 14, done, nodes, [120.0, 120.0], decided, previous=view
    )
    assert [j.id for j in later.ended_jobs] == [2] and [
        rj.job.id for rj in later.ended_running
    ] == [2]


def test_start_commands_pin_and_release(recorded) -> None:
    system, workload, *_ = recorded
    job2, job3 = workload.jobs
    assert _start_commands("scontrol", 7, job2, Allocation([1, 3], [1, 1]), system) == [
        [
            "scontrol",
            "update",
            "JobId=7",
            "NumNodes=2-2",
            "MinCPUsNode=8",
            "ReqNodeList=n0001,n0003",
        ],
        ["scontrol", "release", "7"],
    ]
    assert _start_commands("scontrol", 8, job3, Allocation([2], [2]), system)[0] == [
        "scontrol",
        "update",
        "JobId=8",
        "NumNodes=1-1",
        "MinCPUsNode=2",
        "ReqNodeList=n0002",
    ]
    # two units of 1 core on two nodes: one each, the same count (MinCPUsNode=1)
    assert _start_commands("scontrol", 8, job3, Allocation([0, 1], [1, 1]), system)[0][3:5] == [
        "NumNodes=2-2",
        "MinCPUsNode=1",
    ]
    with pytest.raises(ConfigError, match=r"job 3: .*\{'n0000': 3, 'n0001': 1\}"):
        _start_commands("scontrol", 8, job3, Allocation([0, 1], [3, 1]), system)


def test_an_uneven_start_is_one_hetjob_component_per_node(tmp_path: Path) -> None:
    """3 + 1 units of 2 cores on n0000 and n0003, and a node job with a GPU per node: each
    component pins one node with its cores (one per task) and GPUs; the sleep comes once."""
    system = first_nodes(load_system("machine-s"), 4)
    wl_file = tmp_path / "het.csv"
    wl_file.write_text(
        "id,submit,user,run_time,time_limit,ntasks,nodes,ntasks_per_node,cpus_per_task,gres,contiguous\n"
        "5,0,u1,90,2,4,,,2,,\n"
    )
    workload = load_workload(str(wl_file), system)
    job = workload.jobs[0]
    sub = plan_submissions(workload, system, 0.5)[
        0
    ]  # sleeps 90 x 0.5 = 45 s; -t ceil((120 x 0.5 + 2) / 60) = 2
    alloc = Allocation([0, 3], [3, 1])
    assert _is_uneven(alloc) and not _is_uneven(Allocation([0, 3], [2, 2]))
    cmd = _hetjob_command("sbatch", sub, job, alloc, system, "hpcb-9-5-h", tmp_path)
    assert cmd == [
        "sbatch",
        "--parsable",
        "--job-name=hpcb-9-5-h",
        "--output=/dev/null",
        f"--chdir={tmp_path}",
        "--partition=batch",
        "--time=2",
        "--nodes=1",
        "--ntasks=6",
        "--nodelist=n0000",
        ":",
        "--partition=batch",
        "--time=2",
        "--nodes=1",
        "--ntasks=2",
        "--nodelist=n0003",
        "--wrap",
        "sleep 45",
    ]


def test_hetjob_components_read_as_one_job() -> None:
    """squeue --json lists a heterogeneous job as one record per component (recorded on Slurm
    22.05: job 2 = 2+0 with 3 cores on n0000 and 3 = 2+1 with 1 core on n0001)."""

    def comp(job_id: int, offset: int, node: str, cores: list[int], state: str = "RUNNING") -> dict:
        return {
            "job_id": job_id,
            "name": "hpcb-9-5-h",
            "job_state": state,
            "submit_time": 100,
            "start_time": 101,
            "end_time": 121 if state == "COMPLETED" else 0,
            "het_job_id": 2,
            "het_job_offset": offset,
            "state_reason": "None",
            "job_resources": {
                "allocated_nodes": [
                    {
                        "nodename": node,
                        "sockets": {"0": {"cores": {str(c): "allocated" for c in cores}}},
                    }
                ]
            },
        }

    text = json.dumps({"jobs": [comp(3, 1, "n0001", [0]), comp(2, 0, "n0000", [0, 1, 2])]})
    parts = parse_squeue_json(text)
    assert [(p.job_id, p.het_job_id, p.het_job_offset) for p in parts] == [(3, 2, 1), (2, 2, 0)]
    one = _merge_hetjob(parts)
    assert (one.job_id, one.state, one.start, one.end, one.cores) == (
        2,
        "RUNNING",
        101,
        None,
        {"n0000": 3, "n0001": 1},
    )
    # final only when every component is; the end is the latest
    done = _merge_hetjob(
        parse_squeue_json(
            json.dumps(
                {
                    "jobs": [
                        comp(2, 0, "n0000", [0, 1, 2], "COMPLETED"),
                        comp(3, 1, "n0001", [0], "RUNNING"),
                    ]
                }
            )
        )
    )
    assert done.state == "RUNNING" and done.end is None
    done = _merge_hetjob(
        parse_squeue_json(
            json.dumps(
                {
                    "jobs": [
                        comp(2, 0, "n0000", [0, 1, 2], "COMPLETED"),
                        comp(3, 1, "n0001", [0], "COMPLETED"),
                    ]
                }
            )
        )
    )
    assert done.state == "COMPLETED" and done.end == 121
    # a plain job's record has no hetjob id
    assert parse_squeue_json((DATA / "bridge-squeue.json").read_text())[0].het_job_id == 0


def test_a_periodic_dispatcher_is_called_every_scaled_step() -> None:
    """Event-driven dispatchers: at a change, or after 1 s. AUCSCHED (step 5 s, not on events)
    at time scale 0.5: every 2.5 real seconds, changes or not."""
    from hpcdispatch.dispatchers.spec import make_dispatcher

    easy, auc = (
        make_dispatcher("easy").simulation_hints(),
        make_dispatcher("aucsched").simulation_hints(),
    )
    assert (
        _call_due(0.2, True, easy, 0.5)
        and not _call_due(0.2, False, easy, 0.5)
        and _call_due(1.0, False, easy, 0.5)
    )
    assert not _call_due(2.4, True, auc, 0.5) and _call_due(2.5, False, auc, 0.5)
    assert _call_due(0.5, False, auc, 0.1)  # 0.5 s: the step is 5 x 0.1 = 0.5 real seconds


def test_a_burst_of_submissions_is_sent_in_batches(tmp_path: Path, monkeypatch) -> None:
    """120 jobs due at once: 50 held sbatch calls per loop turn (the dispatcher decides between
    turns), each named after the run and the job; jobs Slurm has are not submitted again."""
    import types

    from hpcdispatch.dispatchers.spec import make_dispatcher
    from hpcdispatch.slurm import bridge as bridge_mod
    from hpcdispatch.slurm.cluster import ClusterInfo

    system = first_nodes(load_system("machine-s"), 4)
    wl_file = tmp_path / "burst.csv"
    wl_file.write_text(HEADER + "".join(f"{k},0,u1,60,2,1,,,,\n" for k in range(1, 121)))
    workload = load_workload(str(wl_file), system)
    calls: list[list[str]] = []

    def fake_run(
        cmd: list[str], info: object, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, f"{1000 + len(calls)}\n", "")

    monkeypatch.setattr(bridge_mod, "_run", fake_run)
    info = ClusterInfo(
        "c", str(tmp_path), 1, 2, "machine-s", 4, [], {"sbatch": "sbatch"}, "22.05.8"
    )
    journal = _BridgeJournal(tmp_path / "j.jsonl", t0=int(time.time()) - 5)
    bridge = bridge_mod._Bridge(
        info,
        system,
        workload,
        make_dispatcher("easy"),
        1.0,
        journal,
        plan_submissions(workload, system, 1.0),
    )
    assert bridge.submit_due({}) == 50 and len(calls) == 50
    assert calls[0][:3] == ["sbatch", "--parsable", "--hold"]
    assert (
        f"--job-name=hpcb-{journal.t0}-1" in calls[0]
        and f"--job-name=hpcb-{journal.t0}-50" in calls[49]
    )
    have = {i: types.SimpleNamespace() for i in range(50)}
    assert bridge.submit_due(have) == 50 and f"--job-name=hpcb-{journal.t0}-51" in calls[50]
    assert (
        bridge.submit_due({i: types.SimpleNamespace() for i in range(100)}) == 20
        and len(calls) == 120
    )
    assert bridge.slurm_ids[119] == 1120


def test_squeue_text_records(monkeypatch) -> None:
    """``squeue -h -t all -o SQUEUE_TEXT_FORMAT`` lines (the first three recorded on Slurm 22.05:
    a held job cancelled for its hetjob -- Slurm stamps its start and end with the cancel time --
    and two hetjob components); a pending held job has no start; a damaged line names itself."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        text = (
            "1372|hpcb-1795784952-666|CANCELLED|JobHeldUser|2026-11-27T13:09:38|2026-11-27T13:18:38|"
            "2026-11-27T13:18:38|1372\n"
            "1373+0|hpcb-1795784952-136-h|COMPLETED|None|2026-11-27T13:09:45|2026-11-27T13:09:46|"
            "2026-11-27T13:09:58|1373\n"
            "1373+1|hpcb-1795784952-136-h|COMPLETED|None|2026-11-27T13:09:45|2026-11-27T13:09:46|"
            "2026-11-27T13:09:58|1374\n"
            "1400|hpcb-1795784952-7|PENDING|JobHeldUser|2026-11-27T13:09:45|2026-11-27T14:00:00|N/A|1400\n"
        )
        cancelled, lead, part, pending = _parse_squeue_text(text)
        t0946 = 1795784986  # 2026-11-27T13:09:46 UTC
        assert (
            cancelled.job_id,
            cancelled.state,
            cancelled.state_reason,
            cancelled.het_job_id,
        ) == (1372, "CANCELLED", "JobHeldUser", 0)
        assert (lead.job_id, lead.het_job_id, lead.het_job_offset, lead.start, lead.end) == (
            1373,
            1373,
            0,
            t0946,
            t0946 + 12,
        )
        assert (part.job_id, part.het_job_id, part.het_job_offset) == (1374, 1373, 1)
        assert pending.start is None and pending.end is None and pending.cores == {}
        assert _merge_hetjob([part, lead]).job_id == 1373
        with pytest.raises(TraceFormatError, match=r"squeue -o, line 2: 3 fields, expected 8"):
            _parse_squeue_text(text.splitlines()[0] + "\n1|x|RUNNING\n")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_view_from_text_records_takes_cores_from_the_journal(recorded) -> None:
    """The loop's records have no cores: a started job's cores are its journalled start's, so
    the view equals the one from squeue --json (job 2: 8 cores on n0000 and n0002; sinfo's
    other allocated cores stay a foreign job's)."""
    system, workload, ours, nodes, clock = recorded
    decided = {0: _Placement((0, 2), (1, 1), 100.0)}
    from_json = _build_view(
        system, workload, clock, clock.t0 + 12, ours, nodes, [120.0, 120.0], decided
    )
    text_like = {0: ours[0].__class__(**{**ours[0].__dict__, "cores": {}}), 1: ours[1]}
    from_text = _build_view(
        system, workload, clock, clock.t0 + 12, text_like, nodes, [120.0, 120.0], decided
    )
    assert from_text.free.tolist() == from_json.free.tolist()
    assert from_text.free[:, system.resources.index("core")].tolist() == [0, 5, 0, 5]
    assert from_text.running[0].allocation.pairs() == [(0, 1), (2, 1)]


def test_a_restart_finishes_journalled_starts_without_starting_twice(
    tmp_path: Path, monkeypatch
) -> None:
    """Killed after journalling two starts: job 1's uneven start had its hetjob (Slurm job 900)
    submitted but its held job 101 not yet cancelled -> only ``scancel 101``; job 2's even start
    was never released -> pinned and released again; job 3, started, is left alone."""
    from hpcdispatch.dispatchers.spec import make_dispatcher
    from hpcdispatch.slurm import bridge as bridge_mod
    from hpcdispatch.slurm.cluster import ClusterInfo
    from hpcdispatch.slurm.records import SlurmJobRecord

    system = first_nodes(load_system("machine-s"), 4)
    wl_file = tmp_path / "three.csv"
    wl_file.write_text(HEADER + "1,0,u1,60,2,4,,,,\n2,0,u1,60,2,4,,,,\n3,0,u1,60,2,2,,,,\n")
    workload = load_workload(str(wl_file), system)
    calls: list[list[str]] = []
    monkeypatch.setattr(
        bridge_mod,
        "_run",
        lambda cmd, info, timeout=30: (
            calls.append(cmd),
            subprocess.CompletedProcess(cmd, 0, "", ""),
        )[1],
    )
    info = ClusterInfo(
        "c",
        str(tmp_path),
        1,
        2,
        "machine-s",
        4,
        [],
        {"scancel": "scancel", "scontrol": "scontrol"},
        "22.05.8",
    )
    journal = _BridgeJournal(
        tmp_path / "j.jsonl",
        t0=1000,
        decided={
            0: _Placement((0, 1), (3, 1), 0.0),
            1: _Placement((2, 3), (2, 2), 0.0),
            2: _Placement((0,), (2,), 0.0),
        },
    )
    bridge = bridge_mod._Bridge(
        info,
        system,
        workload,
        make_dispatcher("easy"),
        1.0,
        journal,
        plan_submissions(workload, system, 1.0),
    )

    def rec(job_id: int, name: str, state: str, reason: str, het: int = 0) -> SlurmJobRecord:
        return SlurmJobRecord(
            job_id,
            name,
            state,
            1000,
            1001 if state == "RUNNING" else None,
            None,
            {},
            reason,
            het_job_id=het,
        )

    held1, held2 = (
        rec(101, "hpcb-1000-1", "PENDING", "JobHeldUser"),
        rec(102, "hpcb-1000-2", "PENDING", "JobHeldUser"),
    )
    bridge.slurm_ids = {0: 101, 1: 102, 2: 103}
    bridge.held_records = {0: held1, 1: held2, 2: rec(103, "hpcb-1000-3", "RUNNING", "None")}
    bridge.het_ids = {0: 900}
    ours = {
        0: rec(900, "hpcb-1000-1-h", "RUNNING", "None", het=900),
        1: held2,
        2: bridge.held_records[2],
    }
    bridge.finish_journalled(ours)
    assert calls == [
        ["scancel", "101"],
        [
            "scontrol",
            "update",
            "JobId=102",
            "NumNodes=2-2",
            "MinCPUsNode=2",
            "ReqNodeList=n0002,n0003",
        ],
        ["scontrol", "release", "102"],
    ]


def test_check_start_refuses_what_does_not_fit(recorded) -> None:
    system, workload, ours, nodes, clock = recorded
    view = _build_view(
        system, workload, clock, clock.t0 + 12, ours, nodes, [120.0, 120.0], decided={}
    )
    job2, job3 = workload.jobs
    assert _check_start(Start(job3, Allocation([1], [2])), view) is None
    assert _check_start(Start(job2, Allocation([1, 3], [1, 1])), view) == "job 2 is not queued"
    assert (
        _check_start(Start(job3, Allocation([1], [1])), view)
        == "job 3 asks for 2 units, the start gives [1]"
    )
    assert _check_start(Start(job3, Allocation([0], [2])), view) == (
        "job 3 needs [2, 0] on node n0000, which has [0, 1] free"
    )


def test_placement_check_against_squeue(recorded) -> None:
    system, workload, ours, *_ = recorded
    right = _placement_check(system, workload, ours, {0: _Placement((0, 2), (1, 1), 100.0)})
    assert right == {"started": 1, "exact": 1, "wrong": [], "started_without_decision": []}
    wrong = _placement_check(system, workload, ours, {0: _Placement((0, 1), (1, 1), 100.0)})
    assert wrong["exact"] == 0 and wrong["wrong"] == [
        {"job": 2, "chosen": {"n0000": 8, "n0001": 8}, "slurm": {"n0000": 8, "n0002": 8}}
    ]
    assert _placement_check(system, workload, ours, {})["started_without_decision"] == [2]


def test_journal_resumes_and_drops_a_cut_last_line(recorded, tmp_path: Path) -> None:
    system, workload, ours, nodes, clock = recorded
    path = tmp_path / "j" / "journal.jsonl"
    run = {"cluster": "c", "jobs": 2}
    journal = _BridgeJournal.open(path, run, t0=1000)
    view = _build_view(
        system, workload, clock, clock.t0 + 12, ours, nodes, [120.0, 120.0], decided={}
    )
    journal.record(120.0, view, Decision([Start(workload.jobs[1], Allocation([1], [2]))]), 0.01)
    with open(path, "a") as fh:
        fh.write('{"k": 2, "t": 130.0, "queue": 0, "sta')  # killed while writing
    again = _BridgeJournal.open(path, run, t0=2000)
    assert again.t0 == 1000 and again.calls == 1  # t0 from the header, not the new one
    assert again.decided == {1: _Placement((1,), (2,), 120.0)}
    assert path.read_text().count("\n") == 2  # the cut line is gone
    with pytest.raises(
        ConfigError, match=r"journal.jsonl: the journal is of another run \(differs in jobs\)"
    ):
        _BridgeJournal.open(path, {"cluster": "c", "jobs": 3}, t0=1)


class _Raises(Dispatcher):
    name = "raises-test"

    def _dispatch(self, view):  # noqa: ANN001, ANN202
        raise RuntimeError("no solution for you")


class _Slow(Dispatcher):
    """Decides only once ``released`` is set (at most 60 s): far beyond any budget below."""

    name = "slow-test"
    released = threading.Event()

    def _dispatch(self, view):  # noqa: ANN001, ANN202
        self.released.wait(60.0)
        return Decision()


def test_a_dispatcher_that_raises_or_is_late_stops_the_bridge(recorded) -> None:
    system, workload, ours, nodes, clock = recorded
    view = _build_view(
        system, workload, clock, clock.t0 + 12, ours, nodes, [120.0, 120.0], decided={}
    )
    with pytest.raises(
        BridgeError,
        match=r"dispatcher raises-test\(allocator=first-fit\) raised RuntimeError: "
        r"no solution for you",
    ):
        _call_with_budget(_Raises(), view, 5.0)
    began = time.monotonic()
    try:
        with pytest.raises(BridgeError, match=r"did not decide within its budget of 0.2 s"):
            _call_with_budget(_Slow(), view, 0.2)
        # at the budget, not when the dispatcher returns (the bound leaves room for a loaded
        # machine)
        assert time.monotonic() - began < 30.0
    finally:
        _Slow.released.set()


# ---- a real Slurm -------------------------------------------------------------------------
def _require_slurm() -> None:
    from test_slurm_cluster import _require_slurm as require

    require()


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "300"},
    )


@pytest.fixture(scope="module")
def cluster16():
    _require_slurm()
    from hpcdispatch.slurm.cluster import _daemon_pids, down, read_cluster

    state = Path(f"/tmp/hpcdispatch-slurm-pytest-bridge-{os.getpid()}")
    try:
        proc = run_cli("slurm", "up", "--system", "machine-s", "--nodes", "16", "--dir", str(state))
        assert proc.returncode == 0, proc.stderr + proc.stdout
        yield state
    finally:
        info = read_cluster(state)
        down(state)
        if info is not None:
            assert _daemon_pids(info) == []
        assert not state.exists()


def _slurm_jobs(state: Path) -> list[dict]:
    from hpcdispatch.slurm.cluster import read_cluster

    info = read_cluster(state)
    assert info is not None
    out = subprocess.run(
        [info.binaries["squeue"], "--json", "-t", "all"],
        env=info.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [r.__dict__ for r in parse_squeue_json(out)]


def _assert_each_started_once(run: dict, cluster: Path, n_jobs: int) -> None:
    """Slurm's records of the run: one held job per workload job (none submitted twice), and
    each workload job got cores from exactly one Slurm job (a heterogeneous job's components
    count as one), which completed."""
    mine = [
        j
        for j in _slurm_jobs(cluster)
        if j["name"].startswith(f"hpcb-{run['bridge']['t0_epoch']}-")
    ]
    held = [j for j in mine if not j["name"].endswith("-h")]
    assert sorted(j["job_id"] for j in held) == sorted(run["bridge"]["held_slurm_job_ids"].values())
    assert len(held) == n_jobs
    ran: dict[int, set[int]] = {}
    for j in mine:
        if j["cores"]:
            ran.setdefault(int(j["name"].split("-")[2]), set()).add(j["het_job_id"] or j["job_id"])
    assert sorted(ran) == list(range(1, n_jobs + 1)) and all(len(v) == 1 for v in ran.values())
    assert all(j["state"] == "COMPLETED" for j in mine if j["cores"])


def _check_run(out: Path, name: str, n_jobs: int) -> dict:
    run = json.loads((out / "run.json").read_text())
    assert run["dispatcher"]["name"] == name
    check = run["bridge"]["placement"]
    assert check == {
        "started": n_jobs,
        "exact": n_jobs,
        "wrong": [],
        "started_without_decision": [],
    }
    assert run["bridge"]["problems"] == []
    valid = run_cli("validate", str(out))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    return run


@pytest.mark.slow
def test_easy_schedules_30_jobs_on_exactly_its_nodes(cluster16: Path, tmp_path: Path) -> None:
    """The issue's integration test: 30 jobs (sub-node, whole-node, multi-node and GPU
    requests) in external mode on the 16-node cluster."""
    out = tmp_path / "easy"
    proc = run_cli(
        "slurm",
        "dispatch",
        str(DATA / "bridge-30.csv"),
        "-d",
        "easy",
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "30/30 jobs started on exactly the nodes chosen" in proc.stdout
    run = _check_run(out, "easy", 30)
    # every journalled start is one the squeue record confirms; each job started once
    journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()[1:]]
    started = [s[1] for rec in journal for s in rec["starts"]]
    assert sorted(started) == list(range(1, 31))
    ids = set(run["bridge"]["slurm_job_ids"].values())
    mine = [j for j in _slurm_jobs(cluster16) if j["job_id"] in ids]
    assert len(mine) == 30 and all(j["state"] == "COMPLETED" for j in mine)


@pytest.mark.slow
def test_pcp20_schedules_whole_node_jobs_on_exactly_its_nodes(
    cluster16: Path, tmp_path: Path
) -> None:
    """PCP'20 (no Slurm-style node constraints: jobs of cores) on jobs of whole multiples of 8
    cores: no node is ever shared, so every allocation has the same count on each node and
    Slurm can pin it (an uneven one would be refused: test_start_commands_pin_and_release)."""
    out = tmp_path / "pcp20"
    proc = run_cli(
        "slurm",
        "dispatch",
        str(DATA / "bridge-20-whole.csv"),
        "-d",
        "pcp20",
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    run = _check_run(out, "pcp20", 20)
    assert run["bridge"]["refused"] == {}


@pytest.mark.slow
def test_pcp20_uneven_starts_run_as_hetjobs_on_exactly_its_cores(
    cluster16: Path, tmp_path: Path
) -> None:
    """PCP'20 on 16 jobs of 3-20 loose cores (in simulation 14 of its 16 starts give nodes
    different core counts): each uneven start runs as a heterogeneous job with exactly the
    chosen cores on every node (squeue), every job starts once, the schedule validates."""
    out = tmp_path / "pcp20-loose"
    proc = run_cli(
        "slurm",
        "dispatch",
        str(DATA / "bridge-16-loose.csv"),
        "-d",
        "pcp20",
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    run = _check_run(out, "pcp20", 16)
    assert run["bridge"]["refused"] == {} and run["bridge"]["uneven"] == "hetjob"
    journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()[1:]]
    uneven = sum(len(set(s[3])) > 1 for rec in journal for s in rec.get("starts", []))
    assert uneven >= 1 and run["bridge"]["hetjobs"] == uneven
    _assert_each_started_once(run, cluster16, 16)


@pytest.mark.slow
def test_killed_bridge_resumes_and_starts_every_job_once(cluster16: Path, tmp_path: Path) -> None:
    out = tmp_path / "conservative"
    args = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "slurm",
        "dispatch",
        str(DATA / "bridge-20.csv"),
        "-d",
        "conservative",
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
    ]
    journal = tmp_path / "conservative.bridge" / "journal.jsonl"
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill it once 5 jobs were started and some still wait
            if (
                journal.exists()
                and sum(
                    len(json.loads(x).get("starts", []))
                    for x in journal.read_text().splitlines()[1:]
                    if x.endswith("}")
                )
                >= 5
            ):
                break
            time.sleep(0.2)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(10)
    before = [json.loads(x) for x in journal.read_text().splitlines()[1:] if x.endswith("}")]
    n_before = sum(len(r.get("starts", [])) for r in before)
    assert 5 <= n_before < 20
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    run = _check_run(out, "conservative", 20)
    _assert_each_started_once(run, cluster16, 20)
    assert "started job" in (out / "bridge.log").read_text()


PLUGIN = '''
from hpcdispatch.protocol import Decision, Dispatcher, register


@register
class FailsThird(Dispatcher):
    """FIFO on one node per job until its third call, which raises."""

    name = "fails-third"

    def _setup(self, system):
        self.calls = 0

    def _dispatch(self, view):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("the solver crashed")
        return []


@register
class NeverStarts(Dispatcher):
    """Starts nothing."""

    name = "never-starts"

    def _dispatch(self, view):
        return []
'''


@pytest.mark.slow
def test_a_raising_dispatcher_leaves_the_jobs_held(cluster16: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "fails_third.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "fails"
    proc = run_cli(
        "slurm",
        "dispatch",
        str(DATA / "replay-6.csv"),
        "-d",
        "fails-third",
        "--plugin",
        str(plugin),
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert (
        "dispatcher fails-third(allocator=first-fit) raised RuntimeError: the solver crashed; the cluster keeps "
        "running and the waiting jobs stay held" in proc.stderr
    )
    log = (tmp_path / "fails.bridge" / "bridge.log").read_text()
    assert "raised RuntimeError: the solver crashed" in log
    header = json.loads((tmp_path / "fails.bridge" / "journal.jsonl").read_text().splitlines()[0])
    mine = [j for j in _slurm_jobs(cluster16) if j["name"].startswith(f"hpcb-{header['t0']}-")]
    assert mine and all(
        j["state"] == "PENDING" and j["state_reason"] == "JobHeldUser" for j in mine
    )
    assert not out.exists()
    from hpcdispatch.slurm.cluster import read_cluster

    info = read_cluster(cluster16)
    subprocess.run(
        [info.binaries["scancel"], *(str(j["job_id"]) for j in mine)], env=info.env(), check=True
    )


@pytest.mark.slow
def test_sigterm_stops_the_bridge_and_leaves_jobs_held(cluster16: Path, tmp_path: Path) -> None:
    """A dispatcher that starts nothing; SIGTERM after its second call: exit 143, one line,
    every submitted job still held."""
    plugin = tmp_path / "never.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "term"
    args = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "slurm",
        "dispatch",
        str(DATA / "replay-6.csv"),
        "-d",
        "never-starts",
        "--plugin",
        str(plugin),
        "-x",
        "0.1",
        "--dir",
        str(cluster16),
        "-o",
        str(out),
    ]
    journal = tmp_path / "term.bridge" / "journal.jsonl"
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        journal.exists() and journal.read_text().count("\n") >= 3
    ):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err  # (SIGTERM: 128 + 15, as every command)
    assert err.strip().count("\n") == 0
    assert "interrupted (SIGTERM): the waiting jobs stay held" in err
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    assert all(rec["starts"] == [] for rec in map(json.loads, lines[1:]))
    mine = [j for j in _slurm_jobs(cluster16) if j["name"].startswith(f"hpcb-{header['t0']}-")]
    assert len(mine) >= 2  # jobs 1 and 2 (submitted at once), maybe more
    assert all((j["state"], j["state_reason"]) == ("PENDING", "JobHeldUser") for j in mine), mine
    from hpcdispatch.slurm.cluster import read_cluster

    info = read_cluster(cluster16)
    subprocess.run(
        [info.binaries["scancel"], *(str(j["job_id"]) for j in mine)], env=info.env(), check=True
    )


@pytest.mark.slow
def test_a_killed_controller_under_the_bridge_is_reported_as_such(tmp_path: Path) -> None:
    """slurmctld killed with SIGKILL while the bridge runs: the bridge stops with one line
    that says the controller died (not that the cluster keeps running), and what to do;
    `slurm down` then leaves no process of the cluster."""
    _require_slurm()
    from test_slurm_cluster import _cluster_processes

    from hpcdispatch.slurm.cluster import down

    state = Path(f"/tmp/hpcdispatch-slurm-pytest-ctld-{os.getpid()}")
    plugin = tmp_path / "never.py"
    plugin.write_text(PLUGIN)
    try:
        run_cli("slurm", "up", "-s", "machine-s", "-N", "4", "--dir", str(state)).check_returncode()
        args = [
            sys.executable,
            "-m",
            "hpcdispatch",
            "slurm",
            "dispatch",
            str(DATA / "replay-6.csv"),
        ]
        args += ["-d", "never-starts", "--plugin", str(plugin), "-x", "0.1", "--dir", str(state)]
        args += ["-o", str(tmp_path / "out")]
        journal = tmp_path / "out.bridge" / "journal.jsonl"
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (journal.exists() and journal.read_text().count("\n") >= 2):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.1)
            os.kill(int((state / "run" / "slurmctld.pid").read_text()), signal.SIGKILL)
            _, err = proc.communicate(timeout=180)
        finally:
            proc.kill()
        assert proc.returncode == 1, err
        assert err.strip().count("\n") == 0, err
        assert "keeps running" not in err
        assert (
            "the cluster's slurmctld is not running (it died): the cluster runs no job any more "
            f"and the jobs it held are lost; stop what is left of it with 'hpcdispatch slurm "
            f"down --dir {state}'"
        ) in err
        assert run_cli("slurm", "down", "--dir", str(state)).returncode == 0
        assert _cluster_processes(state) == {}
    finally:
        down(state)
        shutil.rmtree(state, ignore_errors=True)
