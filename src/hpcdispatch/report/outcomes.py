"""The deadline outcome table (issue 48): per run, submitted / accepted / rejected (by reason)
/ cancelled waiting, running / on time, for all jobs and each behaviour type. Light on
imports (numpy only): ``simulate`` and ``compare`` print it without loading the plotting
stack; the reports add it as a section (:func:`hpcdispatch.report.deadline.add_outcome_section`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

#: the outcome counts of a deadline run, in the order every table shows them
OUTCOME_COLUMNS = (
    ("submitted", "submitted"),
    ("accepted", "accepted"),
    ("rejected", "rejected"),
    ("cancelled_waiting", "cancelled waiting"),
    ("cancelled_running", "cancelled running"),
    ("on_time", "on time"),
)


def has_outcomes(summary: Any) -> bool:
    """Whether a run's summary (a dict or a frame row) has the deadline outcome counts."""
    value = summary.get("submitted") if hasattr(summary, "get") else None
    return value is not None and not (isinstance(value, float) and np.isnan(value))


def _reasons(summary: Any) -> str:
    reasons = summary.get("reject_reasons")
    if isinstance(reasons, str):  # (a frame read back from CSV / parquet keeps it as text)
        try:
            reasons = json.loads(reasons.replace("'", '"'))
        except ValueError:
            return reasons
    if not isinstance(reasons, dict) or not reasons:
        return ""
    return ", ".join(f"{k} {int(v)}" for k, v in reasons.items())


def _count(summary: Any, key: str) -> str:
    v = summary.get(key)
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{int(v):,}"


def outcome_rows(items: list[tuple[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The deadline outcome table of runs ``(label, summary)``: per run a row for all its jobs
    (rejections also by reason: the stage named first in the dispatcher's reason) and one per
    behaviour type present (``type{b}_`` keys). Runs without deadline counts are left out."""
    header = ["dispatcher", "jobs", *(title for _, title in OUTCOME_COLUMNS), "rejected by reason"]
    rows: list[list[str]] = []
    for label, s in items:
        if not has_outcomes(s):
            continue

        rows.append([label, "all", *(_count(s, k) for k, _ in OUTCOME_COLUMNS), _reasons(s)])
        for b in range(4):
            if has_outcomes({"submitted": s.get(f"type{b}_submitted")}):
                rows.append(
                    [
                        label,
                        f"type {b}",
                        *(_count(s, f"type{b}_{k}") for k, _ in OUTCOME_COLUMNS),
                        "",
                    ]
                )
    return header, rows
