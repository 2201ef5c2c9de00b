"""PCP'20's Figs 4-5 from ``benchmarks/results/cp/cp_scale.jsonl`` (issue 36): mean and one
standard deviation of the slowdown and of the waiting time per dispatcher and predictor, on
the KIT-like (100,000 jobs, the paper's job rate) and the Eurora-like (50,000 jobs) workload.
One colour per dispatcher, the same in all panels (``hpcdispatch.report.style``); dispatchers
run with the decision budget carry "+budget". The error bars go up only (one sd above the
mean): the sds are 10-100 times the means, and the y axes are logarithmic.

    python benchmarks/cp_scale_figure.py --out docs/img/cp-scale-figs4-5.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hpcdispatch.report.style import dispatcher_styles  # noqa: E402

ORDER = ("easy", "cp-rule", "hcp", "cp-hybrid", "pcp19", "pcp20")
PANELS = (
    ("synthetic:kit", "KIT-like (PCP'20 Fig 4)", ("L2", "R")),
    ("synthetic:eurora", "Eurora-like (PCP'20 Fig 5)", ("D", "L2", "R")),
)
PRED = {
    "oracle": "R",
    "last-two": "L2",
    "data-driven": "D",
    "walltime": "W",
}  # (the records' names)


def dispatcher_name(row: dict) -> str:
    spec = row["dispatcher"]
    base = spec.split(":")[0]
    return base + ("+budget" if "budget=stall" in spec else "")


def load(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if (
            row.get("valid")
            and row.get("jobs") in (100_000, 50_000)
            and "before" not in row.get("cell", "")
        ):
            rows.append(row)
    return rows


def draw(rows: list[dict], out: Path) -> None:
    names = sorted(
        {dispatcher_name(r) for r in rows}, key=lambda n: (ORDER.index(n.split("+")[0]), n)
    )
    styles = dispatcher_styles(names)
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    for i, (workload, title, preds) in enumerate(PANELS):
        for j, (metric, label) in enumerate(
            (("slowdown_ratio", "slowdown"), ("wait", "waiting time [s]"))
        ):
            ax = axes[i][j]
            width = 0.8 / len(names)
            for k, name in enumerate(names):
                xs, means, sds = [], [], []
                for p, pred in enumerate(preds):
                    match = [
                        r
                        for r in rows
                        if r["workload"].startswith(workload)
                        and "load=" not in r["workload"]
                        and dispatcher_name(r) == name
                        and PRED.get(r["predictor"], r["predictor"]) == pred
                    ]
                    if match:
                        r = match[-1]
                        xs.append(p - 0.4 + width * (k + 0.5))
                        means.append(r[f"{metric}_mean"])
                        sds.append(r[f"{metric}_std"])
                if xs:
                    ax.bar(
                        xs,
                        means,
                        width,
                        color=styles[name].color,
                        label=name,
                        yerr=[[0] * len(sds), sds],
                        capsize=2,
                        error_kw={"elinewidth": 0.8},
                    )
            ax.set_xticks(range(len(preds)), preds)
            ax.set_yscale("log")
            ax.set_ylabel(f"{label}, mean (bar) + 1 sd")
            ax.set_title(f"{title}: {label}")
    shown: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    fig.legend(
        [shown[n] for n in names if n in shown],
        [n for n in names if n in shown],
        loc="outside right center",
    )
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--results", type=Path, default=Path(__file__).parent / "results" / "cp" / "cp_scale.jsonl"
    )
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    draw(load(args.results), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
