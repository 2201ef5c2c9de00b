"""The CP-SAT solution callback that records when the search last improved (the stall
budget's clock). Its own module because it subclasses an OR-Tools class: ``solve.py``
imports it on first use, so OR-Tools stays out of runs that never solve a model."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model


class ImprovementRecorder(cp_model.CpSolverSolutionCallback):
    """Records the clock at every improving solution (wall: ``time.monotonic()``;
    deterministic: CP-SAT's deterministic time) in ``last_improvement``, counts them in
    ``improvements``, and with ``stop_at_first`` stops the search at the first solution."""

    def __init__(self, deterministic: bool, stop_at_first: bool) -> None:
        super().__init__()
        self.deterministic = deterministic
        self.stop_at_first = stop_at_first
        self.best: float | None = None
        self.last_improvement: float | None = None
        self.improvements = 0

    def on_solution_callback(self) -> None:
        value = self.objective_value
        if self.best is None or value < self.best:
            self.best = value
            self.last_improvement = (
                self.deterministic_time if self.deterministic else time.monotonic()
            )
            self.improvements += 1
            if self.stop_at_first:
                self.stop_search()
