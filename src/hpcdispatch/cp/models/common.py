"""What every CP model shares: the scheduling part (CP'19 sec. 2.2, PCP'20 sec. 2.2).

Each queued job of the model is an interval ``[s_i, s_i + d_i)`` with ``s_i`` in
``[0, eoh - d_i]`` (model time: units from now); running jobs are fixed intervals
``[0, remaining)``. The objective is the version's (see :mod:`hpcdispatch.cp.policy`). The
search prefers the job of highest priority that can start first, at its earliest start
(a decision strategy on the starts in priority order), and the priority-rule schedule is a
complete hint.

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hpcdispatch._util import LazyModule
from hpcdispatch.cp.instance import DispatchInstance, QueuedJob, RunningEntry
from hpcdispatch.cp.policy import CPSettings, Policy
from hpcdispatch.cp.rule import RuleSchedule
from hpcdispatch.system.allocation import Allocation

if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = LazyModule("ortools.sat.python.cp_model")  # (imported when a model is first built)


@dataclass(frozen=True)
class ModelInput:
    """What every CP model is built from, computed once by the pipeline (:mod:`hpcdispatch.cp.pipeline`).

    ``jobs``: the model's jobs in priority order; ``horizon``: the end of horizon (model
    units); ``d_max``: the longest planned duration (seconds, for v3 weights); ``rule``: the
    priority-rule schedule, the complete hint (with job symmetry, in group order);
    ``earliest``: each job's earliest start next to the running jobs alone (a lower bound).
    """

    inst: DispatchInstance
    policy: Policy
    jobs: list[QueuedJob]
    horizon: int
    d_max: float
    rule: RuleSchedule
    settings: CPSettings
    earliest: dict[int, int] | None = None


@dataclass
class BuiltModel:
    """A built CP-SAT model: its start variables per job and how to decode who starts now."""

    name: str
    model: cp_model.CpModel
    jobs: list[QueuedJob]
    starts: dict[int, cp_model.IntVar]
    #: job index -> allocation for the jobs that start now (None: to be placed by best fit)
    decode_now: Callable[[cp_model.CpSolver], dict[int, Allocation | None]]
    build_s: float = 0.0
    notes: dict[str, object] = field(default_factory=dict)

    def start_values(self, solver: cp_model.CpSolver) -> dict[int, int]:
        return {idx: int(solver.value(v)) for idx, v in self.starts.items()}

    def size(self) -> tuple[int, int]:
        proto = self.model.proto
        return len(proto.variables), len(proto.constraints)


@dataclass(frozen=True)
class CPModel:
    """A CP model the pipeline can use: its ``name``; whether the priority rule must plan node
    placements for its hint (``node_level``: PCP'19, PCP'20); its v1/v2 objective family
    (``flavour``: "hcp" pooled, "pcp" node-level, see :mod:`hpcdispatch.cp.policy`); and
    ``build``."""

    name: str
    node_level: bool
    flavour: str
    build: Callable[[ModelInput], BuiltModel]


class Schedule:
    """Variables and constraints of the scheduling part, shared by every model."""

    def __init__(self, x: ModelInput, model: cp_model.CpModel | None = None):
        self.t0 = time.perf_counter()
        self.model = model or cp_model.CpModel()
        m = self.model
        inst, policy, jobs, horizon, d_max, rule = (
            x.inst,
            x.policy,
            x.jobs,
            x.horizon,
            x.d_max,
            x.rule,
        )
        earliest, job_symmetry = x.earliest, x.settings.model.job_symmetry
        self.inst, self.policy, self.jobs, self.horizon = inst, policy, jobs, horizon
        self.starts: dict[int, cp_model.IntVar] = {}
        self.intervals: dict[int, cp_model.IntervalVar] = {}
        self.durations: dict[int, int] = {}
        objective = []
        for j in jobs:
            d = policy.duration_units(j)
            lo = min(earliest.get(j.index, 0), rule.starts[j.index]) if earliest else 0
            s = m.new_int_var(lo, max(horizon - d, lo), f"s[{j.id}]")
            self.starts[j.index] = s
            self.durations[j.index] = d
            self.intervals[j.index] = m.new_fixed_size_interval_var(s, d, f"job[{j.id}]")
            w = policy.weight(j, d_max)
            hint_s = rule.starts[j.index]
            m.add_hint(s, hint_s)
            if policy.uses_threshold():
                e = policy.threshold_units(j)
                # a job that already waited beyond its ewt has e < 0: its term reaches horizon - e
                z = m.new_int_var(0, max(horizon, horizon - e), f"late[{j.id}]")
                m.add(z >= s - e)
                m.add_hint(z, max(0, hint_s - e))
                objective.append(w * z)
            else:
                objective.append(w * s)
        m.minimize(sum(objective))
        ordered = [self.starts[j.index] for j in jobs]  # jobs come in priority order
        m.add_decision_strategy(ordered, cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
        self.notes: dict[str, object] = {}
        if job_symmetry:
            pairs = 0
            for chain in interchangeable_jobs(jobs, policy, d_max):
                for a, b in zip(chain, chain[1:]):
                    if (
                        rule.starts[a.index] > rule.starts[b.index]
                    ):  # callers pass rule_in_group_order(rule)
                        raise RuntimeError(
                            f"priority rule starts job {b.id} before the identical job {a.id}"
                        )
                    m.add(self.starts[a.index] <= self.starts[b.index])
                    pairs += 1
            self.notes["job_symmetry_pairs"] = pairs
        # running jobs: fixed intervals [0, remaining)
        self.running: list[tuple[RunningEntry, int, cp_model.IntervalVar]] = []
        for r in inst.running:
            left = policy.remaining_units(r)
            if left is None:
                continue  # v1: a job past its planned end is not in the model
            self.running.append((r, left, m.new_fixed_size_interval_var(0, left, f"run[{r.id}]")))

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def interchangeable_jobs(
    jobs: list[QueuedJob], policy: Policy, d_max: float
) -> list[list[QueuedJob]]:
    """Groups (of two or more) of interchangeable jobs, each in the given (priority) order."""
    groups: dict[tuple, list[QueuedJob]] = {}
    for j in jobs:
        key = (
            j.units,
            tuple(j.unit_request),
            j.max_units_per_node,
            policy.duration_units(j),
            policy.weight(j, d_max),
            policy.ewt(j) if policy.uses_threshold() else None,
        )
        groups.setdefault(key, []).append(j)
    return [g for g in groups.values() if len(g) > 1]


def rule_in_group_order(
    rule: RuleSchedule, jobs: list[QueuedJob], policy: Policy, d_max: float
) -> RuleSchedule:
    """The rule's schedule with the starts (and allocations) of each group of interchangeable
    jobs handed out in priority order, as job symmetry requires.

    Interchangeable jobs have the same shape, so permuting their starts and allocations keeps
    the schedule feasible; the objective is unchanged (version 3) or no worse (the threshold
    objective: the earlier start goes to the job that waited longer). The rule nearly always
    yields this order already; PCP version 1 with last-two predictions on SDSC-SP2 did not in
    15 of 100,781 decisions, which made the model refuse its hint."""
    starts, allocations = dict(rule.starts), dict(rule.allocations)
    changed = False
    for chain in interchangeable_jobs(jobs, policy, d_max):
        slots = sorted(((rule.starts[j.index], k) for k, j in enumerate(chain)))
        if [k for _, k in slots] == list(range(len(chain))):
            continue  # already in priority order (ties keep the rule's own assignment)
        changed = True
        placed = [
            (rule.starts[chain[k].index], rule.allocations.get(chain[k].index)) for _, k in slots
        ]
        for j, (start, alloc) in zip(chain, placed):
            starts[j.index] = start
            allocations.pop(j.index, None)
            if alloc is not None:
                allocations[j.index] = alloc
    if not changed:
        return rule
    aligned = RuleSchedule(order=list(rule.order), starts=starts, allocations=allocations)
    aligned.objective = policy.objective_of(jobs, starts, d_max)
    return aligned


def requested_resources(jobs: list[QueuedJob]) -> list[int]:
    """Resource columns some job of the model requests (unused cumulatives are dropped, CP'19 v1)."""
    n = len(jobs[0].unit_request) if jobs else 0
    return [r for r in range(n) if any(j.unit_request[r] > 0 for j in jobs)]


def per_node_units(vector, job: QueuedJob) -> int:
    """Units of ``job`` that one node with free amounts ``vector`` holds (its units-per-node
    limit included; the job's whole unit count when it requests nothing)."""
    per = [int(vector[r]) // a for r, a in enumerate(job.unit_request) if a > 0]
    fit = min(per) if per else job.units
    if job.max_units_per_node > 0:
        fit = min(fit, job.max_units_per_node)
    return max(fit, 0)
