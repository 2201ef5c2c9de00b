"""SWF reader: malformed and truncated lines, empty files, gz and plain, skip reasons with line
numbers, the named mapping options, sorting, and the real traces."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system, trace

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system import load_system
from hpcdispatch.workload import SwfOptions, UnitMapping, load_swf, system_from_swf_header
from hpcdispatch.workload.swf import read_swf_records

HEADER = """; Version: 2.2
; Computer: test machine
; MaxNodes: 4
; MaxProcs: 16
; MaxRuntime: 1000
; Queue: 1 short
; Queue: 2 long
"""


def rec(job, submit, run, procs, req_time, req_procs=None, queue=1, user=1, executable=3):
    req_procs = procs if req_procs is None else req_procs
    fields = [job, submit, 0, run, procs, -1, -1, req_procs, req_time, -1, 1, user, 1, executable, queue, 1, -1, -1]
    return " ".join(str(f) for f in fields)


def write(tmp_path: Path, lines: list[str], name="t.swf", gz=False, header=HEADER) -> Path:
    text = header + "\n".join(lines) + ("\n" if lines else "")
    path = tmp_path / (name + (".gz" if gz else ""))
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def test_plain_and_gz_give_the_same_jobs(tmp_path):
    lines = [rec(1, 0, 10, 4, 20), rec(2, 5, 30, 2, 60), rec(3, 7, 5, 1, 10)]
    system = cores_system(4, 4)
    a = load_swf(write(tmp_path, lines), system)
    b = load_swf(write(tmp_path, lines, gz=True), system)
    assert a.jobs == b.jobs
    assert [(j.id, j.submit, j.run_time, j.wall_time, j.units, j.unit_request) for j in a] == [
        (1, 0, 10, 20, 1, (4,)), (2, 5, 30, 60, 1, (2,)), (3, 7, 5, 10, 1, (1,))
    ]
    assert a.queue_names == {1: "short", 2: "long"}


def test_malformed_lines_are_skipped_with_their_line_numbers(tmp_path):
    lines = [
        rec(1, 0, 10, 4, 20),          # line 8
        "2 5 0 30",                    # line 9: 4 fields
        rec(3, 7, 5, 1, 10).replace(" 5 1 ", " five 1 ", 1),  # line 10: not a number
        rec(4, 8, 5, 1, 10),           # line 11
        rec(5, 9, 5, 1, 10) + " 99",   # line 12: 19 fields
    ]
    path = write(tmp_path, lines)
    wl = load_swf(path, cores_system(4, 4))
    assert [j.id for j in wl] == [1, 4]
    assert wl.report.skipped == {"malformed": 3}
    assert wl.report.first_lines["malformed"] == [9, 10, 12]
    recs = read_swf_records(path)
    messages = dict(recs.malformed)
    assert "has 4 fields" in messages[9]
    assert "field 4 (run_time) is not a number: 'five'" in messages[10]
    assert "has 19 fields" in messages[12]


def test_truncated_last_line_without_newline(tmp_path):
    path = tmp_path / "cut.swf"
    path.write_text(HEADER + rec(1, 0, 10, 4, 20) + "\n" + "2 5 0 30 2")
    wl = load_swf(path, cores_system(4, 4))
    assert [j.id for j in wl] == [1]
    assert wl.report.first_lines["malformed"] == [9]


def test_truncated_gzip_keeps_what_was_read(tmp_path):
    lines = [rec(i, i, 10, 1, 20) for i in range(1, 20001)]
    full = write(tmp_path, lines, gz=True)
    data = full.read_bytes()
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(data[: len(data) // 2])
    wl = load_swf(cut, cores_system(4, 4))
    assert 0 <= len(wl) < 20000
    assert "truncated-file" in wl.report.skipped
    assert any("truncated" in n for n in wl.report.notes)
    ids = [j.id for j in wl]
    assert ids == list(range(1, len(ids) + 1))  # a clean prefix, nothing corrupted


def test_empty_and_comment_only_files(tmp_path):
    empty = tmp_path / "empty.swf"
    empty.write_text("")
    assert len(load_swf(empty, cores_system(2, 2))) == 0
    only = write(tmp_path, [], name="header-only.swf")
    wl = load_swf(only, cores_system(2, 2))
    assert len(wl) == 0 and wl.report.total_records == 0


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TraceFormatError, match="does not exist"):
        load_swf(tmp_path / "nope.swf", cores_system(2, 2))


def test_skip_reasons(tmp_path):
    lines = [
        rec(1, 0, 10, 4, 20),
        rec(2, -5, 10, 1, 20),    # line 9: negative submit
        rec(3, 1, 0, 1, 20),      # line 10: run time 0
        rec(4, 2, 10, -1, 20, req_procs=-1),  # line 11: no processors
        rec(5, 3, 10, 64, 20),    # line 12: 64 procs > 16 cores
        rec(1, 4, 10, 1, 20),     # line 13: duplicate id 1
    ]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    assert [j.id for j in wl] == [1]
    assert wl.report.skipped == {"submit<0": 1, "runtime<=0": 1, "processors<=0": 1, "too-big": 1, "duplicate-id": 1}
    assert wl.report.first_lines["too-big"] == [12]
    assert "skipped 1 x too-big (first lines: 12)" in wl.report.describe()


def test_out_of_order_submits_are_sorted(tmp_path):
    lines = [rec(1, 50, 10, 1, 20), rec(2, 10, 10, 1, 20), rec(3, 10, 10, 1, 20), rec(4, 30, 10, 1, 20)]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    assert [j.id for j in wl] == [2, 3, 4, 1]  # ties keep file order
    assert [j.index for j in wl] == [0, 1, 2, 3]
    assert any("out of submit order" in n for n in wl.report.notes)


def test_processor_options(tmp_path):
    lines = [rec(1, 0, 10, 8, 20, req_procs=4), rec(2, 1, 10, 6, 20, req_procs=-1)]
    path = write(tmp_path, lines)
    system = cores_system(4, 4)
    req = load_swf(path, system, SwfOptions(processors="requested"))
    assert [j.processors for j in req] == [4, 6]
    assert req.report.patched == {"processors taken from field 5 (allocated)": 1}
    alloc = load_swf(path, system, SwfOptions(processors="allocated"))
    assert [j.processors for j in alloc] == [8, 6]


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("divisor", [(1, (4,)), (2, (3,)), (7, (1,)), (3, (4,))]),
        ("processor", [(4, (1,)), (6, (1,)), (7, (1,)), (12, (1,))]),
        ("node", [(1, (4,)), (2, (4,)), (2, (4,)), (3, (4,))]),
    ],
)
def test_unit_mapping_modes(tmp_path, mode, expected):
    lines = [rec(1, 0, 10, 4, 20), rec(2, 1, 10, 6, 20), rec(3, 2, 10, 7, 20), rec(4, 3, 10, 12, 20)]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4), SwfOptions(units=UnitMapping(mode=mode)))
    assert [(j.units, j.unit_request) for j in wl] == expected


def test_missing_walltime_options(tmp_path):
    lines = [rec(1, 0, 10, 1, -1, queue=1), rec(2, 1, 300, 1, 500, queue=1), rec(3, 2, 40, 1, -1, queue=2),
             rec(4, 3, 70, 1, 80, queue=2)]
    path = write(tmp_path, lines)
    system = cores_system(4, 4)

    def walls(mw):
        return [j.wall_time for j in load_swf(path, system, SwfOptions(missing_walltime=mw))]

    assert walls("queue-max") == [300, 500, 70, 80]
    assert walls("trace-max") == [1000, 500, 1000, 80]  # header MaxRuntime
    assert walls("runtime") == [10, 500, 40, 80]
    assert walls("3600") == [3600, 500, 3600, 80]
    skip = load_swf(path, system, SwfOptions(missing_walltime="skip"))
    assert [j.id for j in skip] == [2, 4] and skip.report.skipped == {"no-walltime": 2}
    with pytest.raises(ConfigError, match="missing_walltime"):
        SwfOptions(missing_walltime="sometimes")


def test_max_jobs_takes_the_first_by_submit(tmp_path):
    lines = [rec(i, 100 - i, 10, 1, 20) for i in range(1, 11)]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4), SwfOptions(max_jobs=3))
    assert [j.id for j in wl] == [10, 9, 8]


def test_system_from_header(tmp_path):
    path = write(tmp_path, [rec(1, 0, 10, 1, 20)])
    s = system_from_swf_header(path)
    assert s.n_nodes == 4 and s.capacity[0, 0] == 4
    bad = write(tmp_path, [], name="bad.swf", header="; MaxNodes: 3\n; MaxProcs: 16\n")
    with pytest.raises(ConfigError, match="not a multiple"):
        system_from_swf_header(bad)
    none = write(tmp_path, [], name="none.swf", header="; MaxNodes: 3\n")
    with pytest.raises(ConfigError, match="lacks MaxProcs"):
        system_from_swf_header(none)


# ---- real traces (../shared/traces) -----------------------------------------------------------


def test_hpc2n_reads_completely():
    wl = load_swf(trace("HPC2N-2002-2.2-cln.swf.gz"), load_system("hpc2n"))
    assert len(wl) == 202871 and wl.report.n_skipped == 0
    assert (np.diff(wl.submit) >= 0).all()


def test_llnl_thunder_is_sorted_and_counted():
    wl = load_swf(trace("LLNL-Thunder-2007-1.1-cln.swf.gz"), load_system("llnl-thunder"))
    assert wl.report.total_records == 121039
    assert (np.diff(wl.submit) >= 0).all()
    assert any(n.startswith("808 records of the file are out of submit order") for n in wl.report.notes)
    # traces/README.md: run time <= 0 for 7,426 records (some also have submit < 0)
    assert wl.report.skipped["runtime<=0"] + wl.report.skipped.get("submit<0", 0) >= 7426 - 1190
    assert len(wl) + wl.report.n_skipped == 121039


def test_lublin_trace_has_no_requested_fields():
    wl = load_swf(trace("lublin_256.swf.gz"), load_system("lublin-256"))
    assert len(wl) == 10000
    assert wl.report.patched["processors taken from field 5 (allocated)"] == 10000
    with pytest.raises(ConfigError, match="lacks MaxProcs"):
        system_from_swf_header(trace("lublin_256.swf.gz"))
