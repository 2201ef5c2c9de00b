"""What CP'19's versions 1-3 change: durations, priorities, objective weights.

- **v1** (reduced model, search control): running jobs keep ``s + d - t`` as remaining
  duration -- when a job outlived its prediction that is <= 0 and the job drops out of the
  model, so the model believes its resources are free (the weakness v2 fixes); priority and
  objective use the queues' expected waiting time ``ewt``.
- **v2** adds the under-estimation fix: a running job's remaining duration is
  ``max(1, s + d - t)``.
- **v3** uses job durations: objective ``sum (s - q + d) / d`` (total slowdown) and priority
  ``(t - q + d) / d`` (current slowdown).

Objectives for v1/v2 (the seeds'): pooled-future models (HCP, cp-hybrid) minimise
``sum (max ewt / ewt_i) (s_i - q_i)``; node-level models (PCP'19, PCP'20) minimise
``sum max(0, (s_i - q_i - ewt_i) / ewt_i)``. Their priority is ``(max ewt / ewt_i) (t - q_i)``;
ties (all versions) go to the smaller demand ``sum_r req_r / capacity_r x d``, then arrival.

``ewt`` per queue comes from the trace itself: the mean wait its jobs recorded (SWF field 3,
``Workload.queue_ewt``). A queue without recorded waits gets the median of the known queues'
``ewt``, and when no queue has any (synthetic workloads, traces without waits) ``ewt = 1 s``
for every queue, which makes the v1/v2 objectives plain total waiting time.

Model time is counted in units of ``time_unit`` seconds (default 60 s): durations are rounded
up (at least one unit); a start at model time 0 means "start now". Objective weights are
integers: ``round(100 x max / value)`` keeps the relative rounding error under 0.5 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from hpcdispatch.cp.instance import DispatchInstance, QueuedJob, RunningEntry
from hpcdispatch.errors import ConfigError

WEIGHT_SCALE = 100

#: the decision budgets (``BudgetOptions.kind``, the dispatchers' ``budget`` parameter)
BUDGETS = ("none", "stall", "gap")


@dataclass(frozen=True)
class ModelOptions:
    """What enters the model and how it is written: CP'19's ``version`` (1-3, this module's
    docstring), the first ``m`` queued jobs by priority, model time in units of ``time_unit``
    seconds; ``symmetry``: the papers' node symmetry breaking; ``job_symmetry``: interchangeable
    jobs start in priority order (models/common.py; not in the papers)."""

    version: int = 3
    m: int = 100
    time_unit: float = 60.0
    symmetry: bool = True
    job_symmetry: bool = True


@dataclass(frozen=True)
class SearchControl:
    """CP'19's search control (cp/solve.py): first time limit ``delta`` seconds, doubled after
    a search without a solution while ``<= delta_max``, at most ``k`` restarts without a
    better outcome; CP-SAT ``workers``; ``deterministic``: bound the search by CP-SAT's
    deterministic time only, so decisions are reproducible on a loaded machine too."""

    delta: float = 1.0
    delta_max: float = 16.0
    k: int = 2
    workers: int = 1
    deterministic: bool = False

    def __post_init__(self) -> None:
        if not self.delta_max >= self.delta:
            raise ConfigError(
                f"CP parameter delta_max must be >= delta ({self.delta:g}), got {self.delta_max!r}"
            )


@dataclass(frozen=True)
class BudgetOptions:
    """The decision budget (cp/solve.py; not in the papers): ``kind`` "none" (the papers'
    search control), "stall" (stop once the best solution has not improved for ``stall``
    seconds, deterministic units with ``deterministic``) or "gap" (CP-SAT's
    ``relative_gap_limit = gap``); with stall or gap, all searches of one decision together
    may take ``decision_limit`` seconds (0: no cap; :class:`~hpcdispatch.cp.solve.DecisionBudget`)."""

    kind: str = "none"
    stall: float = 0.05
    gap: float = 0.01
    decision_limit: float = 0.0


@dataclass(frozen=True)
class CPSettings:
    """What the policy, the models and the solver read: three small records. A dispatcher
    builds it from its flat parameters (:meth:`of` names them)."""

    model: ModelOptions = field(default_factory=ModelOptions)
    search: SearchControl = field(default_factory=SearchControl)
    budget: BudgetOptions = field(default_factory=BudgetOptions)

    @classmethod
    def of(cls, **params: Any) -> CPSettings:
        """The settings from the dispatchers' flat parameter names (``budget`` is
        ``BudgetOptions.kind``): ``CPSettings.of(delta=0.2, budget="stall", stall=0.02)``."""
        groups: dict[str, dict[str, Any]] = {"model": {}, "search": {}, "budget": {}}
        for name, value in params.items():
            group = _GROUP_OF.get(name)
            if group is None:
                raise TypeError(f"CPSettings.of: unknown parameter {name!r}")
            groups[group]["kind" if name == "budget" else name] = value
        return cls(
            ModelOptions(**groups["model"]),
            SearchControl(**groups["search"]),
            BudgetOptions(**groups["budget"]),
        )


_GROUP_OF = {
    **{f.name: "model" for f in fields(ModelOptions)},
    **{f.name: "search" for f in fields(SearchControl)},
    **{("budget" if f.name == "kind" else f.name): "budget" for f in fields(BudgetOptions)},
}


class Policy:
    """Version-dependent quantities for one instance."""

    def __init__(self, inst: DispatchInstance, settings: CPSettings, flavour: str):
        if flavour not in ("hcp", "pcp"):
            raise ValueError(flavour)
        self.inst = inst
        self.s = settings
        self.flavour = flavour
        self.t = inst.time
        known = [v for v in inst.queue_ewt.values() if v > 0]
        self._ewt_default = float(np.median(known)) if known else 1.0
        self._ewt = {q: (v if v > 0 else self._ewt_default) for q, v in inst.queue_ewt.items()}
        self.max_ewt = max([self._ewt_default, *self._ewt.values()])
        self._total = np.maximum(inst.capacity.sum(axis=0), 1)

    # ---- durations ---------------------------------------------------------------------
    def units(self, seconds: float) -> int:
        return max(1, int(math.ceil(seconds / self.s.model.time_unit - 1e-9)))

    def duration_units(self, job: QueuedJob) -> int:
        return self.units(job.duration)

    def remaining_units(self, entry: RunningEntry) -> int | None:
        """Remaining model duration of a running job; ``None``: not in the model (v1, overdue)."""
        left = entry.planned_end - self.t
        if self.s.model.version == 1 and left <= 0:
            return None
        return self.units(max(left, 1.0))

    # ---- priorities --------------------------------------------------------------------
    def ewt(self, job: QueuedJob) -> float:
        return self._ewt.get(job.queue, self._ewt_default)

    def priority(self, job: QueuedJob) -> float:
        if self.s.model.version == 3:
            d = max(job.duration, 1.0)
            return (self.t - job.submit + d) / d
        return self.max_ewt / self.ewt(job) * (self.t - job.submit)

    def demand(self, job: QueuedJob) -> float:
        return float((np.asarray(job.total_request) / self._total).sum()) * max(job.duration, 1.0)

    def order(self, jobs: list[QueuedJob]) -> list[QueuedJob]:
        """Highest priority first; ties: smaller demand, then arrival."""
        return sorted(jobs, key=lambda j: (-self.priority(j), self.demand(j), j.index))

    # ---- objective ---------------------------------------------------------------------
    def weight(self, job: QueuedJob, d_max: float) -> int:
        if self.s.model.version == 3:
            return max(1, round(WEIGHT_SCALE * d_max / max(job.duration, 1.0)))
        return max(1, round(WEIGHT_SCALE * self.max_ewt / self.ewt(job)))

    def uses_threshold(self) -> bool:
        """PCP v1/v2 objective: only waiting beyond ``ewt`` counts."""
        return self.flavour == "pcp" and self.s.model.version < 3

    def threshold_units(self, job: QueuedJob) -> int:
        """Model start (units) after which the PCP v1/v2 term ``s - q - ewt`` becomes positive."""
        slack = self.ewt(job) - (self.t - job.submit)
        return int(math.floor(slack / self.s.model.time_unit))

    def objective_of(self, jobs: list[QueuedJob], starts: dict[int, int], d_max: float) -> int:
        """The model's integer objective for given model starts (job index -> units)."""
        total = 0
        for j in jobs:
            s = starts[j.index]
            term = max(0, s - self.threshold_units(j)) if self.uses_threshold() else s
            total += self.weight(j, d_max) * term
        return total
