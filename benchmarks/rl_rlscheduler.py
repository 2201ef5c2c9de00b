"""hpcdispatch's RLScheduler protocol beside RLScheduler's own environment, job for job.

RLScheduler (Zhang et al., SC'20; github.com/DIR-LAB/deep-batch-scheduler) is installed in a
throwaway virtual environment made by this script (never a dependency of the project): its
three modules (``HPCSimPickJobs.py``, ``job.py``, ``cluster.py``) are read from the fetched
mirror of its repository (``--mirror``, a git directory; ``git show HEAD:FILE``), and gym
0.14.0 -- the release of its pinned gym commit's time whose ``seeding.np_random`` is the
legacy ``RandomState`` it relies on -- is installed from PyPI with ``setuptools<66``. Its
pinned TensorFlow 1.14 does not exist for this Python (the script tries and records pip's
answer); ``HPCSimPickJobs.py`` imports it at module level only for its network helpers, which
the environment never calls, so an empty ``tensorflow`` module stands in for it.

For each trace and backfilling mode the script then runs, on the same 10 sequences of 1,024
jobs (RLScheduler's seed-1 draws, which hpcdispatch reproduces):

1. RLScheduler's ``schedule_curr_sequence_reset`` with each of its five score functions,
   recording every job's start (``scheduled_time``) -- its own numbers for the tables;
2. hpcdispatch's pick dispatchers (``fcfs, sjf-pick, wfp3, unicep, f1``, ``backfill=off`` or
   ``rlscheduler``), and, to measure the WFP3 / UNICEP difference, the same dispatchers with
   RLScheduler's scores as its code computes them (``scheduled_time - submit_time`` with
   ``scheduled_time == -1`` for a queued job);
3. job for job: how many jobs start at the same second, and the first that does not;
4. speed: a random masked policy (seeded) on the same sequences in both environments,
   environment steps per second (RLScheduler: ``step_for_test``; hpcdispatch:
   ``SchedulingEnv.step``, fast engine).

Writes ``benchmarks/results/rl_rlscheduler.json`` and prints a summary.

    nice -n 10 python benchmarks/rl_rlscheduler.py \
        --mirror /work/.mirror/DIR-LAB+deep-batch-scheduler/repo
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
TRACES = {
    # name: (file, RLScheduler's batch_job_slice in make_table_script.py)
    "Lublin-1": ("lublin_256.swf.gz", 0),
    "SDSC-SP2": ("SDSC-SP2-1998-4.2-cln.swf.gz", 10000),
}
#: RLScheduler's README, "Reproduce Results in Paper" (its Tables V and VI)
PUBLISHED = {
    ("Lublin-1", "off"): {
        "bsld": {
            "fcfs": 7273.77,
            "wfp3": 19753.53,
            "unicep": 22274.74,
            "sjf": 277.35,
            "f1": 258.37,
        },
        "util": {"fcfs": 0.657, "wfp3": 0.747, "unicep": 0.691, "sjf": 0.762, "f1": 0.816},
    },
    ("SDSC-SP2", "off"): {
        "bsld": {
            "fcfs": 1727.54,
            "wfp3": 3000.88,
            "unicep": 1848.45,
            "sjf": 2680.55,
            "f1": 1232.06,
        },
        "util": {"fcfs": 0.670, "wfp3": 0.658, "unicep": 0.688, "sjf": 0.645, "f1": 0.674},
    },
    ("Lublin-1", "on"): {
        "bsld": {"fcfs": 235.82, "wfp3": 133.87, "unicep": 307.23, "sjf": 73.31, "f1": 75.07},
        "util": {"fcfs": 0.868, "wfp3": 0.864, "unicep": 0.883, "sjf": 0.778, "f1": 0.840},
    },
    ("SDSC-SP2", "on"): {
        "bsld": {"fcfs": 1595.12, "wfp3": 1083.12, "unicep": 548.01, "sjf": 2167.84, "f1": 1098.22},
        "util": {"fcfs": 0.682, "wfp3": 0.681, "unicep": 0.706, "sjf": 0.661, "f1": 0.677},
    },
}
SCORES = ("fcfs", "wfp3", "unicep", "sjf", "f1")

DRIVER = r"""
import json, random, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import HPCSimPickJobs as H

args = json.loads(sys.argv[2])
out = {"starts": [], "runs": {}, "speed": {}}

class Env(H.HPCEnv):
    # records each job's start as the environment schedules it
    def job_score(self, job):
        self.log[job.job_id] = job.scheduled_time
        return super().job_score(job)

env = Env(backfil=bool(args["backfill"]), job_score_type=0,
          batch_job_slice=args["batch_job_slice"], build_sjf=False)
env.log = {}
env.my_init(workload_file=args["trace"])
env.seed(1)
fns = {"fcfs": env.fcfs_score, "wfp3": env.wfp_score, "unicep": env.uni_score,
       "sjf": env.sjf_score, "f1": env.f1_score}
rng = np.random.default_rng(args["policy_seed"])
steps = 0
elapsed = 0.0
for it in range(args["iterations"]):
    env.reset_for_test(args["jobs"], 0)
    out["starts"].append(env.start)
    for name, fn in fns.items():
        env.log = {}
        scores = env.schedule_curr_sequence_reset(fn)
        out["runs"].setdefault(name, []).append(
            {"bsld": sum(scores.values()), "start": {str(k): v for k, v in env.log.items()}})
    # a random masked policy on the same sequence
    random.seed(it)
    o = env.build_observation()
    t0 = time.perf_counter()
    while True:
        valid = [i for i, p in enumerate(env.pairs) if p[0] is not None]
        a = valid[int(rng.integers(len(valid)))]
        o, r, d, _ = env.step_for_test(a)
        steps += 1
        if d:
            break
    elapsed += time.perf_counter() - t0
out["speed"] = {"steps": steps, "seconds": elapsed}
print(json.dumps(out))
"""


def make_venv(root: Path, mirror: Path) -> tuple[Path, dict]:
    """The throwaway environment: RLScheduler's modules, gym 0.14.0, numpy < 2, scipy."""
    notes: dict = {}
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    tf = subprocess.run(pip + ["tensorflow==1.14.0"], capture_output=True, text=True)
    notes["tensorflow==1.14.0"] = (tf.stderr.strip().splitlines() or ["installed"])[-1]
    subprocess.run(pip + ["numpy<2", "scipy", "setuptools<66", "wheel"], check=True)
    subprocess.run(pip + ["--no-build-isolation", "gym==0.14.0"], check=True)
    src = root / "rlscheduler"
    src.mkdir()
    for name in ("HPCSimPickJobs.py", "job.py", "cluster.py"):
        text = subprocess.run(
            ["git", "--git-dir", str(mirror), "show", f"HEAD:{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (src / name).write_text(text)
    commit = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    notes["rlscheduler_commit"] = commit
    # imported at module level by HPCSimPickJobs.py for its network helpers, never called
    (src / "tensorflow.py").write_text("# stand-in: the environment never calls TensorFlow\n")
    notes["gym"] = "0.14.0 (pip, setuptools<66, --no-build-isolation)"
    return py, notes


def run_rlscheduler(py: Path, root: Path, trace: Path, backfill: str, batch: int, args) -> dict:
    plain = root / (trace.name.removesuffix(".gz"))
    if not plain.exists():
        with gzip.open(trace, "rb") as fi, open(plain, "wb") as fo:
            shutil.copyfileobj(fi, fo)
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    payload = {
        "trace": str(plain),
        "backfill": backfill != "off",
        "batch_job_slice": batch,
        "iterations": args.iterations,
        "jobs": args.jobs,
        "policy_seed": 0,
    }
    proc = subprocess.run(
        [str(py), str(driver), str(root / "rlscheduler"), json.dumps(payload)],
        capture_output=True,
        text=True,
        cwd=root,
    )
    if proc.returncode:
        raise SystemExit(f"RLScheduler's environment failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def register_as_coded() -> None:
    """WFP3 and UNICEP with the wait RLScheduler's code computes for a queued job:
    ``scheduled_time - submit_time`` with ``scheduled_time == -1``."""
    from hpcdispatch.dispatchers import pick
    from hpcdispatch.protocol import DISPATCHERS, register

    def as_coded(score: str, job, now: float) -> float:
        r = float(job.wall_time)
        n = pick.requested_processors(job)
        w = -1.0 - job.submit
        if score == "wfp3-rls":
            return -((w / r) ** 3) * n
        return -(w + 1e-15) / (math.log2(n + 1e-15) * r)

    class AsCoded(pick.PickHeuristic):
        pass

    orig = pick.ranked

    def ranked(score, jobs, now):
        if score in ("wfp3-rls", "unicep-rls"):
            return sorted(jobs, key=lambda j: (as_coded(score, j, now), j.submit, j.index))
        return orig(score, jobs, now)

    pick.ranked = ranked
    for name in ("wfp3-rls", "unicep-rls"):
        if name not in DISPATCHERS:
            register(type(f"AsCoded_{name}", (AsCoded,), {"name": name, "score": name}))


def one_event_at_a_time(trace: Path, backfill: str, batch: int, args, names: list[str]) -> dict:
    """The measurement of the backfilling differences: hpcdispatch's fast engine changed to
    advance as RLScheduler's ``moveforward_for_resources_backfill_greedy`` does -- one event
    per step (a submission first when it is not later than the next end; ends of one instant
    one at a time, in the order of RLScheduler's running list), the pick tried and a
    backfilling pass made after each --
    instead of all the events of an instant, then one dispatcher call. Picks by the scores
    (the ``-rls`` ones as RLScheduler's code computes them)."""

    from hpcdispatch.dispatchers.pick import ranked
    from hpcdispatch.rl.fast import FastEpisode
    from hpcdispatch.rl.sequences import job_slice, load_rlscheduler, rlscheduler_starts

    class OneAtATime(FastEpisode):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            self.rl_list: list[int] = []

        """Running jobs kept as RLScheduler keeps them: a list, jobs appended as they
        start, sorted (stably) by requested end when a pick blocks and by real end before
        each release, the first one released."""

        def _start(self, j: int) -> None:
            t = self.t
            self.free -= self.units[j]
            del self.queue[j]
            self.start[j] = t
            self.end[j] = t + self.dur[j]
            self.running[j] = t + self.plan[j]
            self.log.append((t, j))
            self.rl_list.append(j)

        def _rls_shadow(self, h: int) -> None:
            self.rl_list.sort(key=lambda j: self.start[j] + self.plan[j])
            super()._rls_shadow(h)

        def instant(self) -> bool:
            rl = self.rl_list
            if rl:
                rl.sort(key=self.end.__getitem__)
            t_end = self.end[rl[0]] if rl else math.inf
            i = self.next_submit
            t_sub = self.sub[i] if i < self.n else math.inf
            if t_end == math.inf and t_sub == math.inf:
                return False
            self._mark = 0
            if t_sub <= t_end:
                self.t = max(self.t, t_sub)
                self.queue[i] = None
                self.next_submit = i + 1
            else:
                self.t = max(self.t, t_end)
                j = rl.pop(0)
                self.free += self.units[j]
                del self.running[j]
            if self.queue:
                self.dispatch()
            return True

    system, wl = load_rlscheduler(trace)
    n = len(wl) if batch <= 0 else min(batch, len(wl))
    starts = rlscheduler_starts(n, args.jobs, args.iterations, 1)
    mode = {"off": "off", "on": "rlscheduler"}[backfill]
    out: dict = {"runs": {}}
    for name in names:
        score = {"sjf": "sjf"}.get(name, name)
        runs = []
        for s in starts:
            seq = job_slice(wl, s, args.jobs)
            jobs = seq.jobs
            fe = OneAtATime(
                seq.submit,
                seq.run_time,
                seq.wall_time,
                seq.units,
                int(system.capacity[:, 0].sum()),
                mode,
            )
            while not fe.run_to_decision():
                best = ranked(score, [jobs[j] for j in fe.queue], fe.t)[0]
                fe.pick(best.index)
            runs.append({"start": {jobs[k].id: fe.start[k] for k in range(len(jobs))}})
        out["runs"][name] = runs
    return out


def ours(trace: Path, backfill: str, batch: int, args, names: list[str]) -> dict:
    from hpcdispatch.engine import simulate
    from hpcdispatch.rl.evaluate import dispatcher_spec, sequence_metrics, sequences
    from hpcdispatch.sim import SimulationOptions

    system, seqs, starts = sequences(trace, args.jobs, args.iterations, 1, batch)
    options = SimulationOptions(walltime_kill=False, engine="python")
    mode = {"off": "off", "on": "rlscheduler"}[backfill]
    out: dict = {"starts": starts, "runs": {}}
    for name in names:
        spec = dispatcher_spec(name, mode)
        runs = []
        for seq in seqs:
            res = simulate(system, seq, spec, options=options)
            b, u = sequence_metrics(res, system)
            ids = [j.id for j in seq.jobs]
            runs.append({"bsld": b, "util": u, "start": dict(zip(ids, res.start.tolist()))})
        out["runs"][name] = runs
    return out


def speed_ours(trace: Path, backfill: str, batch: int, starts: list[int], args) -> dict:
    from hpcdispatch.rl.env import SchedulingEnv

    mode = {"off": "off", "on": "rlscheduler"}[backfill]
    env = SchedulingEnv(workload=str(trace), cleaning="rlscheduler", jobs=args.jobs, backfill=mode)
    rng = np.random.default_rng(0)
    steps, elapsed = 0, 0.0
    for s in starts:
        obs, info = env.reset(seed=0, options={"start": s})
        t0 = time.perf_counter()
        while True:
            valid = np.flatnonzero(info["action_mask"])
            obs, r, term, trunc, info = env.step(valid[int(rng.integers(len(valid)))])
            steps += 1
            if term:
                break
        elapsed += time.perf_counter() - t0
    return {"steps": steps, "seconds": elapsed, "engine": env.engine}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mirror", type=Path, default=Path("/work/.mirror/DIR-LAB+deep-batch-scheduler/repo")
    )
    ap.add_argument("--traces", type=Path, default=HERE.parent / "shared" / "traces")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1024)
    ap.add_argument("--only", default=None, help="one trace name (Lublin-1, SDSC-SP2)")
    ap.add_argument(
        "--out", type=Path, default=HERE / "benchmarks" / "results" / "rl_rlscheduler.json"
    )
    args = ap.parse_args()
    register_as_coded()
    report: dict = {"cases": []}
    with tempfile.TemporaryDirectory(prefix="rlscheduler-") as tmp:
        root = Path(tmp)
        py, notes = make_venv(root, args.mirror)
        report["install"] = notes
        print("install:", json.dumps(notes, indent=1))
        for tname, (fname, batch) in TRACES.items():
            if args.only and args.only != tname:
                continue
            trace = args.traces / fname
            for backfill in ("off", "on"):
                theirs = run_rlscheduler(py, root, trace, backfill, batch, args)
                names = ["fcfs", "wfp3", "unicep", "sjf", "f1", "wfp3-rls", "unicep-rls"]
                mine = ours(trace, backfill, batch, args, names)
                serial = one_event_at_a_time(
                    trace, backfill, batch, args, ["fcfs", "sjf", "f1", "wfp3-rls", "unicep-rls"]
                )
                case = {
                    "trace": tname,
                    "backfill": backfill,
                    "same_sequences": theirs["starts"] == mine["starts"],
                    "starts": mine["starts"],
                    "rows": [],
                }
                for score in SCORES:
                    t_runs = theirs["runs"][score]
                    t_bsld = float(np.mean([r["bsld"] for r in t_runs]))
                    row = {
                        "score": score,
                        "published_bsld": PUBLISHED[(tname, backfill)]["bsld"][score],
                        "published_util": PUBLISHED[(tname, backfill)]["util"][score],
                        "rlscheduler_env_bsld": t_bsld,
                    }
                    for variant in (score, f"{score}-rls"):
                        if variant not in mine["runs"]:
                            continue
                        m_runs = mine["runs"][variant]
                        same = total = 0
                        first = None
                        for it, (tr, mr) in enumerate(zip(t_runs, m_runs)):
                            for jid, st in tr["start"].items():
                                total += 1
                                got = mr["start"].get(int(jid))
                                if got is not None and abs(got - st) < 1e-9:
                                    same += 1
                                elif first is None:
                                    first = {
                                        "sequence": it,
                                        "job": int(jid),
                                        "rlscheduler": st,
                                        "ours": got,
                                    }
                        row[variant] = {
                            "bsld": float(np.mean([r["bsld"] for r in m_runs])),
                            "util": float(np.mean([r["util"] for r in m_runs])),
                            "jobs_same_start": same,
                            "jobs": total,
                            "first_difference": first,
                        }
                    variant = score if score in ("fcfs", "sjf", "f1") else f"{score}-rls"
                    same = total = 0
                    for tr, mr in zip(t_runs, serial["runs"][variant]):
                        for jid, st in tr["start"].items():
                            total += 1
                            same += int(abs(mr["start"][int(jid)] - st) < 1e-9)
                    row["one_event_at_a_time"] = {
                        "variant": variant,
                        "jobs_same_start": same,
                        "jobs": total,
                    }
                    case["rows"].append(row)
                sp_t = theirs["speed"]
                sp_o = speed_ours(trace, backfill, batch, mine["starts"], args)
                case["speed"] = {
                    "rlscheduler_steps_per_s": sp_t["steps"] / sp_t["seconds"],
                    "ours_steps_per_s": sp_o["steps"] / sp_o["seconds"],
                    "rlscheduler_steps": sp_t["steps"],
                    "ours_steps": sp_o["steps"],
                    "ours_engine": sp_o["engine"],
                }
                case["speed"]["ratio"] = (
                    case["speed"]["ours_steps_per_s"] / case["speed"]["rlscheduler_steps_per_s"]
                )
                report["cases"].append(case)
                print(f"== {tname}, backfill {backfill}: same sequences {case['same_sequences']}")
                for row in case["rows"]:
                    m = row[row["score"]]
                    extra = ""
                    if f"{row['score']}-rls" in row:
                        x = row[f"{row['score']}-rls"]
                        extra = f" | as coded: {x['bsld']:.2f} ({x['jobs_same_start']}/{x['jobs']} same)"
                    o = row["one_event_at_a_time"]
                    extra += f" | one event at a time ({o['variant']}): {o['jobs_same_start']}/{o['jobs']} same"
                    print(
                        f"  {row['score']:7s} published {row['published_bsld']:9.2f}  RLScheduler env "
                        f"{row['rlscheduler_env_bsld']:9.2f}  ours {m['bsld']:9.2f} "
                        f"({m['jobs_same_start']}/{m['jobs']} same start){extra}"
                    )
                s = case["speed"]
                print(
                    f"  speed: RLScheduler {s['rlscheduler_steps_per_s']:.0f} steps/s, ours "
                    f"{s['ours_steps_per_s']:.0f} steps/s ({s['ratio']:.1f}x)"
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_name(f".{args.out.name}.tmp")
    tmp_out.write_text(json.dumps(report, indent=1))
    tmp_out.replace(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
