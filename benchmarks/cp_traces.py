"""CP dispatchers on whole traces: speed, validity and quality next to EASY and FIFO.

Runs a list of (trace, dispatcher spec) pairs, each in its own subprocess with a time limit,
and appends one JSON line per finished run to ``--out`` (default ``cp_traces.jsonl``); runs
that finished ("ok") in that file are skipped, so an interrupted campaign resumes where it
stopped; a run recorded as an error is tried again (its newest line is the one reported).

    python benchmarks/cp_traces.py --plan priority            # the runs the issue's bars need first
    python benchmarks/cp_traces.py --plan full                # + every version x predictor
    python benchmarks/cp_traces.py --runs "SDSC-SP2:hcp-R:version=1;LLNL-Atlas:easy;KTH-SP2@10000:hcp"
    python benchmarks/cp_traces.py --report                   # table (markdown) of what is done
    python benchmarks/cp_traces.py --report --trace LLNL-Atlas  # ... of one trace only
    python benchmarks/cp_traces.py --matrix --trace SDSC-SP2    # dispatcher x version x predictor:
                                                              # mean bsld / wait, or journal progress

Each record: trace, spec, jobs, simulation wall time, decisions, decision time mean / p99 /
max, solver statuses, fallbacks, model size, validity, mean wait, mean (bounded) slowdown.

Every CP run writes a decision journal (``--journals``, outside the repository by default):
a run stopped by its time limit or by the end of a session resumes from its last recorded
decision the next time, replaying the recorded ones without solving again (the decision
times reported are the recorded ones; ``wall_s`` is the last, resumed part only).

Sessions on a fresh machine lose ``../cp-journals``; ``--park`` gzips the journals of the
unfinished runs into ``benchmarks/results/cp/journals/`` (commit them), and a run whose journal
is missing starts from its parked copy there (``--parked``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
FILES = {
    "LLNL-Atlas": "LLNL-Atlas-2006-2.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": "HPC2N-2002-2.2-cln.swf.gz",
}


def trace_path(trace: str) -> tuple[Path, int | None]:
    """``NAME`` (whole trace) or ``NAME@N`` (its first N jobs by submit time)."""
    name, _, n = trace.partition("@")
    return TRACES / FILES.get(name, name), (int(n) if n else None)


WORKER = r"""
import collections, json, sys, time
import numpy as np
from hpcdispatch.dispatchers import DispatcherSpec
from hpcdispatch.runner import run_simulation
from hpcdispatch.sim import SimulationOptions
from hpcdispatch.workload import load_workload, resolve_system
from hpcdispatch.workload.swf import SwfOptions
path, spec, max_jobs, journal = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
system = resolve_system("auto", path)
wl = load_workload(path, system, SwfOptions(max_jobs=int(max_jobs) if max_jobs != "all" else None))
t0 = time.perf_counter()
out = run_simulation(system, wl, spec, options=SimulationOptions(), journal=journal if journal != "-" else None)
wall = time.perf_counter() - t0
infos = out.result.decisions["info"]
dt = out.result.decisions["elapsed"]
variables = [i["variables"] for i in infos if "variables" in i]
s = out.summary
print(json.dumps({
    "jobs": len(wl), "wall_s": wall, "valid": out.validation.ok, "decisions": int(len(dt)),
    "decision_mean_ms": float(1000 * dt.mean()), "decision_p99_ms": float(1000 * np.percentile(dt, 99)),
    "decision_max_ms": float(1000 * dt.max()),
    "statuses": dict(collections.Counter(str(i.get("status")) for i in infos)),
    "fallbacks": dict(collections.Counter(str(i.get("fallback")) for i in infos if i.get("fallback"))),
    # rejected hints of a complete rule schedule (pcp20 leaves jobs it cannot lay out unhinted)
    "hint_infeasible": sum(i.get("hint_feasible") is False and not i.get("unhinted_jobs") for i in infos),
    # paper_v1: decisions where no schedule fitted CP'19's version-1 horizon (every job waited)
    "postponed_all": sum("postponed_all" in i for i in infos),
    "variables_median": float(np.median(variables)) if variables else 0.0,
    "variables_max": int(max(variables)) if variables else 0,
    "wait_mean": s["wait_mean"], "slowdown_mean": s["slowdown_mean"], "bsld_mean": s["bounded_slowdown_mean"],
    "predictor": s["predictor"], "prediction_mae_s": s.get("prediction_mae_s"),
    "journal": s.get("journal"),
    "dispatcher": DispatcherSpec.parse(spec).identity(),
}))
"""

BASE = ["fifo", "easy"]
#: traces whose jobs have names for the data-driven predictor (D): SWF executable numbers
NAMED = ("LLNL-Atlas", "SDSC-SP2")
CP = ["cp-rule", "hcp", "cp-hybrid", "pcp20", "pcp19"]


def plan(name: str) -> list[tuple[str, str]]:
    runs: list[tuple[str, str]] = []
    traces = ["LLNL-Atlas", "SDSC-SP2"]
    # 1. speed and quality bars: every dispatcher, v3, wall-times and oracle
    for trace in traces:
        for pred in ("W", "R"):
            for d in BASE + CP:
                runs.append((trace, f"{d}-{pred}"))
    # 2. CP'19 orderings: v3-R vs v1-W, v2-L2 vs v1-L2
    for trace in traces:
        for d in ("hcp", "cp-hybrid", "pcp20", "pcp19"):
            runs += [
                (trace, f"{d}-W:version=1"),
                (trace, f"{d}-L2:version=1"),
                (trace, f"{d}-L2:version=2"),
            ]
        for d in BASE:
            runs.append((trace, f"{d}-L2"))
    if name == "full":
        for trace in traces:
            preds = ["W", "L2", "R"] + (["D"] if trace in NAMED else [])
            for d in ("hcp", "pcp19", "pcp20", "cp-hybrid"):
                for v in (1, 2, 3):
                    for p in preds:
                        runs.append((trace, f"{d}-{p}:version={v}" if v != 3 else f"{d}-{p}"))
    seen, unique = set(), []
    for r in runs:
        if r not in seen:
            seen.add(r)
            unique.append(r)
    return unique


def same_dispatcher(record: dict, spec: str) -> bool:
    """Whether ``record`` ran the dispatcher ``spec`` names today. Records carry the
    dispatcher's identity (``Dispatcher.identity``: name and parameters, compared as data,
    a parameter added later counting at the value it was added with); the oldest ones carry
    none and ran before every parameter of ``ADDED_PARAMS``, so they match only while those
    are at the values they were added with (a record from before ``job_symmetry`` is a run
    with ``job_symmetry=false``)."""
    from hpcdispatch.dispatchers import DispatcherSpec

    disp = DispatcherSpec.parse(spec).build()
    if "dispatcher" in record:
        return disp.matches_identity(record["dispatcher"])
    params = disp.get_params()
    return all(params[k] == v for k, v in disp.ADDED_PARAMS.items() if k in params)


def job_symmetry_of(record: dict) -> str:
    """'yes' / 'no' for CP runs (records from before the option: 'no'), '' otherwise."""
    if record["spec"].split("-")[0] not in ("hcp", "pcp19", "pcp20", "cp") or record[
        "spec"
    ].startswith("cp-rule"):
        return ""
    return (
        "yes"
        if (record.get("dispatcher") or {}).get("params", {}).get("job_symmetry") is True
        else "no"
    )


def done(out: Path) -> dict[tuple[str, str, str], dict]:
    """The newest record of each (trace, spec, job symmetry) in ``out``."""
    if not out.exists():
        return {}
    rows = {}
    for line in out.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            rows[(r["trace"], r["spec"], job_symmetry_of(r))] = r
    return rows


def _wait(seconds: float) -> str:
    """Whole seconds, but two decimals below 100 s (LLNL-Atlas waits are a few seconds)."""
    return f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:.2f}"


def _ms(ms: float) -> str:
    """Decision time: one decimal below 100 ms."""
    return f"{ms:.1f}" if ms < 100 else f"{ms:,.0f}"


def report(out: Path, trace: str | None = None) -> str:
    rows = done(out)
    if trace:
        rows = {k: r for k, r in rows.items() if k[0] == trace}
    cols = [
        "trace",
        "spec",
        "job sym.",
        "jobs",
        "valid",
        "wall s",
        "decisions",
        "mean ms",
        "p99 ms",
        "max ms",
        "fallbacks",
        "vars med/max",
        "mean wait s",
        "mean slowdown",
        "mean bsld",
    ]
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    resumed = False
    for (trace, spec, _sym), r in rows.items():
        if r.get("status") != "ok":
            md.append(
                f"| {trace} | {spec} | {job_symmetry_of(r)} | | | {r.get('status')} | | | | | | | | | |"
            )
            continue
        md.append(
            "| "
            + " | ".join(
                [
                    trace,
                    spec,
                    job_symmetry_of(r),
                    f"{r['jobs']:,}",
                    "yes" if r["valid"] else "NO",
                    _wall(r),
                    f"{r['decisions']:,}",
                    f"{r['decision_mean_ms']:.1f}",
                    _ms(r["decision_p99_ms"]),
                    f"{r['decision_max_ms']:,.0f}",
                    _fallbacks(r),
                    f"{r['variables_median']:.0f}/{r['variables_max']}",
                    _wait(r["wait_mean"]),
                    f"{r['slowdown_mean']:.2f}",
                    f"{r['bsld_mean']:.3f}",
                ]
            )
            + " |"
        )
        resumed = resumed or _wall(r).endswith("*")
    if resumed:
        md += [
            "",
            "\\* resumed from its decision journal: wall s covers the last part only (the "
            "decision times are the recorded ones).",
        ]
    return "\n".join(md)


MODELS = ["hcp", "cp-hybrid", "pcp19", "pcp20"]
ISSUE_MODELS = ["hcp", "pcp19", "pcp20"]  # the matrix issue 4 asks for on both whole traces
PREDICTORS = ["W", "L2", "R", "D"]


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``hcp-L2:version=2,job_symmetry=false`` -> ("hcp", "L2", {"version": "2", "job_symmetry": "false"})."""
    head, _, tail = spec.partition(":")
    name, _, pred = head.rpartition("-")
    params = dict(kv.split("=", 1) for kv in tail.split(",") if kv)
    return name, pred, params


def journal_progress(trace: str, spec: str, journals: Path, parked: Path) -> tuple[str, int] | None:
    """("started", n) or ("parked", n): decisions in the longer of the run's local and parked
    journals (the one a resumed run would start from); None when there is neither."""
    best = None
    local = journal_path(journals, trace, spec)
    for where, path, opener in (
        ("started", local, open),
        ("parked", parked / (local.name + ".gz"), gzip.open),
    ):
        if path.exists():
            with opener(path, "rb") as fh:
                n = sum(1 for _ in fh) - 1  # the first line is the run's header
            if best is None or n > best[1]:
                best = (where, n)
    return best


def matrix(out: Path, trace: str, journals: Path, parked: Path) -> str:
    """Where the whole-trace matrix stands: one row per CP model and version (and the
    baselines), one column per predictor; a cell is the finished run's mean bsld and mean
    wait (the newest valid record with default options; with job symmetry where both exist,
    † marks a run without it), or the progress of its decision journal, or "-"."""
    cells: dict[tuple[str, str, str], tuple[int, str]] = {}
    for (tr, spec, sym), r in done(out).items():
        if tr != trace or r.get("status") != "ok" or not r["valid"]:
            continue
        name, pred, params = parse_spec(spec)
        version = params.pop("version", "3")
        symmetric = params.pop("job_symmetry", None) != "false" and sym != "no"
        if params:  # reserve=1, keep_blocked=true, ...: not the matrix's default settings
            continue
        text = f"{r['bsld_mean']:.2f} / {_wait(r['wait_mean'])}" + (
            "" if symmetric or not sym else " †"
        )
        key = (name, version, pred)
        if key not in cells or symmetric >= cells[key][0]:
            cells[key] = (int(symmetric), text)
    preds = [p for p in PREDICTORS if p != "D" or trace in NAMED or any(k[2] == "D" for k in cells)]
    md = ["| dispatcher | version | " + " | ".join(preds) + " |", "|---|---|" + "---|" * len(preds)]
    counts = {"done": 0, "started": 0, "parked": 0, "to run": 0}
    for name in BASE + CP:
        versions = ["1", "2", "3"] if name in MODELS else ["3"]
        for v in versions:
            row = []
            for p in preds:
                spec = f"{name}-{p}" + (f":version={v}" if v != "3" else "")
                if (name, v, p) in cells:
                    state, text = "done", cells[(name, v, p)][1]
                else:  # read a journal only for a run that has not finished
                    progress = (
                        journal_progress(trace, spec, journals, parked) if name in MODELS else None
                    )
                    state, text = (
                        (progress[0], f"{progress[0]} {progress[1]:,}")
                        if progress
                        else ("to run", "-")
                    )
                row.append(text)
                if name in ISSUE_MODELS:
                    counts[state] += 1
            if name not in MODELS and all(c == "-" for c in row):
                continue
            md.append(f"| {name} | {v if name in MODELS else ''} | " + " | ".join(row) + " |")
    md += [
        "",
        f"Cells: mean bounded slowdown / mean wait s of the finished, valid run (default options; "
        f'† without job symmetry); "started N" / "parked N": decisions in its local / parked journal; "-": not run. '
        f"hcp, pcp19 and pcp20 x versions 1-3 x {', '.join(preds)}: "
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + ".",
    ]
    return "\n".join(md)


def _wall(r: dict) -> str:
    """Wall seconds of the run, starred when it replayed journalled decisions."""
    replayed = (r.get("journal") or {}).get("replayed", 0)
    return f"{r['wall_s']:,.0f}" + ("*" if replayed else "")


def _fallbacks(r: dict) -> str:
    """Rule fallbacks, and of them those whose hint the model rejected (a defect, not the
    solver's limit; counted since the fifteenth session)."""
    n = str(sum(r["fallbacks"].values()))
    n = f"{n} ({r['hint_infeasible']} bad hint)" if r.get("hint_infeasible") else n
    return f"{n}; {r['postponed_all']:,} all waited" if r.get("postponed_all") else n


def is_finished(finished: dict, trace: str, spec: str) -> bool:
    """A finished ("ok") record of this run, made by the dispatcher ``spec`` names today."""
    return any(
        k[:2] == (trace, spec) and r.get("status") == "ok" and same_dispatcher(r, spec)
        for k, r in finished.items()
    )


def journal_path(directory: Path, trace: str, spec: str) -> Path:
    return directory / f"{trace}__{spec.replace(':', '_').replace('=', '')}.jsonl"


def park(runs: list[tuple[str, str]], finished: dict, journals: Path, parked: Path) -> None:
    """Keep the journals of unfinished runs in the repository (gzipped); drop parked copies of
    runs that have finished since."""
    parked.mkdir(parents=True, exist_ok=True)
    for trace, spec in runs:
        src = journal_path(journals, trace, spec)
        dst = parked / (src.name + ".gz")
        if is_finished(finished, trace, spec):
            if dst.exists():
                dst.unlink()
                print(f"{trace} {spec}: finished; parked journal removed")
            continue
        if src.exists():
            with open(src, "rb") as fin, gzip.open(dst, "wb", compresslevel=9) as fout:
                shutil.copyfileobj(fin, fout)
            lines = sum(1 for _ in open(src))
            print(
                f"{trace} {spec}: {lines - 1} decisions parked in {dst} ({dst.stat().st_size / 1e6:.1f} MB)"
            )


def main() -> None:
    # `kill`/`pkill` of this script must not orphan the worker of the current run: it would go
    # on writing the journal, hold its lock and lose its result. SIGTERM becomes SystemExit,
    # on which subprocess.run kills the worker.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--plan", choices=["priority", "full"], default="priority")
    ap.add_argument("--runs", default="", help="explicit TRACE:SPEC list separated by ';'")
    ap.add_argument("--out", type=Path, default=Path("cp_traces.jsonl"))
    ap.add_argument("--time-limit", type=float, default=6 * 3600.0)
    ap.add_argument(
        "--journals",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "cp-journals",
        help="directory of the runs' decision journals (default: ../cp-journals, outside the repo)",
    )
    ap.add_argument(
        "--parked",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "cp" / "journals",
        help="gzipped journals of unfinished runs kept in the repository (see --park)",
    )
    ap.add_argument(
        "--park",
        action="store_true",
        help="gzip the journals of the unfinished runs of --runs/--plan into --parked and stop",
    )
    ap.add_argument("--report", action="store_true")
    ap.add_argument(
        "--matrix",
        action="store_true",
        help="with --trace: dispatcher x version x predictor table of finished and journalled runs",
    )
    ap.add_argument(
        "--trace",
        default=None,
        help="with --report: only this trace's rows (e.g. LLNL-Atlas); needed by --matrix",
    )
    args = ap.parse_args()
    if args.matrix:
        if not args.trace:
            ap.error("--matrix needs --trace (e.g. --trace SDSC-SP2)")
        print(matrix(args.out, args.trace, args.journals, args.parked))
        return
    if args.report:
        print(report(args.out, args.trace))
        return
    runs = (
        [tuple(r.split(":", 1)) for r in args.runs.split(";") if r.strip()]
        if args.runs
        else plan(args.plan)
    )
    finished = done(args.out)
    if args.park:
        park(runs, finished, args.journals, args.parked)
        return
    for trace, spec in runs:
        if is_finished(finished, trace, spec):
            continue
        path, max_jobs = trace_path(trace)
        t0 = time.perf_counter()
        print(f"{trace} {spec} ...", flush=True)
        journal = "-"
        if spec.split("-")[0] in (
            "cp",
            "hcp",
            "pcp19",
            "pcp20",
        ):  # memoryless and slow: journal them
            args.journals.mkdir(parents=True, exist_ok=True)
            journal = str(journal_path(args.journals, trace, spec))
            parked = args.parked / (Path(journal).name + ".gz")
            if not Path(journal).exists() and parked.exists():
                with gzip.open(parked, "rb") as src, open(journal, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                print(f"  resuming from the parked journal {parked}", flush=True)
        try:
            proc = subprocess.run(
                [sys.executable, "-c", WORKER, str(path), spec, str(max_jobs or "all"), journal],
                capture_output=True,
                text=True,
                timeout=args.time_limit,
            )
            if proc.returncode != 0:
                rec = {"status": "error", "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
                if "in use by another process" in rec["error"]:  # another campaign runs it now
                    print("  running in another campaign; skipped", flush=True)
                    continue
            else:
                rec = {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}
        except subprocess.TimeoutExpired:
            rec = {"status": f"stopped after {args.time_limit:.0f} s"}
            if journal != "-":  # not finished: the next invocation resumes it from its journal
                print(
                    f"  stopped after {args.time_limit:.0f} s; journal {journal} kept", flush=True
                )
                continue
        rec.update(trace=trace, spec=spec, total_s=time.perf_counter() - t0)
        with args.out.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"  {rec['status']} in {rec['total_s']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
