"""The report of ``hpcdispatch compare``: several runs on one workload, as a table (CSV,
markdown), plots (PNG) and ``report.md``. Tables live in report/tables.py, figures in
report/plots.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hpcdispatch.report.plots import plot_accuracy_ecdf, plot_comparison, plot_wait_cdf
from hpcdispatch.report.tables import (
    CONSOLE_KEYS,
    TABLE_COLUMNS,
    comparison_frame,
    display_rows,
    markdown_table,
)

__all__ = [
    "CONSOLE_KEYS",
    "TABLE_COLUMNS",
    "comparison_frame",
    "display_rows",
    "markdown_table",
    "plot_accuracy_ecdf",
    "plot_comparison",
    "plot_wait_cdf",
    "write_comparison_report",
]


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
        "- fragmentation: node blocks (runs of consecutive node indices) of a job's allocation; spread = "
        "(last node - first node + 1) / nodes used; means over started jobs (the AUCSCHED paper's metrics).",
        "- decision time: wall-clock time of one dispatcher call.",
        "- prediction accuracy A = real / predicted duration; MAE = mean |predicted - real|; "
        "under-est. = share of jobs with predicted < real.",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
