"""Job sequences for episodes and evaluations: cleaning profiles, sampling, slicing.

The ``rlscheduler`` cleaning profile reads an SWF trace as RLScheduler's ``job.py``
(``Job``, ``Workloads``; github.com/DIR-LAB/deep-batch-scheduler) does:

- requested processors: the larger of the allocated (field 5) and requested (field 8)
  processors (so a missing request, -1, takes the allocation);
- requested time (field 9) missing (-1): the run time;
- run time (field 4) negative: 10 seconds (after the line above, so a job missing both keeps
  a requested time of -1; here it is raised to 1 second, RLScheduler's F1 reads it as 0.1);
- run time 0: the job is dropped;
- jobs in job-id order; submit times as recorded;
- the machine: ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors from the header
  (``MaxProcs`` missing: one per node); a job takes ``ceil(processors / per node)`` whole
  nodes. A job larger than the machine (RLScheduler would wait for it for ever) is dropped
  and counted.

RLScheduler's evaluation (``compare-pick-jobs.py``) seeds gym's legacy generator
(``env.seed(1)``: ``gym.utils.seeding.np_random``, a ``numpy.random.RandomState`` seeded
from a SHA-512 hash of the seed) and, for each of its 10 iterations, draws the first job of a
1,024-job sequence with ``randint(1024, n_jobs - 1024 - 1)`` (``reset_for_test``).
:func:`legacy_gym_random_state` and :func:`rlscheduler_starts` reproduce those draws.
"""

from __future__ import annotations

import hashlib
import math
import struct
from pathlib import Path

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.workload import SWF_FIELDS
from hpcdispatch.workload.job import SkipReport, Workload, WorkloadSource
from hpcdispatch.workload.swf import read_swf_header, read_swf_records

CLEANING_PROFILES = ("none", "rlscheduler")


def _col(name: str) -> int:
    return SWF_FIELDS.index(name)


def rlscheduler_system(path: str | Path) -> System:
    """RLScheduler's machine for a trace: ``MaxNodes`` x ``MaxProcs / MaxNodes`` cores."""
    header = read_swf_header(path)
    nodes = header.leading_int("MaxNodes") or 0
    procs = header.leading_int("MaxProcs") or nodes
    if not nodes or procs % nodes:
        raise ConfigError(
            f"{path}: the rlscheduler profile needs MaxNodes (and MaxProcs a multiple of it) in the header"
        )
    name = Path(path).name.split(".swf")[0]
    return System(
        name=f"rlscheduler:{name}",
        resources=("core",),
        node_types=(NodeType(name="node", count=nodes, capacity={"core": procs // nodes}),),
    )


def load_rlscheduler(path: str | Path) -> tuple[System, Workload]:
    """The trace at ``path`` cleaned by the ``rlscheduler`` profile, and its machine."""
    system = rlscheduler_system(path)
    per_node = int(system.capacity[0, 0])
    n_nodes = system.n_nodes
    records = read_swf_records(path)
    v = records.values
    report = SkipReport(total_records=len(records.lines) + len(records.malformed))
    if records.malformed:
        report.skip("malformed", [ln for ln, _ in records.malformed])
    ok = ~np.isnan(
        v[
            :,
            [
                _col(c)
                for c in (
                    "job",
                    "submit",
                    "run_time",
                    "allocated_processors",
                    "requested_processors",
                )
            ],
        ]
    ).any(axis=1)
    run = np.nan_to_num(v[:, _col("run_time")]).astype(np.int64)
    req_time = np.nan_to_num(v[:, _col("requested_time")], nan=-1).astype(np.int64)
    req_time = np.where(req_time == -1, run, req_time)
    run = np.where(run < 0, 10, run)
    procs = np.maximum(
        np.nan_to_num(v[:, _col("allocated_processors")]),
        np.nan_to_num(v[:, _col("requested_processors")]),
    ).astype(np.int64)
    lines = records.lines
    drop = ~ok
    report.skip("not-a-number", lines[drop])
    zero = (run == 0) & ~drop
    report.skip("zero-run-time", lines[zero])
    drop |= zero
    nodes_needed = -(-procs // per_node)
    big = ((nodes_needed > n_nodes) | (procs <= 0)) & ~drop
    report.skip("too-big", lines[big])
    drop |= big
    low = (req_time < 1) & ~drop
    report.patch("requested time below 1 s raised to 1 s", int(low.sum()))
    keep = np.flatnonzero(~drop)
    ids = v[keep, _col("job")].astype(np.int64)
    keep = keep[np.argsort(ids, kind="stable")]
    submit = v[keep, _col("submit")].astype(np.int64)
    if len(submit) > 1 and (np.diff(submit) < 0).any():
        raise ConfigError(
            f"{path}: in job-id order the submit times go backwards; the rlscheduler profile "
            "needs a trace whose ids follow the submissions"
        )
    whole = per_node > 1
    units = nodes_needed[keep] if whole else procs[keep]
    fields = {
        "id": v[keep, _col("job")].astype(np.int64),
        "submit": submit,
        "run_time": run[keep],
        "wall_time": np.maximum(req_time[keep], 1),
        "units": units,
        "unit_request": np.full((len(keep), 1), per_node if whole else 1, dtype=np.int64),
        "processors": procs[keep],
        **{
            name: np.nan_to_num(v[keep, _col(field)], nan=-1).astype(np.int64)
            for name, field in (
                ("user", "user"),
                ("group", "group"),
                ("queue", "queue"),
                ("partition", "partition"),
                ("executable", "executable"),
            )
        },
    }
    source = WorkloadSource(
        kind="swf-rlscheduler", spec=str(path), options={"cleaning": "rlscheduler"}
    )
    workload = Workload.of_plain_columns(
        fields, system.resources, source=source, report=report, header=read_swf_header(path).flat()
    )
    return system, workload


def job_slice(workload: Workload, start: int, length: int) -> Workload:
    """Jobs ``start .. start + length - 1`` of ``workload`` (submit times as they were), as a
    workload of their own whose source records where they came from."""
    return workload.window(start, length)


# ---- gym 0.x's seeding, as RLScheduler's environment used it -----------------------------
def _bigint_from_bytes(data: bytes) -> int:
    size = 4
    data += b"\0" * (size - len(data) % size)
    words = struct.unpack(f"{len(data) // size}I", data)
    return sum(w << (32 * i) for i, w in enumerate(words))


def _int_list_from_bigint(value: int) -> list[int]:
    if value == 0:
        return [0]
    out = []
    while value > 0:
        value, mod = divmod(value, 1 << 32)
        out.append(mod)
    return out


def legacy_gym_random_state(seed: int) -> np.random.RandomState:
    """``gym.utils.seeding.np_random(seed)[0]`` of gym 0.x: a ``RandomState`` seeded with the
    first 8 bytes of SHA-512(str(seed)) as 32-bit words."""
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    seed = seed % (1 << 64)
    digest = hashlib.sha512(str(seed).encode("utf8")).digest()
    rng = np.random.RandomState()
    rng.seed(_int_list_from_bigint(_bigint_from_bytes(digest[:8])))
    return rng


def rlscheduler_starts(n_jobs: int, length: int, iterations: int, seed: int) -> list[int]:
    """The first job of each of RLScheduler's evaluation sequences."""
    if n_jobs - length - 1 <= length:
        raise ConfigError(
            f"RLScheduler samples {length}-job sequences from jobs {length}..n-{length}-1; "
            f"the workload has only {n_jobs} jobs"
        )
    rng = legacy_gym_random_state(seed)
    return [int(rng.randint(length, n_jobs - length - 1)) for _ in range(iterations)]


def bounded_slowdown(wait: np.ndarray, run: np.ndarray, threshold: float = 10.0) -> np.ndarray:
    """``max((wait + run) / max(run, threshold), 1)`` per job."""
    return np.maximum((wait + run) / np.maximum(run, threshold), 1.0)


def ceil_div(a: int, b: int) -> int:
    return int(math.ceil(a / b))
