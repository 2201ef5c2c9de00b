"""External mode on a real Slurm: AUCSCHED and PCP'20 deciding for an emulated cluster
(``hpcdispatch slurm dispatch``), next to Slurm's own backfill (``slurm replay``) and to our
simulation of each (``hpcdispatch simulate``) on the same workload. docs/RESULTS-SLURM-EXTERNAL.md.

    # 16 nodes x 8 cores x 2 GPUs, 100 jobs (one cluster, brought up and down by the script)
    nice python3 benchmarks/slurm_external.py run16 --seed 1
    # the uneven-layout probe: jobs of loose cores (--ntasks), uneven starts pinned as hetjobs
    nice python3 benchmarks/slurm_external.py run16 --seed 1 --mix nodes --runs replay,aucsched --sim slurm-bf,aucsched
    # the AUCSCHED paper's Table 5 rows I.1 and V.3 on 128 nodes (scaled run times)
    nice python3 benchmarks/slurm_external.py table5 --row I.1 --scale 0.03
    # the tables from the JSON lines
    python3 benchmarks/slurm_external.py report

Every run appends one JSON line to ``benchmarks/results/slurm/external.jsonl``: the kind
(``real-dispatch``, ``real-replay``, ``sim``), the workload, the dispatcher, the metrics in
workload seconds, and for external runs the checks against Slurm's records (squeue and
jobcomp/filetxt): jobs started exactly once, on exactly the nodes and cores chosen.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "slurm"
LINES = RESULTS / "external.jsonl"
WORK = Path("/tmp/hpcdispatch-slurm-ext-runs")
HEADER = "id,submit,user,run_time,time_limit,ntasks,nodes,ntasks_per_node,gres,contiguous\n"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def cli(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    cmd = ["nice", "-n", "5", sys.executable, "-m", "hpcdispatch", *args]
    print("$", " ".join(cmd[3:]), flush=True)
    began = time.monotonic()
    proc = subprocess.run(
        cmd, env=ENV, capture_output=True, text=True, timeout=timeout, check=False
    )
    print(
        proc.stdout.strip()[-1500:],
        proc.stderr.strip()[-1500:],
        f"[{time.monotonic() - began:.0f} s, exit {proc.returncode}]",
        sep="\n",
        flush=True,
    )
    return proc


# ---- the 16-node workload -------------------------------------------------------------------
def workload16(seed: int, mix: str, path: Path) -> Path:
    """100 jobs for 16 nodes x 8 cores x 2 GPUs: run times 5-60 s (the issue's fidelity
    workload), Poisson arrivals, time limits ceil((run + 15) / 60) minutes.

    ``mix=cores`` (the external-mode workload): every job ``--ntasks={1..24}`` loose cores, mean
    gap 3 s (offered load about 1.05 of the 128 cores). PCP'20 models no node constraints
    (``-N``, ``--ntasks-per-node``, per-node GRES), so a workload both AUCSCHED and PCP'20 run
    has core-only jobs; a dispatcher may then spread a job unevenly over nodes (see the
    bridge's hetjob mode). ``mix=nodes`` (the issue's fidelity mix, AUCSCHED and Slurm only):
    ``-N {1,2,4} --ntasks-per-node={1..8} --gres=gpu:{0,1,2}``, mean gap 2 s."""
    rng = np.random.default_rng([seed, 16, 100])
    t = 0.0
    rows = []
    for k in range(100):
        t += rng.exponential(3.0 if mix == "cores" else 2.0)
        run = int(rng.integers(5, 61))
        limit = math.ceil((run + 15) / 60)
        if mix == "cores":
            rows.append(f"{k + 1},{int(t)},u{k % 4},{run},{limit},{int(rng.integers(1, 25))},,,,")
        else:
            nodes = int(rng.choice([1, 2, 4]))
            tpn = int(rng.integers(1, 9))
            gpus = int(rng.integers(0, 3))
            rows.append(
                f"{k + 1},{int(t)},u{k % 4},{run},{limit},,{nodes},{tpn},{f'gpu:{gpus}' if gpus else ''},"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


# ---- checks against Slurm's records ---------------------------------------------------------
def slurm_checks(run_dir: Path, cluster_dir: Path) -> dict:
    """From Slurm's own records: every workload job started exactly once (one started Slurm job
    per workload job, hetjob components counted as one job; one jobcomp line per Slurm job)
    and on exactly the nodes (jobcomp) and cores per node (squeue) its dispatcher chose (the
    journal)."""
    sys.path.insert(0, str(ROOT / "src"))
    from hpcdispatch.slurm.records import parse_squeue_json, read_jobcomp

    run = json.loads((run_dir / "run.json").read_text())
    bridge = run["bridge"]
    t0 = bridge["t0_epoch"]
    env = {**os.environ, "SLURM_CONF": str(cluster_dir / "etc" / "slurm.conf")}
    out = subprocess.run(
        ["squeue", "--json", "-t", "all"], env=env, capture_output=True, text=True, check=True
    ).stdout
    records = [r for r in parse_squeue_json(out) if r.name.startswith(f"hpcb-{t0}-")]
    comp, _damaged = read_jobcomp(cluster_dir / "log" / "jobcomp.txt")
    comp_by_id = Counter(c.job_id for c in comp)
    comp_nodes = {c.job_id: sorted(c.nodes) for c in comp}
    # journal: workload job id -> chosen {node name: cores}
    system_toml = cluster_dir / "system.toml"
    from hpcdispatch.system.io import load_system

    system = load_system(str(system_toml))
    chosen: dict[int, dict[str, int]] = {}
    lines = (run_dir / "journal.jsonl").read_text().splitlines()[1:]
    for line in lines:
        rec = json.loads(line)
        for _index, jid, nodes, units in rec.get("starts", []):
            chosen[int(jid)] = {system.node_name(n): u for n, u in zip(nodes, units)}
    started: dict[int, list] = {}
    for r in records:
        jid = int(r.name.split("-")[2])
        if r.cores:  # got cores (a held job cancelled for its hetjob has none)
            started.setdefault(jid, []).append(r)
    once = 0
    twice, nodes_ok, nodes_bad, comp_once, comp_missing = [], 0, [], 0, []
    for jid, recs in started.items():
        het = {r.het_job_id for r in recs if r.het_job_id}
        plain = [r for r in recs if not r.het_job_id]
        if len(plain) + len(het) == 1:
            once += 1
        else:
            twice.append(jid)
        got: dict[str, int] = {}
        comp_node_set: list[str] = []
        for r in recs:
            for n, c in r.cores.items():
                got[n] = got.get(n, 0) + c
            if comp_by_id.get(r.job_id) == 1:
                comp_once += 1
                comp_node_set += comp_nodes[r.job_id]
            else:
                comp_missing.append(r.job_id)
        want = chosen.get(jid)
        if want is not None and sorted(want) == sorted(got) == sorted(comp_node_set):
            nodes_ok += 1
        else:
            nodes_bad.append({"job": jid, "chosen": want, "squeue": got, "jobcomp": comp_node_set})
    decided_at = {}
    first_submit, scale = bridge["first_submit"], bridge["time_scale"]
    for line in lines:
        rec = json.loads(line)
        for _index, jid, _nodes, _units in rec.get("starts", []):
            decided_at[int(jid)] = t0 + (rec["t"] - first_submit) * scale
    lags: dict[str, list[float]] = {"plain": [], "hetjob": []}
    for jid, recs in started.items():
        if jid in decided_at:
            kind = "hetjob" if any(r.het_job_id for r in recs) else "plain"
            lags[kind].append(min(r.start for r in recs) - decided_at[jid])
    lag = {
        k: {"n": len(v), "mean_s": round(float(np.mean(v)), 2), "max_s": round(float(np.max(v)), 2)}
        for k, v in lags.items()
        if v
    }
    calls = [json.loads(line) for line in lines]
    statuses = Counter(
        str((c.get("info") or {}).get("status", "-")) for c in calls if "error" not in c
    )
    elapsed = [c["elapsed"] for c in calls if "elapsed" in c]
    return {
        "start_lag_real_s": lag,
        "solver_status": dict(statuses),
        "decide_s_mean": round(float(np.mean(elapsed)), 4) if elapsed else None,
        "decide_s_max": round(float(np.max(elapsed)), 3) if elapsed else None,
        "workload_jobs_started": len(started),
        "started_once": once,
        "started_more_than_once": twice[:10],
        "node_sets_match_journal_squeue_jobcomp": nodes_ok,
        "node_sets_differ": nodes_bad[:10],
        "jobcomp_one_line_per_slurm_job": comp_once,
        "jobcomp_missing_or_repeated": comp_missing[:10],
        "cores_per_node_exact": bridge["placement"]["exact"],
        "cores_per_node_wrong": bridge["placement"]["wrong"],
        "dispatcher_calls": bridge["dispatcher_calls"],
        "refused": len(bridge.get("refused", {})),
        "hetjobs": bridge.get("hetjobs", 0),
    }


# ---- metrics -----------------------------------------------------------------------------------
def metrics(run_dir: Path) -> dict:
    s = json.loads((run_dir / "summary.json").read_text())
    keys = {
        "makespan": "makespan",
        "wait_mean": "wait_mean",
        "bsld_mean": "bounded_slowdown_mean",
        "utilization": "utilization_core",
        "util_paper": "utilization_paper",
        "wait_std": "wait_std",
        "slowdown_ratio": "slowdown_ratio_mean",
        "fragmentation": "fragmentation_mean",
        "spread": "spread_mean",
        "jobs": "jobs",
        "theoretical_runtime_s": "theoretical_runtime_s",
    }
    out = {k: s.get(v) for k, v in keys.items()}
    return out


def validated(run_dir: Path) -> bool:
    proc = cli("validate", str(run_dir))
    return proc.returncode == 0


def record(line: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(LINES, "a") as fh:
        fh.write(json.dumps(line, default=str) + "\n")
    print("RESULT", json.dumps(line, default=str), flush=True)


# ---- one cluster -------------------------------------------------------------------------------
def cluster_up(nodes: int, cluster_dir: Path) -> float:
    began = time.monotonic()
    proc = cli(
        "slurm", "up", "-s", "machine-s", "-N", str(nodes), "--dir", str(cluster_dir), timeout=600
    )
    if proc.returncode != 0:
        raise SystemExit(f"slurm up failed: {proc.stderr.strip()[-500:]}")
    return time.monotonic() - began


def idle_nodes(cluster_dir: Path) -> str:
    env = {**os.environ, "SLURM_CONF": str(cluster_dir / "etc" / "slurm.conf")}
    return subprocess.run(
        ["sinfo", "-h", "-o", "%D %T"], env=env, capture_output=True, text=True
    ).stdout.strip()


def cluster_down(cluster_dir: Path) -> None:
    if cluster_dir.exists():
        cli("slurm", "down", "--dir", str(cluster_dir), timeout=600)


def real_runs(
    label: str,
    wl: str,
    cluster_dir: Path,
    scale: float,
    runs: list[str],
    specs: dict[str, str],
    extra: dict,
) -> None:
    for name in runs:
        out = WORK / f"{label}-{name}"
        began = time.time()
        if name == "replay":
            proc = cli(
                "slurm",
                "replay",
                wl,
                "-x",
                str(scale),
                "--dir",
                str(cluster_dir),
                "-o",
                str(out),
                "--force",
            )
            kind = "real-replay"
        else:
            proc = cli(
                "slurm",
                "dispatch",
                wl,
                "-d",
                specs[name],
                "-x",
                str(scale),
                "--dir",
                str(cluster_dir),
                "-o",
                str(out),
                "--force",
                "--budget",
                "120",
            )
            kind = "real-dispatch"
        line = {
            "label": label,
            "kind": kind,
            "name": name,
            "spec": specs.get(name, "slurm backfill"),
            "workload": wl,
            "time_scale": scale,
            "exit": proc.returncode,
            "wall_s": round(time.time() - began, 1),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **extra,
        }
        if (out / "summary.json").exists():
            line.update(metrics(out))
            line["valid"] = validated(out)
            if kind == "real-dispatch":
                line["checks"] = slurm_checks(out, cluster_dir)
            else:
                run = json.loads((out / "run.json").read_text())
                line["jobcomp"] = run["replay"]["jobcomp"]
                line["slurm_states"] = run["replay"]["slurm_states"]
        else:
            line["error"] = (proc.stderr or proc.stdout).strip()[-800:]
        record(line)


def sim_runs(
    label: str, wl: str, system: str, runs: list[str], specs: dict[str, str], extra: dict
) -> None:
    for name in runs:
        spec = specs[name]
        out = WORK / f"{label}-sim-{name}"
        proc = cli("simulate", "-w", wl, "-s", system, "-d", spec, "-o", str(out), "--force")
        line = {
            "label": label,
            "kind": "sim",
            "name": name,
            "spec": spec,
            "workload": wl,
            "exit": proc.returncode,
            **extra,
        }
        if (out / "summary.json").exists():
            line.update(metrics(out))
            line["valid"] = validated(out)
        record(line)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("run16")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--mix", choices=["cores", "nodes"], default="cores")
    a.add_argument("--runs", default="replay,aucsched,pcp20")
    a.add_argument("--sim", default="slurm-bf,slurm-bf-cluster,aucsched,pcp20")
    b = sub.add_parser("table5")
    b.add_argument("--row", required=True, help="I.1 or V.3")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--scale", type=float, default=0.03)
    b.add_argument("--runs", default="aucsched,replay")
    b.add_argument("--sim", default="slurm-bf,slurm-bf-cluster,aucsched,aucsched-paper")
    for p in (a, b):
        p.add_argument("--reuse", action="store_true", help="use the script's cluster if it is up")
        p.add_argument("--keep-up", action="store_true", help="leave the cluster up at the end")
    sub.add_parser("report")
    c = sub.add_parser(
        "recheck", help="recompute metrics and checks of a finished external run (cluster still up)"
    )
    c.add_argument("label")
    c.add_argument("name")
    c.add_argument("--cluster", default="/tmp/hpcdispatch-slurm-ext-16")
    args = ap.parse_args()
    if args.cmd == "report":
        report()
        return
    if args.cmd == "recheck":
        rows = [json.loads(x) for x in LINES.read_text().splitlines() if x.strip()]
        line = [
            r
            for r in rows
            if r["label"] == args.label
            and r.get("name") == args.name
            and r.get("kind") == "real-dispatch"
        ][-1]
        out = WORK / f"{args.label}-{args.name}"
        line.update(metrics(out))
        line["checks"] = slurm_checks(out, Path(args.cluster))
        line["rechecked"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record(line)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    if args.cmd == "run16":
        label = f"n16-{args.mix}-s{args.seed}"
        wl = str(workload16(args.seed, args.mix, WORK / f"{label}.csv"))
        specs = {
            "aucsched": "aucsched:time_limit=1",
            "pcp20": "pcp20",
            "slurm-bf": "slurm-bf",
            # the emulated cluster's SchedulerParameters (hpcdispatch.slurm.config), time scale 1
            "slurm-bf-cluster": "slurm-bf:bf_interval=1,bf_resolution=1,bf_max_job_test=1000",
        }
        cluster_dir = Path("/tmp/hpcdispatch-slurm-ext-16")
        nodes, scale, system = 16, 1.0, str(cluster_dir / "system.toml")
        extra = {"nodes": 16, "mix": args.mix, "seed": args.seed}
    else:
        workload_name, version = args.row.split(".")
        label = f"t5-{args.row}-s{args.seed}-x{args.scale:g}"
        wl = f"synthetic:aucsched,workload={workload_name},version={version},seed={args.seed},runtime_h=4"
        # CP-SAT's 5 s per step of the paper scaled like every other duration: a step's solve
        # must not take longer in workload time than in the paper
        tl = max(0.1, round(5 * args.scale, 3))
        tick = round(1 / args.scale)  # the cluster's 1 s timers in workload seconds
        specs = {
            "aucsched": f"aucsched:time_limit={tl},priority=basic",
            "slurm-bf": "slurm-bf",
            "aucsched-paper": "aucsched:time_limit=5,priority=basic",
            "slurm-bf-cluster": f"slurm-bf:bf_interval={tick},bf_resolution={tick},bf_max_job_test=1000",
        }
        cluster_dir = Path("/tmp/hpcdispatch-slurm-ext-128")
        nodes, scale, system = 128, args.scale, "machine-s"
        extra = {"nodes": 128, "row": args.row, "seed": args.seed}
    runs = [r for r in args.runs.split(",") if r]
    if runs:
        if cluster_dir.exists() and not args.reuse:
            raise SystemExit(
                f"{cluster_dir} exists: a cluster of this script may be running (slurm down --dir ...)"
            )
        try:
            if not cluster_dir.exists():
                up_s = cluster_up(nodes, cluster_dir)
                record(
                    {
                        "label": label,
                        "kind": "cluster-up",
                        "nodes": nodes,
                        "up_s": round(up_s, 1),
                        "idle": idle_nodes(cluster_dir),
                    }
                )
            if args.cmd == "run16":
                (WORK / "machine-s-first16.toml").write_text(
                    (cluster_dir / "system.toml").read_text()
                )
            real_runs(label, wl, cluster_dir, scale, runs, specs, extra)
        finally:
            if not getattr(args, "keep_up", False):
                cluster_down(cluster_dir)
    sims = [r for r in args.sim.split(",") if r]
    if sims:
        sim_runs(
            label,
            wl,
            system if args.cmd == "table5" else str(WORK / "machine-s-first16.toml"),
            sims,
            specs,
            extra,
        )


def report() -> None:
    """One markdown table per workload label: the real runs, then the simulated ones."""
    rows = [json.loads(line) for line in LINES.read_text().splitlines() if line.strip()]
    last = {}
    for r in rows:  # a later line of the same run (recheck) replaces the earlier one
        last[(r["label"], r.get("kind"), r.get("spec"), r.get("name"))] = r
    rows = list(last.values())
    labels = list(dict.fromkeys(r["label"] for r in rows))
    for label in labels:
        print(f"\n### {label}\n")
        print(
            "| run | dispatcher | makespan (s) | mean wait (s) | mean bsld | core util. | valid | started once / "
            "exact nodes+cores / hetjobs | wall (s) |"
        )
        print("|---|---|---:|---:|---:|---:|---|---|---:|")
        for r in rows:
            if r["label"] != label or r.get("kind") not in ("real-dispatch", "real-replay", "sim"):
                continue
            if r.get("makespan") is None:
                print(f"| {r['kind']} | {r['spec']} | failed: {r.get('error', '')[:120]} |")
                continue
            c = r.get("checks")
            checks = (
                f"{c['started_once']}/{c['workload_jobs_started']} / {c['cores_per_node_exact']} / {c['hetjobs']}"
                if c
                else ""
            )
            print(
                f"| {r['kind']} | {r['spec']} | {r['makespan']:.0f} | {r['wait_mean']:.1f} | {r['bsld_mean']:.2f} | "
                f"{r['utilization']:.3f} | {r.get('valid')} | {checks} | {r.get('wall_s', '')} |"
            )


if __name__ == "__main__":
    main()
