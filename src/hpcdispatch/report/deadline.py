"""The deadline paper's result panels (Linnert, De Rose, Heiss 2024, Figs 14-18) from the
runs of a sweep or a folder of runs whose workloads are ``synthetic:deadline``.

Every run (cell) is read from its row of the report's frame: the strategy is the run label
(so any registered deadline strategy a sweep ran is drawn, in the colour
:func:`~hpcdispatch.report.style.dispatcher_styles` gives it everywhere in the report), the
load, type mix and communication pattern come from the workload spec. Figures, each with one
panel per load (normal, heavy, very heavy, then any other load), x = type mix (0, 1, 2, 3,
uniform), one bar per strategy, bar = mean over seeds, error bar = standard error of that
mean (sample standard deviation / sqrt(n); none for one seed):

=========================  ======  =====  ==========================================
metric                      async   sync   paper
=========================  ======  =====  ==========================================
``accepted`` (jobs)         14a     14s    Fig 14 (acceptance; the paper draws one, as
                                           acceptance does not depend on the pattern)
``cancel_rate``             15      16     Figs 15 / 16: cancelled / accepted
``on_time`` (jobs)          17      18     Figs 17 / 18: completed by the deadline
=========================  ======  =====  ==========================================

The numbers behind every bar are written to ``deadline_panels.csv`` (mean, sem, n).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpcdispatch.errors import HpcDispatchError
from hpcdispatch.report import plots
from hpcdispatch.report.document import Document, Figure, Table, Text
from hpcdispatch.report.outcomes import outcome_rows
from hpcdispatch.report.style import SeriesStyle
from hpcdispatch.report.tables import markdown_rows
from hpcdispatch.results.store import write_frame, write_text
from hpcdispatch.workload.deadline import COMMS, LOADS, TYPES, parse_deadline_spec

#: (summary key, axis label, figure for async, figure for sync)
PANEL_METRICS = (
    ("accepted", "accepted jobs", "14a", "14s"),
    ("cancel_rate", "cancelled / accepted", "15", "16"),
    ("on_time", "jobs completed on time", "17", "18"),
)
LOAD_TITLES = {
    "normal": "normal load (1500 s)",
    "heavy": "heavy load (150 s)",
    "very-heavy": "very heavy load (1 s)",
}


def deadline_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per finished deadline run: ``run, load, types, comm, seed`` and the panel
    metrics; empty when no run's workload is ``synthetic:deadline``."""
    rows = []
    spec_col = "workload_spec" if "workload_spec" in frame else "workload"
    for _, r in frame.iterrows():
        spec = str(r.get(spec_col, ""))
        if r.get("status", "done") != "done" or not spec.startswith("synthetic:deadline"):
            continue
        try:
            p = parse_deadline_spec(spec)
        except HpcDispatchError:
            continue
        row = {
            "run": str(r["run"]),
            "load": str(p.load),
            "types": str(p.types),
            "comm": p.comm,
            "seed": p.seed,
        }
        for key, *_ in PANEL_METRICS:
            row[key] = pd.to_numeric(r.get(key, np.nan), errors="coerce")
        rows.append(row)
    return pd.DataFrame(rows)


def _load_order(loads: list[str]) -> list[str]:
    named = [x for x in LOADS if x in loads]
    other = sorted(
        (x for x in loads if x not in LOADS), key=lambda x: -float(x)
    )  # longer gaps = lighter load
    return named + other


def panel_stats(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error (ddof 1, / sqrt(n); NaN for n = 1) and n per (metric, comm, load,
    types, run), in the panels' order."""
    out = []
    for key, *_ in PANEL_METRICS:
        for (comm, load, types, run), sub in runs.groupby(
            ["comm", "load", "types", "run"], sort=False
        ):
            v = sub[key].to_numpy(dtype=float)
            v = v[~np.isnan(v)]
            n = len(v)
            out.append(
                {
                    "metric": key,
                    "comm": comm,
                    "load": load,
                    "types": types,
                    "run": run,
                    "n": n,
                    "mean": float(v.mean()) if n else np.nan,
                    "sem": float(v.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
                }
            )
    return pd.DataFrame(out)


def add_deadline_panels(
    doc: Document, frame: pd.DataFrame, out: Path, styles: dict[str, SeriesStyle]
) -> bool:
    """Add the section "Deadline paper panels (Figs 14-18)" to ``doc`` with its figures and
    ``deadline_panels.csv`` in ``out``; False (nothing added) when no run is a deadline run."""
    runs = deadline_runs(frame)
    if len(runs) == 0:
        return False
    stats = panel_stats(runs)
    write_frame(out / "deadline_panels.csv", stats)
    names = list(dict.fromkeys(runs["run"]))
    loads = _load_order(list(dict.fromkeys(runs["load"])))
    mixes = [t for t in TYPES if t in set(runs["types"])]
    stats = stats.assign(panel=[LOAD_TITLES.get(x, f"inter-arrival {x} s") for x in stats["load"]])
    panels = [LOAD_TITLES.get(x, f"inter-arrival {x} s") for x in loads]
    sec = doc.section("Deadline paper panels (Figs 14-18)")
    seeds = runs.groupby(["run", "load", "types", "comm"]).size()
    sec.elements.append(
        Text(
            f"{len(runs)} runs: strategies {', '.join(names)}; type mixes {', '.join(mixes)}; loads "
            f"{', '.join(loads)}; seeds per bar {seeds.min()}-{seeds.max()}. Bars: mean over seeds; error bars: "
            "standard error of the mean (sample standard deviation / sqrt(n)). Numbers: deadline_panels.csv."
        )
    )
    for key, ylabel, fig_async, fig_sync in PANEL_METRICS:
        for comm, fig_no in zip(COMMS, (fig_async, fig_sync)):
            sub = stats[(stats["metric"] == key) & (stats["comm"] == comm)].rename(
                columns={"types": "group"}
            )
            if len(sub) == 0:
                continue
            png = f"deadline_{key}_{comm}.png"
            title = f"{ylabel} -- {comm} communication (paper Fig {fig_no.rstrip('as')})"
            info, counts = plots.plot_panel_bars(
                sub,
                panels,
                mixes,
                names,
                out / png,
                title,
                ylabel,
                styles=styles,
                xlabel="type mix",
            )
            caption = (
                f"{ylabel}, {comm} pattern, per load (panels) and type mix (x); one bar per strategy, "
                f"mean over seeds, error bar = standard error (paper Fig {fig_no.rstrip('as')})."
            )
            sec.elements.append(Figure(out / png, caption, legend=info.legend, panels=counts))
    header = ["metric", "comm", "load", "types", *names]
    rows = []
    order = {
        "metric": [k for k, *_ in PANEL_METRICS],
        "comm": list(COMMS),
        "load": loads,
        "types": mixes,
    }
    rank = {c: stats[c].map({v: i for i, v in enumerate(order[c])}) for c in order}
    stats = stats.assign(**{f"_{c}": r for c, r in rank.items()}).sort_values(
        [f"_{c}" for c in order], kind="stable"
    )
    for (key, comm, load, types), sub in stats.groupby(
        ["metric", "comm", "load", "types"], sort=False
    ):
        by_run = sub.set_index("run")
        cells = []
        for name in names:
            if name not in by_run.index:
                cells.append("-")
                continue
            m, s = by_run.loc[name, "mean"], by_run.loc[name, "sem"]
            fmt = "{:.3f}" if key.endswith("_rate") else "{:.1f}"
            cells.append(fmt.format(m) + ("" if np.isnan(s) else " ± " + fmt.format(s)))
        rows.append([key, comm, load, types, *cells])
    write_text(out / "deadline_panels.md", markdown_rows(header, rows) + "\n")
    sec.elements.append(Table(header, rows, text_columns=4, csv="deadline_panels.csv"))
    return True


def add_outcome_section(doc: Document, items: list[tuple[str, Any]]) -> bool:
    """Add "Deadline outcomes" (the table of :func:`outcome_rows`) to ``doc``; False when no
    run has deadline counts."""
    header, rows = outcome_rows(items)
    if not rows:
        return False
    sec = doc.section("Deadline outcomes")
    sec.elements.append(
        Text(
            "Per dispatcher, all jobs and each behaviour type: submitted, accepted (not rejected "
            "at submission), rejected (by the stage the dispatcher named: count, shape, "
            "deadline), cancelled at the deadline while waiting or while running, and completed "
            "by the deadline (on time)."
        )
    )
    sec.elements.append(Table(header, rows, text_columns=2))
    return True
