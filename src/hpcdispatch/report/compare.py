"""The report of ``hpcdispatch compare``: several dispatchers on one workload, as
``report.html`` (one self-contained page), ``report.md``, tables (CSV, markdown) and figures
(PNG). Tables live in report/tables.py, figures in report/plots.py.

The page holds what scheduling researchers read, in this order:

- a colour key: one colour and line style per dispatcher (report/style.py), used by every figure;
- the summary table, units in the headers;
- the distributions of wait time and bounded slowdown per dispatcher (ECDF, log x-axis);
- the mean bounded slowdown by job class: by run time, CP'19's short (< 1 h), medium (1-5 h)
  and long (>= 5 h) jobs (CP'19 Sect. 5 and Fig. 4), and by size: 1 core, <= 1 node, > 1 node
  (metrics/classes.py);
- utilisation per resource and queue length over time, every dispatcher on one time axis
  (time-weighted means over 120 bins of the run's span);
- the dispatcher cost: decision time per call (mean, 95th percentile) and simulation time;
- the prediction accuracy A = real / predicted (CP'19 Fig. 1).

What has no data is left out, with a line saying so: a resource no job used (the GPUs of a
cores-only workload), a job class without jobs. Series that are identical (four dispatchers
with the same wall-time predictions have the same accuracy curve) are drawn once, labelled
"identical for A, B, C".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpcdispatch.metrics.classes import JobClasses, class_means, run_time_classes, size_classes
from hpcdispatch.metrics.jobs import BSLD_TAU, bounded_slowdowns
from hpcdispatch.metrics.summary import core_resource, queue_length_profile
from hpcdispatch.report.document import Bullets, ColourKey, Document, Figure, Items, Table, Text
from hpcdispatch.report.html import write_html
from hpcdispatch.report.plots import (
    ClassPanel,
    PlotInfo,
    TimePanel,
    plot_accuracy_ecdf,
    plot_class_bars,
    plot_cost,
    plot_qos_ecdf,
    plot_time_series,
)
from hpcdispatch.report.series import binned_means, duration_text, time_unit, usage_over_time
from hpcdispatch.report.style import SeriesStyle, dispatcher_styles
from hpcdispatch.report.tables import (
    CONSOLE_KEYS,
    TABLE_COLUMNS,
    comparison_frame,
    display_rows,
    markdown_rows,
    markdown_table,
)
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.vocabulary import JobStatus

TIME_BINS = 120  # bins of the utilisation and queue-length figure

__all__ = [
    "CONSOLE_KEYS",
    "TABLE_COLUMNS",
    "ComparedRun",
    "compare_order",
    "comparison_frame",
    "display_rows",
    "markdown_table",
    "write_comparison_report",
]


@dataclass
class ComparedRun:
    """What the comparison page needs of one run, per job (all jobs of the workload, in its
    order) and over time; :meth:`from_result` keeps only these arrays of a result."""

    label: str
    submit: np.ndarray
    start: np.ndarray  # NaN: never started
    end: np.ndarray
    run_time: np.ndarray  # the workload's real run time [s] (job classes)
    cores: np.ndarray  # requested cores (units x unit request of the core resource)
    accepted: np.ndarray  # bool: not rejected at submission
    planned: np.ndarray  # the planning duration the dispatcher used [s]
    usage: dict[str, tuple[np.ndarray, np.ndarray]]  # resource -> step function of used / capacity
    cores_per_node: float  # the largest node's cores (size classes)

    @classmethod
    def from_result(cls, label: str, result: SimulationResult) -> ComparedRun:
        w, system = result.workload, result.system
        r = core_resource(tuple(w.resources))
        alloc = result.allocations_columns()
        usage = {
            name: usage_over_time(alloc, name, float(system.total_capacity[i]))
            for i, name in enumerate(system.resources)
            if system.total_capacity[i] > 0
        }
        return cls(
            label=label,
            submit=w.submit.astype(np.float64),
            start=np.asarray(result.start, dtype=np.float64),
            end=np.asarray(result.end, dtype=np.float64),
            run_time=w.run_time.astype(np.float64),
            cores=(w.units * w.unit_requests[:, r]).astype(np.float64),
            accepted=np.asarray(result.status != JobStatus.REJECTED),
            planned=np.asarray(result.planned, dtype=np.float64),
            usage=usage,
            cores_per_node=float(system.capacity[:, r].max()) if system.n_nodes else 1.0,
        )

    @property
    def started(self) -> np.ndarray:
        return ~np.isnan(self.start)

    def waits(self) -> np.ndarray:
        s = self.started
        return self.start[s] - self.submit[s]

    def bounded_slowdowns(self) -> np.ndarray:
        s = self.started
        return bounded_slowdowns(self.submit[s], self.start[s], self.end[s], BSLD_TAU)

    def accuracy(self) -> np.ndarray:
        s = self.started
        return (self.end[s] - self.start[s]) / np.maximum(self.planned[s], 1e-9)

    def queue(self) -> tuple[np.ndarray, np.ndarray]:
        return queue_length_profile(self.submit, self.start, self.accepted)


# ---------------------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------------------


def _figure(info: PlotInfo, caption: str) -> Figure:
    if info.identical:
        caption += " " + " ".join(
            f"Identical for {', '.join(g)}: drawn once." for g in info.identical
        )
    return Figure(info.path, caption, legend=dict(info.legend))


def class_rows(runs: list[ComparedRun]) -> tuple[list[str], list[list[str]], pd.DataFrame]:
    """The mean bounded slowdown per job class (run time, then size) and dispatcher; classes
    without jobs are left out. Returns the header, formatted rows and the numbers as a frame."""
    records: list[dict[str, Any]] = []
    for run in runs:
        s = run.started
        bsld = run.bounded_slowdowns()
        for classes in (
            run_time_classes(run.run_time[s]),
            size_classes(run.cores[s], run.cores_per_node),
        ):
            means, counts = class_means(bsld, classes), classes.counts()
            for k, name in enumerate(classes.names):
                if counts[k]:
                    records.append(
                        {
                            "dispatcher": run.label,
                            "by": classes.title,
                            "class": name,
                            "jobs": int(counts[k]),
                            "bounded_slowdown_mean": float(means[k]),
                        }
                    )
    frame = pd.DataFrame(
        records, columns=["dispatcher", "by", "class", "jobs", "bounded_slowdown_mean"]
    )
    keys = list(dict.fromkeys(zip(frame["by"], frame["class"])))
    header = ["dispatcher", *(f"{c} ({by})" for by, c in keys)]
    rows = []
    for run in runs:
        sub = frame[frame["dispatcher"] == run.label].set_index(["by", "class"])[
            "bounded_slowdown_mean"
        ]
        rows.append([run.label, *(f"{sub[k]:,.2f}" if k in sub.index else "-" for k in keys)])
    return header, rows, frame


def _class_panels(runs: list[ComparedRun]) -> list[ClassPanel]:
    panels = []
    for title, make in (
        ("by run time (CP'19 classes)", lambda r, s: run_time_classes(r.run_time[s])),
        ("by size (requested cores)", lambda r, s: size_classes(r.cores[s], r.cores_per_node)),
    ):
        counts, means, names = None, {}, ()
        for run in runs:
            s = run.started
            classes: JobClasses = make(run, s)
            names = classes.names
            counts = classes.counts() if counts is None else np.maximum(counts, classes.counts())
            means[run.label] = class_means(run.bounded_slowdowns(), classes)
        if counts is not None and counts.sum():
            panels.append(ClassPanel(title, names, counts, means))
    return panels


def _time_panels(runs: list[ComparedRun], notes: list[str]) -> tuple[list[TimePanel], str]:
    t0 = min(float(r.submit.min()) for r in runs if len(r.submit))
    t1 = max((float(np.nanmax(r.end)) for r in runs if r.started.any()), default=t0 + 1.0)
    span = max(t1 - t0, 1.0)
    unit, per = time_unit(span)
    edges = np.linspace(t0, t0 + span, TIME_BINS + 1)
    x = (edges - t0) / per
    panels = []
    resources = list(dict.fromkeys(name for r in runs for name in r.usage))
    for name in resources:
        steps = {r.label: r.usage[name] for r in runs if name in r.usage}
        if not any(len(v) and np.any(v > 0) for _, v in steps.values()):
            notes.append(
                f"{name}: no job used any, so its utilisation (0 throughout) is not drawn."
            )
            continue
        series = {}
        for label, (t, v) in steps.items():
            m = binned_means(t, v, edges)
            series[label] = (x, np.r_[m, m[-1]])
        panels.append(TimePanel(f"{name} utilisation", series, (0.0, 1.05)))
    queue = {}
    for r in runs:
        qt, ql = r.queue()
        m = binned_means(qt, ql, edges)
        queue[r.label] = (x, np.r_[m, m[-1]])
    panels.append(TimePanel("queued jobs", queue))
    return (
        panels,
        f"time since the first submission [{unit}] (means over bins of {duration_text(span / TIME_BINS)})",
    )


def compare_order(root: Path) -> dict[str, int]:
    """``label -> position`` from the comparison.csv ``hpcdispatch compare`` wrote in ``root``
    (empty when there is none): the order that gives each dispatcher its colour, so that the
    reports of the folder and of the runs in it colour it as the compare page does."""
    path = root / "comparison.csv"
    if not path.is_file():
        return {}
    try:
        labels = pd.read_csv(path, usecols=["label"])["label"].astype(str).tolist()
    except (ValueError, KeyError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return {}  # not a compare table: name order
    return {label: i for i, label in enumerate(labels)}


def _column(frame: pd.DataFrame, key: str) -> np.ndarray:
    if key not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[key], errors="coerce").to_numpy(dtype=float)


def write_comparison_report(
    out: Path,
    frame: pd.DataFrame,
    runs: list[ComparedRun],
    notes: list[str],
    styles: dict[str, SeriesStyle] | None = None,
    spec_key: list[tuple[str, str, str]] | None = None,
) -> Path:
    """Write comparison.csv / .md, by_class.csv, the figures, report.md and report.html into
    ``out``; returns report.html. ``runs`` are in ``frame``'s row order. ``spec_key``: per
    run, its label, the full spec it ran and its output directory (a key table under the
    colour key, so that labels can stay short)."""
    from hpcdispatch.results.store import write_frame, write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    labels = [r.label for r in runs]
    styles = styles or dispatcher_styles(labels)
    first = frame.iloc[0]
    doc = Document("hpcdispatch comparison")
    doc.intro.append(
        Items(
            [
                ("system", str(first["system"])),
                ("workload", f"{first['workload']} ({int(first['jobs']):,} jobs)"),
                ("predictors", ", ".join(str(p) for p in dict.fromkeys(frame["predictor"]))),
                ("dispatchers", ", ".join(labels)),
            ]
        )
    )
    doc.intro.append(ColourKey([(x, styles[x].color, styles[x].linestyle_name) for x in labels]))
    if spec_key:
        doc.intro.append(
            Table(
                ["dispatcher", "spec", "outputs"],
                [[label, spec, f"{where}/"] for label, spec, where in spec_key],
                text_columns=3,
            )
        )

    frame.to_csv(out / "comparison.csv", index=False)
    header, rows = display_rows(frame)
    write_text(out / "comparison.md", markdown_rows(header, rows) + "\n")
    sec = doc.section("Summary")
    sec.elements.append(Table(header, rows, text_columns=2, csv="comparison.csv"))
    sec.elements.append(
        Text("Every schedule was checked by the independent validator (column valid).")
    )
    for n in notes:
        sec.elements.append(Text(n, note=True))

    # a deadline workload: what happened to the jobs first (a dispatcher that rejects most of
    # them has short waits), then the paper's panels (Figs 14-18) for this one workload
    from hpcdispatch.report.deadline import add_deadline_panels, add_outcome_section

    if add_outcome_section(doc, [(r.label, frame.iloc[i]) for i, r in enumerate(runs)]):
        add_deadline_panels(doc, frame.assign(run=labels, status="done"), out, styles)

    sec = doc.section("Wait time and bounded slowdown")
    info = plot_qos_ecdf(
        {r.label: r.waits() for r in runs},
        {r.label: r.bounded_slowdowns() for r in runs},
        out / "qos_ecdf.png",
        styles,
    )
    sec.elements.append(
        _figure(
            info,
            "Distribution over the started jobs (ECDF, log x-axis): the fraction of jobs "
            "whose wait time (left) or bounded slowdown (right) is at most x.",
        )
    )

    sec = doc.section("Bounded slowdown by job class")
    panels = _class_panels(runs)
    c_header, c_rows, c_frame = class_rows(runs)
    if panels:
        info = plot_class_bars(
            panels, out / "slowdown_by_class.png", "mean bounded slowdown", styles
        )
        sec.elements.append(
            _figure(
                info,
                "Mean bounded slowdown per job class (log y-axis). Run time: CP'19's short "
                "(< 1 h), medium (1-5 h) and long (>= 5 h) jobs (CP'19 Sect. 5, Fig. 4). "
                "Size: 1 core, more cores within one node, more than one node holds. "
                "Classes without jobs are left out.",
            )
        )
        write_frame(out / "by_class.csv", c_frame)
        sec.elements.append(Table(c_header, c_rows, csv="by_class.csv"))
    else:
        sec.elements.append(Text("No job started: there is nothing to classify.", note=True))

    sec = doc.section("Utilisation and queue length over time")
    omitted: list[str] = []
    t_panels, xlabel = _time_panels(runs, omitted)
    info = plot_time_series(
        t_panels,
        out / "usage_time.png",
        xlabel,
        "Utilisation (used / capacity) and queue length, every dispatcher",
        styles,
    )
    sec.elements.append(
        _figure(
            info,
            "Utilisation per resource and number of queued jobs, time-weighted means over "
            f"{TIME_BINS} equal bins of the run, on one shared time axis.",
        )
    )
    sec.elements += [Text(n, note=True) for n in omitted]

    sec = doc.section("Dispatcher cost")
    mean_ms = _column(frame, "decision_time_mean_s") * 1000.0
    p95_ms = _column(frame, "decision_time_p95_s") * 1000.0
    sim_s = _column(frame, "sim_wall_s") if "sim_wall_s" in frame else None
    if np.isfinite(mean_ms).any():
        info = plot_cost(labels, mean_ms, p95_ms, sim_s, out / "cost.png", styles)
        sec.elements.append(
            _figure(
                info,
                "Wall-clock time of one dispatcher call, mean and 95th percentile over the "
                "calls of the run (log y-axis; from summary.json), and of the whole "
                "simulation. Machine dependent.",
            )
        )
    cost_rows = [[r.label, f"{m:.3g}", f"{p:.3g}"] for r, m, p in zip(runs, mean_ms, p95_ms)]
    sec.elements.append(
        Table(["dispatcher", "mean decision time [ms]", "p95 decision time [ms]"], cost_rows)
    )

    acc = {r.label: r.accuracy() for r in runs if r.started.any()}
    if acc:
        sec = doc.section("Prediction accuracy")
        info = plot_accuracy_ecdf(acc, out / "prediction_accuracy.png", styles)
        sec.elements.append(
            _figure(
                info,
                "Accuracy A = real / predicted duration over the started jobs (ECDF; "
                "CP'19 Fig. 1): A = 1 exact, A > 1 under-estimated, A < 1 over-estimated.",
            )
        )

    sec = doc.section("Definitions")
    sec.elements.append(
        Bullets(
            [
                "wait = start - submit; slowdown = (wait + run) / run; bounded slowdown (bsld) = "
                "max(1, (wait + run) / max(run, 10 s)).",
                "utilisation = resource-seconds used / (capacity x (last end - first submit)).",
                "job classes by real run time: short < 1 h, medium 1 h to < 5 h, long >= 5 h "
                "(CP'19); by requested cores: "
                "1 core, <= 1 node (at most the largest node's cores), > 1 node.",
                "fragmentation: node blocks (runs of consecutive node indices) of a job's allocation; spread = "
                "(last node - first node + 1) / nodes used; means over started jobs (the AUCSCHED paper's metrics).",
                "decision time: wall-clock time of one dispatcher call.",
                "prediction accuracy A = real / predicted duration; MAE = mean |predicted - real|; "
                "under-est. = share of jobs with predicted < real.",
            ]
        )
    )
    write_text(out / "report.md", doc.to_markdown(out))
    return write_html(doc, out / "report.html")
