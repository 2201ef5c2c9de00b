"""The parsed-trace cache (workload/trace_cache.py): a second read comes from it, with the
reader's report; any change of content, options, system or a foreign entry is re-read."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import cores_system

from hpcdispatch.workload import trace_cache
from hpcdispatch.workload.loader import load_workload
from hpcdispatch.workload.swf import SwfOptions

LINES = [
    "; MaxProcs: 8",
    "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1",
    "2 5 -1 0 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1",  # run time 0: skipped
    "3 3 -1 7 4 -1 -1 4 -1 -1 1 2 1 -1 1 -1 -1 -1",  # no wall-time: queue 1's longest, 10
]


@pytest.fixture
def reads(monkeypatch, tmp_path):
    """The cache in ``tmp_path/cache``; counts the reads that parse the file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HPCDISPATCH_TRACE_CACHE", raising=False)
    count = []
    real = trace_cache.load_swf

    def counting(*a, **k):
        count.append(1)
        return real(*a, **k)

    monkeypatch.setattr(trace_cache, "load_swf", counting)
    return count


def write_trace(tmp_path, lines=LINES):
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def entries(tmp_path):
    return sorted((tmp_path / "cache" / "hpcdispatch" / "traces").glob("*"))


def test_second_read_from_the_cache_is_the_same_workload(reads, tmp_path):
    path = write_trace(tmp_path)
    system = cores_system(2, 4)
    first = load_workload(str(path), system)
    second = load_workload(str(path), system)
    assert len(reads) == 1  # parsed once
    assert [e.suffix for e in entries(tmp_path)] == [".npz"]  # no temporary file left
    assert second.ids.tolist() == [1, 3]
    assert second.submit.tolist() == [0, 3]
    assert second.wall_time.tolist() == [20, 10]  # the reader's patch, kept
    for name in ("ids", "submit", "run_time", "wall_time", "units", "unit_requests", "users"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert second.report.to_dict() == first.report.to_dict()
    assert second.report.skipped == {"runtime<=0": 1}
    assert second.report.first_lines == {"runtime<=0": [3]}
    assert second.header == first.header and second.queue_ewt == first.queue_ewt
    assert second.source == first.source


def test_a_changed_trace_options_or_system_is_read_again(reads, tmp_path):
    path = write_trace(tmp_path)
    system = cores_system(2, 4)
    load_workload(str(path), system)
    stat = path.stat()
    # same size and modification time, one digit changed: the content hash tells
    path.write_text(path.read_text().replace("1 0 -1 10 2", "1 0 -1 11 2"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert load_workload(str(path), system).run_time.tolist() == [11, 7]
    assert len(reads) == 2
    assert load_workload(
        str(path), system, SwfOptions(missing_walltime="runtime")
    ).wall_time.tolist() == [20, 7]
    assert len(reads) == 3
    assert load_workload(str(path), cores_system(1, 4)).ids.tolist() == [1, 3]
    assert len(reads) == 4
    load_workload(str(path), system)  # each of them kept its own entry
    assert len(reads) == 4 and len(entries(tmp_path)) == 4


def test_an_entry_is_not_trusted_without_its_key(reads, tmp_path):
    system = cores_system(2, 4)
    a = write_trace(tmp_path)
    load_workload(str(a), system)
    key_a = trace_cache.trace_key(a, system, SwfOptions())
    b = tmp_path / "b.swf"
    b.write_text("\n".join(LINES[:2]) + "\n")
    key_b = trace_cache.trace_key(b, system, SwfOptions())
    where = tmp_path / "cache" / "hpcdispatch" / "traces"
    # a's entry under b's name: its stored key is a's
    (where / f"{key_b}.npz").write_bytes((where / f"{key_a}.npz").read_bytes())
    assert load_workload(str(b), system).ids.tolist() == [1]
    assert len(reads) == 2
    # a damaged entry is read again and rewritten
    (where / f"{key_a}.npz").write_bytes(b"not a cache entry")
    assert load_workload(str(a), system).ids.tolist() == [1, 3]
    assert len(reads) == 3
    assert load_workload(str(a), system).ids.tolist() == [1, 3]
    assert len(reads) == 3


def test_the_cache_can_be_turned_off_or_deleted(reads, tmp_path, monkeypatch):
    path = write_trace(tmp_path)
    system = cores_system(2, 4)
    monkeypatch.setenv("HPCDISPATCH_TRACE_CACHE", "off")
    load_workload(str(path), system)
    load_workload(str(path), system)
    assert len(reads) == 2 and entries(tmp_path) == []
    monkeypatch.delenv("HPCDISPATCH_TRACE_CACHE")
    load_workload(str(path), system)
    for e in entries(tmp_path):
        e.unlink()
    assert load_workload(str(path), system).ids.tolist() == [1, 3]
    assert len(reads) == 4
