"""Tables of run summaries: the metric catalogue, formatting, aggregation over cells, markdown.

The catalogue is generic: a metric is tabulated when its column exists in the summaries.
Families are recognised by name, so metrics added later (fragmentation and spread for
AUCSCHED, acceptance / cancel / success rates for deadline-oriented dispatching) appear in
the report as soon as ``summary.json`` carries them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if (
    TYPE_CHECKING
):  # (pandas in the functions that take or make frames: the metric catalogue does without)
    import pandas as pd

# ---------------------------------------------------------------------------------------
# the comparison table of `hpcdispatch compare` (one row per run)
# ---------------------------------------------------------------------------------------

TABLE_COLUMNS = [
    ("label", "dispatcher"),
    ("predictor", "predictor"),
    ("wait_mean", "mean wait [s]"),
    ("wait_p95", "p95 wait [s]"),
    ("slowdown_mean", "mean slowdown"),
    ("bounded_slowdown_mean", "mean bsld"),
    ("utilization_core", "core util."),
    ("makespan", "makespan [s]"),
    ("fragmentation_mean", "fragm. [blocks]"),
    ("spread_mean", "spread"),
    ("killed", "killed"),
    ("decision_time_mean_s", "mean decision [ms]"),
    ("decision_time_p95_s", "p95 decision [ms]"),
    ("decision_time_max_s", "max decision [ms]"),
    ("prediction_mae_s", "pred. MAE [s]"),
    ("prediction_under_rate", "under-est."),
    ("sim_wall_s", "sim time [s]"),
    ("cp_solves", "CP solves"),
    ("cp_solver_improved", "CP improved on rule"),
    ("valid", "valid"),
]

CONSOLE_KEYS = (
    "label",
    "wait_mean",
    "bounded_slowdown_mean",
    "utilization_core",
    "makespan",
    "decision_time_mean_s",
    "cp_solves",
    "cp_solver_improved",
    "valid",
)


def comparison_frame(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Run summaries as one frame, decision times also in milliseconds."""
    import pandas as pd

    frame = pd.DataFrame(summaries)
    for col in ("decision_time_mean_s", "decision_time_max_s"):
        if col in frame:
            frame[col.replace("_s", "_ms")] = frame[col] * 1000.0
    return frame


def display_rows(frame: pd.DataFrame, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the comparison table (shared by rich and markdown).

    ``compact`` keeps the columns that fit an 80-column terminal.
    """
    cols = [
        (k, h)
        for k, h in TABLE_COLUMNS
        if k in frame.columns and (not compact or k in CONSOLE_KEYS)
    ]
    header = [h for _, h in cols]
    rows = []
    for _, rec in frame.iterrows():
        row = []
        for key, _ in cols:
            v = rec[key]
            if key == "label" and isinstance(rec.get("display_label"), str):
                v = rec["display_label"]  # the readable label; "label" names the directory
            if v is None or (isinstance(v, float | np.floating) and np.isnan(v)):
                row.append("-")  # (a column other rows have: a CP count for a non-CP run)
            elif key.startswith("cp_"):
                row.append(f"{int(v):,}")
            elif key.startswith("decision_time"):
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


def markdown_rows(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown_table(frame: pd.DataFrame) -> str:
    return markdown_rows(*display_rows(frame))


# ---------------------------------------------------------------------------------------
# the metric catalogue
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    kind: str = "float"  # float, rate (0..1), seconds-as-ms, int


_FIXED: dict[str, tuple[str, str]] = {
    "wait_mean": ("mean wait [s]", "float"),
    "wait_p95": ("p95 wait [s]", "float"),
    "slowdown_mean": ("mean slowdown", "float"),
    "bounded_slowdown_mean": ("mean bounded slowdown", "float"),
    "turnaround_mean": ("mean turnaround [s]", "float"),
    "makespan": ("makespan [s]", "float"),
    "queue_length_mean": ("mean queue length", "float"),
    "killed": ("killed jobs", "float"),
    "rejected": ("rejected jobs", "float"),
    "decision_time_mean_s": ("mean decision time [ms]", "ms"),
    "decision_time_p95_s": ("p95 decision time [ms]", "ms"),
    "decision_time_max_s": ("max decision time [ms]", "ms"),
    "prediction_mae_s": ("prediction MAE [s]", "float"),
    "prediction_under_rate": ("under-estimated", "rate"),
    "prediction_within_25pct": ("A in [0.75, 1.25]", "rate"),
    "sim_wall_s": ("simulation time [s]", "float"),
    # the AUCSCHED paper's metrics (fragmentation_* and spread_* keep their default titles)
    "utilization_paper": ("util. (theo. runtime / makespan)", "rate"),
    "slowdown_ratio_mean": ("mean slowdown ratio", "float"),
    "acceptance_rate": ("acceptance rate", "rate"),
    "cancel_rate": ("cancel rate", "rate"),
    "success_rate": ("success rate", "rate"),
    # CP dispatchers: how their decisions went (metrics/summary.py cp_outcomes)
    "cp_rule_optimal": ("CP: rule optimal, no search [decisions]", "int"),
    "cp_solves": ("CP: model solved [decisions]", "int"),
    "cp_solver_improved": ("CP: solver improved on the rule [decisions]", "int"),
    "cp_fallbacks": ("CP: rule kept (fallback) [decisions]", "int"),
}

# family -> column patterns, in display order
FAMILIES: dict[str, tuple[str, ...]] = {
    "qos": (r"wait_mean", r"slowdown_mean", r"bounded_slowdown_mean", r"turnaround_mean"),
    "resources": (
        r"utilization_\w+",
        r"fragmentation_\w+",
        r"fragmentation",
        r"spread_\w+",
        r"spread",
    ),
    "outcomes": (
        r"acceptance_rate",
        r"cancel_rate",
        r"success_rate",
        r"acceptance_\w+",
        r"cancel\w*_rate",
        r"success_\w+",
    ),
    "cost": (
        r"decision_time_mean_s",
        r"decision_time_max_s",
        r"prediction_mae_s",
        r"prediction_under_rate",
        r"sim_wall_s",
    ),
}

FAMILY_TITLES = {
    "qos": "Quality of service",
    "resources": "Resource usage: utilisation, fragmentation, spread",
    "outcomes": "Job outcomes: acceptance, cancellation, success",
    "cost": "Dispatcher cost and prediction quality",
}


def metric(key: str) -> Metric:
    """The catalogue entry of the summary key ``key`` (a title and a kind for any other key)."""
    if key in _FIXED:
        title, kind = _FIXED[key]
        return Metric(key, title, kind)
    if key.startswith("utilization_"):
        return Metric(key, f"{key.removeprefix('utilization_')} utilisation", "rate")
    if key.endswith("_rate"):
        return Metric(key, key.removesuffix("_rate").replace("_", " ") + " rate", "rate")
    return Metric(key, key.replace("_", " "), "float")


def family_metrics(frame: pd.DataFrame, family: str) -> list[Metric]:
    """The metrics of ``family`` that ``frame`` has (numeric columns with at least one value)."""
    import pandas as pd

    out: list[str] = []
    for pattern in FAMILIES[family]:
        rx = re.compile(pattern + r"$")
        for col in frame.columns:
            if col in out or not rx.match(col):
                continue
            values = pd.to_numeric(frame[col], errors="coerce")
            if values.notna().any():
                out.append(col)
    return [metric(k) for k in out]


def format_value(m: Metric, v: Any) -> str:
    """``v`` written as metric ``m`` is shown in tables (``-`` for a missing value)."""
    if v is None or (isinstance(v, float | np.floating) and np.isnan(v)):
        return "-"
    if m.kind == "ms":
        return f"{v * 1000:.3g}" if abs(v * 1000) < 100 else f"{v * 1000:,.0f}"
    if m.kind == "rate":
        return f"{v:.3f}"
    if isinstance(v, int | np.integer):
        return f"{v:,}"
    v = float(v)
    return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"


# ---------------------------------------------------------------------------------------
# aggregation over cells (seeds, repetitions)
# ---------------------------------------------------------------------------------------

GROUP_COLUMNS = ("system", "workload", "run")


def aggregate(
    frame: pd.DataFrame, metrics: list[Metric], keys: tuple[str, ...] = GROUP_COLUMNS
) -> pd.DataFrame:
    """One row per group: ``n`` and ``<metric>_mean``, ``<metric>_std`` (sample std, NaN for n = 1).

    Groups keep their first-appearance order (the sweep's order).
    """
    import pandas as pd

    rows = []
    for group, sub in frame.groupby(list(keys), sort=False, dropna=False):
        row: dict[str, Any] = dict(zip(keys, group))
        row["n"] = len(sub)
        for m in metrics:
            values = pd.to_numeric(sub[m.key], errors="coerce").to_numpy(dtype=float)
            values = values[~np.isnan(values)]
            row[f"{m.key}_mean"] = float(values.mean()) if len(values) else float("nan")
            row[f"{m.key}_std"] = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate_rows(
    stats: pd.DataFrame, metrics: list[Metric], keys: tuple[str, ...] = GROUP_COLUMNS
) -> tuple[list[str], list[list[str]]]:
    """Header and rows ``mean ± std`` of an :func:`aggregate` frame."""
    header = [*keys, "n", *(m.title for m in metrics)]
    rows = []
    for _, r in stats.iterrows():
        row = [str(r[k]) for k in keys] + [str(int(r["n"]))]
        for m in metrics:
            mean, std = r[f"{m.key}_mean"], r[f"{m.key}_std"]
            text = format_value(m, mean)
            if not np.isnan(std):
                text += " ± " + format_value(m, std)
            row.append(text)
        rows.append(row)
    return header, rows
