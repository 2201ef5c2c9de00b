"""Paired comparisons across perturbed replicas of a trace, from a sweep's summary.

A sweep whose workloads are a trace as recorded plus ``submit_jitter`` replicas of it (see
``benchmarks/trace_noise.toml``, ``cp_orderings_noise.toml``, ``cp_hybrid_noise.toml``) gives
every run several draws of the same workload. This prints, per trace, each run's metric in
every draw (draw 0 = as recorded, then the replicas' seeds) with the mean and sd of the
replicas, and for each pair ``A:B`` in how many draws A beats B (lower is better), ties or loses, and
by how much on average. A difference that does not hold in (nearly) every draw is not evidence.

    python benchmarks/paired_draws.py OUT --pairs cp-hybrid:cp-rule,cp-hybrid-R:cp-rule-R
    python benchmarks/paired_draws.py OUT --metrics bounded_slowdown_mean,wait_mean --csv runs.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hpcdispatch.report.tables import markdown_rows

JITTER_KEYS = ("submit_jitter", "jitter_seed")


def draws(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, run label, draw) of the finished cells. Cells whose workload differs
    only in its jitter are draws of one ``trace`` (named after the recorded workload's label
    when the sweep has it); ``draw`` is 0 for the trace as recorded and the jitter seed for a
    replica. Failed cells and invalid schedules are refused, not silently dropped."""
    bad = summary[(summary["status"] != "done") | (summary["valid"] != True)]  # noqa: E712
    if len(bad):
        raise SystemExit(f"{len(bad)} cells failed or are not valid, e.g. {bad['label'].iloc[0]}")
    out = summary.copy()
    workloads = [json.loads(c)["workload"] for c in out["config"]]
    out["draw"] = [int(w.get("jitter_seed", 0)) for w in workloads]
    out["_key"] = [
        json.dumps({k: v for k, v in w.items() if k not in JITTER_KEYS}, sort_keys=True)
        for w in workloads
    ]
    out["_key"] = out["system_spec"].astype(str) + out["_key"]
    names = {k: g.sort_values("draw")["workload_label"].iloc[0] for k, g in out.groupby("_key")}
    out["trace"] = out["_key"].map(names)
    dup = out.duplicated(["trace", "run_label", "draw"])
    if dup.any():
        raise SystemExit(f"two cells for one draw: {out.loc[dup, 'label'].iloc[0]}")
    return out.drop(columns="_key")


def per_run(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per trace and run: the metric in draws 0..n, and the replicas' mean and sd."""
    table = []
    for (trace, run), g in rows.groupby(["trace", "run_label"], sort=False):
        g = g.sort_values("draw")
        replicas = g.loc[g["draw"] > 0, metric].to_numpy()
        table.append(
            {
                "trace": trace,
                "run": run,
                "draws": ", ".join(_fmt(v) for v in g[metric]),
                "replicas": f"{_fmt(replicas.mean())} ± {_fmt(replicas.std(ddof=1))}"
                if len(replicas) > 1
                else "",
                "range / median": f"{_spread(g[metric].to_numpy()):.0%}",
            }
        )
    return pd.DataFrame(table)


def paired(rows: pd.DataFrame, a: str, b: str, metric: str) -> list[dict]:
    """For every trace where both runs exist: the draws where ``a`` is lower than, equal to and
    higher than ``b``, and the mean relative difference (a - b) / b over the common draws."""
    result = []
    for trace, g in rows.groupby("trace", sort=False):
        va = g[g["run_label"] == a].set_index("draw")[metric]
        vb = g[g["run_label"] == b].set_index("draw")[metric]
        common = va.index.intersection(vb.index)
        if not len(common):
            continue
        diff = (va[common] - vb[common]) / vb[common]
        result.append(
            {
                "trace": trace,
                "pair": f"{a} vs {b}",
                "metric": metric,
                "a wins / ties / loses": f"{int((va[common] < vb[common]).sum())} / "
                f"{int((va[common] == vb[common]).sum())} / "
                f"{int((va[common] > vb[common]).sum())}",
                "mean diff": f"{diff.mean():+.2%}",
                "min..max diff": f"{diff.min():+.2%} .. {diff.max():+.2%}",
            }
        )
    return result


def _markdown(frame: pd.DataFrame) -> str:
    return markdown_rows(
        list(frame.columns), [[str(v) for v in row] for row in frame.itertuples(index=False)]
    )


def _spread(values: np.ndarray) -> float:
    return float((values.max() - values.min()) / np.median(values))


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path, help="sweep output directory (with summary.parquet)")
    ap.add_argument("--metrics", default="bounded_slowdown_mean,wait_mean")
    ap.add_argument(
        "--pairs", default="", help="A:B,... run labels; A wins a draw when its metric is lower"
    )
    ap.add_argument("--csv", type=Path, help="write the per-draw figures here")
    args = ap.parse_args(argv)
    summary = pd.read_parquet(args.out / "summary.parquet")
    rows = draws(summary)
    metrics = args.metrics.split(",")
    for metric in metrics:
        print(f"\n### {metric} (draw 0 = as recorded)\n")
        print(_markdown(per_run(rows, metric)))
    pairs = [p.split(":") for p in args.pairs.split(",") if p]
    unknown = {label for pair in pairs for label in pair} - set(rows["run_label"])
    if unknown:
        raise SystemExit(
            f"--pairs: no run labelled {sorted(unknown)}; the runs are {sorted(set(rows['run_label']))}"
        )
    if pairs:
        table = [r for a, b in pairs for metric in metrics for r in paired(rows, a, b, metric)]
        print("\n### paired draws\n")
        print(_markdown(pd.DataFrame(table)))
    if args.csv:
        cols = [
            "trace",
            "run_label",
            "draw",
            "jobs",
            "valid",
            *metrics,
            "decisions",
            "decision_time_mean_s",
        ]
        rows.sort_values(["trace", "run_label", "draw"])[cols].to_csv(
            args.csv, index=False, float_format="%.4f"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
