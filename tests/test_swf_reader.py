"""SWF reader: malformed and truncated lines, empty files, gz and plain, skip reasons with line
numbers, the named mapping options, sorting, and the real traces."""

from __future__ import annotations

import gzip
import re
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system, trace

from hpcdispatch.errors import ConfigError, TraceFormatError
from hpcdispatch.system import load_system
from hpcdispatch.workload import SwfOptions, UnitMapping, load_swf, swf, system_from_swf_header
from hpcdispatch.workload.loader import resolve_system
from hpcdispatch.workload.swf import read_swf_header, read_swf_records

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
    fields = [
        job,
        submit,
        0,
        run,
        procs,
        -1,
        -1,
        req_procs,
        req_time,
        -1,
        1,
        user,
        1,
        executable,
        queue,
        1,
        -1,
        -1,
    ]
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
        (1, 0, 10, 20, 1, (4,)),
        (2, 5, 30, 60, 1, (2,)),
        (3, 7, 5, 10, 1, (1,)),
    ]
    assert a.queue_names == {1: "short", 2: "long"}


def test_malformed_lines_are_skipped_with_their_line_numbers(tmp_path):
    lines = [
        rec(1, 0, 10, 4, 20),  # line 8
        "2 5 0 30",  # line 9: 4 fields
        rec(3, 7, 5, 1, 10).replace(" 5 1 ", " five 1 ", 1),  # line 10: not a number
        rec(4, 8, 5, 1, 10),  # line 11
        rec(5, 9, 5, 1, 10) + " 99",  # line 12: 19 fields
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


def real_trace(name: str) -> Path:
    """A trace of ../shared/traces; the test is skipped when the folder is not there."""
    path = trace(name)
    if not path.parent.is_dir():
        pytest.skip(f"the real traces are not here ({path.parent})")
    return path


def zcat(data: bytes) -> tuple[int, int]:
    """What ``zcat`` recovers from gzip bytes (cut or not): ``(complete lines, complete record lines)``."""
    d = zlib.decompressobj(31)
    out = []
    for k in range(0, len(data), 4096):
        try:
            out.append(d.decompress(data[k : k + 4096]))
        except zlib.error:
            break
    text = b"".join(out)
    lines = text[: text.rfind(b"\n") + 1].split(b"\n")[:-1]
    return len(lines), sum(
        1 for line in lines if line.strip() and not line.lstrip().startswith(b";")
    )


@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.999])
@pytest.mark.parametrize("small_blocks", [False, True])
def test_truncated_gzip_keeps_what_was_read(tmp_path, monkeypatch, fraction, small_blocks):
    if small_blocks:  # many blocks and many reads, as on a whole trace
        monkeypatch.setattr(swf, "_BLOCK_BYTES", 1 << 16)
        monkeypatch.setattr(swf, "_READ_BYTES", 1 << 12)
    lines = [rec(i, i, 10, 1, 20) for i in range(1, 20001)]
    data = write(tmp_path, lines, gz=True).read_bytes()
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(data[: int(len(data) * fraction)])
    n_lines, n_records = zcat(cut.read_bytes())
    assert 0 < n_records < 20000
    wl = load_swf(cut, cores_system(4, 4))
    assert len(wl) == n_records  # every complete record before the cut
    assert [j.id for j in wl] == list(range(1, n_records + 1))  # a clean prefix, nothing corrupted
    rep = wl.report
    assert rep.skipped == {"truncated-file": 1} and rep.first_lines["truncated-file"] == [
        n_lines + 1
    ]
    assert any(
        f"the file is truncated after line {n_lines}: the compressed stream ends early" in n
        for n in rep.notes
    )
    assert len(wl) + rep.n_skipped == rep.total_records


@pytest.mark.parametrize("small_blocks", [False, True])
def test_corrupt_gzip_keeps_the_records_before_the_damage(tmp_path, monkeypatch, small_blocks):
    if small_blocks:
        monkeypatch.setattr(swf, "_BLOCK_BYTES", 1 << 16)
        monkeypatch.setattr(swf, "_READ_BYTES", 1 << 12)
    first = (HEADER + "".join(rec(i, i, 10, 1, 20) + "\n" for i in range(1, 5001))).encode()
    rest = "".join(rec(i, i, 10, 1, 20) + "\n" for i in range(5001, 10001)).encode()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = bytearray(c.compress(first) + c.flush(zlib.Z_FULL_FLUSH))
    damage_at = len(
        data
    )  # a deflate block starts here, byte-aligned: make it one of the reserved type
    data += c.compress(rest) + c.flush()
    data[damage_at] = 0x07
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(zlib.error, match="invalid block type"):
        zlib.decompress(bytes(data), 31)
    wl = load_swf(bad, cores_system(4, 4))
    assert [j.id for j in wl] == list(range(1, 5001))  # all of them, and nothing else
    n_lines = first.count(b"\n")
    assert wl.report.skipped == {"damaged-file": 1} and wl.report.first_lines["damaged-file"] == [
        n_lines + 1
    ]
    assert any(
        f"the file is damaged after line {n_lines}: the compressed data is damaged" in n
        for n in wl.report.notes
    )


def test_a_gzip_checksum_that_does_not_match_is_reported(tmp_path):
    lines = [rec(i, i, 10, 1, 20) for i in range(1, 20001)]
    data = bytearray(write(tmp_path, lines, gz=True).read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64  # zlib notices only at the end
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(zlib.error, match="incorrect data check"):
        zlib.decompress(bytes(data), 31)
    wl = load_swf(bad, cores_system(4, 4))
    assert len(wl) > 5000 and all((j.submit, j.run_time, j.wall_time) == (j.id, 10, 20) for j in wl)
    assert any(
        "the file is damaged: the checksum of the compressed content does not match" in n
        for n in wl.report.notes
    )
    assert len(wl) + wl.report.n_skipped == wl.report.total_records


def test_concatenated_gzip_members_are_read_whole(tmp_path):
    a = (HEADER + "\n".join(rec(i, i, 10, 1, 20) for i in range(1, 6)) + "\n").encode()
    b = ("\n".join(rec(i, i, 10, 1, 20) for i in range(6, 11)) + "\n").encode()
    path = tmp_path / "two.swf.gz"
    path.write_bytes(gzip.compress(a) + gzip.compress(b) + bytes(16))  # and zero padding after them
    wl = load_swf(path, cores_system(4, 4))
    assert (
        [j.id for j in wl] == list(range(1, 11))
        and wl.report.n_skipped == 0
        and not wl.report.notes
    )


def test_gzip_damaged_before_any_line_is_one_clear_error(tmp_path):
    data = write(tmp_path, [rec(1, 0, 10, 1, 20)], gz=True).read_bytes()
    for name, content in (
        ("cut.swf.gz", data[:15]),
        ("magic-only.swf.gz", b"\x1f\x8b" + bytes(range(40))),
    ):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(
            TraceFormatError, match=re.escape(str(path)) + ": .*nothing could be read"
        ):
            load_swf(path, cores_system(4, 4))


def test_kth_cut_at_90_percent_keeps_what_zcat_recovers(tmp_path):
    source = real_trace("KTH-SP2-1996-2.1-cln.swf.gz")
    data = source.read_bytes()
    cut = tmp_path / "KTH-SP2-cut.swf.gz"
    cut.write_bytes(data[: int(len(data) * 0.9)])
    n_lines, n_records = zcat(cut.read_bytes())
    assert n_records > 25000
    records = read_swf_records(cut)
    assert (
        len(records.lines) + len(records.malformed) >= n_records - 1
        and records.truncated_after == n_lines
    )
    wl = load_swf(cut, load_system("kth-sp2"))
    assert len(wl) > 25000 and len(wl) + wl.report.n_skipped == wl.report.total_records
    assert any(f"truncated after line {n_lines}" in n for n in wl.report.notes)


def _swf_bytes(records: list[str], header: bytes = HEADER.encode()) -> bytes:
    return header + b"".join(r.encode() + b"\n" for r in records)


@pytest.mark.parametrize("gz", [False, True])
def test_a_stray_byte_skips_its_line_only(tmp_path, gz):
    header = HEADER.encode() + b"; Note: Universit\xe4t (a Latin-1 comment is no damage)\n"
    first = header.count(b"\n") + 1
    lines = [rec(i, i, 10, 1, 20).encode() for i in range(1, 8)]
    lines[1] = lines[1].replace(b" 10 ", b" 1\x1f0 ", 1)
    lines[3] = lines[3][:4] + b"\xff" + lines[3][4:]
    lines[5] = lines[5] + b"\x00"
    data = header + b"\n".join(lines) + b"\n"
    path = tmp_path / ("stray.swf.gz" if gz else "stray.swf")
    path.write_bytes(gzip.compress(data) if gz else data)
    wl = load_swf(path, cores_system(4, 4))
    assert [j.id for j in wl] == [1, 3, 5, 7]
    assert wl.report.skipped == {"malformed": 3}
    assert wl.report.first_lines["malformed"] == [first + 1, first + 3, first + 5]
    messages = dict(read_swf_records(path).malformed)
    assert messages[first + 1] == "byte 0x1f at column 8 is not text"
    assert messages[first + 3] == "byte 0xff at column 5 is not text"
    assert any(
        n.startswith(
            f"malformed, bytes that are not text: 3 lines ({first + 1}, {first + 3}, {first + 5})"
        )
        for n in wl.report.notes
    )


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "content",
    [
        b"\x1f",
        b"\x7fELF\x02\x01\x01" + bytes(300),
        bytes(np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)),
        "; Version: 2.2\n1 0 0 10 1".encode("utf-16"),
    ],
    ids=["one-0x1f-byte", "elf", "random", "utf-16"],
)
def test_a_binary_file_is_one_clear_error(tmp_path, gz, content):
    path = tmp_path / ("binary.swf.gz" if gz else "binary.swf")
    path.write_bytes(gzip.compress(content) if gz else content)
    with pytest.raises(
        TraceFormatError, match=re.escape(str(path)) + r": is (not a text file|UTF-16 text)"
    ):
        load_swf(path, cores_system(4, 4))


def test_values_beyond_reason_are_named_for_what_they_are(tmp_path):
    lines = [
        rec(1, 0, 10, 4, 20),  # line 8: kept
        rec(2, "1e30", 10, 1, 20),  # 9: submit-too-large (not submit<0)
        rec(3, 1, "nan", 1, 20),  # 10: not-a-number (not runtime<=0)
        rec(4, 2, 10, 1, "1e30"),  # 11: walltime-too-large (not "missing", patched)
        rec(5, 3, "inf", 1, 20),  # 12: runtime-too-large
        rec(6, "-1e30", 10, 1, 20),  # 13: submit<0 is what it is
        rec(7, 4, 10, "1e30", 20),  # 14: processors-too-large
        rec("1e30", 5, 10, 1, 20),  # 15: id-too-large
        rec(9, 6, 10, 1, 20, user="NaN"),  # 16: not-a-number
        rec(10, 7, 10, 1, -1),  # 17: kept, its missing wall-time patched
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow in a cast either
        wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    assert [j.id for j in wl] == [1, 10]
    rep = wl.report
    assert rep.skipped == {
        "submit-too-large": 1,
        "not-a-number": 2,
        "walltime-too-large": 1,
        "runtime-too-large": 1,
        "submit<0": 1,
        "processors-too-large": 1,
        "id-too-large": 1,
    }
    assert rep.first_lines["not-a-number"] == [10, 16]
    assert rep.patched == {"missing wall-time set by 'queue-max'": 1}
    assert (
        "submit-too-large: line 9, field 2 (submit) is 1e+30 (values up to 2^50 are read)"
        in rep.notes
    )
    assert "not-a-number: line 10, field 4 (run_time) is nan" in rep.notes


def test_each_kind_of_malformed_line_is_described(tmp_path):
    lines = [
        rec(1, 0, 10, 4, 20),  # line 8
        "2 5 0 30",  # line 9: 4 fields
        rec(3, 7, 5, 1, 10).replace(" 5 1 ", " five 1 ", 1),  # line 10: not a number
        rec(4, 8, 5, 1, 10),  # line 11
        rec(5, 9, 5, 1, 10) + " 99",  # line 12: 19 fields
    ]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    assert wl.report.notes == [
        "malformed, wrong number of fields: 2 lines (9, 12); line 9: has 4 fields, an SWF record has 18",
        "malformed, field 4 (run_time) not a number: 1 line (10); line 10: field 4 (run_time) is not a number: 'five'",
    ]


def test_a_directory_is_named_as_one(tmp_path):
    readers = (
        lambda p: load_swf(p, cores_system(2, 2)),
        read_swf_header,
        read_swf_records,
        system_from_swf_header,
        lambda p: resolve_system("auto", str(p)),
    )
    for read in readers:
        with pytest.raises(TraceFormatError, match=re.escape(str(tmp_path)) + ": is a directory"):
            read(tmp_path)


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
        rec(2, -5, 10, 1, 20),  # line 9: negative submit
        rec(3, 1, 0, 1, 20),  # line 10: run time 0
        rec(4, 2, 10, -1, 20, req_procs=-1),  # line 11: no processors
        rec(5, 3, 10, 64, 20),  # line 12: 64 procs > 16 cores
        rec(1, 4, 10, 1, 20),  # line 13: duplicate id 1
    ]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    assert [j.id for j in wl] == [1]
    assert wl.report.skipped == {
        "submit<0": 1,
        "runtime<=0": 1,
        "processors<=0": 1,
        "too-big": 1,
        "duplicate-id": 1,
    }
    assert wl.report.first_lines["too-big"] == [12]
    assert "skipped 1 x too-big (first lines: 12)" in wl.report.describe()


def test_out_of_order_submits_are_sorted(tmp_path):
    lines = [
        rec(1, 50, 10, 1, 20),
        rec(2, 10, 10, 1, 20),
        rec(3, 10, 10, 1, 20),
        rec(4, 30, 10, 1, 20),
    ]
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
    lines = [
        rec(1, 0, 10, 4, 20),
        rec(2, 1, 10, 6, 20),
        rec(3, 2, 10, 7, 20),
        rec(4, 3, 10, 12, 20),
    ]
    wl = load_swf(
        write(tmp_path, lines), cores_system(4, 4), SwfOptions(units=UnitMapping(mode=mode))
    )
    assert [(j.units, j.unit_request) for j in wl] == expected


def test_missing_walltime_options(tmp_path):
    lines = [
        rec(1, 0, 10, 1, -1, queue=1),
        rec(2, 1, 300, 1, 500, queue=1),
        rec(3, 2, 40, 1, -1, queue=2),
        rec(4, 3, 70, 1, 80, queue=2),
    ]
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
    zero = write(tmp_path, [], name="zero.swf", header="; MaxNodes: 0\n; MaxProcs: many\n")
    with pytest.raises(
        ConfigError, match="its MaxNodes is '0', not a positive number and its MaxProcs is 'many'"
    ):
        system_from_swf_header(zero)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("header", [HEADER, ""], ids=["header", "no-header"])
def test_a_utf8_byte_order_mark_loses_neither_header_nor_first_record(tmp_path, gz, header):
    """Editors on Windows write a BOM; the bytes before ``; Version`` are not text."""
    lines = [rec(1, 0, 10, 1, 20), rec(2, 5, 30, 2, 40)]
    plain = write(tmp_path, lines, header=header)
    text = (header + "\n".join(lines) + "\n").encode()
    bom = tmp_path / ("bom.swf" + (".gz" if gz else ""))
    bom.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text) if gz else b"\xef\xbb\xbf" + text)
    assert read_swf_header(bom).entries == read_swf_header(plain).entries
    if header:
        assert read_swf_header(bom).first("version") == "2.2"
        assert system_from_swf_header(bom).n_nodes == 4
    system = cores_system(4, 4)
    a, b = load_swf(bom, system), load_swf(plain, system)
    assert len(a) == 2 and a.report.n_skipped == 0 and not a.report.notes
    np.testing.assert_array_equal(a.submit, b.submit)
    np.testing.assert_array_equal(a.run_time, b.run_time)
    assert a.submit.tolist() == [0, 5] and a.run_time.tolist() == [10, 30]


# ---- real traces (../shared/traces) -----------------------------------------------------------


def test_hpc2n_reads_completely():
    wl = load_swf(real_trace("HPC2N-2002-2.2-cln.swf.gz"), load_system("hpc2n"))
    assert len(wl) == 202871 and wl.report.n_skipped == 0
    assert (np.diff(wl.submit) >= 0).all()


def test_llnl_thunder_is_sorted_and_counted():
    wl = load_swf(real_trace("LLNL-Thunder-2007-1.1-cln.swf.gz"), load_system("llnl-thunder"))
    assert wl.report.total_records == 121039
    assert (np.diff(wl.submit) >= 0).all()
    assert any(
        n.startswith("808 records of the file are out of submit order") for n in wl.report.notes
    )
    # traces/README.md: run time <= 0 for 7,426 records (some also have submit < 0)
    assert wl.report.skipped["runtime<=0"] + wl.report.skipped.get("submit<0", 0) >= 7426 - 1190
    assert len(wl) + wl.report.n_skipped == 121039


def test_lublin_trace_has_no_requested_fields():
    wl = load_swf(real_trace("lublin_256.swf.gz"), load_system("lublin-256"))
    assert len(wl) == 10000
    assert wl.report.patched["processors taken from field 5 (allocated)"] == 10000
    with pytest.raises(ConfigError, match="lacks MaxProcs"):
        system_from_swf_header(real_trace("lublin_256.swf.gz"))


def test_handed_over_columns_equal_the_jobs(tmp_path):
    """load_swf hands its arrays to the workload (not rebuilt from 200,000 jobs): they must be
    exactly what the jobs say."""
    lines = [rec(i, 3 * i, 10 + i % 7, 1 + i % 5, 20 + i % 9) for i in range(1, 301)]
    wl = load_swf(write(tmp_path, lines), cores_system(4, 4))
    for name in wl.COLUMNS:
        handed = wl.__dict__.pop(name)
        rebuilt = getattr(wl, name)
        assert handed.dtype == rebuilt.dtype and np.array_equal(handed, rebuilt), name
        assert not handed.flags.writeable
