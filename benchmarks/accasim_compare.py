"""Compare hpcdispatch with the peer simulator AccaSim 1.1.3: same schedules, speed, EASY.

What it measures
================

Both simulators get exactly the same jobs: the trace is loaded with hpcdispatch in
``processor`` unit mode (one 1-core unit per processor, which is AccaSim's SWF mapping) and
written back with :func:`hpcdispatch.workload.swf.write_swf` as a clean SWF file that
AccaSim's default reader reads (field 8 = requested processors, one ``{core: 1}`` node
request per processor; field 9 = requested time = the job's wall-time). Wall-time kills are
off on the hpcdispatch side because AccaSim has none.

1. **Start-time check (FIFO).** AccaSim ``FirstInFirstOut(FirstFit())`` against hpcdispatch
   ``make_dispatcher("fifo", allocator="first-fit")``. For every job the waiting time
   ``start - submit`` of both simulators must be equal (AccaSim's start times are recorded
   with an ``AdditionalData`` hook on job completion, so no output file is parsed). The
   hpcdispatch schedule is also checked by the independent validator. Default traces:
   HPC2N (120 nodes x 2 cores) and KTH-SP2 (100 nodes x 1 core).
2. **Speed.** On the first trace (HPC2N by default) AccaSim runs in its fastest mode (no
   scheduling/statistics/pprint/benchmark output, no statistics shown, no daemons, no
   additional data, log level WARNING) with FIFO and with ``EASYBackfilling(FirstFit())``;
   the timed span is ``Simulator(...)`` construction + ``start_simulation()``, which
   includes AccaSim's own streaming read of the SWF file (not the interpreter start, the
   ``import accasim`` or the venv creation). hpcdispatch runs FIFO and EASY
   (``make_dispatcher("easy", allocator="first-fit")``) with ``record_decisions=False``;
   the timed span is ``hpcdispatch.simulate(...)`` and the workload load time is reported
   separately. Both are timed in the same run of this script; jobs/s and the ratio
   hpcdispatch / AccaSim are printed. The whole ``hpcdispatch simulate`` command is timed
   too (end to end: the median of ``--command-runs`` runs, 5 by default, each recorded; a
   run takes about 2 s and single runs move by 10 % on this machine, AccaSim's single run
   about 50 s); with ``--first-run`` also its first run after a fresh install (one run:
   ``pip install --no-deps --target DIR`` of this source tree (which compiles the engine, as
   ``pip install .`` does) into a new directory per policy, then the command with only that
   directory on ``PYTHONPATH``, a new ``HOME`` and no ``NUMBA_CACHE_DIR``).
3. **EASY analysis.** AccaSim's EASY does not protect the head job's reservation (it
   backfills with ``reserved_nodes=[]``, so any job that fits now starts). The script
   replays AccaSim's EASY schedule (per-job start times, wall-time kills off) and finds
   the first time ``t`` at which a job ``J`` was backfilled while the first queued job
   ``H`` waited, ``J`` took cores ``H`` needs at its reservation (shadow time, computed at
   ``t`` from running jobs' expected ends ``start + requested time``; a job that already
   outlived its request is expected to end at ``t + 1``), and ``H`` then started later
   than that shadow time. The same replay is run on hpcdispatch's EASY schedule as a
   cross-check (it must find no such backfill).

AccaSim is never a dependency of the project: it is installed with pip into a throwaway
venv (default ``/tmp/accasim-venv``, reused when it already imports accasim 1.1.3) and run
in a subprocess with a small driver written to a temporary directory. The driver aliases
``collections.Mapping`` & co. to ``collections.abc`` before importing accasim (needed on
Python >= 3.10). Traces are read from ``/work/shared/traces`` (``--traces-dir``) and never
copied into the repository; temporary files go to the system temp directory.

How to run
==========

::

    python benchmarks/accasim_compare.py                      # everything (HPC2N; check on KTH too)
    python benchmarks/accasim_compare.py --max-jobs 2000      # quick development run
    python benchmarks/accasim_compare.py --trace kth --skip-speed --skip-easy-analysis
    python benchmarks/accasim_compare.py --out results.json

The JSON written to ``--out`` (default ``<tmp>/accasim_compare.json``) holds every printed
number, and which hpcdispatch source was measured (path and hash of the imported package's
``.py`` files, git HEAD and dirty files). To measure a frozen copy of the source while
``src/`` is being edited, copy it and put the copy first:
``PYTHONPATH=/tmp/snapshot/src python benchmarks/accasim_compare.py``.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from sortedcontainers import SortedList

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.engine import simulate
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate_result
from hpcdispatch.workload import SwfOptions, UnitMapping, load_workload
from hpcdispatch.workload.swf import write_swf

ACCASIM_VERSION = "1.1.3"
DEFAULT_VENV = "/tmp/accasim-venv"
DEFAULT_TRACES_DIR = "/work/shared/traces"

#: short name -> (trace file, hpcdispatch system preset)
TRACES: dict[str, tuple[str, str]] = {
    "hpc2n": ("HPC2N-2002-2.2-cln.swf.gz", "hpc2n"),
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", "kth-sp2"),
}

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)

# Aliases AccaSim 1.1.3 needs on Python >= 3.10 (utils/misc.py does `from collections import Mapping`).
COLLECTIONS_ALIASES = textwrap.dedent(
    """
    import collections, collections.abc
    for _name in ("Mapping", "MutableMapping", "Sequence", "MutableSequence", "Set", "MutableSet",
                  "Iterable", "Iterator", "Callable", "Hashable", "Sized", "Container"):
        if not hasattr(collections, _name):
            setattr(collections, _name, getattr(collections.abc, _name))
    """
)

DRIVER = COLLECTIONS_ALIASES + textwrap.dedent(
    '''
    """AccaSim driver (written by hpcdispatch's benchmarks/accasim_compare.py).

    argv[1]: JSON spec {workload, sys_config, policy: fifo|easy, record, results_dir, out}.
    Writes a JSON result to spec["out"].
    """
    import json
    import sys
    import time

    from accasim.base.additional_data import AdditionalData
    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import EASYBackfilling, FirstInFirstOut
    from accasim.base.simulator_class import Simulator


    class StartRecorder(AdditionalData):
        """Records (id, queued_time, start_time, end_time) of every completed job."""

        def __init__(self, event_manager=None):
            AdditionalData.__init__(self, event_manager)
            self.rows = []
            self.rejected = []

        def exec_before_dispatching(self, job_dict, queued_jobs):
            pass

        def exec_after_dispatching(self, job_dict, to_dispatch_jobs, rejected_jobs):
            if rejected_jobs:
                self.rejected.extend(rejected_jobs)
            return None

        def exec_before_submission(self, *args, **kwargs):
            pass

        def exec_after_submission(self, *args, **kwargs):
            pass

        def exec_before_completion(self, *args, **kwargs):
            pass

        def exec_after_completion(self, removed_jobs):
            for e in removed_jobs:
                self.rows.append((e.id, e.queued_time, e.start_time, e.end_time))

        def stop(self):
            pass


    class ReservationLoggingEASY(EASYBackfilling):
        """EASYBackfilling that logs (time, blocked job id, reserved time) whenever its own
        reservation changes. Used only in recording runs, never in timed ones."""

        def __init__(self, *args, **kwargs):
            EASYBackfilling.__init__(self, *args, **kwargs)
            self.reservation_log = []
            self._last = (None, None)

        def scheduling_method(self, cur_time, queued_jobs, es_dict):
            out = EASYBackfilling.scheduling_method(self, cur_time, queued_jobs, es_dict)
            state = (self._blocked_job_id, self._reserved_slot[0])
            if state != self._last:
                self.reservation_log.append((cur_time, state[0], state[1]))
                self._last = state
            return out


    def main():
        with open(sys.argv[1]) as fh:
            spec = json.load(fh)
        if spec["policy"] == "fifo":
            dispatcher = FirstInFirstOut(FirstFit())
        elif spec["policy"] == "easy":
            dispatcher = (ReservationLoggingEASY if spec["record"] else EASYBackfilling)(FirstFit())
        else:
            raise SystemExit("unknown policy " + spec["policy"])
        t0 = time.perf_counter()
        sim = Simulator(
            spec["workload"],
            spec["sys_config"],
            dispatcher,
            # a class: AccaSim instantiates it (an instance would need the not yet built EventManager)
            additional_data=[StartRecorder] if spec["record"] else [],
            overwrite_previous=False,
            scheduling_output=False,
            pprint_output=False,
            benchmark_output=False,
            statistics_output=False,
            show_statistics=False,
            save_parameters=None,
            RESULTS_FOLDER_PATH=spec["results_dir"],
            LOG_LEVEL="WARNING",
        )
        t1 = time.perf_counter()
        recorder = sim.mapper.additional_data[0] if spec["record"] else None
        sim.start_simulation(system_status=False)
        t2 = time.perf_counter()
        out = {
            "construct_s": t1 - t0,
            "simulate_s": t2 - t1,
            "total_s": t2 - t0,
            "internal_s": sim.end_simulation_time - sim.start_simulation_time,
            "loaded": sim.loaded_jobs,
            "dispatched": sim.dispatched_jobs,
            "rejected": sim.rejected_jobs,
            "dispatcher": dispatcher.get_id(),
        }
        if recorder is not None:
            out["rows"] = recorder.rows
            out["rejected_ids"] = recorder.rejected
            out["reservation_log"] = getattr(dispatcher, "reservation_log", None)
        with open(spec["out"], "w") as fh:
            json.dump(out, fh)


    main()
    '''
)


# --------------------------------------------------------------------------------------
# AccaSim venv and runs
# --------------------------------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def accasim_works(py: Path) -> bool:
    if not py.exists():
        return False
    probe = COLLECTIONS_ALIASES + textwrap.dedent(
        f"""
        import importlib.metadata as m
        assert m.version("accasim") == "{ACCASIM_VERSION}", m.version("accasim")
        import accasim.base.simulator_class, accasim.base.scheduler_class, accasim.base.allocator_class
        """
    )
    r = subprocess.run([str(py), "-c", probe], capture_output=True, text=True)
    return r.returncode == 0


def ensure_accasim_venv(venv: Path) -> tuple[Path, bool]:
    """A venv with accasim==1.1.3; returns (python, created)."""
    py = venv_python(venv)
    if accasim_works(py):
        return py, False
    console.print(
        f"[bold]creating throwaway venv {venv} and installing accasim=={ACCASIM_VERSION}[/]"
    )
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", f"accasim=={ACCASIM_VERSION}"], check=True
    )
    if not accasim_works(py):
        raise SystemExit(
            f"accasim {ACCASIM_VERSION} does not import in {venv} even after installation"
        )
    return py, True


@dataclass
class AccaRun:
    policy: str
    record: bool
    construct_s: float
    simulate_s: float
    total_s: float
    internal_s: float
    loaded: int
    dispatched: int
    rejected: int
    dispatcher: str
    rows: list | None = None
    rejected_ids: list | None = None
    reservation_log: list | None = None


def run_accasim(
    py: Path, workdir: Path, swf: Path, sys_config: Path, policy: str, record: bool
) -> AccaRun:
    tag = f"{policy}-{'rec' if record else 'fast'}-{time.monotonic_ns()}"
    spec_path = workdir / f"spec-{tag}.json"
    out_path = workdir / f"out-{tag}.json"
    results_dir = workdir / f"results-{tag}"
    results_dir.mkdir()
    spec = {
        "workload": str(swf),
        "sys_config": str(sys_config),
        "policy": policy,
        "record": record,
        "results_dir": str(results_dir),
        "out": str(out_path),
    }
    spec_path.write_text(json.dumps(spec))
    r = subprocess.run(
        [str(py), str(workdir / "accasim_driver.py"), str(spec_path)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 or not out_path.exists():
        console.print(r.stdout[-4000:])
        console.print(r.stderr[-4000:])
        raise SystemExit(f"AccaSim run ({policy}) failed with exit code {r.returncode}")
    data = json.loads(out_path.read_text())
    out_path.unlink()
    return AccaRun(policy=policy, record=record, **data)


def fresh_install(workdir: Path) -> tuple[dict[str, str], float, str]:
    """A new installation of this source tree (``pip install --no-deps --target``, with the
    engine compiled as ``pip install .`` compiles it) and the environment that runs it as a
    fresh machine would (only it on ``PYTHONPATH``, a new home and cache, no numba settings);
    returns the environment, the install's wall seconds and its compile line."""
    target = Path(tempfile.mkdtemp(prefix="fresh-install-", dir=workdir))
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "PYTHONPATH"}
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-v",
            "--no-deps",
            "--target",
            str(target),
            str(root),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    install_s = time.perf_counter() - t0
    if r.returncode != 0:
        console.print(r.stdout[-2000:], r.stderr[-2000:])
        raise SystemExit("pip install of this source tree failed")
    compiled = next(
        (
            line.strip()
            for line in (r.stdout + r.stderr).splitlines()
            if "compiled the simulation engine" in line
        ),
        "no compile line",
    )
    home = target / "home"
    home.mkdir()
    env.update(PYTHONPATH=str(target), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    return env, install_s, compiled


def run_hpcdispatch_command(
    trace: Path,
    system_name: str,
    policy: str,
    max_jobs: int | None,
    workdir: Path,
    env: dict[str, str] | None = None,
) -> float:
    """Wall seconds of the whole command a user runs -- ``python -m hpcdispatch simulate``:
    interpreter start, imports, reading the trace, simulating, validating and writing the
    run directory -- with the same jobs as AccaSim gets (``--units processor``, no wall-time
    kills); ``env``: the environment of a fresh installation (:func:`fresh_install`)."""
    out = workdir / f"e2e-{policy}-{time.monotonic_ns()}"
    cmd = [
        sys.executable,
        "-m",
        "hpcdispatch",
        "simulate",
        "-w",
        str(trace),
        "-s",
        system_name,
        "-d",
        policy,
        "--units",
        "processor",
        "--no-walltime-kill",
        "-q",
        "-o",
        str(out),
    ]
    if max_jobs:
        cmd += ["--max-jobs", str(max_jobs)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        console.print(r.stdout[-2000:], r.stderr[-2000:])
        raise SystemExit(f"hpcdispatch simulate ({policy}) failed with exit code {r.returncode}")
    if env is not None and "compiling the simulation engine" in r.stderr:
        console.print(
            f"  (the first run of the fresh install compiled the engine: {r.stderr.strip()[-200:]})"
        )
    shutil.rmtree(out, ignore_errors=True)
    return wall


def accasim_system_config(system, start_time: int) -> dict[str, Any]:
    """AccaSim's system JSON for an hpcdispatch system whose only resource is ``core``."""
    if tuple(system.resources) != ("core",):
        raise SystemExit(
            f"system {system.name}: only core-only systems are supported, got {system.resources}"
        )
    groups = {f"g{i}": {"core": int(nt.capacity["core"])} for i, nt in enumerate(system.node_types)}
    resources = {f"g{i}": int(nt.count) for i, nt in enumerate(system.node_types)}
    return {
        "groups": groups,
        "resources": resources,
        # SWF processor -> one node request of 1 core (AccaSim's default tweaker mapping)
        "equivalence": {"processor": {"core": 1}},
        # added to every submit time by AccaSim's reader (see accasim_offset)
        "start_time": start_time,
    }


def accasim_offset(first_submit: int) -> int:
    """AccaSim's EventManager uses ``if not self.current_time`` to detect its first event, so
    a simulated time of 0 restarts its clock. Shift all times when the trace starts near 0."""
    return 0 if first_submit >= 2 else 1_000_000


def accasim_starts(run: AccaRun, wl, offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AccaSim (start, end, queued) times indexed like ``wl.jobs`` (nan when missing), offset removed."""
    pos = {int(i): k for k, i in enumerate(wl.ids.tolist())}
    n = len(wl)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    queued = np.full(n, np.nan)
    for jid, q, s, e in run.rows or []:
        k = pos[int(jid)]
        start[k] = s - offset
        end[k] = e - offset
        queued[k] = q - offset
    return start, end, queued


# --------------------------------------------------------------------------------------
# hpcdispatch runs
# --------------------------------------------------------------------------------------


ENGINE = "auto"  # --engine: hpcdispatch's engine (auto: compiled for >= 20,000 jobs)


def run_hpcdispatch(system, wl, policy: str):
    t0 = time.perf_counter()
    res = simulate(
        system,
        wl,
        make_dispatcher(policy, allocator="first-fit"),
        options=SimulationOptions(walltime_kill=False, record_decisions=False, engine=ENGINE),
    )
    return res, time.perf_counter() - t0


# --------------------------------------------------------------------------------------
# start-time comparison
# --------------------------------------------------------------------------------------


def compare_starts(
    wl, hpc_start: np.ndarray, acc_start: np.ndarray, acc_end: np.ndarray, acc_queued: np.ndarray
) -> dict[str, Any]:
    submit = wl.submit.astype(np.float64)
    hpc_wait = hpc_start - submit
    acc_wait = acc_start - submit
    missing = np.isnan(acc_start) | np.isnan(hpc_start)
    mism = missing | (hpc_wait != acc_wait)
    idx = np.flatnonzero(mism)
    # sanity on AccaSim's own bookkeeping: queued = submit, end = start + run time (no kills)
    bad_queue = int((~np.isnan(acc_queued) & (acc_queued != submit)).sum())
    bad_end = int((~np.isnan(acc_end) & (acc_end != acc_start + wl.run_time)).sum())
    procs = wl.units * wl.unit_requests[:, 0]
    details = []
    for k in idx[:10].tolist():
        details.append(
            {
                "job_id": int(wl.ids[k]),
                "index": k,
                "submit": int(submit[k]),
                "procs": int(procs[k]),
                "run_time": int(wl.run_time[k]),
                "wall_time": int(wl.wall_time[k]),
                "hpcdispatch_start": None if np.isnan(hpc_start[k]) else float(hpc_start[k]),
                "accasim_start": None if np.isnan(acc_start[k]) else float(acc_start[k]),
                "hpcdispatch_wait": None if np.isnan(hpc_wait[k]) else float(hpc_wait[k]),
                "accasim_wait": None if np.isnan(acc_wait[k]) else float(acc_wait[k]),
            }
        )
    return {
        "jobs": len(wl),
        "compared": int((~missing).sum()),
        "missing": int(missing.sum()),
        "mismatches": int(mism.sum()),
        "first_mismatches": details,
        "accasim_queued_time_not_submit": bad_queue,
        "accasim_end_not_start_plus_run": bad_end,
        "mean_wait_hpcdispatch": float(np.nanmean(hpc_wait)) if len(wl) else 0.0,
        "mean_wait_accasim": float(np.nanmean(acc_wait)) if len(wl) else 0.0,
    }


def print_check(name: str, chk: dict[str, Any]) -> None:
    t = Table(title=f"FIFO start-time check: {name}", title_justify="left")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("jobs in workload", f"{chk['jobs']:,}")
    t.add_row("jobs compared (started in both)", f"{chk['compared']:,}")
    t.add_row("missing in one simulator", f"{chk['missing']:,}")
    t.add_row("start-time (wait) mismatches", f"{chk['mismatches']:,}")
    t.add_row(
        "mean wait hpcdispatch / AccaSim (s)",
        f"{chk['mean_wait_hpcdispatch']:.2f} / {chk['mean_wait_accasim']:.2f}",
    )
    t.add_row("AccaSim queued_time != submit", str(chk["accasim_queued_time_not_submit"]))
    t.add_row("AccaSim end != start + run time", str(chk["accasim_end_not_start_plus_run"]))
    t.add_row("hpcdispatch validator", chk["validator"])
    console.print(t)
    if chk["first_mismatches"]:
        m = Table(title="first mismatches", title_justify="left")
        for col in (
            "job_id",
            "submit",
            "procs",
            "run_time",
            "wall_time",
            "hpcdispatch_wait",
            "accasim_wait",
        ):
            m.add_column(col, justify="right")
        for d in chk["first_mismatches"]:
            m.add_row(
                *(
                    str(d[c])
                    for c in (
                        "job_id",
                        "submit",
                        "procs",
                        "run_time",
                        "wall_time",
                        "hpcdispatch_wait",
                        "accasim_wait",
                    )
                )
            )
        console.print(m)


# --------------------------------------------------------------------------------------
# EASY head-delay analysis (replay of a schedule)
# --------------------------------------------------------------------------------------


def _reservation_at(log: list | None, t: int, offset: int) -> tuple[int | None, int | None]:
    """AccaSim's own (blocked job id, reserved time) after its dispatcher call at ``t``."""
    if not log:
        return None, None
    times = [row[0] - offset for row in log]
    k = int(np.searchsorted(times, t, side="right")) - 1
    if k < 0:
        return None, None
    _, jid, res = log[k]
    return (None if jid is None else int(jid)), (None if res is None else int(res) - offset)


def easy_head_delays(
    wl,
    start: np.ndarray,
    total_cores: int,
    reservation_log: list | None = None,
    offset: int = 0,
    max_events: int = 3,
) -> dict[str, Any]:
    """Replay a schedule (start times indexed like ``wl.jobs``, jobs run their full run time)
    and find backfills that delayed the first queued job.

    At every instant ``t`` at which jobs start: the queue (in submit order, which is the
    queue order of both simulators) holds the jobs submitted at or before ``t`` that start
    at or after ``t``; the head ``H`` is the first of them that does not start at ``t``.
    Jobs starting at ``t`` that come before ``H`` are FIFO starts, those after ``H`` are
    backfills. ``H``'s shadow time at ``t`` is the earliest expected end (``start +
    requested time``, or ``t + 1`` for a job that already outlived its request; FIFO
    starts at ``t`` included, backfills not) at which enough cores are free for ``H`` --
    ``t`` itself when ``H`` fits at ``t`` but was not started. A backfill ``J`` *breaks the
    reservation* when it is expected to end after the shadow time and takes more cores than
    are spare at the shadow time (after earlier backfills of the same instant). An event is
    counted when a backfill broke the reservation and ``H`` then started after its shadow
    time. Two kinds: ``future`` (shadow time > ``t``: the textbook EASY violation) and
    ``head-fits-now`` (shadow time = ``t``: ``H`` fitted but was passed over).
    """
    n = len(wl)
    submit = wl.submit.astype(np.int64)
    wall = wl.wall_time.astype(np.int64)
    run = wl.run_time.astype(np.int64)
    procs = (wl.units * wl.unit_requests[:, 0]).astype(np.int64)
    ids = wl.ids
    if np.isnan(start).any():
        raise ValueError("schedule has jobs without a start time")
    st = start.astype(np.int64)
    end = st + run
    order = np.argsort(st, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(st[order])) + 1) if n else []

    waiting: SortedList = SortedList()  # job indexes (queue order) submitted and not started
    si = 0
    running: set[int] = set()
    ends: list[tuple[int, int]] = []
    used = 0
    counts = {"backfill_instants": 0, "breaking_instants": 0, "delayed_instants_any_cause": 0}
    kinds = {"future": 0, "head-fits-now": 0}
    heads: set[int] = set()
    first: dict[str, dict[str, Any]] = {}
    first_any: dict[str, Any] | None = None
    total_delay = 0

    for grp in groups:
        t = int(st[grp[0]])
        while si < n and submit[si] <= t:
            waiting.add(si)
            si += 1
        while ends and ends[0][0] <= t:
            _, j = heapq.heappop(ends)
            running.discard(j)
            used -= int(procs[j])
        starting = set(grp.tolist())
        head = next((k for k in waiting if k not in starting), None)
        backfills = sorted(j for j in starting if j > head) if head is not None else []
        if backfills:
            counts["backfill_instants"] += 1
            fifo = [j for j in starting if j < head]
            need = int(procs[head])
            free_now = total_cores - used - sum(int(procs[j]) for j in fifo)
            if free_now >= need:
                shadow, avail = t, free_now
            else:
                rel_t = np.array(
                    [max(int(st[j] + wall[j]), t + 1) for j in running]
                    + [t + int(wall[j]) for j in fifo]
                )
                rel_p = np.array([int(procs[j]) for j in running] + [int(procs[j]) for j in fifo])
                o = np.argsort(rel_t, kind="stable")
                rt = rel_t[o]
                cum = free_now + np.cumsum(rel_p[o])
                shadow = int(
                    rt[int(np.searchsorted(cum, need))]
                )  # first expected end at which the head fits
                avail = int(
                    cum[int(np.searchsorted(rt, shadow, side="right")) - 1]
                )  # all releases at shadow
            spare = avail - need
            breakers = []
            for j in backfills:
                if t + int(wall[j]) <= shadow:
                    continue  # expected to end by the shadow time
                if int(procs[j]) <= spare:
                    spare -= int(procs[j])  # uses only cores the head does not need
                    continue
                breakers.append(j)
            head_start = int(st[head])
            delayed = head_start > shadow
            if delayed:
                counts["delayed_instants_any_cause"] += 1
                if first_any is None:
                    first_any = {
                        "time": t,
                        "head_id": int(ids[head]),
                        "head_start": head_start,
                        "shadow_time": shadow,
                        "delay_s": head_start - shadow,
                        "backfilled_ids": [int(ids[j]) for j in backfills],
                        "a_backfill_broke_the_reservation": bool(breakers),
                    }
            if breakers:
                counts["breaking_instants"] += 1
            if breakers and delayed:
                kind = "future" if shadow > t else "head-fits-now"
                kinds[kind] += 1
                if head not in heads:
                    heads.add(head)
                    total_delay += head_start - shadow
                if kind not in first:
                    at = (st < shadow) & (
                        end > shadow
                    )  # really running at the shadow time, before starts then
                    free_at_shadow = total_cores - int(procs[at].sum())
                    still = [j for j in breakers if end[j] > shadow]
                    # every job that overtook the head and still runs at the shadow time
                    over = np.flatnonzero(at & (np.arange(n) > head))
                    over_cores = int(procs[over].sum())
                    j0 = breakers[0]
                    acc_blocked, acc_res = _reservation_at(reservation_log, t, offset)
                    first[kind] = {
                        "kind": kind,
                        "time": t,
                        "head": {
                            "job_id": int(ids[head]),
                            "submit": int(submit[head]),
                            "procs": need,
                            "start": head_start,
                            "wall_time": int(wall[head]),
                            "run_time": int(run[head]),
                        },
                        "shadow_time": shadow,
                        "delay_s": head_start - shadow,
                        "free_cores_at_t": free_now,
                        "cores_expected_free_at_shadow": avail,
                        "backfilled_ids": [int(ids[j]) for j in backfills],
                        "breaking_ids": [int(ids[j]) for j in breakers],
                        "breaker": {
                            "job_id": int(ids[j0]),
                            "submit": int(submit[j0]),
                            "procs": int(procs[j0]),
                            "start": int(st[j0]),
                            "expected_end": int(st[j0] + wall[j0]),
                            "real_end": int(end[j0]),
                        },
                        "actual_free_cores_at_shadow": free_at_shadow,
                        "breakers_running_at_shadow": [int(ids[j]) for j in still],
                        "head_fits_at_shadow_without_breakers": free_at_shadow
                        + int(sum(int(procs[j]) for j in still))
                        >= need,
                        "overtakers_running_at_shadow": len(over),
                        "overtakers_cores_at_shadow": over_cores,
                        "head_fits_at_shadow_without_overtakers": free_at_shadow + over_cores
                        >= need,
                        "accasim_blocked_job_at_t": acc_blocked,
                        "accasim_reserved_time_at_t": acc_res,
                    }
        for j in grp.tolist():
            waiting.remove(j)
            running.add(j)
            used += int(procs[j])
            heapq.heappush(ends, (int(end[j]), j))
    return {
        "instants_with_backfill": counts["backfill_instants"],
        "instants_with_reservation_breaking_backfill": counts["breaking_instants"],
        "instants_head_started_after_shadow_any_cause": counts["delayed_instants_any_cause"],
        "head_delay_events": kinds["future"] + kinds["head-fits-now"],
        "head_delay_events_future_shadow": kinds["future"],
        "head_delay_events_head_fits_now": kinds["head-fits-now"],
        "heads_delayed": len(heads),
        "sum_delay_of_delayed_heads_s": total_delay,
        "first_event": min(first.values(), key=lambda e: e["time"]) if first else None,
        "first_event_future_shadow": first.get("future"),
        "first_event_head_fits_now": first.get("head-fits-now"),
        "first_instant_head_after_shadow_any_cause": first_any,
    }


def _describe_event(e: dict[str, Any]) -> str:
    h, b = e["head"], e["breaker"]
    acc = ""
    if e.get("accasim_reserved_time_at_t") is not None:
        acc = (
            f" AccaSim's own reservation at t: job {e['accasim_blocked_job_at_t']} at "
            f"{e['accasim_reserved_time_at_t']} (head start - that = {h['start'] - e['accasim_reserved_time_at_t']} s)."
        )
    return (
        f"({e['kind']}) at t={e['time']} job {b['job_id']} ({b['procs']} cores, submitted {b['submit']}, expected end "
        f"{b['expected_end']}, real end {b['real_end']}) was backfilled while head job "
        f"{h['job_id']} ({h['procs']} cores, "
        f"submitted {h['submit']}) waited; free cores at t: {e['free_cores_at_t']}; head's shadow time at t: "
        f"{e['shadow_time']} ({e['cores_expected_free_at_shadow']} cores expected free then). The head started at "
        f"{h['start']}: [bold]{e['delay_s']} s ({e['delay_s'] / 3600:.2f} h) late[/]. Really free at the shadow time: "
        f"{e['actual_free_cores_at_shadow']} cores; breakers still running then: {e['breakers_running_at_shadow']}; "
        f"head would have fit without them: {e['head_fits_at_shadow_without_breakers']}; jobs that overtook the head "
        f"and still ran then: {e['overtakers_running_at_shadow']} "
        f"({e['overtakers_cores_at_shadow']} cores), head would have "
        f"fit without those: {e['head_fits_at_shadow_without_overtakers']}.{acc}"
    )


def print_easy(name: str, ana: dict[str, Any]) -> None:
    t = Table(title=f"EASY head-delay replay: {name}", title_justify="left")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row(
        "instants with a backfill (a job started past a waiting head)",
        f"{ana['instants_with_backfill']:,}",
    )
    t.add_row(
        "... a backfill broke the head's reservation",
        f"{ana['instants_with_reservation_breaking_backfill']:,}",
    )
    t.add_row(
        "... the head started later than its shadow time (any cause)",
        f"{ana['instants_head_started_after_shadow_any_cause']:,}",
    )
    t.add_row(
        "head-delay events (broken reservation and head late)", f"{ana['head_delay_events']:,}"
    )
    t.add_row(
        "   with a future shadow time / head fitted at t",
        f"{ana['head_delay_events_future_shadow']:,} / {ana['head_delay_events_head_fits_now']:,}",
    )
    t.add_row("distinct heads delayed", f"{ana['heads_delayed']:,}")
    t.add_row(
        "sum of their delays past the shadow time (h)",
        f"{ana['sum_delay_of_delayed_heads_s'] / 3600:,.1f}",
    )
    console.print(t)
    shown = []
    for key in ("first_event", "first_event_future_shadow"):
        e = ana[key]
        if e and e["time"] not in shown:
            shown.append(e["time"])
            console.print(
                f"  first head delay{' with a future shadow time' if key.endswith('shadow') else ''}: "
                + _describe_event(e)
            )
    fa = ana["first_instant_head_after_shadow_any_cause"]
    if fa and fa["time"] not in shown:
        console.print(
            f"  first instant (any cause) after which the head started past its shadow time: {fa}"
        )


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def resolve_trace(name: str, traces_dir: Path, system_name: str | None) -> tuple[str, Path, str]:
    key = name.lower()
    if key in TRACES:
        fname, preset = TRACES[key]
        return key, traces_dir / fname, system_name or preset
    for k, (fname, preset) in TRACES.items():
        if name == fname or Path(name).name == fname:
            return k, traces_dir / fname, system_name or preset
    path = Path(name) if Path(name).exists() else traces_dir / name
    if not path.exists():
        raise SystemExit(
            f"unknown trace '{name}' (known: {', '.join(TRACES)}, or a file in {traces_dir})"
        )
    if not system_name:
        raise SystemExit(f"trace '{name}' is not a known one: give --system PRESET")
    return path.name, path, system_name


def load(path: Path, system_name: str, max_jobs: int | None):
    system = load_system(system_name)
    t0 = time.perf_counter()
    wl = load_workload(
        str(path), system, SwfOptions(units=UnitMapping(mode="processor"), max_jobs=max_jobs)
    )
    return system, wl, time.perf_counter() - t0


def source_state() -> dict[str, Any]:
    """Which hpcdispatch source was measured: the imported package's path and a hash of its
    ``.py`` files, plus git HEAD, modified files and a hash of the diff when it is a checkout."""
    import hashlib

    import hpcdispatch

    pkg = Path(hpcdispatch.__file__).resolve().parent
    content = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        content.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes())
    root = pkg.parents[1]

    def git(*a: str) -> str:
        r = subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else ""

    diff = git("diff", "HEAD", "--", "src")
    return {
        "package": str(pkg),
        "package_py_sha256": content.hexdigest(),
        "root": str(root),
        "head": git("rev-parse", "HEAD").strip() or None,
        "dirty": [line[3:] for line in git("status", "--porcelain", "--", "src").splitlines()],
        "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if diff else None,
    }


def fmt_rate(n: int, s: float) -> str:
    return f"{n / s:,.0f}" if s > 0 else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--trace",
        help=f"run everything on this trace only ({', '.join(TRACES)} or an SWF file name); "
        "default: everything on hpc2n plus the start-time check on kth",
    )
    ap.add_argument("--system", help="hpcdispatch system preset for a trace not in the known list")
    ap.add_argument(
        "--max-jobs", type=int, default=None, help="use only the first N jobs (by submit time)"
    )
    ap.add_argument(
        "--skip-speed", action="store_true", help="skip the timed AccaSim/hpcdispatch runs"
    )
    ap.add_argument(
        "--skip-easy-analysis", action="store_true", help="skip the EASY head-delay replay"
    )
    ap.add_argument("--skip-check", action="store_true", help="skip the FIFO start-time check")
    ap.add_argument(
        "--first-run",
        action="store_true",
        help="also time the command's first run after a fresh install of this tree (pip install "
        "--no-deps --target, one per policy)",
    )
    ap.add_argument(
        "--command-runs",
        type=int,
        default=5,
        help="runs of the whole `hpcdispatch simulate` command per policy (its median is compared; "
        "default 5)",
    )
    ap.add_argument(
        "--engine",
        choices=("auto", "python", "compiled"),
        default="auto",
        help="hpcdispatch's simulation engine (default auto: the compiled one for >= 20,000 jobs)",
    )
    ap.add_argument(
        "--out",
        default=str(Path(tempfile.gettempdir()) / "accasim_compare.json"),
        help="JSON results file",
    )
    ap.add_argument("--venv", default=DEFAULT_VENV, help="throwaway venv for AccaSim")
    ap.add_argument("--traces-dir", default=DEFAULT_TRACES_DIR)
    args = ap.parse_args(argv)
    global ENGINE
    ENGINE = args.engine

    traces_dir = Path(args.traces_dir)
    if args.trace:
        plan = [(resolve_trace(args.trace, traces_dir, args.system), True)]
    else:
        plan = [
            (resolve_trace("hpc2n", traces_dir, None), True),
            (resolve_trace("kth", traces_dir, None), False),
        ]

    t_venv = time.perf_counter()
    py, created = ensure_accasim_venv(Path(args.venv))
    t_venv = time.perf_counter() - t_venv
    console.print(
        f"AccaSim {ACCASIM_VERSION}: {py} ({'created' if created else 'reused'}, {t_venv:.1f} s)"
    )

    results: dict[str, Any] = {
        "accasim_version": ACCASIM_VERSION,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "max_jobs": args.max_jobs,
        "command": " ".join(
            [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]
        ),
        "hpcdispatch_source": source_state(),
        "traces": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="accasim-compare-"))
    (workdir / "accasim_driver.py").write_text(DRIVER)
    try:
        for (key, path, system_name), full in plan:
            console.rule(f"[bold]{path.name}[/] on {system_name}")
            system, wl, load_s = load(path, system_name, args.max_jobs)
            total_cores = int(system.total_capacity[system.resource_index("core")])
            n = len(wl)
            console.print(
                f"{n:,} jobs loaded by hpcdispatch in {load_s:.2f} s; {system.n_nodes} nodes, {total_cores} cores; "
                f"{wl.report.n_skipped} records skipped"
            )
            offset = accasim_offset(int(wl.submit[0]) if n else 0)
            swf = workdir / f"{key}.swf"
            write_swf(wl, swf)
            sys_config = workdir / f"{key}-system.json"
            sys_config.write_text(json.dumps(accasim_system_config(system, offset)))
            tr: dict[str, Any] = {
                "file": path.name,
                "system": system_name,
                "nodes": system.n_nodes,
                "cores": total_cores,
                "jobs": n,
                "skipped_records": wl.report.n_skipped,
                "hpcdispatch_load_s": load_s,
                "accasim_time_offset": offset,
            }
            results["traces"][key] = tr
            hpc_runs: dict[str, tuple[Any, float]] = {}

            # ---- speed (run first, back to back, so the ratios see the same machine load)
            if full and not args.skip_speed:
                speed: dict[str, Any] = {}
                for policy in ("fifo", "easy"):
                    res, sec = run_hpcdispatch(system, wl, policy)
                    hpc_runs[policy] = (res, sec)
                    # the end-to-end command takes about 2 s, and single runs of it on this machine
                    # move by 10 %: its median of --command-runs runs (each one recorded)
                    e2e_runs = [
                        run_hpcdispatch_command(path, system_name, policy, args.max_jobs, workdir)
                        for _ in range(max(1, args.command_runs))
                    ]
                    e2e = statistics.median(e2e_runs)
                    first: dict[str, Any] = {}
                    if args.first_run:
                        env, install_s, compiled = fresh_install(workdir)
                        first = {
                            "first_run_install_s": install_s,
                            "first_run_install_compile": compiled,
                            "first_run_command_s": run_hpcdispatch_command(
                                path, system_name, policy, args.max_jobs, workdir, env
                            ),
                        }
                    acc = run_accasim(py, workdir, swf, sys_config, policy, record=False)
                    if acc.loaded != n or acc.dispatched != n:
                        console.print(
                            f"[red]AccaSim {policy}: loaded {acc.loaded}, dispatched "
                            f"{acc.dispatched}, rejected {acc.rejected} of {n}[/]"
                        )
                    speed[policy] = {
                        "hpcdispatch_engine": res.notes.engine,
                        "hpcdispatch_run_s": sec,
                        "hpcdispatch_jobs_per_s": n / sec,
                        "accasim_total_s": acc.total_s,
                        "accasim_construct_s": acc.construct_s,
                        "accasim_simulate_s": acc.simulate_s,
                        "accasim_internal_loop_s": acc.internal_s,
                        "accasim_jobs_per_s": n / acc.total_s,
                        "accasim_loaded": acc.loaded,
                        "accasim_dispatched": acc.dispatched,
                        "accasim_rejected": acc.rejected,
                        "accasim_dispatcher": acc.dispatcher,
                        "ratio_hpcdispatch_over_accasim": (n / sec) / (n / acc.total_s),
                        "hpcdispatch_command_s": e2e,
                        "hpcdispatch_command_runs_s": e2e_runs,
                        "ratio_command_over_accasim": acc.total_s / e2e,
                        **first,
                    }
                    if first:
                        speed[policy]["ratio_first_run_over_accasim"] = (
                            acc.total_s / first["first_run_command_s"]
                        )
                tr["speed"] = speed
                st = Table(
                    title=f"speed on {n:,} jobs (hpcdispatch load: {load_s:.2f} s, not included)",
                    title_justify="left",
                )
                for col in (
                    "policy",
                    "hpcdispatch run (s)",
                    "hpcdispatch jobs/s",
                    "AccaSim total (s)",
                    "AccaSim jobs/s",
                    "ratio hpcdispatch/AccaSim",
                ):
                    st.add_column(col, justify="right")
                for policy, s in speed.items():
                    st.add_row(
                        policy.upper(),
                        f"{s['hpcdispatch_run_s']:.2f}",
                        fmt_rate(n, s["hpcdispatch_run_s"]),
                        f"{s['accasim_total_s']:.2f}",
                        fmt_rate(n, s["accasim_total_s"]),
                        f"{s['ratio_hpcdispatch_over_accasim']:.1f}x",
                    )
                console.print(st)
                for policy, s in speed.items():
                    runs = s["hpcdispatch_command_runs_s"]
                    spread = (
                        f" (median of {len(runs)} runs, {min(runs):.2f}-{max(runs):.2f} s)"
                        if len(runs) > 1
                        else ""
                    )
                    console.print(
                        f"  end to end, {policy.upper()}: `hpcdispatch simulate` (start to finish: imports, read, "
                        f"simulate, validate, write) {s['hpcdispatch_command_s']:.2f} s{spread} against "
                        f"AccaSim's {s['accasim_total_s']:.2f} s: {s['ratio_command_over_accasim']:.1f}x"
                    )
                    if "first_run_command_s" in s:
                        console.print(
                            f"  first run after a fresh install, {policy.upper()}: "
                            f"{s['first_run_command_s']:.2f} s: {s['ratio_first_run_over_accasim']:.1f}x "
                            f"(the install took {s['first_run_install_s']:.0f} s: "
                            f"{s['first_run_install_compile']})"
                        )
                console.print(
                    "  AccaSim total = Simulator(...) construction + start_simulation() (includes "
                    "its streaming SWF read); "
                    + "; ".join(
                        f"{p.upper()}: construction {s['accasim_construct_s']:.2f} s, its own loop "
                        f"timer {s['accasim_internal_loop_s']:.2f} s"
                        for p, s in speed.items()
                    )
                )

            # ---- FIFO start-time check
            if not args.skip_check:
                if "fifo" in hpc_runs:
                    res, sec = hpc_runs["fifo"]
                else:
                    res, sec = run_hpcdispatch(system, wl, "fifo")
                    hpc_runs["fifo"] = (res, sec)
                rep = validate_result(res)
                assert rep.ok, rep.describe()
                acc = run_accasim(py, workdir, swf, sys_config, "fifo", record=True)
                a_start, a_end, a_queued = accasim_starts(acc, wl, offset)
                chk = compare_starts(wl, res.start, a_start, a_end, a_queued)
                chk["validator"] = rep.describe()
                chk["accasim_rejected"] = acc.rejected
                chk["hpcdispatch_run_s"] = sec
                chk["accasim_total_s_with_recorder"] = acc.total_s
                tr["fifo_check"] = chk
                print_check(path.name, chk)

            # ---- EASY analysis
            if full and not args.skip_easy_analysis:
                acc = run_accasim(py, workdir, swf, sys_config, "easy", record=True)
                a_start, a_end, a_queued = accasim_starts(acc, wl, offset)
                if np.isnan(a_start).any():
                    raise SystemExit(
                        f"AccaSim EASY: {int(np.isnan(a_start).sum())} jobs without a start time"
                    )
                ana = easy_head_delays(wl, a_start, total_cores, acc.reservation_log, offset)
                if "easy" in hpc_runs:
                    hres, _ = hpc_runs["easy"]
                else:
                    hres, _ = run_hpcdispatch(system, wl, "easy")
                hrep = validate_result(hres)
                assert hrep.ok, hrep.describe()
                hana = easy_head_delays(wl, hres.start, total_cores)
                same = int((hres.start == a_start).sum())
                submit = wl.submit.astype(np.float64)
                tr["easy"] = {
                    "accasim": ana,
                    "hpcdispatch": hana,
                    "hpcdispatch_validator": hrep.describe(),
                    "same_start_hpcdispatch_vs_accasim": same,
                    "mean_wait_accasim": float(np.mean(a_start - submit)),
                    "mean_wait_hpcdispatch": float(np.mean(hres.start - submit)),
                    "accasim_total_s_with_recorder": acc.total_s,
                }
                print_easy(f"AccaSim EASYBackfilling(FirstFit) on {path.name}", ana)
                print_easy(f"hpcdispatch easy (cross-check) on {path.name}", hana)
                console.print(
                    f"  EASY start times identical in both simulators for {same:,} of {n:,} jobs; mean wait AccaSim "
                    f"{tr['easy']['mean_wait_accasim']:.1f} s, hpcdispatch "
                    f"{tr['easy']['mean_wait_hpcdispatch']:.1f} s; "
                    f"hpcdispatch validator: {hrep.describe()}"
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    out = Path(args.out)
    out.write_text(json.dumps(results, indent=2, default=float))
    console.print(f"results written to {out}")
    bad = [k for k, tr in results["traces"].items() if tr.get("fifo_check", {}).get("mismatches")]
    if bad:
        console.print(f"[red]FIFO start times differ on: {', '.join(bad)}[/]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
