"""Every reader against damaged input: any byte string, and valid files damaged the ways
files get damaged (a byte flipped, the file cut, a line cut short, a line duplicated, a field
emptied, a value of the wrong type). Each gives a result (the valid records kept, every
skipped one counted) or an :class:`HpcDispatchError` whose message names the file -- never
another exception (issue 33, "nothing lost, nothing false").

About 100-200 examples per property, so the whole file runs in well under a minute."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import os
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import cores_system
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.errors import HpcDispatchError, TraceFormatError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.protocol.decision import Decision, Start
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim.checkpoint import Checkpoint
from hpcdispatch.sim.journal import DecisionJournal
from hpcdispatch.sweep.spec import parse_sweep
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.system.io import load_system, parse_system, system_to_dict
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.workload.job import Job, Workload
from hpcdispatch.workload.loader import load_workload
from hpcdispatch.workload.sacct import read_sacct
from hpcdispatch.workload.slurm import read_slurm_requests
from hpcdispatch.workload.swf import load_swf, read_swf_header, system_from_swf_header

#: examples per property (HPCDISPATCH_FUZZ_EXAMPLES=5000 for a long hunt)
EXAMPLES = int(os.environ.get("HPCDISPATCH_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(FUZZ, max_examples=max(EXAMPLES * 2 // 3, 1))

# a journal's last line cut short is dropped with a warning: expected here, thousands of times
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*is incomplete \\(interrupted write\\):UserWarning"
)

#: one folder for every example's file (hypothesis runs examples many times per test function)
WORK = Path(tempfile.mkdtemp(prefix="hpcdispatch-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_work_folder():
    yield
    shutil.rmtree(WORK, ignore_errors=True)


def _write(name: str, data: bytes) -> Path:
    path = WORK / name
    path.write_bytes(data)
    return path


def outcome(path: Path, fn, *args: Any) -> Any:
    """``fn(*args)``'s result, or the project's error -- which must name ``path``."""
    try:
        return fn(*args)
    except HpcDispatchError as exc:
        assert str(path) in str(exc), f"the error does not name the file: {exc}"
        assert "\n" not in str(exc).strip(), f"not one line: {exc!r}"
        if isinstance(exc, TraceFormatError) and exc.line is not None:
            assert exc.line >= 1
        return exc


# ---- damage ----------------------------------------------------------------------------------

_SEP = b" \t,=:"


def _damage(data: bytes, kind: str, a: int, b: int) -> bytes:
    """One kind of damage at positions chosen by ``a`` and ``b`` (any non-negative ints)."""
    if not data:
        return bytes([b % 256])
    lines = data.split(b"\n")
    i = a % len(lines)
    if kind == "flip":
        k = a % len(data)
        return data[:k] + bytes([b % 256]) + data[k + 1 :]
    if kind == "truncate":
        return data[: a % (len(data) + 1)]
    if kind == "cut-line":  # a line cut short (the rest of it lost)
        lines[i] = lines[i][: b % (len(lines[i]) + 1)]
    elif kind == "drop-newline":  # two lines run into one
        if i + 1 < len(lines):
            lines[i : i + 2] = [lines[i] + lines[i + 1]]
    elif kind == "duplicate-line":
        lines.insert(i, lines[i])
    elif kind == "empty-field":  # one field of a line emptied (its separators kept)
        line = lines[i]
        cuts = [0] + [k + 1 for k, c in enumerate(line) if c in _SEP] + [len(line) + 1]
        f = b % (len(cuts) - 1)
        start, end = cuts[f], max(cuts[f], cuts[f + 1] - 1)
        lines[i] = line[:start] + line[end:]
    elif kind == "stray-byte":  # one byte that is not text inserted into a line
        line = lines[i]
        k = b % (len(line) + 1)
        lines[i] = line[:k] + bytes([(0x00, 0x1F, 0x80, 0xFF, 0xC3, 0x7F)[b % 6]]) + line[k:]
    return b"\n".join(lines)


KINDS = (
    "flip",
    "truncate",
    "cut-line",
    "drop-newline",
    "duplicate-line",
    "empty-field",
    "stray-byte",
)
_damages = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6), st.integers(0, 10**6)),
    min_size=1,
    max_size=3,
)


def damaged(valid: bytes) -> st.SearchStrategy[bytes]:
    def apply(steps):
        data = valid
        for kind, a, b in steps:
            data = _damage(data, kind, a, b)
        return data

    return _damages.map(apply)


#: bytes that look like text files of numbers, with the odd control byte: reaches the parsers
#: further than uniform bytes do
_ALPHABET = list(b"0123456789 -+.eE\n\n\n;:,=\"'[]{}\t\rnaifN#") + [0x00, 0x1F, 0x8B, 0xFF, 0xC3]
any_bytes = st.one_of(
    st.binary(max_size=600),
    st.lists(st.sampled_from(_ALPHABET), max_size=600).map(bytes),
)


# ---- SWF -------------------------------------------------------------------------------------


def _rec(job, submit, run, procs, req_time, queue=1):
    return " ".join(
        str(f)
        for f in (
            job,
            submit,
            0,
            run,
            procs,
            -1,
            -1,
            procs,
            req_time,
            -1,
            1,
            1,
            1,
            3,
            queue,
            1,
            -1,
            -1,
        )
    )


SWF = (
    "; Version: 2.2\n; MaxNodes: 4\n; MaxProcs: 16\n; Queue: 1 short\n"
    + "".join(_rec(i, 10 * i, 5 + i, 1 + i % 8, 20 + i, 1 + i % 2) + "\n" for i in range(1, 13))
).encode()
SYSTEM = cores_system(4, 4)


def check_swf(path: Path) -> None:
    wl = outcome(path, load_swf, path, SYSTEM)
    if isinstance(wl, Workload):
        rep = wl.report
        assert len(wl) + rep.n_skipped == rep.total_records, rep.describe()  # nothing lost silently
        for reason, n in rep.skipped.items():
            assert rep.first_lines[reason] and len(rep.first_lines[reason]) == min(
                n, rep.keep_lines
            ), reason
        for job in wl:
            assert job.submit >= 0 and job.run_time > 0 and job.wall_time > 0 and job.units > 0
    outcome(path, read_swf_header, path)
    outcome(path, system_from_swf_header, path)


@FUZZ
@given(any_bytes)
def test_swf_any_bytes(data):
    check_swf(_write("any.swf", data))


@FUZZ
@given(any_bytes)
def test_swf_any_bytes_gzipped(data):
    check_swf(_write("any.swf.gz", gzip.compress(data)))
    check_swf(_write("bad.swf.gz", b"\x1f\x8b" + data))  # the gzip magic, then anything


@FUZZ
@given(damaged(SWF))
def test_swf_damaged(data):
    check_swf(_write("damaged.swf", data))


@pytest.mark.slow
@FUZZ
@given(damaged(gzip.compress(SWF, mtime=0)), damaged(SWF).map(lambda d: gzip.compress(d, mtime=0)))
def test_swf_gz_damaged(compressed_damaged, damaged_compressed):
    check_swf(_write("damaged1.swf.gz", compressed_damaged))
    check_swf(_write("damaged2.swf.gz", damaged_compressed))


# ---- Slurm-style requests --------------------------------------------------------------------

GPU_SYSTEM = System("g", ("core", "gpu"), (NodeType("n", 8, {"core": 8, "gpu": 2}),))
CSV = (
    b"id,submit,run_time,time_limit,ntasks,nodes,ntasks_per_node,gres,contiguous,user\n"
    b"1,0,100,200,16,,,,0,3\n2,5,200,,,4,2,gpu:1,1,3\n3,5,200,300,10,2,,2,no,4\n4,7,50,60,4,,,,,\n"
)
JSONL = (
    b'{"id": 1, "submit": 0, "run_time": 100, "ntasks": 16}\n'
    b'{"id": 2, "submit": 5, "run_time": 200, "nodes": 4, "ntasks_per_node": 2, "gpus_per_node": 1, '
    b'"contiguous": true}\n'
    b'{"id": 3, "submit": 5, "run_time": 200, "time_limit": 300, "ntasks": 10, "nodes": 2, "gres": "gpu:2"}\n'
)


def check_slurm(path: Path) -> None:
    wl = outcome(path, read_slurm_requests, path, GPU_SYSTEM)
    if isinstance(wl, Workload):
        assert len(wl) + wl.report.n_skipped == wl.report.total_records, wl.report.describe()


@FUZZ
@given(any_bytes)
def test_slurm_any_bytes(data):
    check_slurm(_write("any.csv", data))
    check_slurm(_write("any.jsonl", data))


@FUZZ
@given(damaged(CSV), damaged(JSONL))
def test_slurm_damaged(csv_data, jsonl_data):
    check_slurm(_write("damaged.csv", csv_data))
    check_slurm(_write("damaged.jsonl", jsonl_data))


#: Slurm's own spellings: names, time formats, typed GRES, memory sizes, cpus per task
SLURM_SYSTEM = System(
    "s",
    ("core", "gpu", "gpu:a100", "mem"),
    (
        NodeType("a", 2, {"core": 8, "gpu": 2, "mem": 16000}),
        NodeType("b", 2, {"core": 8, "gpu:a100": 2, "mem": 32000}),
    ),
)
CSV_SLURM = (
    b"id,user,account,partition,run_time,time_limit,ntasks,nodes,ntasks_per_node,cpus_per_task,gres,mem,"
    b"mem_per_cpu\n1,alice,phys,cpu,100,90,4,,,,,,\n2,bob,ml,gpu,100,1:30,,2,2,2,gpu:a100:1,4G,\n"
    b"3,alice,ml,gpu,100,1-00:00:00,4,2,,,gpu:2,,500M\n4,carol,phys,cpu,100,UNLIMITED,2,,,3,,,\n"
)
JSONL_SLURM = (
    b'{"id": 1, "user": "alice", "run_time": 10, "time_limit": "2-12:30", "ntasks": 2, "mem": "1G"}\n'
    b'{"id": 2, "user": 7, "run_time": 10, "wall_time": 90, "nodes": 2, "gres": "gpu:a100:1,gpu:1"}\n'
)


@FUZZ
@given(damaged(CSV_SLURM), damaged(JSONL_SLURM))
def test_slurm_spellings_damaged(csv_data, jsonl_data):
    for name, data in (("named.csv", csv_data), ("named.jsonl", jsonl_data)):
        path = _write(name, data)
        wl = outcome(path, read_slurm_requests, path, SLURM_SYSTEM)
        if isinstance(wl, Workload):
            assert len(wl) + wl.report.n_skipped == wl.report.total_records, wl.report.describe()
            for job in wl:
                assert job.wall_time > 0 and job.run_time > 0
                for field_name in ("user", "group", "partition"):
                    value = getattr(job, field_name)
                    assert value == -1 or value in wl.labels.get(field_name, {value: ""}), (
                        field_name,
                        value,
                    )


# ---- sacct --parsable2 accounting -----------------------------------------------------------

SACCT = (Path(__file__).parent / "data" / "slurm" / "cluster-jan.sacct").read_bytes()
SACCT_SYSTEM = System(
    "t", ("core", "gpu:a100", "mem"), (NodeType("n", 4, {"core": 16, "gpu:a100": 2, "mem": 64000}),)
)
_SACCT_ALPHABET = (
    list(b"0123456789|-:T_+.[]\n\n\n ,=/")
    + list(b"JobIDSubmitStartEndElapsedTimelimitNNodesNCPUS")
    + [0x00, 0xFF, 0xC3]
)
sacct_bytes = st.one_of(
    st.binary(max_size=600),
    st.lists(st.sampled_from(_SACCT_ALPHABET), max_size=600).map(bytes),
    st.lists(st.sampled_from(_SACCT_ALPHABET), max_size=400).map(
        lambda b: SACCT.split(b"\n", 1)[0] + b"\n" + bytes(b)
    ),
)


def check_sacct(path: Path) -> None:
    wl = outcome(path, read_sacct, path, SACCT_SYSTEM)
    if isinstance(wl, Workload):
        rep = wl.report
        assert len(wl) + rep.n_skipped == rep.total_records, rep.describe()  # nothing lost silently
        for job in wl:
            assert job.submit >= 0 and job.run_time > 0 and job.wall_time > 0 and job.units > 0
    outcome(
        path, load_workload, str(path), SACCT_SYSTEM
    )  # found by suffix or header, or another reader's error


@pytest.mark.slow
@FUZZ
@given(sacct_bytes)
def test_sacct_any_bytes(data):
    check_sacct(_write("any.sacct", data))
    check_sacct(_write("any-sacct.txt", data))


@pytest.mark.slow
@FUZZ
@given(damaged(SACCT))
def test_sacct_damaged(data):
    check_sacct(_write("damaged.sacct", data))


# ---- values of the wrong type in TOML documents ----------------------------------------------

toml_scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(
        ["", "auto", "grid2d", "torus2d", "linear", "core", "gpu", "x.toml", "fifo", "-1"]
    ),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["name", "count", "kind", "shape", "core", "a"]), inner, max_size=3
        ),
    ),
    max_leaves=6,
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a document where a value sits (keys of tables, indices of lists)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, prefix + (i,)))
    return out


def replaced(doc: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``doc`` with one value (or a new key) replaced by any TOML value."""
    places = _paths(doc)

    def apply(choice):
        where, value, new_key = choice
        out = json.loads(json.dumps(doc))
        path = places[where % len(places)]
        node = out
        for k in path[:-1]:
            node = node[k]
        if new_key and isinstance(node, dict):
            node[new_key] = value
        else:
            node[path[-1]] = value
        return out

    return st.tuples(
        st.integers(0, 10**6),
        toml_values,
        st.sampled_from([None, None, None, "shape", "kind", "extra"]),
    ).map(apply)


def _toml(doc: dict[str, Any]) -> str | None:
    try:
        return tomli_w.dumps(doc)
    except (
        TypeError,
        ValueError,
    ):  # not expressible in TOML (None, mixed lists in old writers ...)
        return None


# ---- system TOML -----------------------------------------------------------------------------

SYSTEM_DOC = system_to_dict(
    System(
        "fz",
        ("core", "gpu"),
        (NodeType("a", 4, {"core": 8, "gpu": 2}), NodeType("b", 2, {"core": 16})),
    )
)
SYSTEM_DOC["topology"] = {"kind": "torus2d", "shape": [2, 3]}
SYSTEM_TOML = tomli_w.dumps(SYSTEM_DOC).encode()


def check_system_file(path: Path) -> None:
    system = outcome(path, load_system, path)
    if isinstance(system, System):
        assert system.n_nodes >= 1 and system.capacity.shape == (
            system.n_nodes,
            len(system.resources),
        )
        if (
            system.topology.is_grid and system.n_nodes <= 10_000
        ):  # a grid that loads has its geometry
            grid = system.topology.grid
            assert grid.n_nodes == system.n_nodes and len(grid.hilbert_order) == system.n_nodes


@FUZZ
@given(any_bytes)
def test_system_any_bytes(data):
    check_system_file(_write("any.toml", data))


@FUZZ
@given(damaged(SYSTEM_TOML))
def test_system_damaged(data):
    check_system_file(_write("damaged.toml", data))


@pytest.mark.slow
@FUZZ
@given(replaced(SYSTEM_DOC))
def test_system_wrong_values(doc):
    text = _toml(doc)
    if text is not None:
        check_system_file(_write("values.toml", text.encode()))
    try:
        parse_system(doc, source="values-doc")
    except HpcDispatchError as exc:
        assert "values-doc" in str(exc)


# ---- sweep TOML ------------------------------------------------------------------------------

SWEEP = """name = "fuzz"
systems = ["machine-s"]
dispatchers = ["fifo", { name = "sjf", blocking = false, label = "sjf-nb" }]
predictors = ["W"]
repetitions = 1

[simulation]
walltime_kill = true
dispatch_interval = 600

[[workloads]]
trace = "traces/x.swf.gz"
max_jobs = 100
submit_jitter = 5
seeds = { from = 1, count = 2 }

[[workloads]]
generator = "lublin"
jobs = 50
load = 0.8
seeds = [1, 2]

[[workloads]]
generator = "aucsched"
workload = ["I", "V"]
version = [1, 2]
runtime_h = 0.5
"""
SWEEP_DOC = tomllib.loads(SWEEP)


def check_sweep(text: str) -> None:
    try:
        spec = parse_sweep(text, source="fuzz-sweep.toml", base=WORK)
    except HpcDispatchError as exc:
        assert "fuzz-sweep.toml" in str(exc), str(exc)
        assert "\n" not in str(exc).strip()
        return
    assert spec.cells


def test_the_sweep_to_damage_is_valid():
    assert len(parse_sweep(SWEEP, source="fuzz-sweep.toml", base=WORK).cells) == 2 * (2 + 2 + 4)


@FUZZ
@given(any_bytes)
def test_sweep_any_bytes(data):
    check_sweep(data.decode("utf-8", errors="replace"))


@FUZZ
@given(damaged(SWEEP.encode()))
def test_sweep_damaged(data):
    check_sweep(data.decode("utf-8", errors="replace"))


@pytest.mark.slow
@FUZZ
@given(replaced(SWEEP_DOC))
def test_sweep_wrong_values(doc):
    text = _toml(doc)
    if text is not None:
        check_sweep(text)


# ---- decision journal ------------------------------------------------------------------------

JOURNAL_JOBS = tuple(
    Job(id=10 + i, submit=i, run_time=5, wall_time=10, units=1 + i % 2, unit_request=(1,), index=i)
    for i in range(6)
)
JOURNAL_RUN = {"system": "fz", "workload": "w", "dispatcher": {"name": "fifo", "params": {}}}


def _calls() -> list[tuple[float, dict[int, Job], Decision]]:
    """Six dispatcher calls: the time, the queue seen, the decision."""
    calls = []
    for k in range(6):
        queue = {j.index: j for j in JOURNAL_JOBS[k : k + 2]}
        start = JOURNAL_JOBS[k]
        decision = Decision(
            [
                Start(
                    start,
                    Allocation([k % 3, 3], [1, start.units - 1] if start.units > 1 else [1, 0]),
                )
            ]
            if k % 2 == 0
            else [],
            wakeup=None if k % 3 else float(k + 7),
            info={"n": k},
        )
        calls.append((float(k), queue, decision))
    return calls


CALLS = _calls()


def _valid_journal() -> bytes:
    path = WORK / "valid.jsonl"
    path.unlink(missing_ok=True)
    j = DecisionJournal(path, JOURNAL_RUN)
    for k, (t, queue, decision) in enumerate(CALLS):
        j.append(k, t, queue, decision, elapsed=0.01 * k)
    j.close()
    return path.read_bytes()


def check_journal(data: bytes) -> None:
    path = _write("journal.jsonl", data)
    journal = outcome(path, DecisionJournal, path, JOURNAL_RUN)
    if not isinstance(journal, DecisionJournal):
        return
    try:
        for k, (t, queue, _) in enumerate(CALLS[: len(journal)]):
            got = outcome(path, journal.replay, k, t, queue, JOURNAL_JOBS)
            if isinstance(got, tuple):
                decision, elapsed = got
                assert isinstance(decision, Decision) and math.isfinite(elapsed)
                for s in decision.starts:
                    assert isinstance(s.allocation, Allocation)
    finally:
        journal.close()


def test_the_journal_to_damage_replays():
    path = _write("journal.jsonl", _valid_journal())
    journal = DecisionJournal(path, JOURNAL_RUN)
    try:
        assert len(journal) == 6
        for k, (t, queue, decision) in enumerate(CALLS):
            got, _ = journal.replay(k, t, queue, JOURNAL_JOBS)
            assert [(s.job.id, s.allocation) for s in got.starts] == [
                (s.job.id, s.allocation) for s in decision.starts
            ]
    finally:
        journal.close()


@FUZZ
@given(any_bytes)
def test_journal_any_bytes(data):
    check_journal(data)


@FUZZ
@given(damaged(_valid_journal()))
def test_journal_damaged(data):
    check_journal(data)


def _records_replaced() -> st.SearchStrategy[bytes]:
    lines = _valid_journal().decode().splitlines()
    records = [json.loads(line) for line in lines[1:]]

    def apply(choice):
        k, value, key, rename = choice
        rec = json.loads(json.dumps(records[k % len(records)]))
        key = sorted(rec)[key % len(rec)]
        if rename:  # a renamed key
            rec[key + "_"] = rec.pop(key)
        else:
            place = _paths(rec[key])
            if place and value is not None and isinstance(rec[key], (list, dict)):
                node = rec[key]
                p = place[k % len(place)]
                for step in p[:-1]:
                    node = node[step]
                node[p[-1]] = value
            else:
                rec[key] = value
        out = list(lines)
        out[1 + k % len(records)] = json.dumps(rec)
        return ("\n".join(out) + "\n").encode()

    json_values = st.recursive(
        st.one_of(
            st.none(), st.integers(-5, 10**20), st.floats(), st.booleans(), st.text(max_size=5)
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=2)
        ),
        max_leaves=6,
    )
    return st.tuples(st.integers(0, 100), json_values, st.integers(0, 100), st.booleans()).map(
        apply
    )


@FUZZ
@given(_records_replaced())
def test_journal_wrong_values(data):
    check_journal(data)


# ---- checkpoint ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkpoint_case(compiled_kernels):
    system = cores_system(8, 4)
    workload = Workload(
        [
            Job(
                id=i + 1,
                submit=3 * i,
                run_time=20 + 7 * (i % 5),
                wall_time=60,
                units=1 + i % 4,
                unit_request=(1 + i % 3,),
            )
            for i in range(40)
        ],
        ("core",),
    )
    path = WORK / "valid.ckpt"
    path.unlink(missing_ok=True)
    sim = Simulator(
        system,
        workload,
        make_dispatcher("conservative"),
        make_predictor("walltime"),
        SimulationOptions(engine="python"),
        checkpoint=path,
        checkpoint_every=1e9,
    )
    sim.begin()
    for _ in range(25):
        sim.step()
    sim.save_checkpoint()
    sim.close()
    return system, workload, sim.journal_run(), path.read_bytes()


def check_checkpoint(case, data: bytes) -> None:
    system, workload, run, _ = case
    path = _write("fuzz.ckpt", data)
    dispatcher = make_dispatcher("conservative")
    ckpt = Checkpoint(path, run, equivalent={"dispatcher": dispatcher.matches_identity})
    outcome(path, ckpt.load, dispatcher, make_predictor("walltime"), system, workload)


def test_the_checkpoint_to_damage_loads(checkpoint_case):
    system, workload, run, data = checkpoint_case
    path = _write("fuzz.ckpt", data)
    dispatcher = make_dispatcher("conservative")
    state = Checkpoint(path, run, equivalent={"dispatcher": dispatcher.matches_identity}).load(
        dispatcher, make_predictor("walltime"), system, workload
    )
    assert state.cluster is not None


@FEW
@given(any_bytes)
def test_checkpoint_any_bytes(checkpoint_case, data):
    check_checkpoint(checkpoint_case, data)


@FEW
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["flip", "truncate", "zero", "duplicate"]),
            st.floats(0, 1),
            st.integers(0, 255),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_checkpoint_damaged(checkpoint_case, steps):
    data = checkpoint_case[3]
    for kind, where, value in steps:
        k = int(where * len(data))
        if kind == "flip":
            data = data[:k] + bytes([value]) + data[k + 1 :]
        elif kind == "truncate":
            data = data[:k]
        elif kind == "zero":
            data = data[:k] + bytes(value) + data[k + value :]
        else:
            data = data[:k] + data[k : k + value] + data[k:]
    check_checkpoint(checkpoint_case, data)


def test_damage_kinds_each_change_a_file():
    for kind, (a, b) in itertools.product(KINDS, [(1, 3), (7, 11)]):
        assert _damage(SWF, kind, a, b) != SWF, kind


# ---- run directory (what `validate` and `report` read) ----------------------------------------

RUN_FILES = (
    "run.json",
    "summary.json",
    "system.toml",
    "jobs.parquet",
    "allocations.parquet",
    "workload.parquet",
)


@pytest.fixture(scope="module")
def run_dir_case():
    """A small EASY run written as a run directory: the directory every example damages a copy of."""
    from hpcdispatch import simulate
    from hpcdispatch.results.store import write_result

    out = WORK / "run-valid"
    result = simulate(load_system("kth-sp2"), "synthetic:lublin,jobs=60,seed=3,load=0.8", "easy")
    write_result(result, out, csv=False)
    return _RunFiles((out, {name: (out / name).read_bytes() for name in RUN_FILES}))


class _RunFiles(tuple):
    """(directory, {file name: bytes}), shown short in hypothesis' reports."""

    def __repr__(self) -> str:
        return f"<run directory {self[0]}>"


def check_run_dir(files: dict[str, bytes]) -> None:
    from hpcdispatch.validation.validator import validate_run_dir

    out = WORK / "run-damaged"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for name, data in files.items():
        (out / name).write_bytes(data)
    report = outcome(out, validate_run_dir, out)
    if not isinstance(report, HpcDispatchError):  # a report, valid or not, that can be printed
        assert report.describe().startswith("valid: " if report.ok else "INVALID: ")


def test_the_run_dir_to_damage_is_valid(run_dir_case):
    from hpcdispatch.validation.validator import validate_run_dir

    out, _ = run_dir_case
    assert validate_run_dir(out).ok


@FEW
@given(st.sampled_from(RUN_FILES), any_bytes)
def test_run_dir_any_bytes(run_dir_case, name, data):
    check_run_dir({**run_dir_case[1], name: data})


@FEW
@given(
    st.sampled_from(RUN_FILES),
    st.lists(
        st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6), st.integers(0, 10**6)),
        min_size=1,
        max_size=3,
    ),
)
def test_run_dir_damaged(run_dir_case, name, steps):
    data = run_dir_case[1][name]
    for kind, a, b in steps:
        data = _damage(data, kind, a, b)
    check_run_dir({**run_dir_case[1], name: data})


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.mark.slow
@FEW
@given(st.sampled_from(["run.json", "summary.json"]), st.data())
def test_run_dir_wrong_json_values(run_dir_case, name, data):
    doc = json.loads(run_dir_case[1][name])
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + (k,))

    walk(doc, ())
    path = data.draw(st.sampled_from(paths[1:]))
    value = data.draw(_json_values)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    check_run_dir({**run_dir_case[1], name: json.dumps(doc).encode()})


_cell_values = st.one_of(
    st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.text(max_size=5), st.booleans()
)


@pytest.mark.slow
@FEW
@given(st.sampled_from(["jobs.parquet", "allocations.parquet", "workload.parquet"]), st.data())
def test_run_dir_wrong_table_values(run_dir_case, name, data):
    import io

    import pandas as pd

    frame = pd.read_parquet(io.BytesIO(run_dir_case[1][name]))
    column = data.draw(st.sampled_from(list(frame.columns)))
    row = data.draw(st.integers(0, len(frame) - 1))
    value = data.draw(_cell_values)
    values = frame[column].astype(object)
    values.iloc[row] = value
    try:
        frame[column] = pd.array(values.tolist())  # the column's type follows the values
    except (TypeError, ValueError):
        frame[column] = values.astype(str)
    if data.draw(st.booleans()):
        frame = frame.drop(columns=[data.draw(st.sampled_from(list(frame.columns)))])
    buf = io.BytesIO()
    try:
        frame.to_parquet(buf)
    except Exception:  # pyarrow cannot store a column of mixed types: store it as text
        frame[column] = frame[column].astype(str)
        buf = io.BytesIO()
        frame.to_parquet(buf)
    check_run_dir({**run_dir_case[1], name: buf.getvalue()})
