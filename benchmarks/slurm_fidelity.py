"""The fidelity bar of issue 35: the same 100-job workload on a real (emulated) Slurm and in
``slurm-bf``, makespan within 10 % and mean wait within 25 %, over seeds 1, 2, 3.

System: the first 16 nodes of the ``machine-s`` preset (16 nodes x 8 cores x 2 GPUs, linear
order): ``slurm up --system machine-s --nodes 16`` emulates exactly that, and the simulation
uses :func:`hpcdispatch.slurm.config.first_nodes` of the same preset.

Workload (:func:`fidelity_rows`, seeded): 100 jobs, run times uniform 5..60 s (whole
seconds), Poisson arrivals with a mean gap of 1.2 s (integer submit times, so the replay's
rounding of submissions up to whole seconds changes nothing planned), and a request mix that
gives Slurm's backfill work to do:

==============  =====  ======================================================
kind            share  request
==============  =====  ======================================================
sub-node        30 %   ``-N 1 -n c``, c = 1..7 cores
whole-node      25 %   ``-N k --ntasks-per-node=8``, k in {1, 2, 4}
multi-node      20 %   ``-N k --ntasks-per-node=c``, k = 2..4, c = 1..7
GPU             25 %   ``-N k --ntasks-per-node=c --gres=gpu:g``, k in {1, 2}, c = 1..8, g = 1..2
==============  =====  ======================================================

Time limits as users over-estimate them (the note's ``workload.py``): ``ceil((run + 15) / 60)``
minutes; ``slurm replay`` gives Slurm ``ceil((limit + 2 s) / 60)`` whole minutes (its start/end
margin), and the simulation plans with exactly the limit Slurm got (``time_limits_min`` in the
replay's run.json).

Sub-commands (all results are JSON lines under ``benchmarks/results/slurm/``)::

    python3 benchmarks/slurm_fidelity.py generate            # the three workload CSVs
    python3 benchmarks/slurm_fidelity.py real --seed 1       # one real replay (up, replay, down)
    python3 benchmarks/slurm_fidelity.py sim                 # slurm-bf on every real run's submissions
    python3 benchmarks/slurm_fidelity.py table               # the comparison, and whether the bar holds
    python3 benchmarks/slurm_fidelity.py roundtrip --seed 1  # the accounting round trip at 100 jobs
    python3 benchmarks/slurm_fidelity.py backfill-log --seed 1   # a replay with DebugFlags=Backfill
    python3 benchmarks/slurm_fidelity.py backfill-check      # Slurm's logged plans against slurm-bf's

A real run records Slurm's own stamps of every job (``squeue --json -t all`` before the
cluster is stopped): submit, start, end (whole epoch seconds relative to the replay's t0),
nodes and the time limit. ``sim`` then simulates two workloads per real run:

- *nominal*: the workload as generated (submit times as planned, run times = the sleeps);
- *as submitted*: what Slurm actually received -- its recorded submit stamps and each job's
  recorded run time (end - start, which includes the job's start/end overhead of about 1 s)
  -- so the comparison is against the submissions actually made, not against a plan the
  real machine could not follow to the second.

Both use ``slurm-bf`` with the emulated cluster's ``SchedulerParameters`` line as it is
(:data:`hpcdispatch.slurm.config.SCHEDULER_PARAMETERS`) and ``priority=basic`` (slurm.conf sets
no ``PriorityType``: Slurm 22.05's default is ``priority/basic``), once with each start
estimate (``will_run=slurm``, with ``epoch`` = the replay's t0, and ``will_run=exact``).
Results and their reading: docs/RESULTS-SLURM.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "slurm"
SYSTEM_PRESET = "machine-s"
N_NODES = 16
N_JOBS = 100
SEEDS = (1, 2, 3)
MEAN_GAP_S = 1.2
SHARES = {"sub-node": 0.30, "whole-node": 0.25, "multi-node": 0.20, "gpu": 0.25}
BAR_MAKESPAN = 0.10
BAR_WAIT = 0.25


def workload_path(seed: int) -> Path:
    return RESULTS / f"workload-seed{seed}.csv"


def fidelity_rows(seed: int, n_jobs: int = N_JOBS) -> list[dict[str, object]]:
    """The seeded workload as rows of a Slurm-style request file (see the module docstring)."""
    rng = np.random.default_rng(seed)
    submit = np.floor(np.cumsum(rng.exponential(MEAN_GAP_S, n_jobs))).astype(int)
    submit -= submit[0]
    kinds = rng.choice(list(SHARES), size=n_jobs, p=list(SHARES.values()))
    rows = []
    for i in range(n_jobs):
        run = int(rng.integers(5, 61))
        row: dict[str, object] = {
            "id": i + 1,
            "submit": int(submit[i]),
            "run_time": run,
            "time_limit": math.ceil((run + 15) / 60),
            "nodes": "",
            "ntasks": "",
            "ntasks_per_node": "",
            "gres": "",
        }
        kind = kinds[i]
        if kind == "sub-node":
            row.update(nodes=1, ntasks=int(rng.integers(1, 8)))
        elif kind == "whole-node":
            row.update(nodes=int(rng.choice([1, 2, 4])), ntasks_per_node=8)
        elif kind == "multi-node":
            row.update(nodes=int(rng.integers(2, 5)), ntasks_per_node=int(rng.integers(1, 8)))
        else:
            row.update(
                nodes=int(rng.choice([1, 2])),
                ntasks_per_node=int(rng.integers(1, 9)),
                gres=f"gpu:{int(rng.integers(1, 3))}",
            )
        row["kind"] = kind
        rows.append(row)
    return rows


def write_workload(seed: int) -> Path:
    import csv

    path = workload_path(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = fidelity_rows(seed)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(
            fh,
            fieldnames=[k for k in rows[0] if k != "kind"],
            lineterminator="\n",
            extrasaction="ignore",
        )
        w.writeheader()
        w.writerows(rows)
    return path


def system():
    from hpcdispatch.slurm.config import first_nodes
    from hpcdispatch.system.io import load_system

    return first_nodes(load_system(SYSTEM_PRESET), N_NODES)


# ---------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------


def cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "hpcdispatch", *args]
    print("$ hpcdispatch " + " ".join(args), flush=True)
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "COLUMNS": "200"}
    )


def slurm_records(state_dir: Path) -> list:
    from hpcdispatch.slurm.cluster import read_cluster
    from hpcdispatch.slurm.records import parse_squeue_json

    info = read_cluster(state_dir)
    proc = subprocess.run(
        [info.binaries["squeue"], "--json", "-t", "all"],
        env=info.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return parse_squeue_json(proc.stdout)


def real_run(seed: int, accounting: bool = False) -> dict[str, object]:
    """One replay on a fresh cluster (always stopped again); its JSON record."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    state = Path(f"/tmp/hpcdispatch-slurm-fid-{seed}-{os.getpid()}")
    out = Path(f"/tmp/hpcdispatch-slurm-fid-out-{seed}-{stamp}")
    wl = workload_path(seed)
    up = ["slurm", "up", "--system", SYSTEM_PRESET, "--nodes", str(N_NODES), "--dir", str(state)]
    if accounting:
        up.append("--accounting")
    try:
        proc = cli(*up)
        if proc.returncode != 0:
            raise SystemExit(f"slurm up failed: {proc.stderr.strip()}")
        t_start = time.monotonic()
        proc = cli(
            "slurm",
            "replay",
            str(wl),
            "--time-scale",
            "1",
            "--dir",
            str(state),
            "-o",
            str(out),
            "--force",
        )
        elapsed = time.monotonic() - t_start
        print(proc.stdout.strip(), proc.stderr.strip()[-400:], sep="\n", flush=True)
        records = slurm_records(state) if proc.returncode in (0, 1) else []
    finally:
        down = cli("slurm", "down", "--dir", str(state))
        print(down.stdout.strip(), down.stderr.strip(), flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"slurm replay failed ({proc.returncode}); run directory {out}")
    run = json.loads((out / "run.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    replay = run["replay"]
    t0 = int(replay["t0_epoch"])
    by_slurm = {r.job_id: r for r in records}
    node_index = {f"n{i:04d}": i for i in range(N_NODES)}
    jobs = []
    for job_id, slurm_id in replay["slurm_job_ids"].items():
        r = by_slurm[slurm_id]
        jobs.append(
            {
                "id": int(job_id),
                "submit": r.submit - t0,
                "start": r.start - t0,
                "end": r.end - t0,
                "limit_min": r.time_limit_min,
                "nodes": sorted(node_index[n] for n in r.cores),
                "cores": [r.cores[n] for n in sorted(r.cores, key=node_index.get)],
            }
        )
    jobs.sort(key=lambda j: j["id"])
    record = {
        "kind": "real",
        "seed": seed,
        "utc": stamp,
        "t0_epoch": t0,
        "slurm_version": replay["slurm_version"],
        "scheduler_parameters": run["dispatcher"]["params"]["scheduler_parameters"],
        "accounting": accounting,
        "wall_s": round(elapsed, 1),
        "makespan": summary["makespan"],
        "wait_mean": summary["wait_mean"],
        "submit_late_max_s": replay["submit_late_max_s"],
        "slurm_states": replay["slurm_states"],
        "jobcomp_agree": replay["jobcomp"]["agree"],
        "jobs": jobs,
    }
    if accounting:
        record["run_dir"] = str(out)
    return record


def append(name: str, record: dict[str, object]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / name).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, separators=(",", ":")) + "\n")


def read(name: str) -> list[dict]:
    path = RESULTS / name
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# simulations
# ---------------------------------------------------------------------------------------------

MODELS = ("slurm", "exact")


def dispatcher_spec(will_run: str = "slurm", epoch: int = 0) -> str:
    """``slurm-bf`` with the emulated cluster's SchedulerParameters line, as it is, and the
    start estimate ``will_run`` (``slurm``: Slurm's will-run batches, aligned on the wall
    clock: ``epoch`` = the Unix time of simulated time 0; ``exact``: the earliest boundary)."""
    from hpcdispatch.slurm.config import SCHEDULER_PARAMETERS

    return (
        f"slurm-bf:priority=basic,will_run={will_run},epoch={epoch},"
        f'scheduler_parameters="{SCHEDULER_PARAMETERS}"'
    )


def nominal_workload(seed: int):
    """The generated workload with the time limits Slurm gets from ``slurm replay``."""
    from hpcdispatch.slurm.replay import time_limit_minutes
    from hpcdispatch.workload.job import Workload
    from hpcdispatch.workload.loader import load_workload

    wl = load_workload(str(workload_path(seed)), system())
    jobs = [
        j._replace(wall_time=60 * time_limit_minutes(j.wall_time, 1.0), index=-1) for j in wl.jobs
    ]
    return Workload(jobs, wl.resources)


def as_submitted_workload(seed: int, real: dict):
    """What Slurm received in ``real``: its submit stamps, each job's recorded run time
    (end - start) and the time limit it planned with."""
    from hpcdispatch.workload.job import Workload
    from hpcdispatch.workload.loader import load_workload

    wl = load_workload(str(workload_path(seed)), system())
    got = {j["id"]: j for j in real["jobs"]}
    jobs = []
    for j in wl.jobs:
        r = got[int(j.id)]
        jobs.append(
            j._replace(
                submit=int(r["submit"]),
                run_time=int(r["end"] - r["start"]),
                wall_time=60 * int(r["limit_min"]),
                index=-1,
            )
        )
    jobs.sort(key=lambda j: (j.submit, j.id))
    return Workload(jobs, wl.resources)


def metrics_of(submit: np.ndarray, start: np.ndarray, end: np.ndarray) -> dict[str, float]:
    """Makespan (last end - first submission) and mean wait (start - submission)."""
    return {
        "makespan": float(end.max() - submit.min()),
        "wait_mean": float((start - submit).mean()),
    }


def real_metrics(real: dict) -> dict[str, float]:
    """The real run's metrics from Slurm's own stamps (waits from its submit stamps)."""
    jobs = real["jobs"]
    return metrics_of(*(np.array([j[k] for j in jobs], float) for k in ("submit", "start", "end")))


def simulate_jobs(workload, spec: str | None = None) -> dict[str, object]:
    from hpcdispatch import simulate

    result = simulate(system(), workload, spec or dispatcher_spec())
    sub = np.array([j.submit for j in workload.jobs], float)
    out = metrics_of(sub, np.asarray(result.start), np.asarray(result.end))
    out["starts"] = {int(j.id): float(result.start[j.index]) for j in workload.jobs}
    return out


# ---------------------------------------------------------------------------------------------
# Slurm's own backfill plan (DebugFlags=Backfill) against the model's, from the same state
# ---------------------------------------------------------------------------------------------

LOG_DIR = Path("/tmp/hpcdispatch-slurm-fid-backfill-log")


def capture_backfill_log(seed: int) -> Path:
    """One replay with ``DebugFlags=Backfill,BackfillMap`` (slurm.conf edited after ``slurm
    up``, ``scontrol reconfigure``); slurmctld's log and the jobs' records are kept in
    :data:`LOG_DIR` (several MB: not committed)."""
    import shutil

    from hpcdispatch.slurm.cluster import down, up
    from hpcdispatch.slurm.replay import replay
    from hpcdispatch.workload.loader import load_workload

    state = Path(f"/tmp/hpcdispatch-slurm-fid-debug-{os.getpid()}")
    out = LOG_DIR / "run"
    shutil.rmtree(LOG_DIR, ignore_errors=True)
    LOG_DIR.mkdir(parents=True)
    try:
        info = up(system(), state)
        conf = state / "etc" / "slurm.conf"
        conf.write_text(conf.read_text() + "DebugFlags=Backfill,BackfillMap\n")
        subprocess.run(
            [info.binaries["scontrol"], "reconfigure"], env=info.env(), check=True, timeout=60
        )
        time.sleep(2)
        wl = load_workload(str(workload_path(seed)), info.load_system())
        _, record = replay(info, wl, 1.0, out)
        recs = slurm_records(state)
        (LOG_DIR / "records.json").write_text(
            json.dumps(
                {
                    "seed": seed,
                    "t0": record["t0_epoch"],
                    "ids": record["slurm_job_ids"],
                    "jobs": [r.__dict__ for r in recs],
                }
            )
        )
        shutil.copy(state / "log" / "slurmctld.log", LOG_DIR / "slurmctld.log")
    finally:
        down(state)
    return LOG_DIR


def _slurm_plans(log: Path, t0: int, slurm_to_job: dict[int, int]) -> dict[int, dict[int, tuple]]:
    """Per backfill pass (seconds after t0, the first pass of that second): job -> ("START",
    nodes) or (planned start, nodes), from ``_dump_job_sched`` / ``_start_job`` lines."""
    import re
    from datetime import datetime

    from hpcdispatch.slurm.records import expand_hostlist

    def rel(stamp: str) -> int:
        return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp()) - t0

    plans: dict[int, dict[int, tuple]] = {}
    current = None
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"\[(\S+?)\.\d+\] (.*)", line)
        if not m:
            continue
        t, msg = rel(m.group(1)), m.group(2)
        if "_attempt_backfill: beginning" in msg:
            current = plans.setdefault(t, {}) if t not in plans else None
        elif current is not None and (
            mm := re.search(r"JobId=(\d+) to start at (\S+), end at \S+ on nodes (\S+)", msg)
        ):
            nodes = sorted(int(n[1:]) for n in expand_hostlist(mm.group(3)))
            current[slurm_to_job[int(mm.group(1))]] = (rel(mm.group(2)), nodes)
        elif current is not None and (mm := re.search(r"Started JobId=(\d+) in \S+ on (\S+)", msg)):
            nodes = sorted(int(n[1:]) for n in expand_hostlist(mm.group(2)))
            current[slurm_to_job[int(mm.group(1))]] = ("START", nodes)
        elif "_attempt_backfill: completed" in msg:
            current = None
    return plans


def check_backfill_log(times: list[int]) -> dict[str, object]:
    """The model's backfill pass on the state of the logged replay at each time in ``times``
    (running jobs with their nodes and time limits, the queue, from Slurm's records) against
    the plan Slurm logged in its first pass of that second: per job, the same (start, nodes)?"""
    from types import SimpleNamespace as NS

    from hpcdispatch.dispatchers.slurm_bf import SlurmBackfill
    from hpcdispatch.system.allocation import Allocation, held_amounts

    recs = json.loads((LOG_DIR / "records.json").read_text())
    t0 = int(recs["t0"])
    job_of = {int(v): int(k) for k, v in recs["ids"].items()}
    by_job = {job_of[r["job_id"]]: r for r in recs["jobs"]}
    sysm = system()
    wl = nominal_workload(int(recs["seed"]))
    jobs = {int(j.id): j for j in wl.jobs}
    plans = _slurm_plans(LOG_DIR / "slurmctld.log", t0, job_of)
    same = total = 0
    differ = []
    for now in times:
        free = sysm.capacity.astype(np.int64).copy()
        running, queue = {}, []
        for jid, r in by_job.items():
            j = jobs[jid]
            submit, start, end = r["submit"] - t0, r["start"] - t0, r["end"] - t0
            if start < now <= end:  # a job stamped ending at `now` ends after the pass (measured)
                nodes = np.array(sorted(int(n[1:]) for n in r["cores"]))
                units = np.array(
                    [r["cores"][f"n{n:04d}"] // max(1, j.unit_request[0]) for n in nodes]
                )
                alloc = Allocation.trusted(nodes, units)
                free[nodes] -= held_amounts(alloc, wl.unit_requests[j.index], j.per_node_request)
                running[j.index] = NS(
                    job=j, allocation=alloc, planned_end=start + 60 * r["time_limit_min"]
                )
            elif submit <= now <= start:
                queue.append(j)
        queue.sort(key=lambda j: j.index)
        d = SlurmBackfill(
            will_run="slurm", bf_interval=1, bf_resolution=1, bf_max_job_test=1000, epoch=t0
        )
        d.setup(sysm)
        view = NS(
            now=float(now),
            requests=wl.unit_requests,
            running=running,
            expected_end=lambda rj, now=now: max(rj.planned_end, now + 1.0),
            planned_duration=lambda j: float(j.wall_time),
        )
        scratch = NS(free=free.copy(), starts=[])

        def take(job, alloc, scratch=scratch):
            scratch.free[alloc.nodes] -= held_amounts(
                alloc, wl.unit_requests[job.index], job.per_node_request
            )
            scratch.starts.append(NS(job=job, allocation=alloc))

        scratch.take = take
        d._backfill_slurm(view, scratch, queue)
        model = {
            jid: (v[0] if v[0] == "START" else int(v[0]), v[1]) for jid, v in d.last_plan.items()
        }
        real = plans.get(now, {})
        for jid in sorted(set(model) | set(real)):
            ok = model.get(jid) == real.get(jid)
            same += ok
            total += 1
            if not ok:
                differ.append(
                    {"t": now, "job": jid, "model": model.get(jid), "slurm": real.get(jid)}
                )
    return {
        "kind": "backfill-log-check",
        "will_run": "slurm",
        "times": times,
        "same": same,
        "total": total,
        "differ": differ,
    }


# ---------------------------------------------------------------------------------------------
# the accounting round trip
# ---------------------------------------------------------------------------------------------


def round_trip(record: dict) -> dict[str, object]:
    """The replay's ``slurm.sacct`` read back by the project's sacct reader, job by job against
    the workload: count, total cores and GPUs, node count, and run time (sacct's Elapsed minus
    the job's sleep: whole seconds at time scale 1)."""
    from hpcdispatch.workload.loader import load_workload

    out = Path(record["run_dir"])
    run = json.loads((out / "run.json").read_text())
    sysm = system()
    original = load_workload(str(workload_path(record["seed"])), sysm)
    back = load_workload(str(out / "slurm.sacct"), sysm)
    slurm_id = {int(k): v for k, v in run["replay"]["slurm_job_ids"].items()}
    by_slurm_id = {int(j.id): j for j in back.jobs}
    same_size = same_nodes = 0
    run_diff = []
    missing = []
    for job in original.jobs:
        got = by_slurm_id.get(slurm_id[int(job.id)])
        if got is None:
            missing.append(int(job.id))
            continue
        same_size += got.total_request == job.total_request
        same_nodes += got.exact_nodes == job.node_count
        run_diff.append(int(got.run_time) - int(job.run_time))
    diffs = {str(d): run_diff.count(d) for d in sorted(set(run_diff))}
    return {
        "kind": "roundtrip",
        "seed": record["seed"],
        "utc": record["utc"],
        "jobs": len(original),
        "read_back": len(back),
        "skipped": dict(back.report.skipped),
        "missing": missing,
        "same_size": same_size,
        "same_node_count": same_nodes,
        "run_time_minus_sleep_s": diffs,
        "slurm_states": record["slurm_states"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("generate")
    p = sub.add_parser("real")
    p.add_argument("--seed", type=int, required=True)
    p = sub.add_parser("sim")
    p.add_argument("--out", default="sim.jsonl")
    p = sub.add_parser("table")
    p.add_argument("--file", default="sim.jsonl")
    p = sub.add_parser("backfill-log")
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("backfill-check")
    p.add_argument("--times", default="26,61,100,150,200")
    p = sub.add_parser("roundtrip")
    p.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "generate":
        for seed in SEEDS:
            print(write_workload(seed))
    elif args.cmd == "real":
        record = real_run(args.seed)
        append("real.jsonl", record)
        print(
            f"seed {args.seed}: makespan {record['makespan']:.0f} s, mean wait {record['wait_mean']:.1f} s"
        )
    elif args.cmd == "sim":
        (RESULTS / args.out).unlink(missing_ok=True)
        for model in MODELS:
            spec = dispatcher_spec(model)  # nominal: simulated time 0 at an arbitrary epoch (0)
            for seed in SEEDS:
                m = simulate_jobs(nominal_workload(seed), spec)
                append(
                    args.out,
                    {
                        "kind": "nominal",
                        "model": model,
                        "seed": seed,
                        "spec": spec,
                        "makespan": m["makespan"],
                        "wait_mean": m["wait_mean"],
                    },
                )
            for real in read("real.jsonl"):
                spec = dispatcher_spec(model, real["t0_epoch"])  # time 0 = the replay's t0
                m = simulate_jobs(as_submitted_workload(real["seed"], real), spec)
                append(
                    args.out,
                    {
                        "kind": "as-submitted",
                        "model": model,
                        "seed": real["seed"],
                        "real_utc": real["utc"],
                        "spec": spec,
                        "makespan": m["makespan"],
                        "wait_mean": m["wait_mean"],
                        "starts": m["starts"],
                    },
                )
        print(f"wrote {RESULTS / args.out}")
    elif args.cmd == "roundtrip":
        record = real_run(args.seed, accounting=True)
        check = round_trip(record)
        record.pop("jobs")
        append("roundtrip.jsonl", {**check, "real": record})
        print(json.dumps(check, indent=1))
    elif args.cmd == "backfill-log":
        print(capture_backfill_log(args.seed))
    elif args.cmd == "backfill-check":
        (RESULTS / "backfill-check.jsonl").unlink(missing_ok=True)
        check = check_backfill_log([int(t) for t in args.times.split(",")])
        append("backfill-check.jsonl", check)
        print(f"{check['same']}/{check['total']} jobs planned with Slurm's start and nodes")
        for d in check["differ"]:
            print(f"  t={d['t']} job {d['job']}: model {d['model']}, Slurm {d['slurm']}")
    elif args.cmd == "table":
        for model in MODELS:
            print(f"\n### slurm-bf, will_run={model}\n")
            print(table(args.file, model=model))
    return 0


def rel(sim: float, real: float) -> float:
    return (sim - real) / real


def table(sim_file: str = "sim.jsonl", model: str = "slurm") -> str:
    """The fidelity table (markdown) of one model from real.jsonl and the simulations."""
    reals = [r for r in read("real.jsonl") if not r.get("accounting")]
    sims = [s for s in read(sim_file) if s.get("model", "slurm") == model]
    nominal = {s["seed"]: s for s in sims if s["kind"] == "nominal"}
    as_sub = {(s["seed"], s["real_utc"]): s for s in sims if s["kind"] == "as-submitted"}
    lines = [
        "| seed | real run (UTC) | real makespan | sim makespan | diff | real mean wait | sim mean wait | diff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ok_all = True
    summary = []
    for seed in SEEDS:
        runs = [r for r in reals if r["seed"] == seed]
        if not runs:
            continue
        ms, ws, sms, sws = [], [], [], []
        for r in runs:
            m = real_metrics(r)
            s = as_sub.get((seed, r["utc"]))
            ms.append(m["makespan"])
            ws.append(m["wait_mean"])
            if s is None:
                continue
            sms.append(s["makespan"])
            sws.append(s["wait_mean"])
            lines.append(
                f"| {seed} | {r['utc']} | {m['makespan']:.0f} | {s['makespan']:.0f} | "
                f"{100 * rel(s['makespan'], m['makespan']):+.1f} % | {m['wait_mean']:.1f} | "
                f"{s['wait_mean']:.1f} | {100 * rel(s['wait_mean'], m['wait_mean']):+.1f} % |"
            )
        rm, rw = float(np.mean(ms)), float(np.mean(ws))
        sm, sw = float(np.mean(sms)), float(np.mean(sws))
        dm, dw = rel(sm, rm), rel(sw, rw)
        ok = abs(dm) <= BAR_MAKESPAN and abs(dw) <= BAR_WAIT
        ok_all &= ok
        nom = nominal.get(seed)
        lines.append(
            f"| **{seed}** | mean of {len(runs)} (spread {min(ms):.0f}-{max(ms):.0f} s, "
            f"{min(ws):.1f}-{max(ws):.1f} s) | **{rm:.1f}** | **{sm:.1f}** | **{100 * dm:+.1f} %** | "
            f"**{rw:.1f}** | **{sw:.1f}** | **{100 * dw:+.1f} %** |"
        )
        if nom:
            lines.append(
                f"| {seed} | nominal workload (planned submits, sleeps) | | {nom['makespan']:.0f} | "
                f"{100 * rel(nom['makespan'], rm):+.1f} % | | {nom['wait_mean']:.1f} | "
                f"{100 * rel(nom['wait_mean'], rw):+.1f} % |"
            )
        summary.append(
            f"seed {seed}: makespan {100 * dm:+.1f} % (bar 10 %), mean wait {100 * dw:+.1f} % "
            f"(bar 25 %): {'holds' if ok else 'NOT met'}"
        )
    lines.append("")
    lines += summary
    missing = [seed for seed in SEEDS if not any(r["seed"] == seed for r in reals)]
    if missing:
        verdict = f"not decided: no real run of seed(s) {', '.join(map(str, missing))}"
    else:
        verdict = "holds" if ok_all else "NOT met"
    lines.append(f"bar over seeds {', '.join(map(str, SEEDS))}: {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
