"""The C reference of benchmarks/engine_vs_c.py (issue 54) keeps hpcdispatch's rules: a
hand-computed trace (cleaning, ties, backfilling) and a random one, schedule for schedule."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import cores_system

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.sim.simulator import SimulationOptions, Simulator
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.swf import SwfOptions, load_swf

SOURCE = Path(__file__).resolve().parents[1] / "benchmarks" / "c_reference" / "sim.c"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc on this machine: the C reference cannot be built")
    exe = tmp_path_factory.mktemp("cref") / "sim"
    r = subprocess.run([gcc, "-O2", "-o", str(exe), str(SOURCE), "-lz", "-lm"], capture_output=True)
    if r.returncode != 0 and b"zlib.h" in r.stderr:
        pytest.skip("zlib's header is not installed: the C reference cannot be built")
    assert r.returncode == 0, r.stderr.decode()
    return exe


def swf_line(job, submit, run, procs, wall, queue=1) -> str:
    return f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {wall} -1 1 1 1 -1 {queue} -1 -1 -1"


def run_c(exe: Path, trace: Path, policy: str, nodes: int, cores: int) -> dict[int, float]:
    out = trace.with_suffix(f".{policy}.csv")
    subprocess.run([str(exe), str(trace), policy, str(nodes), str(cores), str(out)], check=True)
    rows = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
    return {int(r[0]): float(r[2]) for r in rows}


def run_hpcdispatch(trace: Path, policy: str, nodes: int, cores: int) -> dict[int, float]:
    system = cores_system(nodes, cores)
    wl = load_swf(trace, system, SwfOptions(units=UnitMapping("processor")))
    opts = SimulationOptions(walltime_kill=False, engine="python")
    res = Simulator(system, wl, make_dispatcher(policy, allocator="first-fit"), None, opts).run()
    return {int(i): float(s) for i, s in zip(wl.ids, res.start)}


# 2 nodes x 2 cores. Job 5 runs 0 s, the second id 3 repeats an id, job 7 is larger than the
# machine: all three skipped. Job 8 (listed last, submitted at 2 like job 3) has no wall-time:
# its queue's longest run time, 20 s. FIFO: 1 at 0, 2 (4 cores) at 10 when 1 ends, 3, 8 and 4
# at 15. EASY: 2's shadow time is 10 (1's end), 3 ends by then (2 + 5 <= 10) and starts at 2;
# at 7 a core is free but 8 and 4 run past 10 and 2 needs all 4 cores then: they wait for 15.
HAND = [
    swf_line(1, 0, 10, 3, 10),
    swf_line(2, 1, 5, 4, 5),
    swf_line(3, 2, 5, 1, 5),
    swf_line(4, 3, 20, 1, 20),
    swf_line(5, 4, 0, 1, 5),
    swf_line(3, 5, 5, 1, 5),
    swf_line(7, 6, 5, 9, 5),
    swf_line(8, 2, 2, 1, -1),
]
EXPECTED = {
    "fifo": {1: 0.0, 2: 10.0, 3: 15.0, 4: 15.0, 8: 15.0},
    "easy": {1: 0.0, 2: 10.0, 3: 2.0, 4: 15.0, 8: 15.0},
}


@pytest.mark.parametrize("policy", ["fifo", "easy"])
def test_hand_computed_trace(reference, tmp_path, policy):
    trace = tmp_path / "hand.swf"
    trace.write_text("; hand-made\n" + "\n".join(HAND) + "\n")
    assert run_c(reference, trace, policy, 2, 2) == EXPECTED[policy]
    assert run_hpcdispatch(trace, policy, 2, 2) == EXPECTED[policy]


@pytest.mark.parametrize("policy", ["fifo", "easy"])
def test_random_trace_same_schedule(reference, tmp_path, policy):
    import gzip

    rng = np.random.default_rng(7)
    n = 400
    submit = np.sort(rng.integers(0, 20_000, n))
    run = rng.integers(1, 2_000, n)
    wall = np.where(rng.random(n) < 0.1, -1, run + rng.integers(0, 2_000, n))  # some missing
    wall = np.where(rng.random(n) < 0.1, run // 2 + 1, wall)  # some run past their wall-time
    procs = rng.integers(1, 17, n)  # up to the whole machine (4 x 4)
    lines = [swf_line(i + 1, submit[i], run[i], procs[i], wall[i], 1 + i % 3) for i in range(n)]
    trace = tmp_path / "random.swf.gz"
    trace.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    c = run_c(reference, trace, policy, 4, 4)
    assert len(c) == n
    assert c == run_hpcdispatch(trace, policy, 4, 4)
