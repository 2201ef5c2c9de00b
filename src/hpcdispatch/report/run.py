"""The report of one run directory: summary table, Gantt chart of node occupancy over a time
window, utilisation and queue length over time, wait / decision-time / accuracy distributions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics.summary import queue_length_profile, summary_unit
from hpcdispatch.report import plots
from hpcdispatch.report.compare import compare_order
from hpcdispatch.report.document import Document, Figure, Items, Table, Text
from hpcdispatch.report.html import write_html
from hpcdispatch.report.series import binned_means, time_unit, usage_over_time
from hpcdispatch.report.style import dispatcher_styles
from hpcdispatch.report.tables import format_value, metric
from hpcdispatch.results.store import StoredRun, read_run, write_frame, write_text
from hpcdispatch.system.model import System

DEFAULT_WINDOW_SHARE = 0.1  # default Gantt window: a tenth of the makespan around its middle
MAX_DEFAULT_NODES = 64  # default Gantt rows on larger systems: the first 64 nodes
USAGE_BINS = 400  # usage / queue steps beyond this many are drawn as means over this many bins


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------


@dataclass
class GanttData:
    rects: pd.DataFrame  # job_id, node, lane, lanes, x0, x1
    lanes_per_node: np.ndarray
    first_node: int
    resource: str
    overlaps: int  # rows that could not get free lanes (only for an invalid schedule)


def gantt_data(
    alloc: pd.DataFrame,
    system: System,
    window: tuple[float, float],
    nodes: tuple[int, int],
    resource: str | None = None,
) -> GanttData:
    """Rectangles of node occupancy: every node gets one lane per unit of ``resource`` (cores by
    default); each allocation row takes as many lanes as the amount it holds, assigned greedily
    in start order (always possible for a valid schedule: at a start, the lanes held by rows
    that have ended are free and enough of them exist)."""
    resource = resource or ("core" if "core" in system.resources else system.resources[0])
    r = system.resource_index(resource)
    first, last = nodes
    cap = system.capacity[first : last + 1, r].astype(int)
    lanes_per_node = np.maximum(cap, 1)
    w0, w1 = window
    sel = alloc[
        (alloc["node"] >= first)
        & (alloc["node"] <= last)
        & (alloc["to"] > w0)
        & (alloc["from"] < w1)
    ]
    sel = sel[sel[resource] > 0].sort_values(["node", "from", "to"], kind="stable")
    out: dict[str, list[Any]] = {
        "job_id": [],
        "node": [],
        "lane": [],
        "lanes": [],
        "x0": [],
        "x1": [],
    }
    overlaps = 0
    for node, rows in sel.groupby("node", sort=True):
        busy = np.full(int(lanes_per_node[int(node) - first]), -np.inf)
        for job_id, t_from, t_to, amount in zip(
            rows["job_id"], rows["from"], rows["to"], rows[resource]
        ):
            need = int(min(amount, len(busy)))
            free = np.flatnonzero(busy <= t_from)
            if len(free) >= need:
                chosen = free[:need]
            else:
                overlaps += 1
                chosen = np.sort(np.argsort(busy, kind="stable")[:need])
            busy[chosen] = t_to
            breaks = np.flatnonzero(np.diff(chosen) != 1) + 1
            for run in np.split(chosen, breaks):
                out["job_id"].append(int(job_id))
                out["node"].append(int(node))
                out["lane"].append(int(run[0]))
                out["lanes"].append(len(run))
                out["x0"].append(max(float(t_from), w0))
                out["x1"].append(min(float(t_to), w1))
    return GanttData(pd.DataFrame(out), lanes_per_node, first, resource, overlaps)


def parse_range(text: str | None, what: str, kind: type = float) -> tuple[Any, Any] | None:
    """``"A:B"`` -> ``(A, B)`` with A < B (``A <= B`` for node ranges)."""
    if text is None:
        return None
    a, sep, b = text.partition(":")
    try:
        lo, hi = kind(a), kind(b)
    except ValueError:
        raise ConfigError(f"{what} must be START:END, got '{text}'") from None
    if not sep or (hi <= lo if kind is float else hi < lo):
        raise ConfigError(
            f"{what} must be START:END with START {'<' if kind is float else '<='} END, got '{text}'"
        )
    return lo, hi


# ---------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------


def _summary_rows(summary: dict[str, Any]) -> list[list[str]]:
    """``[metric, value, unit]`` per summary entry: every number in the unit its row names
    (decision times in ms), text and flags with the unit "text" / "yes/no"."""
    rows = []
    for key, value in summary.items():
        if isinstance(value, dict | list):
            continue
        if isinstance(value, bool):
            rows.append([key, str(value), "yes/no"])
        elif value is None or isinstance(value, str):
            rows.append([key, str(value), "text"])
        else:
            name, unit, scale = summary_unit(key)
            shown = value * scale
            text = f"{shown:.3g}" if unit == "ms" and abs(shown) < 100 else None
            if unit in ("jobs", "dispatcher calls") and float(shown).is_integer():
                text = f"{int(shown):,}"
            rows.append([name, text or format_value(metric(name), shown), unit or "number"])
    return rows


def _in_unit(window: tuple[float, float]) -> str:
    """A window of seconds in the unit its end reads best in: ``150.0 .. 183.1 days``."""
    from hpcdispatch.report.series import time_unit

    unit, per = time_unit(max(abs(window[1]), 1.0))
    digits = 0 if unit == "s" else 1
    return f"{window[0] / per:,.{digits}f} .. {window[1] / per:,.{digits}f} {unit}"


def _as_given(seconds: float) -> str:
    """A window bound as it was typed: ``86400``, not ``86400.0`` or ``8.64e+04``."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def write_run_report(
    run_dir: str | Path,
    out: str | Path | None = None,
    window: tuple[float, float] | None = None,
    nodes: tuple[int, int] | None = None,
) -> Path:
    """Write the report of one run into ``out`` (default ``RUN_DIR/report``); returns report.html.

    ``window``: the Gantt chart's time window in seconds after the first submission (a trace's
    clock may start anywhere: HPC2N's first job is submitted at t = 342,072 s). A window
    given here that holds no job on the chosen nodes is an error (:class:`ConfigError`, one
    line saying when the jobs run), not an empty chart; the default window (a tenth of the
    run around its middle) that holds none gets a note on the page."""
    run: StoredRun = read_run(run_dir)
    out = Path(out) if out is not None else Path(run_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    s, system = run.summary, run.system
    order = compare_order(
        Path(run_dir).resolve().parent
    )  # a run of a compare folder: named and coloured as there
    name = Path(run_dir).resolve().name
    label = (
        name
        if name in order
        else (s.get("label") or s.get("dispatcher_params") or s.get("dispatcher", "run"))
    )
    first_submit = float(s.get("first_submit", run.jobs["submit"].min()))
    last_end = float(s.get("last_end", np.nanmax(run.jobs["end"])))
    span = max(last_end - first_submit, 1.0)
    explicit = window is not None
    if window is None:
        mid, half = span / 2.0, max(span * DEFAULT_WINDOW_SHARE, 1.0) / 2.0
        window = (mid - half, mid + half)
    abs_window = (first_submit + window[0], first_submit + window[1])
    if nodes is None:
        nodes = (
            0,
            system.n_nodes - 1
            if system.n_nodes <= MAX_DEFAULT_NODES * 1.5
            else MAX_DEFAULT_NODES - 1,
        )
    if not (0 <= nodes[0] <= nodes[1] < system.n_nodes):
        raise ConfigError(
            f"--nodes {nodes[0]}:{nodes[1]} is outside the system's nodes 0:{system.n_nodes - 1}"
        )

    doc = Document(f"hpcdispatch run: {label}")
    doc.intro.append(
        Items(
            [
                ("system", f"{system.name} ({system.summary()})"),
                ("workload", f"{s.get('workload')} ({s.get('jobs')} jobs)"),
                ("dispatcher", str(s.get("dispatcher_params", s.get("dispatcher")))),
                ("predictor", str(s.get("predictor"))),
                ("schedule valid", str(s.get("valid"))),
                ("run directory", str(Path(run_dir).resolve())),
            ]
        )
    )

    rows = _summary_rows(s)
    write_frame(out / "summary.csv", pd.DataFrame(rows, columns=["metric", "value", "unit"]))
    from hpcdispatch.report.tables import markdown_rows

    write_text(out / "summary.md", markdown_rows(["metric", "value", "unit"], rows) + "\n")
    doc.section("Summary").elements.append(
        Table(["metric", "value", "unit"], rows, text_columns=1, csv="summary.csv")
    )
    from hpcdispatch.report.deadline import add_outcome_section

    add_outcome_section(doc, [(label, s)])

    sec = doc.section("Node occupancy")
    g = gantt_data(run.allocations, system, abs_window, nodes)
    shown = f"nodes {nodes[0]}-{nodes[1]} of {system.n_nodes}"
    if len(g.rects) == 0:
        where = (
            f"holds no job on {shown}; this run's jobs run from 0 to {span:,.0f} s after the first submission "
            f"(t = {first_submit:,.0f} s in the workload's clock)"
        )
        if explicit:
            raise ConfigError(
                f"--window {_as_given(window[0])}:{_as_given(window[1])} (seconds after the first "
                f"submission) {where}"
            )
        sec.elements.append(
            Text(
                f"The default window {window[0]:,.0f}-{window[1]:,.0f} s after the first submission "
                f"{where}.",
                note=True,
            )
        )
    rects = g.rects.assign(x0=g.rects["x0"] - first_submit, x1=g.rects["x1"] - first_submit)
    plots.plot_gantt(
        rects,
        g.lanes_per_node,
        g.first_node,
        window,
        out / "gantt.png",
        f"{label}: {shown}, {_in_unit(window)} after the first submission "
        f"(one lane per {g.resource})",
    )
    sec.elements.append(
        Figure(
            out / "gantt.png",
            f"Gantt chart of node occupancy, {shown}, window {window[0]:,.0f}-{window[1]:,.0f} s "
            f"after the first submission (t = {first_submit:,.0f} s in the workload's clock); "
            f"one colour per job, one lane per {g.resource}.",
        )
    )
    if g.overlaps:
        sec.elements.append(
            Text(
                f"{g.overlaps} allocation rows overlap others on their node: the schedule is not "
                "valid.",
                note=True,
            )
        )
    submit = run.jobs["submit"].to_numpy(dtype=float)
    start = run.jobs["start"].to_numpy(dtype=float)
    accepted = (run.jobs["status"] != "rejected").to_numpy()
    unit, per = time_unit(span)
    edges = np.linspace(first_submit, first_submit + span, USAGE_BINS + 1)

    binned: list[bool] = []

    def drawn(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """In the axis' unit; more steps than bins: time-weighted means over the bins."""
        if len(t) <= USAGE_BINS:
            return (t - first_submit) / per, v
        binned.append(True)
        m = binned_means(t, v, edges)
        return (edges - first_submit) / per, np.r_[m, m[-1]]

    usage, unused = {}, []
    for i, name in enumerate(system.resources):
        t, share = usage_over_time(run.allocations, name, float(system.total_capacity[i]))
        if np.any(share > 0):
            usage[name] = drawn(t, share)
        else:
            unused.append(name)
    plots.plot_usage_over_time(
        usage,
        drawn(*queue_length_profile(submit, start, accepted)),
        out / "utilization_time.png",
        f"{label}: utilisation per resource and queue length",
        (window[0] / per, window[1] / per),
        xlabel=f"time since the first submission [{unit}]",
    )
    sec.elements.append(
        Figure(
            out / "utilization_time.png",
            "Utilisation per resource (used / total capacity) and queued jobs over time, after "
            "the first submission"
            + (
                f" (where they change more often than {USAGE_BINS} times: "
                f"time-weighted means over {USAGE_BINS} equal bins)"
                if binned
                else ""
            )
            + "; the shaded band is the Gantt window.",
        )
    )
    if unused:
        sec.elements.append(
            Text(
                f"No job used {', '.join(unused)}: its utilisation (0 throughout) is not drawn.",
                note=True,
            )
        )

    sec = doc.section("Distributions")
    started = ~np.isnan(start)
    styles = dispatcher_styles([*order, label] if label in order else [label])
    info = plots.plot_wait_cdf(
        {label: start[started] - submit[started]}, out / "wait_cdf.png", styles
    )
    sec.elements.append(
        Figure(out / "wait_cdf.png", "Wait-time distribution (ECDF).", legend=info.legend)
    )
    decisions = run.decisions()
    if len(decisions):
        info = plots.plot_ecdf(
            {label: decisions["elapsed_s"].to_numpy() * 1000.0},
            out / "decision_time.png",
            "decision time per dispatcher call [ms]",
            "Decision-time distribution",
            floor=1e-3,
            styles=styles,
            ylabel="fraction of dispatcher calls",
        )
        sec.elements.append(
            Figure(
                out / "decision_time.png",
                "Wall-clock time of each dispatcher call (ECDF).",
                legend=info.legend,
            )
        )
    acc_path = Path(run_dir) / "prediction_accuracy.parquet"
    if acc_path.is_file():
        acc = pd.read_parquet(acc_path)
        if len(acc):
            info = plots.plot_accuracy_ecdf(
                {label: acc["accuracy"].to_numpy()}, out / "prediction_accuracy.png", styles
            )
            sec.elements.append(
                Figure(
                    out / "prediction_accuracy.png",
                    "Prediction accuracy A = real / predicted duration (ECDF; CP'19 Fig. 1).",
                    legend=info.legend,
                )
            )
    write_text(out / "report.md", doc.to_markdown(out))
    return write_html(doc, out / "report.html")
