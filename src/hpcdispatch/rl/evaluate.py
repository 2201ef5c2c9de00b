"""RLScheduler's evaluation protocol (``hpcdispatch rl evaluate --protocol rlscheduler``).

As RLScheduler's ``compare-make-table.py`` and ``make_table_script.py`` evaluate (Zhang et al.,
SC'20, Tables V and VI; github.com/DIR-LAB/deep-batch-scheduler):

- the trace read with the ``rlscheduler`` cleaning profile
  (:func:`hpcdispatch.rl.sequences.load_rlscheduler`) on its machine;
- ``iterations`` (10) sequences of ``jobs`` (1,024) consecutive jobs, the first drawn by gym
  0.x's seeded generator (seed 1) as ``randint(jobs, n - jobs - 1)``, with ``n`` the
  trace's job count or ``job_slice`` (RLScheduler's ``batch_job_slice``: 10,000 for
  SDSC-SP2 and HPC2N in its tables, 0 = the whole trace for the Lublin traces);
- every dispatcher runs each sequence from an empty machine, jobs running their recorded run
  time (no wall-time kill);
- per sequence, the mean bounded slowdown ``max((wait + run) / max(run, 10), 1)`` and
  RLScheduler's utilisation: the processor-seconds of the sequence's jobs over (the last
  start - the first submission) x the machine's processors (what ``post_process_score``
  computes for score type 3: its clock stops at the last job's start); then the mean over
  the sequences.

``--backfill on`` is the protocol's own backfilling (``backfill=rlscheduler`` of the pick
dispatchers), ``--backfill easy`` EASY with the pick as the head, ``off`` none.
"""

from __future__ import annotations

import csv
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpcdispatch.dispatchers.pick import HEURISTICS, requested_processors
from hpcdispatch.dispatchers.spec import DispatcherSpec
from hpcdispatch.errors import ConfigError
from hpcdispatch.rl.sequences import (
    bounded_slowdown,
    job_slice,
    load_rlscheduler,
    rlscheduler_starts,
)
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Workload

PROTOCOLS = ("rlscheduler",)
BACKFILL_FLAGS = {"off": "off", "on": "rlscheduler", "easy": "on"}
COLUMNS = ("dispatcher", "backfill", "mean_bounded_slowdown", "utilization")


@dataclass(frozen=True)
class Row:
    dispatcher: str
    backfill: str
    mean_bounded_slowdown: float
    utilization: float
    per_sequence_bsld: tuple[float, ...]
    per_sequence_utilization: tuple[float, ...]


def dispatcher_spec(text: str, backfill: str) -> DispatcherSpec:
    """``text`` as a spec: the RL papers' heuristic names (``fcfs, sjf, wfp3, unicep, f1``)
    denote the pick dispatchers, and a dispatcher with a ``backfill`` parameter gets
    ``backfill`` unless ``text`` sets it."""
    text = text.strip()
    name = text.split(":", 1)[0].strip().lower()
    if name in HEURISTICS:
        text = HEURISTICS[name] + text[len(name) :]
    spec = DispatcherSpec.parse(text)
    from hpcdispatch.protocol import dispatcher_class

    cls = dispatcher_class(spec.name)
    if "backfill" in cls.param_names() and "backfill" not in spec.params:
        spec = DispatcherSpec.parse(text + ("," if ":" in text else ":") + f"backfill={backfill}")
    return spec


def sequence_metrics(res: SimulationResult, system: System) -> tuple[float, float]:
    """Mean bounded slowdown and RLScheduler's utilisation of one sequence."""
    w = res.workload
    submit = w.submit.astype(np.float64)
    wait = res.start - submit
    run = res.end - res.start
    bsld = float(bounded_slowdown(wait, run).mean())
    procs = np.fromiter((requested_processors(j) for j in w.jobs), dtype=np.float64, count=len(w))
    span = float(np.nanmax(res.start) - submit.min())
    total = float(system.capacity[:, 0].sum())
    util = float((run * procs).sum() / (span * total)) if span > 0 else 0.0
    return bsld, util


def sequences(
    trace: str | Path, jobs: int, iterations: int, seed: int, job_slice_n: int
) -> tuple[System, list[Workload], list[int]]:
    """RLScheduler's evaluation sequences of ``trace`` and their first jobs."""
    system, workload = load_rlscheduler(trace)
    n = len(workload) if job_slice_n <= 0 else min(job_slice_n, len(workload))
    starts = rlscheduler_starts(n, jobs, iterations, seed)
    return system, [job_slice(workload, s, jobs) for s in starts], starts


def evaluate(
    trace: str | Path,
    dispatchers: list[str],
    backfill: str = "off",
    protocol: str = "rlscheduler",
    iterations: int = 10,
    seed: int = 1,
    jobs: int = 1024,
    job_slice_n: int = 0,
) -> list[Row]:
    """One row per dispatcher (see the module docstring)."""
    from hpcdispatch.engine import simulate

    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol '{protocol}' (protocols: {', '.join(PROTOCOLS)})")
    if backfill not in BACKFILL_FLAGS:
        raise ConfigError(f"--backfill must be off, on or easy, got '{backfill}'")
    if not dispatchers:
        raise ConfigError("no dispatcher to evaluate")
    mode = BACKFILL_FLAGS[backfill]
    specs = [dispatcher_spec(d, mode) for d in dispatchers]
    system, seqs, _ = sequences(trace, jobs, iterations, seed, job_slice_n)
    options = SimulationOptions(walltime_kill=False, engine="python")
    rows = []
    for text, spec in zip(dispatchers, specs):
        bs, us = [], []
        for seq in seqs:
            res = simulate(system, seq, spec, options=options)
            b, u = sequence_metrics(res, system)
            bs.append(b)
            us.append(u)
        rows.append(
            Row(
                text.strip(), backfill, float(np.mean(bs)), float(np.mean(us)), tuple(bs), tuple(us)
            )
        )
    return rows


def write_csv(rows: list[Row], out: str | Path) -> None:
    """The rows as CSV (``COLUMNS``), written atomically."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(COLUMNS)
            for r in rows:
                w.writerow(
                    [
                        r.dispatcher,
                        r.backfill,
                        f"{r.mean_bounded_slowdown:.6g}",
                        f"{r.utilization:.6g}",
                    ]
                )
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
