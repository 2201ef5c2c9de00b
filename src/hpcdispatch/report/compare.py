"""A comparison report of several runs on one workload: table (CSV, markdown) and plots (PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

TABLE_COLUMNS = [
    ("label", "dispatcher"),
    ("predictor", "predictor"),
    ("wait_mean", "mean wait [s]"),
    ("wait_p95", "p95 wait [s]"),
    ("slowdown_mean", "mean slowdown"),
    ("bounded_slowdown_mean", "mean bsld"),
    ("utilization_core", "core util."),
    ("makespan", "makespan [s]"),
    ("killed", "killed"),
    ("decision_time_mean_s", "mean decision [ms]"),
    ("decision_time_max_s", "max decision [ms]"),
    ("prediction_mae_s", "pred. MAE [s]"),
    ("prediction_under_rate", "under-est."),
    ("sim_wall_s", "sim time [s]"),
    ("valid", "valid"),
]


def comparison_frame(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(summaries)
    for col in ("decision_time_mean_s", "decision_time_max_s"):
        if col in frame:
            frame[col.replace("_s", "_ms")] = frame[col] * 1000.0
    return frame


CONSOLE_KEYS = ("label", "wait_mean", "bounded_slowdown_mean", "utilization_core", "makespan", "decision_time_mean_s", "valid")


def display_rows(frame: pd.DataFrame, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the comparison table (shared by rich and markdown).

    ``compact`` keeps the columns that fit an 80-column terminal.
    """
    cols = [(k, h) for k, h in TABLE_COLUMNS if k in frame.columns and (not compact or k in CONSOLE_KEYS)]
    header = [h for _, h in cols]
    rows = []
    for _, rec in frame.iterrows():
        row = []
        for key, _ in cols:
            v = rec[key]
            if key.startswith("decision_time"):
                row.append(f"{v * 1000:.2f}")
            elif key in ("utilization_core", "prediction_under_rate"):
                row.append(f"{v:.3f}")
            elif key == "valid":
                row.append("yes" if v else "NO")
            elif isinstance(v, float | np.floating):
                row.append(f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}")
            else:
                row.append(str(v))
        rows.append(row)
    return header, rows


def markdown_table(frame: pd.DataFrame) -> str:
    header, rows = display_rows(frame)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def plot_comparison(frame: pd.DataFrame, path: Path) -> None:
    labels = frame["label"].tolist()
    metrics = [
        ("wait_mean", "mean wait [s]"),
        ("bounded_slowdown_mean", "mean bounded slowdown"),
        ("utilization_core", "core utilisation"),
    ]
    metrics = [(k, t) for k, t in metrics if k in frame.columns]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6))
    axes = np.atleast_1d(axes)
    colors = plt.cm.tab10(np.arange(len(labels)) % 10)
    for ax, (key, title) in zip(axes, metrics):
        ax.bar(range(len(labels)), frame[key].to_numpy(), color=colors)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{frame['workload'].iloc[0]} on {frame['system'].iloc[0]}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_wait_cdf(waits: dict[str, np.ndarray], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, w in waits.items():
        if len(w) == 0:
            continue
        x = np.sort(np.maximum(w, 1.0))
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("wait time [s] (values below 1 s shown at 1 s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("Wait-time distribution")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_accuracy_ecdf(accuracies: dict[str, np.ndarray], path: Path) -> None:
    """ECDF of the prediction accuracy A = real / predicted (CP'19 Fig. 1), one line per run."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, a in accuracies.items():
        if len(a) == 0:
            continue
        x = np.sort(np.clip(a, 1e-3, 1e3))
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("accuracy A = real / predicted duration (A > 1: under-estimated)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("Prediction accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_comparison_report(
    out: Path,
    frame: pd.DataFrame,
    waits: dict[str, np.ndarray],
    notes: list[str],
    accuracies: dict[str, np.ndarray] | None = None,
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "comparison.csv", index=False)
    table = markdown_table(frame)
    (out / "comparison.md").write_text(table + "\n")
    plot_comparison(frame, out / "comparison.png")
    plot_wait_cdf(waits, out / "wait_cdf.png")
    if accuracies:
        plot_accuracy_ecdf(accuracies, out / "prediction_accuracy.png")
    first = frame.iloc[0]
    lines = [
        "# hpcdispatch comparison",
        "",
        f"- system: `{first['system']}`",
        f"- workload: `{first['workload']}` ({int(first['jobs'])} jobs)",
        f"- predictors: {', '.join(f'`{p}`' for p in dict.fromkeys(frame['predictor']))}",
        "",
        table,
        "",
        "Every schedule was checked by the independent validator (column *valid*).",
        "",
        "![comparison](comparison.png)",
        "",
        "![wait-time distribution](wait_cdf.png)",
        "",
    ]
    if accuracies:
        lines += ["![prediction accuracy](prediction_accuracy.png)", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    lines += [
        "## Definitions",
        "",
        "- wait = start - submit; slowdown = (wait + run) / run; bounded slowdown (bsld) = "
        "max(1, (wait + run) / max(run, 10 s)).",
        "- utilisation = core-seconds used / (cores x (last end - first submit)).",
        "- decision time: wall-clock time of one dispatcher call.",
        "- prediction accuracy A = real / predicted duration; MAE = mean |predicted - real|; "
        "under-est. = share of jobs with predicted < real.",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
