"""Constraint-programming dispatching: instances, policies (CP'19 versions), the priority rule,
the models (HCP'19, PCP'19, PCP'20, cp-hybrid), the solve loop, and the pipeline that ties
them into one decision (:class:`CPDispatcher`). The registered dispatchers are in
:mod:`hpcdispatch.dispatchers.cp`.

- :class:`DispatchInstance` (with :class:`QueuedJob`, :class:`RunningEntry`): one decision's
  input as plain arrays; :class:`Policy`: what a CP dispatcher optimises;
- :func:`rule_schedule` (:class:`RuleSchedule`) and :func:`horizon_units`: the priority rule
  and the model's horizon;
- :func:`solve`, :func:`solve_interruptibly`, :class:`DecisionBudget`, :class:`SolveOutcome`:
  one CP-SAT solve under a budget.
"""

from hpcdispatch.cp.instance import DispatchInstance, QueuedJob, RunningEntry
from hpcdispatch.cp.pipeline import CPDispatcher
from hpcdispatch.cp.policy import Policy
from hpcdispatch.cp.rule import RuleSchedule, horizon_units, rule_schedule
from hpcdispatch.cp.solve import DecisionBudget, SolveOutcome, solve, solve_interruptibly

__all__ = [
    "CPDispatcher",
    "DecisionBudget",
    "DispatchInstance",
    "Policy",
    "QueuedJob",
    "RuleSchedule",
    "RunningEntry",
    "SolveOutcome",
    "horizon_units",
    "rule_schedule",
    "solve",
    "solve_interruptibly",
]
