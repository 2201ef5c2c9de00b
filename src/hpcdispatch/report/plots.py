"""Every figure of the reports (matplotlib, PNG). Each function draws one figure into ``path``.

- :func:`plot_comparison`: one bar per run (``hpcdispatch compare``);
- :func:`plot_grouped_bars`: mean per dispatcher and workload with standard-deviation error
  bars (PCP'20 Figs 4-5, CP'19 Figs 2-4; AUCSCHED utilisation; deadline paper Figs 14-18);
- :func:`plot_ecdf`: distributions (wait time, decision time, prediction accuracy);
- :func:`plot_gantt`: node occupancy over a time window, one lane per core;
- :func:`plot_usage_over_time`: utilisation per resource and queue length over time.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from hpcdispatch.report.tables import Metric  # noqa: E402

DPI = 110


def _save(fig: plt.Figure, path: Path, layout: bool = True) -> Path:
    """Write the figure as PNG atomically (temporary file + rename) and close it."""
    from hpcdispatch.results.store import write_atomic

    if layout:
        fig.tight_layout()
    try:
        write_atomic(Path(path), lambda p: fig.savefig(p, dpi=DPI, format="png"))
    finally:
        plt.close(fig)
    return path


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
    _save(fig, path)


def plot_ecdf(samples: dict[str, np.ndarray], path: Path, xlabel: str, title: str, log: bool = True,
              floor: float | None = None, clip: tuple[float, float] | None = None,
              vline: float | None = None) -> Path:
    """One ECDF step line per label; ``floor`` raises smaller values to it (for log axes)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    for label, values in samples.items():
        x = np.asarray(values, dtype=float)
        x = x[~np.isnan(x)]
        if len(x) == 0:
            continue
        if floor is not None:
            x = np.maximum(x, floor)
        if clip is not None:
            x = np.clip(x, *clip)
        x = np.sort(x)
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"{label} (n={len(x):,})")
    if vline is not None:
        ax.axvline(vline, color="grey", lw=0.8, ls="--")
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def plot_wait_cdf(waits: dict[str, np.ndarray], path: Path) -> None:
    plot_ecdf(waits, path, "wait time [s] (values below 1 s shown at 1 s)", "Wait-time distribution", floor=1.0)


def plot_accuracy_ecdf(accuracies: dict[str, np.ndarray], path: Path) -> None:
    """ECDF of the prediction accuracy A = real / predicted (CP'19 Fig. 1), one line per run."""
    plot_ecdf(accuracies, path, "accuracy A = real / predicted duration (A > 1: under-estimated)",
              "Prediction accuracy", clip=(1e-3, 1e3), vline=1.0)


def plot_grouped_bars(stats: pd.DataFrame, metrics: list[Metric], path: Path, title: str,
                      group: str = "workload", series: str = "run") -> Path:
    """One panel per metric: x = ``group`` values, one bar per ``series`` value, height = mean,
    error bar = standard deviation over the cells of the group (none when a group has one cell)."""
    groups = list(dict.fromkeys(stats[group]))
    names = list(dict.fromkeys(stats[series]))
    width = 0.8 / max(len(names), 1)
    ncols = 2 if len(metrics) in (2, 4) else min(len(metrics), 3)
    nrows = (len(metrics) + ncols - 1) // ncols
    panel_w = max(3.6, 1.0 + 0.5 * len(groups) * max(len(names), 2) ** 0.6)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_w * ncols / 0.84, 3.2 * nrows + 0.4), squeeze=False)
    colors = plt.cm.tab10(np.arange(len(names)) % 10)
    for ax, m in zip(axes.flat, metrics):
        scale = 1000.0 if m.kind == "ms" else 1.0
        for k, name in enumerate(names):
            sub = stats[stats[series] == name].set_index(group)
            heights = np.array([sub[f"{m.key}_mean"].get(g, np.nan) for g in groups], dtype=float) * scale
            errs = np.array([sub[f"{m.key}_std"].get(g, np.nan) for g in groups], dtype=float) * scale
            x = np.arange(len(groups)) - 0.4 + width * (k + 0.5)
            ax.bar(x, np.nan_to_num(heights), width * 0.95, color=colors[k], label=name)
            has = ~np.isnan(errs) & ~np.isnan(heights)
            if has.any():  # groups of one cell have no standard deviation: no error bar
                ax.errorbar(x[has], heights[has], yerr=errs[has], fmt="none", ecolor="black", elinewidth=0.8,
                            capsize=2)
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels(groups, rotation=20 if len(groups) > 1 else 0, ha="right" if len(groups) > 1 else "center",
                           fontsize=8)
        ax.set_title(m.title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(title, fontsize=10)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.84, 0.5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 0.84, 0.96))
    return _save(fig, path, layout=False)


# ---------------------------------------------------------------------------------------
# single run: Gantt and usage over time
# ---------------------------------------------------------------------------------------


def plot_gantt(rects: pd.DataFrame, lanes_per_node: np.ndarray, first_node: int, window: tuple[float, float],
               path: Path, title: str) -> Path:
    """``rects``: columns job_id, node, lane, lanes (height), x0, x1 (see report/run.py)."""
    n_lanes = int(lanes_per_node.sum())
    offsets = np.r_[0, np.cumsum(lanes_per_node)[:-1]]
    fig, ax = plt.subplots(figsize=(10, min(2.0 + 0.012 * n_lanes + 0.18 * len(lanes_per_node), 9.0)))
    if len(rects):
        y0 = offsets[rects["node"].to_numpy() - first_node] + rects["lane"].to_numpy()
        y1 = y0 + rects["lanes"].to_numpy()
        x0, x1 = rects["x0"].to_numpy(), rects["x1"].to_numpy()
        verts = np.stack([np.c_[x0, y0], np.c_[x1, y0], np.c_[x1, y1], np.c_[x0, y1]], axis=1)
        colors = plt.cm.tab20(rects["job_id"].to_numpy() % 20)
        ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="none"))
    if len(lanes_per_node) <= 64:
        for off in offsets[1:]:
            ax.axhline(off, color="white", lw=0.6)
    step = max(1, len(lanes_per_node) // 16)
    ticks = np.arange(0, len(lanes_per_node), step)
    ax.set_yticks(offsets[ticks] + lanes_per_node[ticks] / 2.0)
    ax.set_yticklabels([str(first_node + t) for t in ticks], fontsize=7)
    ax.set_xlim(*window)
    ax.set_ylim(n_lanes, 0)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("node (one lane per core)")
    ax.set_facecolor("#f2f2f2")
    ax.set_title(title, fontsize=10)
    return _save(fig, path)


def plot_usage_over_time(usage: dict[str, tuple[np.ndarray, np.ndarray]], queue: tuple[np.ndarray, np.ndarray],
                         path: Path, title: str, window: tuple[float, float] | None = None) -> Path:
    """Top: used / capacity per resource (step functions); bottom: queue length."""
    fig, (ax, axq) = plt.subplots(2, 1, figsize=(10, 5.2), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    for name, (t, frac) in usage.items():
        if len(t):
            ax.step(t, frac, where="post", label=name, lw=0.9)
    ax.set_ylabel("utilisation")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    qt, ql = queue
    if len(qt):
        axq.step(qt, ql, where="post", color="tab:red", lw=0.9)
    axq.set_ylabel("queued jobs")
    axq.set_xlabel("time [s]")
    axq.grid(alpha=0.3)
    if window is not None:
        for a in (ax, axq):
            a.axvspan(*window, color="tab:blue", alpha=0.08, lw=0)
    return _save(fig, path)
