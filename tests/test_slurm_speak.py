"""Speaking Slurm (issue 35): Slurm's time, memory and GRES spellings, Slurm-style request
files with names, sacct accounting as a workload, ``workload convert``, and slurm-bf's
parameters in slurm.conf's units. Expected values are computed by hand from the inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import simulate, starts, system_of
from hypothesis import given
from hypothesis import strategies as st

from hpcdispatch.cli.main import cli
from hpcdispatch.dispatchers import DispatcherSpec, parse_dispatcher_list
from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.sacct import is_sacct_file, read_sacct
from hpcdispatch.workload.slurm import SlurmRequest, read_slurm_requests, request_of, slurm_job
from hpcdispatch.workload.slurm_units import (
    format_slurm_time,
    gres_resource,
    parse_gres,
    parse_slurm_memory,
    parse_slurm_time,
    parse_tres,
)
from hpcdispatch.workload.swf import load_swf

SACCT = Path(__file__).parent / "data" / "slurm" / "cluster-jan.sacct"


# ---- times ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90", 90 * 60),  # a bare number is minutes, as sbatch --time
        ("1:30", 90),  # MM:SS
        ("90:00", 5400),  # MM:SS, minutes not range checked (as Slurm)
        ("01:30:00", 5400),  # HH:MM:SS
        ("1:90:00", 9000),  # 1 h + 90 min
        ("2-12", 2 * 86400 + 12 * 3600),  # D-HH
        ("2-12:30", 2 * 86400 + 12 * 3600 + 30 * 60),
        ("2-12:30:15", 2 * 86400 + 12 * 3600 + 30 * 60 + 15),
        ("0-0:0:1", 1),
        (" 10 ", 600),
        ("UNLIMITED", None),
        ("infinite", None),
        ("Unlimited", None),
        ("-1", None),
        ("0", None),  # a time limit of zero: no limit
    ],
)
def test_slurm_time_formats(text, seconds):
    assert parse_slurm_time(text) == seconds


def test_zero_elapsed_is_zero_seconds_and_bad_times_are_named():
    assert parse_slurm_time("00:00:00", zero_is_unlimited=False) == 0
    for bad in ("", "1:2:3:4", "1-2-3", "abc", "1.5", "-5", "1-", "-1:00", "1:", "1h", "1-2:3:4:5"):
        with pytest.raises(ValueError, match=re.escape(f"'{bad}' is not a Slurm time")):
            parse_slurm_time(bad)


@given(st.integers(min_value=1, max_value=10**10))
def test_time_format_round_trip(seconds):
    text = format_slurm_time(seconds)
    assert parse_slurm_time(text) == seconds
    assert re.fullmatch(r"(\d+-)?\d\d:\d\d:\d\d", text)


@given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_every_slurm_spelling_reads_its_value(d, h, m, s):
    total = d * 86400 + h * 3600 + m * 60 + s
    spellings = {
        f"{d}-{h:02d}:{m:02d}:{s:02d}": total,
        f"{d}-{h}:{m}": total - s,
        f"{d}-{h}": total - s - 60 * m,
        f"{h}:{m}:{s}": total - d * 86400,
        f"{m}:{s}": 60 * m + s,
        f"{m}": 60 * m,
    }
    for text, value in spellings.items():
        assert parse_slurm_time(text) == (value or None)
    assert format_slurm_time(None) == "UNLIMITED" and parse_slurm_time("UNLIMITED") is None


# ---- memory, GRES, TRES ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, mb",
    [
        ("4096", 4096),
        ("500M", 500),
        ("16G", 16384),
        ("1T", 1048576),
        ("512K", 1),
        ("1536K", 2),
        ("1.5G", 1536),
        ("2g", 2048),
        ("0", 0),
        ("64000MB", 64000),
    ],
)
def test_memory_sizes_in_mb(text, mb):
    assert parse_slurm_memory(text) == mb


def test_bad_memory_sizes():
    for bad in ("G", "-1", "1X", "", "1.2.3G"):
        with pytest.raises(ValueError, match="not a Slurm memory size"):
            parse_slurm_memory(bad)


def test_gres_spellings_and_system_resources():
    assert parse_gres("gpu") == [("gpu", None, 1)]
    assert parse_gres("gpu:2") == [("gpu", None, 2)]
    assert parse_gres("gpu:a100:2,mic:1") == [("gpu", "a100", 2), ("mic", None, 1)]
    assert parse_gres("gres:gpu:a100") == [("gpu", "a100", 1)]
    assert parse_gres("gpu:1k") == [("gpu", None, 1024)]
    for bad in ("gpu:a100:x", ":2", "gpu::2", "gpu:a:1:2", "2"):
        with pytest.raises(ValueError):
            parse_gres(bad)
    res = ("core", "gpu", "gpu:a100", "mem")
    assert gres_resource("gpu", "a100", res) == "gpu:a100"
    assert gres_resource("gpu", None, res) == "gpu"
    assert gres_resource("gpu", None, ("core", "gpu:a100")) == "gpu:a100"  # the only GPU type
    with pytest.raises(LookupError, match="GRES type 'gpu:v100' is not on this system"):
        gres_resource("gpu", "v100", res)
    with pytest.raises(LookupError, match="ambiguous"):
        gres_resource("gpu", None, ("core", "gpu:a100", "gpu:v100"))
    assert parse_tres("billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=16G,node=2,energy=5") == {
        "billing": 8,
        "cpu": 8,
        "gres/gpu:a100": 2,
        "gres/gpu": 2,
        "mem": 16384,
        "node": 2,
    }


# ---- Slurm-style request files ----------------------------------------------------------------

MIXED = system_of(
    [(2, {"core": 8, "gpu": 2, "mem": 16000}), (2, {"core": 8, "gpu:a100": 2, "mem": 32000})],
    ("core", "gpu", "gpu:a100", "mem"),
    name="mixed",
)


def test_request_file_speaks_slurm(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(
        "id,user,account,partition,run_time,time_limit,ntasks,nodes,ntasks_per_node,cpus_per_task,gres,mem,mem_per_cpu\n"
        "1,alice,phys,cpu,100,90,4,,,,,,\n"
        "2,bob,ml,gpu,100,1:30,,2,2,2,gpu:a100:1,4G,\n"
        "3,alice,ml,gpu,100,1-00:00:00,4,2,,,gpu:2,,500M\n"
        "4,carol,phys,cpu,100,UNLIMITED,2,,,3,,,\n"
        "5,bob,ml,gpu,100,10,1,,,,gpu:v100:1,,\n"
        "6,bob,ml,gpu,100,1:2:3:4,1,,,,,,\n"
        "7,dave,ml,gpu,100,10,1,,,,,0,\n"
        "8,dave,ml,cpu,100,10,1,,,,,1G,1G\n"
    )
    w = read_slurm_requests(path, MIXED)
    got = {
        j.id: (
            j.wall_time,
            j.units,
            j.unit_request,
            j.node_count,
            j.per_node_request,
            j.user,
            j.group,
            j.partition,
            j.processors,
        )
        for j in w
    }
    assert got == {
        1: (5400, 4, (1, 0, 0, 0), 0, (), 1, 1, 1, 4),  # 90 = 90 minutes
        2: (90, 2, (4, 0, 1, 4096), 2, (), 2, 2, 2, 8),  # -N2 --ntasks-per-node=2 -c2
        3: (86400, 4, (1, 0, 0, 500), 2, (0, 2, 0, 0), 1, 2, 2, 4),  # -n4 -N2 --mem-per-cpu=500M
        4: (100, 2, (3, 0, 0, 0), 0, (), 3, 1, 1, 6),  # UNLIMITED: the run time
        7: (600, 1, (1, 0, 0, 0), 0, (0, 0, 0, 16000), 4, 2, 2, 1),  # --mem=0: the smallest node's
    }
    assert w.labels["user"] == {1: "alice", 2: "bob", 3: "carol", 4: "dave"}
    assert w.labels["group"] == {1: "phys", 2: "ml"} and w.labels["partition"] == {
        1: "cpu",
        2: "gpu",
    }
    assert w.report.skipped == {"bad-gres": 1, "bad-time_limit": 1, "bad-request": 1}
    assert w.report.first_lines == {"bad-gres": [6], "bad-time_limit": [7], "bad-request": [9]}
    assert any(
        "line 6: column 'gres': GRES type 'gpu:v100' is not on this system" in n
        for n in w.report.notes
    )
    assert any("line 9" in n and "mutually exclusive" in n for n in w.report.notes)


ORACLE = "wall time = run time (an exact estimate, as an oracle's)"


def test_a_missing_or_unlimited_time_limit_is_counted_as_patched_with_its_rule(tmp_path):
    """No silent substitution: every job whose wall time is set to its run time for want of
    a limit is counted under the rule that applied, and `workload -w` prints it."""
    system = load_system("machine-s")
    none = tmp_path / "none.csv"  # no time limit column at all
    none.write_text("id,run_time,ntasks\n1,60,4\n2,120,4\n")
    w = read_slurm_requests(none, system)
    assert [j.wall_time for j in w] == [60, 120]
    assert w.report.patched == {f"no time limit column: {ORACLE}": 2}
    limits = tmp_path / "limits.csv"
    limits.write_text(
        "id,run_time,ntasks,time_limit\n"
        "1,60,4,-1\n2,120,4,0\n3,130,4,UNLIMITED\n4,140,4,\n5,150,4,10\n6,160,4,unlimited\n"
    )
    w = read_slurm_requests(limits, system)
    assert [j.wall_time for j in w] == [60, 120, 130, 140, 600, 160]
    assert w.report.patched == {
        f"time_limit -1: {ORACLE}": 1,
        f"time_limit 0: {ORACLE}": 1,
        f"time_limit UNLIMITED: {ORACLE}": 2,
        f"time_limit empty: {ORACLE}": 1,
    }
    lines = tmp_path / "mixed.jsonl"  # a key missing from one line, an empty wall_time
    lines.write_text(
        '{"id": 1, "run_time": 10, "ntasks": 1, "wall_time": 50}\n'
        '{"id": 2, "run_time": 20, "ntasks": 1}\n'
        '{"id": 3, "run_time": 30, "ntasks": 1, "wall_time": null}\n'
    )
    w = read_slurm_requests(lines, system)
    assert [j.wall_time for j in w] == [50, 20, 30]
    assert w.report.patched == {
        f"no time limit column: {ORACLE}": 1,
        f"wall_time empty: {ORACLE}": 1,
    }
    shown = CliRunner().invoke(cli, ["workload", "-w", str(limits), "-s", "machine-s"])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert f"patched 2 x time_limit UNLIMITED: {ORACLE}" in text
    assert f"patched 1 x time_limit empty: {ORACLE}" in text


def test_sacct_limits_substituted_are_counted_by_the_rule_that_gave_them(tmp_path):
    path = tmp_path / "t.sacct"
    path.write_text(
        "JobID|Submit|Start|Elapsed|Timelimit|NNodes|NCPUS|State|Partition\n"
        "1|2024-01-01T00:00:00|2024-01-01T00:00:10|00:01:00|UNLIMITED|1|4|COMPLETED|a\n"
        "2|2024-01-01T00:00:05|2024-01-01T00:00:20|00:02:00|Partition_Limit|1|4|COMPLETED|a\n"
        "3|2024-01-01T00:00:06|2024-01-01T00:00:20|00:03:00||1|4|COMPLETED|b\n"
        "4|2024-01-01T00:00:07|2024-01-01T00:00:20|00:02:00|00:10:00|1|4|COMPLETED|a\n"
    )
    w = read_sacct(path, load_system("machine-s"))
    # a's largest limit is 10 min; b records none: the longest run in the file, 3 min
    assert [j.wall_time for j in w] == [600, 600, 180, 600]
    no_limit = "Timelimit UNLIMITED, Partition_Limit or empty: wall time ="
    assert w.report.patched == {
        f"{no_limit} the largest limit recorded in the job's partition": 2,
        f"{no_limit} the longest run time in the file (no limit recorded in its partition)": 1,
    }


def test_seconds_columns_numeric_users_and_memory_on_a_system_without_mem(tmp_path):
    path = tmp_path / "jobs.jsonl"
    path.write_text(
        '{"id": 1, "run_time": 10, "wall_time": 90, "ntasks": 2, "user": 1001, "mem": "2G"}\n'
        '{"id": 2, "run_time": 10, "time_limit": 2, "ntasks": 2, "user": "7"}\n'
        '{"id": 3, "run_time": 10, "time_limit": "00:00:45", "wall_time": 45, "ntasks": 1}\n'
    )
    w = read_slurm_requests(path, load_system("machine-s"))
    assert [(j.id, j.wall_time, j.user, j.unit_request) for j in w] == [
        (1, 90, 1001, (1, 0)),
        (2, 120, 7, (1, 0)),
    ]
    assert "user" not in w.labels  # every user an integer: kept as ids
    assert w.report.patched == {"memory ignored (system machine-s has no 'mem' resource)": 1}
    assert w.report.skipped == {"malformed": 1}
    both = tmp_path / "both.csv"
    both.write_text("id,run_time,time_limit,wall_time,ntasks\n1,10,1,60,1\n")
    with pytest.raises(TraceFormatError, match="line 1, field wall_time: columns 'time_limit'"):
        read_slurm_requests(both, load_system("machine-s"))


def test_requests_written_and_read_back_keep_everything(tmp_path):
    jobs = [
        slurm_job(
            1,
            SlurmRequest(
                ntasks=4, nodes=2, cpus_per_task=2, gres=(("gpu:a100", 1),), mem_per_cpu=100
            ),
            50,
            MIXED.resources,
            wall_time=3600,
        ),
        slurm_job(
            2,
            SlurmRequest(nodes=2, ntasks_per_node=3, gpus_per_node=1, mem=2048),
            50,
            MIXED.resources,
            submit=5,
            wall_time=86400 + 61,
        ),
        slurm_job(
            3, SlurmRequest(ntasks=5, mem=1000, contiguous=True), 50, MIXED.resources, submit=9
        ),
    ]
    w = Workload(jobs, MIXED.resources)
    for suffix in ("csv", "jsonl"):
        from hpcdispatch.workload.slurm import write_slurm_requests

        path = tmp_path / f"w.{suffix}"
        write_slurm_requests(w, path)
        back = read_slurm_requests(path, MIXED)
        assert back.report.n_skipped == 0
        for a, b in zip(w.jobs, back.jobs):
            assert (
                a.id,
                a.submit,
                a.run_time,
                a.wall_time,
                a.units,
                a.unit_request,
                a.node_count,
                a.per_node_request,
                a.contiguous,
            ) == (
                b.id,
                b.submit,
                b.run_time,
                b.wall_time,
                b.units,
                b.unit_request,
                b.node_count,
                b.per_node_request,
                b.contiguous,
            )
    assert "1-00:01:01" in (tmp_path / "w.csv").read_text()
    assert (
        request_of(jobs[0], MIXED.resources).describe()
        == "-N 2 -n 4 --cpus-per-task=2 --gres=gpu:a100:1 --mem-per-cpu=100M"
    )


# ---- sacct -----------------------------------------------------------------------------------

TYPED = system_of(
    [(4, {"core": 16, "gpu:a100": 2, "mem": 64000})], ("core", "gpu:a100", "mem"), name="typed"
)


def test_sacct_sample_gives_the_hand_computed_jobs():
    w = read_sacct(SACCT, TYPED)
    got = {
        j.id: (
            j.submit,
            j.run_time,
            j.wall_time,
            j.units,
            j.node_count,
            j.per_node_request,
            j.user,
            j.group,
            j.partition,
            j.name,
        )
        for j in w
    }
    assert got == {
        1001: (0, 600, 3600, 4, 1, (0, 0, 8192), 1, 1, 1, "prep"),
        1002: (
            60,
            7200,
            7200,
            16,
            2,
            (0, 2, 32000),
            2,
            2,
            2,
            "train",
        ),  # TIMEOUT; 4 a100 over 2 nodes
        1005: (180, 300, 600, 1, 1, (0, 0, 2048), 3, 3, 1, "arr"),  # array task 1004_1: JobIDRaw
        1006: (180, 90, 600, 1, 1, (0, 0, 2048), 3, 3, 1, "arr"),  # FAILED
        1007: (
            240,
            1200,
            7200,
            8,
            1,
            (0, 1, 16384),
            4,
            2,
            2,
            "het",
        ),  # het 1007+0, UNLIMITED: gpu's 2 h
        1008: (
            240,
            1200,
            86400,
            32,
            2,
            (0, 0, 16384),
            4,
            2,
            1,
            "het",
        ),  # 1007+1: cpu's largest (1 day)
        1009: (300, 60, 86400, 2, 1, (0, 0, 1024), 2, 2, 1, "oom"),  # OUT_OF_MEMORY
        1014: (600, 1800, 86400, 16, 1, (), 1, 1, 1, "req"),  # CANCELLED by 1000 after start
    }
    assert all(j.unit_request == (1, 0, 0) for j in w)
    rep = w.report
    assert rep.total_records == 22
    assert rep.skipped == {
        "job-step": 7,
        "not-finished": 2,
        "never-started": 1,
        "runtime<=0": 1,
        "bad-Submit": 1,
        "too-big": 1,
        "bad-gres": 1,
    }
    assert rep.first_lines["job-step"] == [3, 4, 6, 7, 10] and rep.first_lines["not-finished"] == [
        13,
        20,
    ]
    assert rep.first_lines["never-started"] == [8] and rep.first_lines["bad-gres"] == [19]
    assert len(w) + rep.n_skipped == rep.total_records
    assert rep.patched == {  # (each of the three has a limit recorded in its partition)
        "Timelimit UNLIMITED, Partition_Limit or empty: wall time = the largest limit recorded "
        "in the job's partition": 3
    }
    assert any(
        "line 23: field Submit: '2024-13-45T99:00:00' is not a sacct date" in n for n in rep.notes
    )
    assert w.labels["user"] == {
        1: "alice",
        2: "bob",
        3: "carol",
        4: "dave",
    }  # erin, frank: skipped jobs
    assert w.labels["group"] == {1: "physics", 2: "ml", 3: "bio"} and w.labels["partition"] == {
        1: "cpu",
        2: "gpu",
    }
    assert w.header == {"UnixStartTime": "1706702400"}  # 2024-01-31T12:00:00 read as UTC
    assert w.queue_ewt == {1: pytest.approx((5 + 10 + 10 + 120 + 30 + 600) / 6), 2: 180.0}


def test_sacct_on_a_system_with_plain_gpus_and_no_memory():
    w = read_sacct(SACCT, load_system("machine-s"))  # 8 cores, 2 gpu per node
    assert {j.id: (j.units, j.node_count, j.per_node_request) for j in w} == {
        1001: (4, 1, ()),
        1002: (16, 2, (0, 2)),
        1005: (1, 1, ()),
        1006: (1, 1, ()),
        1007: (8, 1, (0, 1)),
        1009: (2, 1, ()),
    }  # gres/gpu:a100 -> the untyped total on 'gpu'; 1008 and 1014 need 16 cores on a node
    assert w.report.skipped["too-big"] == 3 and w.report.first_lines["too-big"] == [15, 18, 22]
    assert (
        w.report.patched["memory ignored (system machine-s has no 'mem' resource)"] == 6
    )  # kept jobs with mem=


def test_sacct_without_jobidraw_parsable_trailing_bar_and_detection(tmp_path):
    text = (
        "JobID|Submit|Start|End|Timelimit|NNodes|NCPUS|State|\n"
        "7|2024-02-01T00:00:00|2024-02-01T00:00:10|2024-02-01T00:01:10|5|1|2|COMPLETED|\n"
        "9_1|2024-02-01T00:00:05|2024-02-01T00:00:10|2024-02-01T00:00:40|5|1|1|COMPLETED|\n"
        "9_2|2024-02-01T00:00:05|2024-02-01T00:00:10|2024-02-01T00:00:50|5|1|1|COMPLETED|\n"
        "12+0|2024-02-01T00:00:06|2024-02-01T00:00:10|2024-02-01T00:00:20|1:00|2|2|TIMEOUT|\n"
        "12+1|2024-02-01T00:00:06|2024-02-01T00:00:10|2024-02-01T00:00:20|1:00|1|1|TIMEOUT|\n"
        "7|2024-02-01T00:00:00|2024-02-01T00:00:10|2024-02-01T00:01:10|5|1|2|COMPLETED|\n"
        "13|2024-02-01T00:00:07|None|None|5|1|1|CANCELLED by 0|\n"
    )
    path = tmp_path / "accounting.txt"  # no .sacct suffix: found by its header
    path.write_text(text)
    assert is_sacct_file(path)
    w = load_workload(str(path), load_system("machine-s"))
    # plain id 12 is the largest: array tasks and het components numbered from 13 in file order
    assert [(j.id, j.submit, j.run_time, j.wall_time, j.node_count, j.name) for j in w] == [
        (7, 0, 60, 300, 1, None),
        (13, 5, 30, 300, 1, "9_1"),
        (14, 5, 40, 300, 1, "9_2"),
        (15, 6, 10, 60, 2, "12+0"),
        (16, 6, 10, 60, 1, "12+1"),
    ]
    assert w.report.skipped == {"duplicate-id": 1, "never-started": 1}
    assert any("2 het-job components" in n for n in w.report.notes)


def test_sacct_header_errors_name_the_file_and_field(tmp_path):
    system = load_system("machine-s")
    cases = {
        "JobID|Submit|Start|State\n1|2024-01-01T00:00:00|2024-01-01T00:00:00|COMPLETED\n": (
            "the sacct header lacks Timelimit, Elapsed or End, NNodes, NCPUS"
        ),
        "1 0 -1 10 4 -1 -1 4 10 -1 1 1 1 1 1 1 -1 -1\n": "not sacct --parsable2 output",
        "": "empty file",
    }
    for k, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"h{k}.sacct"
        path.write_text(text)
        with pytest.raises(
            TraceFormatError, match=re.escape(str(path)) + r"(, line 1)?: " + re.escape(message)
        ):
            read_sacct(path, system)


def test_sacct_to_swf_and_csv_and_back_gives_the_same_jobs(tmp_path):
    toml = tmp_path / "typed.toml"
    toml.write_text(
        'name = "typed"\nresources = ["core", "gpu:a100", "mem"]\n'
        'node_types = [{ name = "n", count = 4, capacity = { core = 16, "gpu:a100" = 2, mem = 64000 } }]\n'
    )
    runner = CliRunner()
    sacct = read_sacct(SACCT, TYPED)
    for name in ("jan.swf", "jan.csv"):
        out = tmp_path / name
        res = runner.invoke(cli, ["workload", "convert", str(SACCT), str(out), "-s", str(toml)])
        assert res.exit_code == 0, res.output
        assert "wrote 8 jobs" in res.output
        assert not list(tmp_path.glob(f".{name}*")) and not list(
            tmp_path.glob("*.tmp")
        )  # nothing left behind
    swf = load_swf(tmp_path / "jan.swf", TYPED)
    text = (tmp_path / "jan.swf").read_text()
    assert (
        "; MaxNodes: 4\n" in text
        and "; MaxProcs: 64\n" in text
        and "; UnixStartTime: 1706702400\n" in text
    )
    assert all(len(line.split()) == 18 for line in text.splitlines() if not line.startswith(";"))
    key = ("id", "submit", "run_time", "wall_time", "user", "group", "queue", "partition")
    assert [tuple(getattr(j, k) for k in key) for j in swf] == [
        tuple(getattr(j, k) for k in key) for j in sacct
    ]
    assert [j.units * j.unit_request[0] for j in swf] == [j.processors for j in sacct]
    csv_back = read_slurm_requests(tmp_path / "jan.csv", TYPED)
    fields = key + ("units", "unit_request", "node_count", "per_node_request", "name")
    assert [tuple(getattr(j, k) for k in fields) for j in csv_back] == [
        tuple(getattr(j, k) for k in fields) for j in sacct
    ]
    assert csv_back.labels == {k: v for k, v in sacct.labels.items()}
    again = runner.invoke(
        cli, ["workload", "convert", str(SACCT), str(tmp_path / "jan.swf"), "-s", str(toml)]
    )
    assert again.exit_code != 0 and "exists (give --force" in str(again.exception)
    bad = runner.invoke(
        cli, ["workload", "convert", str(SACCT), str(tmp_path / "jan.txt"), "-s", str(toml)]
    )
    assert "unknown output format '.txt'" in str(bad.exception)


# ---- slurm-bf in slurm.conf's units ----------------------------------------------------------


def _window_scenario(spec: str) -> dict[int, float]:
    """2 nodes x 4 cores. J1 holds node 0 until 600; J2 (both nodes) can start at 600; J3 fits
    node 1 now but runs 900 s, past J2's start: backfilled only when J2 has no reservation,
    i.e. when 600 s is beyond bf_window."""
    res = ("core",)
    system = system_of([(2, {"core": 4})], res)
    jobs = [
        slurm_job(1, SlurmRequest(nodes=1, ntasks_per_node=4), 600, res),
        slurm_job(2, SlurmRequest(nodes=2, ntasks_per_node=4), 600, res),
        slurm_job(3, SlurmRequest(nodes=1, ntasks_per_node=4), 900, res),
    ]
    return starts(simulate(system, Workload(jobs, res), spec))


def test_bf_window_is_in_minutes():
    assert _window_scenario("slurm-bf:bf_window=10") == {
        1: 0.0,
        2: 600.0,
        3: 1200.0,
    }  # 600 s within 10 min
    assert _window_scenario("slurm-bf:bf_window=9") == {
        1: 0.0,
        2: 900.0,
        3: 0.0,
    }  # 600 s beyond 9 min
    assert _window_scenario("slurm-bf") == {1: 0.0, 2: 600.0, 3: 1200.0}  # default 1440 min
    assert _window_scenario("slurm-bf:scheduler_parameters=bf_window=9,bf_continue") == {
        1: 0.0,
        2: 900.0,
        3: 0.0,
    }


def test_scheduler_parameters_line_as_in_slurm_conf():
    spec = DispatcherSpec.parse(
        "slurm-bf:scheduler_parameters=bf_window=2880,bf_resolution=600,bf_continue,"
        "sched_interval=2"
    )
    params = spec.identity()["params"]
    assert (
        params["bf_window"],
        params["bf_resolution"],
        params["bf_interval"],
        params["bf_max_job_test"],
    ) == (2880, 600, 30, 500)
    assert params["unmodelled"] == "bf_continue,sched_interval=2"
    assert DispatcherSpec.parse(spec.text).params == spec.params  # the written text reads back
    specs = parse_dispatcher_list(
        'easy,slurm-bf:scheduler_parameters="SchedulerParameters=bf_interval=1,'
        'bf_max_job_test=1000,default_queue_depth=1000",fifo'
    )
    assert [s.name for s in specs] == ["easy", "slurm-bf", "fifo"]
    assert specs[1].params == {
        "bf_interval": 1,
        "bf_max_job_test": 1000,
        "unmodelled": "default_queue_depth=1000",
    }
    table = DispatcherSpec.from_table({"name": "slurm-bf", "scheduler_parameters": "bf_window=60"})
    assert table.params == {"bf_window": 60}


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "slurm-bf:scheduler_parameters=bf_windo=3",
            "SchedulerParameters: unknown parameter 'bf_windo'",
        ),
        (
            "slurm-bf:scheduler_parameters=bf_window=0",
            "bf_window=0 is outside Slurm's range 1-43200",
        ),
        ("slurm-bf:scheduler_parameters=bf_window=x", "bf_window needs an integer"),
        ("slurm-bf:bf_window=10,scheduler_parameters=bf_window=20", "bf_window is given twice"),
        ("slurm-bf:bf_window=1.5", "parameter 'bf_window' must be int"),
        (
            'slurm-bf:scheduler_parameters="bf_window=5',
            "the quote after 'scheduler_parameters=' is not closed",
        ),
    ],
)
def test_scheduler_parameter_errors_are_one_line(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        DispatcherSpec.parse(spec)


@pytest.mark.parametrize(
    "param, value, message",
    [
        ("bf_window", 43201, "bf_window must be a number in [1, 43200] (minutes), got 43201"),
        ("bf_interval", 0, "bf_interval must be a number in [1, 10800] (seconds), got 0"),
        ("bf_max_job_test", 0, "bf_max_job_test must be a number in [1, 1000000], got 0"),
    ],
)
def test_slurm_ranges_are_checked_at_setup(param, value, message):
    d = DispatcherSpec("slurm-bf", {param: value}).build()
    with pytest.raises(ConfigError, match=re.escape(message)):
        d.setup(load_system("machine-s"))


def test_a_slurm_file_needs_a_system():
    from hpcdispatch.workload.loader import resolve_system

    for spec in ("auto", "from-trace"):
        with pytest.raises(
            ConfigError,
            match=re.escape(
                f"{SACCT}: a Slurm request or accounting file describes no machine; give --system"
            ),
        ):
            resolve_system(spec, str(SACCT))
