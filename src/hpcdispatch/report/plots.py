"""Every figure of the reports (matplotlib, PNG). Each function draws one figure into ``path``
and returns a :class:`PlotInfo`: the colour each dispatcher was drawn with, read back from
the drawn artists (the browser test compares them with the page's colour key), and the
groups of dispatchers whose series were identical and drawn once.

Colours and line styles come from :func:`hpcdispatch.report.style.dispatcher_styles` (one per
dispatcher, the same in every figure); figures are saved with ``bbox_inches="tight"`` so that
legends placed outside the axes are never clipped.

- :func:`plot_ecdf`, :func:`plot_qos_ecdf`: distributions, one step line per dispatcher
  (wait time, bounded slowdown, decision time, prediction accuracy); identical series are
  drawn once, "identical for A, B, C";
- :func:`plot_class_bars`: a mean per job class and dispatcher (CP'19 Fig. 4);
- :func:`plot_time_series`: panels over one shared time axis, one line per dispatcher;
- :func:`plot_cost`: decision time (mean, p95) and simulation time per dispatcher;
- :func:`plot_grouped_bars`: mean per dispatcher and workload with standard-deviation error
  bars (PCP'20 Figs 4-5, CP'19 Figs 2-4; AUCSCHED utilisation; deadline paper Figs 14-18);
- :func:`plot_panel_bars`: the deadline paper's Figs 14-18 layout -- one panel per load, x = type
  mix, one bar per strategy, error bars given (standard error over seeds);
- :func:`plot_gantt`: node occupancy over a time window, one lane per core;
- :func:`plot_usage_over_time`: utilisation per resource and queue length over time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

if "ipykernel" not in sys.modules:  # a Jupyter kernel keeps its inline backend
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

from hpcdispatch.report.style import SeriesStyle, dispatcher_styles  # noqa: E402
from hpcdispatch.report.tables import Metric  # noqa: E402

DPI = 110
LINE_WIDTH = 1.5
ECDF_POINTS = 4000  # an ECDF line is drawn through at most this many of its points


@dataclass
class PlotInfo:
    """What a figure shows: ``legend`` maps each dispatcher drawn to its colour (``#rrggbb``,
    read from the artist); ``identical`` lists the groups drawn as one series (the colour
    is the first label's)."""

    path: Path
    legend: dict[str, str] = field(default_factory=dict)
    identical: list[tuple[str, ...]] = field(default_factory=list)

    def merge(self, other: PlotInfo) -> None:
        for k, v in other.legend.items():
            self.legend.setdefault(k, v)
        self.identical += [g for g in other.identical if g not in self.identical]


def _save(fig: plt.Figure, path: Path, layout: bool = True) -> Path:
    """Write the figure as PNG atomically (temporary file + rename) and close it; the
    bounding box is tight around everything drawn, legends outside the axes included.
    ``layout``: matplotlib's ``tight_layout`` first (figures that set their spacing with
    ``subplots_adjust`` skip it: it costs a third of the time of a figure)."""
    from hpcdispatch.results.store import write_atomic

    if layout:
        fig.tight_layout()
    try:
        metadata = {LOG_AXES_KEY: json.dumps(log_axis_labels(fig))} if _has_log_axis(fig) else {}
        write_atomic(
            Path(path),
            lambda p: fig.savefig(
                p, dpi=DPI, format="png", bbox_inches="tight", metadata=metadata or None
            ),
        )
    finally:
        plt.close(fig)
    return path


#: the PNG text chunk in which a figure lists the tick labels drawn on each of its log axes
LOG_AXES_KEY = "hpcdispatch-log-axes"


def _has_log_axis(fig: plt.Figure) -> bool:
    return any(a.get_scale() == "log" for ax in fig.axes for a in (ax.xaxis, ax.yaxis))


def log_axis_labels(fig: plt.Figure) -> list[dict[str, Any]]:
    """Per log axis of ``fig``: which axis and the tick labels drawn inside its view (major and
    minor), as the figure is drawn. Kept in the PNG (:data:`LOG_AXES_KEY`) so a browser test
    can check that no log axis shows a lone "1"."""
    fig.canvas.draw()
    out = []
    for k, ax in enumerate(fig.axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() != "log":
                continue
            lo, hi = sorted(axis.get_view_interval())
            i = 0 if name == "x" else 1
            labels = [
                t.get_text()
                for t in [*axis.get_majorticklabels(), *axis.get_minorticklabels()]
                if t.get_visible() and t.get_text() and lo <= t.get_position()[i] <= hi
            ]
            out.append({"axes": k, "axis": name, "labels": labels})
    return out


def _styles(labels: Sequence[str], styles: dict[str, SeriesStyle] | None) -> dict[str, SeriesStyle]:
    """``styles`` for the labels it names; labels it does not name get their own, after them."""
    styles = dict(styles or {})
    missing = [x for x in labels if x not in styles]
    if missing:
        extra = dispatcher_styles([*styles, *missing])
        styles.update({x: extra[x] for x in missing})
    return styles


def identical_groups(series: dict[str, Any]) -> list[list[str]]:
    """Labels whose values are equal (``np.array_equal``; tuples compared element by element),
    in first-appearance order; each group's first label stands for it."""
    groups: list[list[str]] = []
    reps: list[Any] = []
    for label, value in series.items():
        for g, rep in zip(groups, reps):
            if _equal(rep, value):
                g.append(label)
                break
        else:
            groups.append([label])
            reps.append(value)
    return groups


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _group_label(group: list[str]) -> str:
    return group[0] if len(group) == 1 else "identical for " + ", ".join(group)


def _outside_legend(
    ax: plt.Axes, handles: list[Any] | None = None, labels: list[str] | None = None
) -> None:
    """A legend to the right of the axes (never over the data; saved whole by ``_save``)."""
    if handles is None or labels is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(
            handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False
        )


def _plain_log_label(value: float, _pos: int) -> str:
    """Decades as plain numbers, short from 10,000 on: 0.01, 1, 1,000, 10k, 1M, 10G."""
    if value < 1:
        return f"{value:g}"
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= max(size, 1e4):
            return f"{value / size:,.0f}{suffix}"
    return f"{value:,.0f}"


class _PlainMinorLogFormatter(LogFormatter):
    """Minor ticks of a log axis labelled in plain numbers when the axis spans few decades
    (matplotlib's thresholds: some of them below one decade, all of them below 0.4), so that
    a narrow log axis never shows a lone "1"; none on a wide axis."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return _plain_log_label(x, 0) if x >= 1 else f"{x:.3g}"


def _log_axis(ax: plt.Axes, axis: str = "x") -> None:
    """A log axis labelled with plain numbers (0.01, 1, 1,000, 10k, 1M) at the decades, and
    at the minor ticks too when it spans less than a decade (2, 3, 5 ...): easier to read
    than 10^k, and mathtext tick labels cost most of a figure's drawing time."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_formatter(FuncFormatter(_plain_log_label))
    target.set_minor_formatter(
        _PlainMinorLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))
    )


def _ecdf_values(
    values: np.ndarray, floor: float | None, clip: tuple[float, float] | None
) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if floor is not None:
        x = np.maximum(x, floor)
    if clip is not None:
        x = np.clip(x, *clip)
    return np.sort(x)


def _draw_ecdf(
    ax: plt.Axes,
    samples: dict[str, np.ndarray],
    styles: dict[str, SeriesStyle],
    floor: float | None,
    clip: tuple[float, float] | None,
    info: PlotInfo,
) -> None:
    """Series with the same values (compared before ``floor`` / ``clip``, all of them) are one
    line; a line of more than ECDF_POINTS values is drawn through ECDF_POINTS evenly spaced
    order statistics (the same curve at the figure's resolution, drawn in a fraction of the time)."""
    raw = {
        label: np.sort(np.asarray(v, dtype=float)[~np.isnan(np.asarray(v, dtype=float))])
        for label, v in samples.items()
    }
    raw = {k: v for k, v in raw.items() if len(v)}
    for group in identical_groups(raw):
        n = len(raw[group[0]])
        x = _ecdf_values(raw[group[0]], floor, clip)
        y = np.arange(1, n + 1) / n
        if n > ECDF_POINTS:
            keep = np.unique(np.r_[np.linspace(0, n - 1, ECDF_POINTS).astype(np.int64), n - 1])
            x, y = x[keep], y[keep]
        st = styles[group[0]]
        (line,) = ax.step(
            x,
            y,
            where="post",
            color=st.color,
            ls=st.linestyle if len(group) == 1 else "-",
            lw=LINE_WIDTH,
            label=f"{_group_label(group)} (n={n:,})",
        )
        info.legend.setdefault(group[0], to_hex(line.get_color()))
        if len(group) > 1 and tuple(group) not in info.identical:
            info.identical.append(tuple(group))


def plot_ecdf(
    samples: dict[str, np.ndarray],
    path: Path,
    xlabel: str,
    title: str,
    log: bool = True,
    floor: float | None = None,
    clip: tuple[float, float] | None = None,
    vline: float | None = None,
    styles: dict[str, SeriesStyle] | None = None,
    ylabel: str = "fraction of jobs",
) -> PlotInfo:
    """One ECDF step line per label; ``floor`` raises smaller values to it (for log axes);
    ``ylabel`` names what the samples are (jobs, dispatcher calls)."""
    styles = _styles(list(samples), styles)
    info = PlotInfo(Path(path))
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    _draw_ecdf(ax, samples, styles, floor, clip, info)
    if vline is not None:
        ax.axvline(vline, color="grey", lw=0.8, ls="--")
    if log:
        _log_axis(ax, "x")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    _save(fig, path, layout=False)
    return info


def plot_qos_ecdf(
    waits: dict[str, np.ndarray],
    bslds: dict[str, np.ndarray],
    path: Path,
    styles: dict[str, SeriesStyle] | None = None,
) -> PlotInfo:
    """:func:`qos_ecdf_figure` written to ``path`` (PNG)."""
    fig, info = qos_ecdf_figure(waits, bslds, styles)
    info.path = Path(path)
    _save(fig, path, layout=False)
    return info


def qos_ecdf_figure(
    waits: dict[str, np.ndarray],
    bslds: dict[str, np.ndarray],
    styles: dict[str, SeriesStyle] | None = None,
) -> tuple[plt.Figure, PlotInfo]:
    """Two ECDF panels, log x-axes: wait time (values below 1 s drawn at 1 s) and bounded slowdown."""
    styles = _styles(list(dict.fromkeys([*waits, *bslds])), styles)
    info = PlotInfo(Path())
    fig, (ax_w, ax_b) = plt.subplots(1, 2, figsize=(11.0, 3.9))
    _draw_ecdf(ax_w, waits, styles, 1.0, None, info)
    _draw_ecdf(ax_b, bslds, styles, 1.0, None, info)
    for ax, xlabel, title in (
        (ax_w, "wait time [s] (below 1 s drawn at 1 s)", "Wait time"),
        (ax_b, "bounded slowdown (tau = 10 s)", "Bounded slowdown"),
    ):
        _log_axis(ax, "x")
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.02)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    ax_w.set_ylabel("fraction of started jobs")
    fig.subplots_adjust(wspace=0.18)
    return fig, info


def plot_wait_cdf(
    waits: dict[str, np.ndarray], path: Path, styles: dict[str, SeriesStyle] | None = None
) -> PlotInfo:
    return plot_ecdf(
        waits,
        path,
        "wait time [s] (values below 1 s shown at 1 s)",
        "Wait-time distribution",
        floor=1.0,
        styles=styles,
    )


def plot_accuracy_ecdf(
    accuracies: dict[str, np.ndarray], path: Path, styles: dict[str, SeriesStyle] | None = None
) -> PlotInfo:
    """ECDF of the prediction accuracy A = real / predicted (CP'19 Fig. 1), one line per run."""
    return plot_ecdf(
        accuracies,
        path,
        "accuracy A = real / predicted duration (A > 1: under-estimated)",
        "Prediction accuracy",
        clip=(1e-3, 1e3),
        vline=1.0,
        styles=styles,
    )


@dataclass
class ClassPanel:
    """One panel of :func:`plot_class_bars`: ``means[label][k]`` for class ``names[k]``
    (``counts[k]`` jobs); classes without jobs are left out."""

    title: str
    names: tuple[str, ...]
    counts: np.ndarray
    means: dict[str, np.ndarray]


def plot_class_bars(
    panels: list[ClassPanel],
    path: Path,
    ylabel: str,
    styles: dict[str, SeriesStyle] | None = None,
    log: bool = True,
    ymin: float | None = 1.0,
) -> PlotInfo:
    """Grouped bars: x = job class (with its job count), one bar per dispatcher. ``ymin``: the
    least possible value (1 for a slowdown), drawn as a line; on a log axis the bars start a
    little below it, so a bar at exactly ``ymin`` is seen, not mistaken for a missing one."""
    labels = list(dict.fromkeys(x for p in panels for x in p.means))
    styles = _styles(labels, styles)
    info = PlotInfo(Path(path))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.8), squeeze=False)
    width = 0.8 / max(len(labels), 1)
    for ax, panel in zip(axes.flat, panels):
        keep = np.flatnonzero(panel.counts > 0)
        for k, label in enumerate(labels):
            if label not in panel.means:
                continue
            x = np.arange(len(keep)) - 0.4 + width * (k + 0.5)
            bars = ax.bar(
                x,
                np.asarray(panel.means[label], dtype=float)[keep],
                width * 0.92,
                color=styles[label].color,
                label=label,
            )
            info.legend.setdefault(
                label, to_hex(bars.patches[0].get_facecolor()) if bars.patches else ""
            )
        ax.set_xticks(np.arange(len(keep)))
        ax.set_xticklabels(
            [f"{panel.names[i]}\n{int(panel.counts[i]):,} jobs" for i in keep], fontsize=8
        )
        if log:
            _log_axis(ax, "y")
        if (
            ymin is not None
        ):  # a bar at the least value (a slowdown of 1) still shows, above the line
            ax.axhline(ymin, color="black", lw=0.8)
            ax.set_ylim(bottom=ymin * (0.7 if log else 1.0))
        ax.set_ylabel(ylabel)
        ax.set_title(panel.title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    _outside_legend(axes.flat[-1])
    fig.subplots_adjust(wspace=0.28)
    _save(fig, path, layout=False)
    return info


@dataclass
class TimePanel:
    """One panel of :func:`plot_time_series`: ``series[label] = (x, y)``."""

    ylabel: str
    series: dict[str, tuple[np.ndarray, np.ndarray]]
    ylim: tuple[float, float] | None = None


def plot_time_series(
    panels: list[TimePanel],
    path: Path,
    xlabel: str,
    title: str,
    styles: dict[str, SeriesStyle] | None = None,
) -> PlotInfo:
    """:func:`time_series_figure` written to ``path`` (PNG)."""
    fig, info = time_series_figure(panels, xlabel, title, styles)
    info.path = Path(path)
    _save(fig, path)
    return info


def time_series_figure(
    panels: list[TimePanel],
    xlabel: str,
    title: str,
    styles: dict[str, SeriesStyle] | None = None,
) -> tuple[plt.Figure, PlotInfo]:
    """Small multiples: one row per dispatcher (dispatchers whose series are identical in
    every panel share a row), one column per panel, every subplot on one shared time axis and
    each column on one y range. A row draws its dispatcher in its colour over the others in
    light grey, so no dispatcher hides another (four step curves on one axis did)."""
    labels = list(dict.fromkeys(x for p in panels for x in p.series))
    styles = _styles(labels, styles)
    info = PlotInfo(Path())
    rows = identical_groups({x: tuple(p.series.get(x) for p in panels) for x in labels})
    n_rows, n_cols = max(1, len(rows)), max(1, len(panels))
    fig, axes = plt.subplots(
        n_rows,
        n_cols,
        figsize=(5.2 * n_cols + 1.0, 0.9 + 1.55 * n_rows),
        sharex=True,
        sharey="col",
        squeeze=False,
    )
    for r, group in enumerate(rows):
        st = styles[group[0]]
        for c, panel in enumerate(panels):
            ax = axes[r, c]
            for other in labels:
                if other not in group and other in panel.series:
                    ox, oy = panel.series[other]
                    ax.plot(ox, oy, color="#c8c8c8", lw=0.7, drawstyle="steps-post", zorder=1)
            if group[0] in panel.series:
                x, y = panel.series[group[0]]
                (line,) = ax.plot(
                    x, y, color=st.color, lw=LINE_WIDTH, drawstyle="steps-post", zorder=2
                )
                info.legend.setdefault(group[0], to_hex(line.get_color()))
            if panel.ylim is not None:
                ax.set_ylim(*panel.ylim)
            ax.grid(alpha=0.3)
            if r == 0:
                ax.set_title(panel.ylabel, fontsize=9)
            if c == 0:
                ax.set_ylabel(
                    "\n".join(_wrap_label(_group_label(group), 18)), fontsize=8, color=st.color
                )
        if len(group) > 1 and tuple(group) not in info.identical:
            info.identical.append(tuple(group))
    for ax in axes[-1]:
        ax.set_xlabel(xlabel, fontsize=8)
    fig.suptitle(title + " (grey: the other dispatchers)", fontsize=10)
    return fig, info


def _wrap_label(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def plot_cost(
    labels: list[str],
    decision_mean_ms: np.ndarray,
    decision_p95_ms: np.ndarray,
    sim_seconds: np.ndarray | None,
    path: Path,
    styles: dict[str, SeriesStyle] | None = None,
) -> PlotInfo:
    """Dispatcher cost: decision time per call (mean and p95, log scale) and, when given, the
    wall-clock time of each whole simulation."""
    styles = _styles(labels, styles)
    info = PlotInfo(Path(path))
    n_panels = 2 if sim_seconds is not None else 1
    fig, axes = plt.subplots(1, n_panels, figsize=(5.0 * n_panels, 3.6), squeeze=False)
    ax = axes.flat[0]
    width = 0.8 / max(len(labels), 1)
    for k, label in enumerate(labels):
        x = np.arange(2) - 0.4 + width * (k + 0.5)
        heights = np.array([decision_mean_ms[k], decision_p95_ms[k]], dtype=float)
        bars = ax.bar(
            x,
            np.where(heights > 0, heights, np.nan),
            width * 0.92,
            color=styles[label].color,
            label=label,
        )
        info.legend[label] = to_hex(bars.patches[0].get_facecolor())
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["mean", "95th percentile"])
    _log_axis(ax, "y")
    shown = np.r_[decision_mean_ms, decision_p95_ms]
    shown = shown[np.isfinite(shown) & (shown > 0)]
    if len(shown):  # the tallest bar below the top, whole
        ax.set_ylim(shown.min() / 2.0, shown.max() * 2.0)
    ax.set_ylabel("decision time per call [ms]")
    ax.set_title("Decision time", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if sim_seconds is not None:
        ax2 = axes.flat[1]
        ax2.bar(np.arange(len(labels)), sim_seconds, 0.7, color=[styles[x].color for x in labels])
        ax2.set_xticks(np.arange(len(labels)))
        ax2.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
        ax2.set_ylabel("simulation time [s]")
        ax2.set_title("Whole simulation (wall clock)", fontsize=10)
        ax2.grid(axis="y", alpha=0.3)
    _outside_legend(axes.flat[-1], *ax.get_legend_handles_labels())
    fig.subplots_adjust(wspace=0.3)
    _save(fig, path, layout=False)
    return info


def plot_grouped_bars(
    stats: pd.DataFrame,
    metrics: list[Metric],
    path: Path,
    title: str,
    group: str = "workload",
    series: str = "run",
    styles: dict[str, SeriesStyle] | None = None,
) -> PlotInfo:
    """One panel per metric: x = ``group`` values, one bar per ``series`` value, height = mean,
    error bar = standard deviation over the cells of the group (none when a group has one cell)."""
    groups = list(dict.fromkeys(stats[group]))
    names = list(dict.fromkeys(stats[series]))
    width = 0.8 / max(len(names), 1)
    ncols = 2 if len(metrics) in (2, 4) else min(len(metrics), 3)
    nrows = (len(metrics) + ncols - 1) // ncols
    panel_w = max(3.6, 1.0 + 0.5 * len(groups) * max(len(names), 2) ** 0.6)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_w * ncols, 3.2 * nrows + 0.4), squeeze=False
    )
    styles = _styles(names, styles)
    info = PlotInfo(Path(path))
    for ax, m in zip(axes.flat, metrics):
        scale = 1000.0 if m.kind == "ms" else 1.0
        for k, name in enumerate(names):
            sub = stats[stats[series] == name].set_index(group)
            heights = (
                np.array([sub[f"{m.key}_mean"].get(g, np.nan) for g in groups], dtype=float) * scale
            )
            errs = (
                np.array([sub[f"{m.key}_std"].get(g, np.nan) for g in groups], dtype=float) * scale
            )
            x = np.arange(len(groups)) - 0.4 + width * (k + 0.5)
            bars = ax.bar(
                x, np.nan_to_num(heights), width * 0.95, color=styles[name].color, label=name
            )
            info.legend.setdefault(name, to_hex(bars.patches[0].get_facecolor()))
            has = ~np.isnan(errs) & ~np.isnan(heights)
            if has.any():  # groups of one cell have no standard deviation: no error bar
                ax.errorbar(
                    x[has],
                    heights[has],
                    yerr=errs[has],
                    fmt="none",
                    ecolor="black",
                    elinewidth=0.8,
                    capsize=2,
                )
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels(
            groups,
            rotation=20 if len(groups) > 1 else 0,
            ha="right" if len(groups) > 1 else "center",
            fontsize=8,
        )
        ax.set_title(m.title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1.0, 0.96))
    fig.legend(
        handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False
    )
    _save(fig, path, layout=False)
    return info


def plot_bars_per_group(
    stats: pd.DataFrame,
    metrics: list[Metric],
    path: Path,
    title: str,
    group: str = "group",
    series: str = "run",
    styles: dict[str, SeriesStyle] | None = None,
    ncols: int = 3,
) -> PlotInfo:
    """One panel per ``group`` value (a workload), wrapped at most ``ncols`` to a row (fewer
    when the panels are wide: a row stays within 16 inches), so that many workloads and
    strategies stay readable at page width: x = the metrics (their titles), one
    bar per ``series`` value, height = mean, error bar = standard deviation over the group's
    cells (none for one cell). Every panel has its own y scale."""
    groups = list(dict.fromkeys(stats[group]))
    names = list(dict.fromkeys(stats[series]))
    width = 0.8 / max(len(names), 1)
    panel_w = max(3.2, 0.9 + 0.28 * len(metrics) * max(len(names), 2) ** 0.7)
    # at most ncols panels to a row, and a row no wider than a page's 16 inches
    ncols = max(1, min(ncols, len(groups), int(16.0 // panel_w)))
    nrows = (len(groups) + ncols - 1) // ncols
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_w * ncols, 2.9 * nrows + 0.5), squeeze=False
    )
    styles = _styles(names, styles)
    info = PlotInfo(Path(path))
    for ax, g in zip(axes.flat, groups):
        sub_g = stats[stats[group] == g]
        for k, name in enumerate(names):
            row = sub_g[sub_g[series] == name]
            heights = np.array(
                [row[f"{m.key}_mean"].iloc[0] if len(row) else np.nan for m in metrics],
                dtype=float,
            ) * np.array([1000.0 if m.kind == "ms" else 1.0 for m in metrics])
            errs = np.array(
                [row[f"{m.key}_std"].iloc[0] if len(row) else np.nan for m in metrics],
                dtype=float,
            ) * np.array([1000.0 if m.kind == "ms" else 1.0 for m in metrics])
            x = np.arange(len(metrics)) - 0.4 + width * (k + 0.5)
            bars = ax.bar(
                x, np.nan_to_num(heights), width * 0.95, color=styles[name].color, label=name
            )
            info.legend.setdefault(name, to_hex(bars.patches[0].get_facecolor()))
            has = ~np.isnan(errs) & ~np.isnan(heights)
            if has.any():
                ax.errorbar(
                    x[has],
                    heights[has],
                    yerr=errs[has],
                    fmt="none",
                    ecolor="black",
                    elinewidth=0.6,
                    capsize=1.5,
                )
        ax.set_xticks(np.arange(len(metrics)))
        ax.set_xticklabels(
            [m.title for m in metrics],
            rotation=20 if len(metrics) > 2 else 0,
            ha="right" if len(metrics) > 2 else "center",
            fontsize=7,
        )
        ax.set_title(str(g), fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(groups) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1.0, 0.96))
    fig.legend(
        handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False
    )
    _save(fig, path, layout=False)
    return info


def plot_panel_bars(
    stats: pd.DataFrame,
    panels: list[str],
    groups: list[str],
    names: list[str],
    path: Path,
    title: str,
    ylabel: str,
    panel_col: str = "panel",
    group_col: str = "group",
    series_col: str = "run",
    value: str = "mean",
    error: str = "sem",
    styles: dict[str, SeriesStyle] | None = None,
    xlabel: str | None = None,
) -> tuple[PlotInfo, dict[str, int]]:
    """One panel per ``panels`` value (one above the other, each with its own y scale: a very
    heavy load's counts are a tenth of a normal one's), x = ``groups``, one bar per ``names``
    value in its colour, height ``stats[value]``, error bar ``stats[error]`` (none when NaN).
    Returns the colours drawn and, per panel, how many bars have a value."""
    styles = _styles(names, styles)
    width = 0.8 / max(len(names), 1)
    panel_w = min(11.0, max(5.0, 1.2 + 0.3 * len(groups) * max(len(names), 2)))
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(panel_w, 0.7 + 2.6 * len(panels)), squeeze=False
    )
    info = PlotInfo(Path(path))
    counts: dict[str, int] = {}
    for ax, panel in zip(axes.flat, panels):
        in_panel = stats[stats[panel_col] == panel]
        counts[str(panel)] = 0
        for k, name in enumerate(names):
            sub = in_panel[in_panel[series_col] == name].set_index(group_col)
            heights = np.array([sub[value].get(g, np.nan) for g in groups], dtype=float)
            errs = np.array([sub[error].get(g, np.nan) for g in groups], dtype=float)
            x = np.arange(len(groups)) - 0.4 + width * (k + 0.5)
            bars = ax.bar(
                x, np.nan_to_num(heights), width * 0.95, color=styles[name].color, label=name
            )
            info.legend.setdefault(name, to_hex(bars.patches[0].get_facecolor()))
            counts[str(panel)] += int((~np.isnan(heights)).sum())
            has = ~np.isnan(errs) & ~np.isnan(heights)
            if has.any():
                ax.errorbar(
                    x[has],
                    heights[has],
                    yerr=errs[has],
                    fmt="none",
                    ecolor="black",
                    elinewidth=0.8,
                    capsize=2,
                )
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels(groups, fontsize=8)
        ax.set_title(str(panel), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat:
        ax.set_ylabel(ylabel, fontsize=8)
    axes.flat[-1].set_xlabel(group_col if xlabel is None else xlabel, fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1.0, 1 - 0.35 / (0.7 + 2.6 * len(panels))))
    fig.legend(
        handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False
    )
    _save(fig, path, layout=False)
    return info, counts


# ---------------------------------------------------------------------------------------
# single run: Gantt and usage over time
# ---------------------------------------------------------------------------------------


def plot_gantt(
    rects: pd.DataFrame,
    lanes_per_node: np.ndarray,
    first_node: int,
    window: tuple[float, float],
    path: Path,
    title: str,
) -> Path:
    """:func:`gantt_figure` written to ``path`` (PNG)."""
    return _save(gantt_figure(rects, lanes_per_node, first_node, window, title), path)


def gantt_figure(
    rects: pd.DataFrame,
    lanes_per_node: np.ndarray,
    first_node: int,
    window: tuple[float, float],
    title: str,
) -> plt.Figure:
    """``rects``: columns job_id, node, lane, lanes (height), x0, x1 in seconds since the first
    submission (see report/run.py); drawn in the unit that reads best for the window's end
    (minutes, hours or days since the first submission), never with an offset."""
    from hpcdispatch.report.series import time_unit

    unit, per = time_unit(max(abs(window[0]), abs(window[1]), 1.0))
    rects = rects.assign(x0=rects["x0"] / per, x1=rects["x1"] / per)
    window = (window[0] / per, window[1] / per)
    n_lanes = int(lanes_per_node.sum())
    offsets = np.r_[0, np.cumsum(lanes_per_node)[:-1]]
    fig, ax = plt.subplots(
        figsize=(10, min(2.0 + 0.012 * n_lanes + 0.18 * len(lanes_per_node), 9.0))
    )
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
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    ax.set_xlabel(f"time since the first submission [{unit}]")
    ax.set_ylabel("node (one lane per core)")
    ax.set_facecolor("#f2f2f2")
    ax.set_title(title, fontsize=10)
    return fig


def plot_usage_over_time(
    usage: dict[str, tuple[np.ndarray, np.ndarray]],
    queue: tuple[np.ndarray, np.ndarray],
    path: Path,
    title: str,
    window: tuple[float, float] | None = None,
    xlabel: str = "time since the first submission [s]",
) -> Path:
    """:func:`usage_figure` written to ``path`` (PNG)."""
    return _save(usage_figure(usage, queue, title, window, xlabel), path)


def usage_figure(
    usage: dict[str, tuple[np.ndarray, np.ndarray]],
    queue: tuple[np.ndarray, np.ndarray],
    title: str,
    window: tuple[float, float] | None = None,
    xlabel: str = "time since the first submission [s]",
) -> plt.Figure:
    """Top: used / capacity per resource (step functions); bottom: queue length."""
    fig, (ax, axq) = plt.subplots(
        2, 1, figsize=(10, 5.2), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    for name, (t, frac) in usage.items():
        if len(t):
            ax.step(t, frac, where="post", label=name, lw=0.9)
    ax.set_ylabel("utilisation")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    _outside_legend(ax)
    ax.set_title(title, fontsize=10)
    qt, ql = queue
    if len(qt):
        axq.step(qt, ql, where="post", color="tab:red", lw=0.9)
    axq.set_ylabel("queued jobs")
    axq.set_xlabel(xlabel)
    axq.grid(alpha=0.3)
    if window is not None:
        for a in (ax, axq):
            a.axvspan(*window, color="tab:blue", alpha=0.08, lw=0)
    return fig
