"""Results in a notebook: HTML tables and matplotlib figures you can keep working with.

>>> import hpcdispatch as h
>>> result = h.simulate("machine-s", "synthetic:lublin,jobs=300", "easy")   # doctest: +SKIP
>>> result                        # a table: identity, counts, the headline metrics
>>> result.gantt(window=(0, 86400))   # matplotlib Figures (not saved, not closed)
>>> result.utilisation()
>>> cmp = h.compare("machine-s", "synthetic:lublin,jobs=300", "fifo,easy,conservative")
>>> cmp                           # the comparison table, as ``hpcdispatch compare`` prints it
>>> cmp.qos_ecdf(); cmp.usage_over_time()

The figures are the reports' own (report/plots.py), in the same colours per dispatcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcdispatch.sim.result import SimulationResult, install_views
from hpcdispatch.vocabulary import JobStatus

if TYPE_CHECKING:  # (imported where they are used: installing the views must stay cheap)
    import matplotlib.pyplot as plt
    import pandas as pd

    from hpcdispatch.report.compare import ComparedRun
    from hpcdispatch.system.model import System
    from hpcdispatch.workload.job import Workload


def _detached(fig: plt.Figure) -> plt.Figure:
    """``fig`` taken out of pyplot's figure manager: a notebook shows it once, as the value of
    the cell, not a second time when pyplot flushes the cell's open figures."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


__all__ = ["Comparison", "compare", "gantt_figure", "result_html", "utilisation_figure"]

#: the rows a result shows in a notebook (summary keys), in this order
_RESULT_KEYS = (
    "jobs",
    "started",
    "rejected",
    "killed",
    "wait_mean",
    "bounded_slowdown_mean",
    "utilization_core",
    "makespan",
    "decision_time_mean_s",
)


def _table(header: list[str], rows: list[list[str]], caption: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td style='text-align:{'left' if i == 0 else 'right'}'>{escape(c)}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def result_html(result: SimulationResult) -> str:
    """A result as an HTML table: what ran, and its headline metrics with their units."""
    from hpcdispatch.metrics.summary import summarize

    summary = summarize(result)
    html = summary._repr_html_()
    shown = {k: summary[k] for k in _RESULT_KEYS if k in summary}
    head = (
        f"{result.workload.source.spec} on {result.system.name}, dispatched by "
        f"{summary.get('dispatcher_params', result.dispatcher.get('name'))}"
    )
    brief = type(summary)(shown)._repr_html_()
    return (
        f"<div><p><b>hpcdispatch run</b>: {escape(head)}</p>{brief}"
        f"<details><summary>every metric</summary>{html}</details></div>"
    )


def gantt_figure(
    result: SimulationResult,
    window: tuple[float, float] | None = None,
    nodes: tuple[int, int] | None = None,
) -> plt.Figure:
    """Node occupancy (one lane per core) over ``window`` (seconds after the first submission;
    default: the whole run) on ``nodes`` (default: all, or the first 64 of a larger system)."""
    from hpcdispatch.report import plots
    from hpcdispatch.report.run import MAX_DEFAULT_NODES, gantt_data

    system = result.system
    submit = result.workload.submit.astype(np.float64)
    first = float(submit.min()) if len(submit) else 0.0
    ends = result.end[~np.isnan(result.end)]
    last = float(ends.max()) if len(ends) else first + 1.0
    window = window or (0.0, max(last - first, 1.0))
    if nodes is None:
        top = system.n_nodes - 1
        nodes = (0, top if system.n_nodes <= MAX_DEFAULT_NODES * 1.5 else MAX_DEFAULT_NODES - 1)
    alloc = result.allocations_frame()
    g = gantt_data(alloc, system, (first + window[0], first + window[1]), nodes)
    rects = g.rects.assign(x0=g.rects["x0"] - first, x1=g.rects["x1"] - first)
    title = f"{result.dispatcher.get('name')}: nodes {nodes[0]}-{nodes[1]} of {system.n_nodes}"
    return _detached(plots.gantt_figure(rects, g.lanes_per_node, g.first_node, window, title))


def utilisation_figure(result: SimulationResult) -> plt.Figure:
    """Utilisation per resource (used / capacity) and queued jobs over the run."""
    from hpcdispatch.metrics.summary import queue_length_profile
    from hpcdispatch.report import plots
    from hpcdispatch.report.series import time_unit, usage_over_time

    system = result.system
    submit = result.workload.submit.astype(np.float64)
    first = float(submit.min()) if len(submit) else 0.0
    ends = result.end[~np.isnan(result.end)]
    span = max((float(ends.max()) if len(ends) else first) - first, 1.0)
    unit, per = time_unit(span)
    alloc = result.allocations_columns()
    usage = {}
    for i, name in enumerate(system.resources):
        t, share = usage_over_time(alloc, name, float(system.total_capacity[i]))
        if np.any(share > 0):
            usage[name] = ((t - first) / per, share)
    accepted = np.asarray(result.status) != JobStatus.REJECTED
    qt, ql = queue_length_profile(submit, result.start, accepted)
    return _detached(
        plots.usage_figure(
            usage,
            ((qt - first) / per, ql),
            f"{result.dispatcher.get('name')}: utilisation per resource and queue length",
            xlabel=f"time since the first submission [{unit}]",
        )
    )


@dataclass
class Comparison:
    """Several dispatchers on one workload: ``results`` by label, ``frame`` (one row per
    dispatcher, the columns of ``summary.json``), shown in a notebook as the comparison
    table; the comparison figures as matplotlib figures."""

    results: dict[str, SimulationResult]
    frame: pd.DataFrame
    runs: list[ComparedRun] = field(repr=False)

    def _repr_html_(self) -> str:
        from hpcdispatch.report.tables import display_rows

        header, rows = display_rows(self.frame, compact=False)
        first = self.frame.iloc[0]
        caption = f"{int(first['jobs']):,} jobs of {first['workload']} on {first['system']}"
        return _table(header, rows, caption)

    def _styles(self) -> dict[str, Any]:
        from hpcdispatch.report.style import dispatcher_styles

        return dispatcher_styles([r.label for r in self.runs])

    def qos_ecdf(self) -> plt.Figure:
        """Wait time and bounded slowdown of the started jobs (ECDFs, log x-axes)."""
        from hpcdispatch.report import plots

        fig, _ = plots.qos_ecdf_figure(
            {r.label: r.waits() for r in self.runs},
            {r.label: r.bounded_slowdowns() for r in self.runs},
            self._styles(),
        )
        return _detached(fig)

    def usage_over_time(self) -> plt.Figure:
        """Utilisation and queue length over time, one row per dispatcher."""
        from hpcdispatch.report import plots
        from hpcdispatch.report.compare import _time_panels

        panels, xlabel = _time_panels(self.runs, [])
        fig, _ = plots.time_series_figure(
            panels, xlabel, "Utilisation and queue length", self._styles()
        )
        return _detached(fig)


def compare(
    system: System | str,
    workload: Workload | str,
    dispatchers: str | list[str],
    predictor: str | None = None,
) -> Comparison:
    """Simulate ``workload`` on ``system`` with each dispatcher (a comma-separated list as for
    ``hpcdispatch compare -d``, or a list of specs), validate every schedule, and return the
    :class:`Comparison` (nothing is written; ``hpcdispatch compare -o`` writes the report)."""
    from hpcdispatch.dispatchers.spec import DispatcherSpec, parse_dispatcher_list
    from hpcdispatch.engine import simulate
    from hpcdispatch.errors import HpcDispatchError
    from hpcdispatch.metrics.summary import summarize
    from hpcdispatch.report.compare import ComparedRun
    from hpcdispatch.report.tables import comparison_frame
    from hpcdispatch.system.io import load_system
    from hpcdispatch.validation import validate
    from hpcdispatch.workload.loader import load_workload

    if isinstance(system, str):
        system = load_system(system)
    if isinstance(workload, str):
        workload = load_workload(workload, system)
    specs = (
        parse_dispatcher_list(dispatchers)
        if isinstance(dispatchers, str)
        else [DispatcherSpec.parse(d) for d in dispatchers]
    )
    results: dict[str, SimulationResult] = {}
    summaries, runs = [], []
    for spec in specs:
        result = simulate(system, workload, spec, predictor)
        report = validate(result)
        if not report.ok:
            raise HpcDispatchError(f"{spec.display_label}: {report.describe()}")
        summary = summarize(result)
        summary["label"] = spec.run_label
        summary["display_label"] = spec.display_label
        summary["valid"] = True
        summaries.append(summary)
        results[spec.display_label] = result
        runs.append(ComparedRun.from_result(spec.display_label, result))
    return Comparison(results, comparison_frame(summaries), runs)


install_views(html=result_html, gantt=gantt_figure, utilisation=utilisation_figure)
