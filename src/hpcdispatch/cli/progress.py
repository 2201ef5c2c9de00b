"""Progress as plain lines, for a log file or a pipe (a terminal gets rich's progress bar)."""

from __future__ import annotations

from typing import Any


def plain_progress(
    label: str, step: float = 0.05, every_s: float = 60.0, unit: str = "jobs", verb: str = "done"
) -> Any:
    """``update(done, n, t)`` printing ``label: done / n jobs done (pct), sim t=...`` lines
    (``t`` None: no simulated time; ``unit`` and ``verb`` name what is counted)."""
    import time

    state = {"next": 0.0, "at": time.monotonic()}

    def update(done: int, n: int, t: float) -> None:
        share = done / n if n else 1.0
        now = time.monotonic()
        if share >= state["next"] or now - state["at"] >= every_s or done == n:
            state["next"] = (int(share / step) + 1) * step
            state["at"] = now
            when = "" if t is None else f", sim t={t:,.0f} s"
            print(
                f"{label}: {done:,} / {n:,} {unit} {verb} ({100 * share:.0f} %){when}", flush=True
            )

    return update
