"""The CP dispatching pipeline shared by HCP'19, PCP'19, PCP'20 (CP'19 versions 1-3),
cp-hybrid and cp-rule (registered in :mod:`hpcdispatch.dispatchers.cp`).

Every call builds a :class:`~hpcdispatch.cp.instance.DispatchInstance` and runs the same
steps; the models differ only in how they represent allocation:

1. the first ``m`` queued jobs by priority that can start now are the model's candidates;
2. the priority-rule schedule is computed; if it starts every candidate now it is optimal;
3. otherwise the model is built with the rule as a complete hint and solved
   (:mod:`hpcdispatch.cp.solve`);
4. the solution is used only if it is at least as good as the rule's, else the rule's
   decision is (``Decision.info["fallback"]`` says why): never stalls, never worse than the rule;
5. the jobs that start now are placed on the real free capacity (the model's nodes, else best
   fit); HCP'19 solves again with a job best fit cannot place postponed (``on_unplaced``);
6. with a decision budget (``budget=stall|gap``) all searches of one decision share one
   ``decision_limit``.

``Decision.info`` is the decision's record (model size, times, status, objective, the rule's
objective, ``fallback``, ``stop``), which the run summary and the reports read. The
parameters: :class:`CPDispatcher`.

Design notes, decisions and measurements: docs/RESULTS-CP.md,
"From the module docstrings".
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hpcdispatch.allocators import make_allocator
from hpcdispatch.cp.instance import DispatchInstance, QueuedJob
from hpcdispatch.cp.models.common import BuiltModel, CPModel, ModelInput, rule_in_group_order
from hpcdispatch.cp.policy import (
    BUDGETS,
    BudgetOptions,
    CPSettings,
    ModelOptions,
    Policy,
    SearchControl,
)
from hpcdispatch.cp.rule import (
    RuleSchedule,
    earliest_alone,
    horizon_units,
    paper_horizon_too_short,
    paper_horizon_units,
    rule_schedule,
)
from hpcdispatch.cp.solve import (
    HINT_CHECK_S,
    DecisionBudget,
    hint_is_solution,
    load_ortools,
    solve,
)
from hpcdispatch.errors import ConfigError
from hpcdispatch.planning.profile import load_compiled_kernels
from hpcdispatch.protocol import (
    Allocation,
    Boolean,
    Decision,
    Dispatcher,
    DispatchView,
    Interval,
    OneOf,
    ParamConstraint,
    Start,
    Tags,
    Text,
)
from hpcdispatch.system.allocation import pooled_fits, units_fit_per_node
from hpcdispatch.system.model import System


@dataclass(frozen=True)
class Solved:
    """One solve of the model: the jobs it starts now (job index -> the model's allocation,
    or None: best fit places it) and the wall time of its search (0: no search ran)."""

    chosen: dict[int, Allocation | None]
    solve_s: float = 0.0


@dataclass(frozen=True)
class Placement:
    """The jobs put on the real free capacity (``[(job index, allocation)]``, priority
    order) and the indices of those best fit could not place."""

    placed: list[tuple[int, Allocation]]
    unplaced: list[int]


@dataclass(frozen=True)
class PipelineOptions:
    """What the pipeline does around the model (the module docstring's steps):
    ``keep_blocked`` keeps the jobs that cannot start now in the model (CP'19 leaves them out;
    docs/RESULTS-CP.md, "Starvation"), ``reserve`` keeps the first ``reserve`` of them;
    ``paper_v1`` is CP'19's version-1 horizon with its defect (a research option: it breaks
    "never lose to the rule"; "CP'19's orderings"); ``on_unplaced`` what to do with a job the
    model starts now that best fit cannot place ("resolve": solve again with it postponed,
    HCP'19's iterations; "postpone"; "default": the model's own); ``force_model`` builds and
    solves the model even when the rule starts every job now; ``dump_instances`` a directory
    that receives every instance as JSON."""

    keep_blocked: bool = False
    reserve: int = 0
    paper_v1: bool = False
    on_unplaced: str = "default"
    force_model: bool = False
    dump_instances: str | None = None


class CPDispatcher(Dispatcher):
    """Shared pipeline of the CP-based dispatchers (not registered itself).

    Its parameters are flat keyword parameters, stored under their own names (the contract:
    specs such as ``pcp20:budget=stall,stall=0.02``, sweep tables and cell identities see
    exactly these), and declared once in :attr:`parameter_constraints`. ``_setup`` groups
    them into small typed frozen records, which the code reads:

    - ``self.settings`` (:class:`~hpcdispatch.cp.policy.CPSettings`), what the policy, the
      models and the solver read: ``.model`` (:class:`~hpcdispatch.cp.policy.ModelOptions`:
      version, m, time_unit, symmetry, job_symmetry), ``.search``
      (:class:`~hpcdispatch.cp.policy.SearchControl`: delta, delta_max, k, workers,
      deterministic) and ``.budget`` (:class:`~hpcdispatch.cp.policy.BudgetOptions`: budget,
      stall, gap, decision_limit -- the decision budget, docs/RESULTS-CP.md, "A decision
      budget");
    - ``self.options`` (:class:`PipelineOptions`): keep_blocked, reserve, paper_v1,
      on_unplaced, force_model, dump_instances.

    ``allocator`` is accepted (the CLI's ``--allocator`` reaches every dispatcher) but the
    pipeline places with best fit, as the papers do."""

    name = "cp"
    tags = Tags(uses_solver=True, memoryless=True, deterministic=False, node_constraints=False)
    #: the CP model (:class:`~hpcdispatch.cp.models.common.CPModel`); None: the rule alone
    MODEL: ClassVar[CPModel | None] = None
    #: one worker interleaving CP-SAT's subsolvers: deterministic, and on congested instances
    #: it finds better schedules in 1 s than the single default strategy; presolve off: only
    #: then is the complete rule hint picked up at once by the node-level models; CP-SAT's
    #: own symmetry detection off: on PCP'20 models it used the whole time limit before any
    #: search (the models break the symmetries they know of themselves). Measured on dumped
    #: Eurora instances, see docs/RESULTS-CP.md. ``AllDifferent`` constraints are never
    #: expanded (CP-SAT expands those over domains of up to 256 values, even with presolve
    #: off, into a Boolean per variable and value, outside its time limit): on PCP'20's
    #: models of 60-130 queued jobs on SDSC-SP2's 128 nodes that made 442,368 Booleans in
    #: about 1.2 s before any search, and such decisions took 1.5-2.6 s and fell back to
    #: the rule ("The decision limit's overruns", docs/RESULTS-CP.md)
    SOLVER_PARAMS: ClassVar[dict[str, Any]] = {
        "interleave_search": True,
        "cp_model_presolve": False,
        "symmetry_level": 0,
        "max_alldiff_domain_size": 1,
    }
    #: the model's own answer to ``on_unplaced="default"``: re-solve the model with the jobs
    #: best fit could not place postponed (step 6 of the module docstring; HCP'19 as the
    #: papers describe it), or not: such a job is postponed to the next decision and the
    #: other jobs keep the starts of the first solution
    RESOLVE_UNPLACED: ClassVar[bool] = False
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {
        "keep_blocked": False,
        "reserve": 0,
        "job_symmetry": False,
        "paper_v1": False,
        "on_unplaced": "default",
        "budget": "none",
        "stall": 0.05,
        "gap": 0.01,
        "decision_limit": 0.0,
    }
    ON_UNPLACED = ("default", "resolve", "postpone")
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **Dispatcher.parameter_constraints,
        "version": OneOf(1, 2, 3),
        "m": Interval(int, 1, None),
        "time_unit": Interval(float, 0, None, closed="neither", unit="seconds"),
        "delta": Interval(float, 0, None, closed="neither", unit="seconds"),
        # (>= delta: SearchControl)
        "delta_max": Interval(float, 0, None, closed="neither", unit="seconds"),
        "k": Interval(int, 0, None),
        "workers": Interval(int, 1, None),
        "symmetry": Boolean(),
        "dump_instances": [Text(), None],
        "force_model": Boolean(),
        "deterministic": Boolean(),
        "keep_blocked": Boolean(),
        "reserve": Interval(int, 0, None),
        "job_symmetry": Boolean(),
        "paper_v1": Boolean(),
        "on_unplaced": OneOf(*ON_UNPLACED),
        "budget": OneOf(*BUDGETS),
        "stall": Interval(float, 0, None, closed="neither", unit="seconds"),
        "gap": Interval(float, 0, 1, closed="left"),
        "decision_limit": Interval(float, 0, None, unit="seconds; 0: no cap"),
    }

    def __init__(
        self,
        allocator: str = "best-fit",
        version: int = 3,
        m: int = 100,
        time_unit: float = 60.0,
        delta: float = 1.0,
        delta_max: float = 16.0,
        k: int = 2,
        workers: int = 1,
        symmetry: bool = True,
        dump_instances: str | None = None,
        force_model: bool = False,
        deterministic: bool = False,
        keep_blocked: bool = False,
        reserve: int = 0,
        job_symmetry: bool = True,
        paper_v1: bool = False,
        on_unplaced: str = "default",
        budget: str = "none",
        stall: float = 0.05,
        gap: float = 0.01,
        decision_limit: float = 1.0,
    ):
        self.allocator = allocator
        self.version = version
        self.m = m
        self.time_unit = time_unit
        self.delta = delta
        self.delta_max = delta_max
        self.k = k
        self.workers = workers
        self.symmetry = symmetry
        self.dump_instances = dump_instances
        self.force_model = force_model
        self.deterministic = deterministic
        self.keep_blocked = keep_blocked
        self.reserve = reserve
        self.job_symmetry = job_symmetry
        self.paper_v1 = paper_v1
        self.on_unplaced = on_unplaced
        self.budget = budget
        self.stall = stall
        self.gap = gap
        self.decision_limit = decision_limit

    @property
    def node_level(self) -> bool:
        """Whether the rule plans node placements for the model's hint (PCP'19, PCP'20)."""
        return self.MODEL is not None and self.MODEL.node_level

    @property
    def flavour(self) -> str:
        """The v1/v2 objective family: "hcp" (pooled future; also cp-rule's) or "pcp"."""
        return self.MODEL.flavour if self.MODEL is not None else "hcp"

    def get_tags(self) -> Tags:
        # a wall-clock time limit makes decisions depend on the machine's load; the
        # deterministic limit with one worker does not
        return replace(self.tags, deterministic=bool(self.deterministic) and int(self.workers) == 1)

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        return [
            {"deterministic": True, "delta": 0.2, "delta_max": 0.4, "m": 20},
            {"deterministic": True, "delta": 0.2, "delta_max": 0.4, "version": 1, "reserve": 1},
            # the decision budget: a deterministic stall must keep decisions repeatable
            {
                "deterministic": True,
                "delta": 0.2,
                "delta_max": 0.4,
                "m": 20,
                "budget": "stall",
                "stall": 0.02,
            },
        ]

    def _setup(self, system: System) -> None:
        # (the parameters are checked by then: parameter_constraints)
        self.settings = CPSettings(
            ModelOptions(
                version=self.version,
                m=self.m,
                time_unit=float(self.time_unit),
                symmetry=self.symmetry,
                job_symmetry=self.job_symmetry,
            ),
            SearchControl(
                delta=float(self.delta),
                delta_max=float(self.delta_max),
                k=self.k,
                workers=self.workers,
                deterministic=self.deterministic,
            ),
            BudgetOptions(
                kind=self.budget,
                stall=float(self.stall),
                gap=float(self.gap),
                decision_limit=float(self.decision_limit),
            ),
        )
        self.options = PipelineOptions(
            keep_blocked=self.keep_blocked,
            reserve=self.reserve,
            paper_v1=self.paper_v1,
            on_unplaced=self.on_unplaced,
            force_model=self.force_model,
            dump_instances=self.dump_instances,
        )
        if self.options.paper_v1 and (self.version != 1 or self.MODEL is None):
            raise ConfigError(
                f"{self.name}: paper_v1 reproduces CP'19's version-1 horizon; it needs "
                f"version=1 and a CP model (got version={self.version})"
            )
        self._resolve_unplaced = self.options.on_unplaced == "resolve" or (
            self.options.on_unplaced == "default" and self.RESOLVE_UNPLACED
        )
        self._best_fit = make_allocator("best-fit", system)
        self._calls = 0
        # what the first decision would load on first use (the rule's compiled profile search,
        # OR-Tools for a dispatcher that builds models: about 0.2 s each, once per process)
        # loads here, so that the decision times measure deciding
        load_compiled_kernels()
        if self.MODEL is not None:
            load_ortools()
        if self.options.dump_instances:
            path = Path(self.options.dump_instances)
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot create the instance directory {path}: {exc}") from None

    # ------------------------------------------------------------------------------------
    def _dispatch(self, view: DispatchView) -> Decision:
        # (jobs with Slurm-style node constraints never get here: the papers' model has rn
        # identical units and nothing else, so the tags refuse them before the run)
        inst = DispatchInstance.from_view(view)
        self._calls += 1
        if self.options.dump_instances:
            inst.dump(Path(self.options.dump_instances) / f"instance-{self._calls:07d}.json")
        placed, info = self.decide(inst)
        jobs = {j.index: j for j in view.queue}
        return Decision([Start(jobs[idx], alloc) for idx, alloc in placed], info=info)

    def decide(self, inst: DispatchInstance) -> tuple[list[tuple[int, Allocation]], dict[str, Any]]:
        """The decision for one instance: ``[(job index, allocation)]`` to start now, and the record."""
        settings = self.settings
        policy = Policy(inst, settings, self.flavour)
        info: dict[str, Any] = {
            "model": self.name,
            "version": settings.model.version,
            "queued": len(inst.queued),
        }
        node_level = self.node_level
        jobs = self.model_jobs(inst, policy, node_level)
        info["in_model"] = len(jobs)
        if not jobs:
            info.update(status="empty", dispatched=0)
            return [], info
        d_max = max(j.duration for j in jobs)
        t0 = time.perf_counter()
        rule = rule_schedule(inst, policy, jobs, self._best_fit, node_level, d_max)
        info["rule_s"] = time.perf_counter() - t0
        info["rule_objective"] = rule.objective
        paper_horizon, rule_fits = None, True
        if self.options.paper_v1:
            paper_horizon = paper_horizon_units(policy, inst, jobs)
            rule_fits = all(
                rule.starts[j.index] + policy.duration_units(j) <= paper_horizon for j in jobs
            )
            info.update(paper_horizon=paper_horizon, rule_in_paper_horizon=rule_fits)
        too_short = None
        if paper_horizon is not None and not rule_fits:
            too_short = paper_horizon_too_short(
                inst, policy, jobs, paper_horizon, self._best_fit, node_level
            )
        chosen: dict[int, Allocation | None]
        if too_short:  # the model would be infeasible: every job waits (CP'19 version 1)
            info.update(
                status="infeasible",
                postponed_all=f"no schedule within CP'19's version-1 horizon ({too_short})",
            )
            chosen = {}
        elif (
            all(s == 0 for s in rule.starts.values())
            and rule_fits
            and not (self.options.force_model and self.MODEL is not None)
        ):
            info["status"] = "rule-optimal"  # everyone starts now: nothing to improve
            chosen = {j.index: rule.allocations.get(j.index) for j in jobs}
        elif self.MODEL is None:
            info["status"] = "rule"
            chosen = {j.index: rule.allocations.get(j.index) for j in rule.now()}
        else:
            budget = self.decision_budget()
            solved = self._solve(
                inst, policy, jobs, rule, d_max, info, paper_horizon, rule_fits, budget=budget
            )
            placement = self._place(inst, jobs, solved.chosen)
            if self._resolve_unplaced:
                placement = self._resolve_unplaced_jobs(
                    inst,
                    policy,
                    jobs,
                    rule,
                    d_max,
                    info,
                    paper_horizon,
                    rule_fits,
                    solved,
                    placement,
                    budget,
                )
            if placement.unplaced:
                info["postponed_at_allocation"] = len(placement.unplaced)
            if budget is not None and budget.bounded:
                info["decision_limit_left"] = budget.left()
            info["dispatched"] = len(placement.placed)
            return placement.placed, info
        placement = self._place(inst, jobs, chosen)
        if placement.unplaced:
            info["postponed_at_allocation"] = len(placement.unplaced)
        info["dispatched"] = len(placement.placed)
        return placement.placed, info

    def decision_budget(self) -> DecisionBudget | None:
        """The decision's :class:`~hpcdispatch.cp.solve.DecisionBudget` (made when the first
        search is about to start), or None: no ``decision_limit``, or ``budget=none``."""
        b = self.settings.budget
        if b.kind == "none" or b.decision_limit <= 0:
            return None
        return DecisionBudget(b.decision_limit, deterministic=self.settings.search.deterministic)

    def _resolve_unplaced_jobs(
        self,
        inst: DispatchInstance,
        policy: Policy,
        jobs: list[QueuedJob],
        rule: RuleSchedule,
        d_max: float,
        info: dict[str, Any],
        paper_horizon: int | None,
        rule_fits: bool,
        first: Solved,
        placement: Placement,
        budget: DecisionBudget | None = None,
    ) -> Placement:
        """HCP'19's iterations between its two stages: while best fit cannot place a job the
        scheduling stage starts now (``placement``, of the ``first`` solve), solve the stage
        again with those jobs postponed. When the decision's ``budget`` is spent before a
        re-solve, the decision is the rule's."""
        iterations, solve_s = 1, first.solve_s
        each = [round(solve_s, 6)]
        later: set[int] = set()
        while placement.unplaced and not later.issuperset(placement.unplaced):
            if budget is not None and budget.spent() and rule_fits:
                info.update(fallback="decision limit", stop="limit")
                hinted = self.hint_rule(rule, jobs, policy, d_max)
                placement = self._place(
                    inst, jobs, {j.index: hinted.allocations.get(j.index) for j in hinted.now()}
                )
                break
            later.update(placement.unplaced)
            solved = self._solve(
                inst,
                policy,
                jobs,
                rule,
                d_max,
                info,
                paper_horizon,
                rule_fits,
                frozenset(later),
                budget,
            )
            iterations += 1
            solve_s += solved.solve_s
            each.append(round(solved.solve_s, 6))
            placement = self._place(inst, jobs, solved.chosen)
        info["allocation_iterations"] = iterations
        if later:
            info["postponed_by_allocation"] = len(later)
            info["solve_s"] = solve_s
            info["solve_s_each"] = each
        return placement

    def hint_rule(
        self, rule: RuleSchedule, jobs: list[QueuedJob], policy: Policy, d_max: float
    ) -> RuleSchedule:
        """The rule's schedule as the model's hint (and fallback): with job symmetry, identical
        jobs take its starts in priority order, as the model requires."""
        return (
            rule_in_group_order(rule, jobs, policy, d_max)
            if self.settings.model.job_symmetry
            else rule
        )

    def build_model(
        self,
        inst: DispatchInstance,
        policy: Policy,
        jobs: list[QueuedJob],
        rule: RuleSchedule,
        d_max: float,
        horizon: int,
    ) -> BuiltModel:
        """This dispatcher's CP model of ``inst`` with ``rule`` (from :meth:`hint_rule`) as hint."""
        if self.MODEL is None:
            raise ConfigError(f"{self.name} has no CP model")
        est = earliest_alone(inst, policy, jobs, self._best_fit, self.node_level)
        return self.MODEL.build(
            ModelInput(inst, policy, jobs, horizon, d_max, rule, self.settings, est)
        )

    def _solve(
        self,
        inst: DispatchInstance,
        policy: Policy,
        jobs: list[QueuedJob],
        rule: RuleSchedule,
        d_max: float,
        info: dict[str, Any],
        paper_horizon: int | None = None,
        rule_fits: bool = True,
        later: frozenset[int] = frozenset(),
        budget: DecisionBudget | None = None,
    ) -> Solved:
        """The model's decision, or the rule's (``info["fallback"]`` says why), and the time
        its search took; what it did is written to ``info`` (the decision's record). With
        ``paper_v1`` every job must end within ``paper_horizon``; when the rule's schedule
        does not (``rule_fits`` False) and the model finds nothing, every job waits. The jobs
        in ``later`` (indices) may not start now (HCP'19's re-solve after a failed placement;
        the rule's fallback decision always places: its jobs started now got their nodes
        together, on the real free capacity)."""
        info.pop("fallback", None)
        rule = self.hint_rule(rule, jobs, policy, d_max)
        fallback = {j.index: rule.allocations.get(j.index) for j in rule.now()} if rule_fits else {}
        try:
            horizon = horizon_units(policy, inst, jobs)
            built = self.build_model(inst, policy, jobs, rule, d_max, horizon)
            if paper_horizon is not None:  # CP'19's domains s in [t, eoh - d]
                for j in jobs:
                    built.model.add(
                        built.starts[j.index] + policy.duration_units(j) <= paper_horizon
                    )
            for idx in sorted(later):
                built.model.add(built.starts[idx] >= 1)
            n_vars, n_cons = built.size()
            info.update(
                variables=n_vars,
                constraints=n_cons,
                build_s=built.build_s,
                horizon=horizon,
                **built.notes,
            )
            outcome = solve(built.model, self.settings, self.SOLVER_PARAMS, budget)
        except Exception as exc:  # a crashed model or solver must never stop the system
            why = f"solver error: {type(exc).__name__}: {exc}"
            info.update(
                status="error",
                traceback=traceback.format_exc(limit=3),
                **({"fallback": why} if rule_fits else {"postponed_all": why}),
            )
            return Solved(fallback)
        info.update(
            status=outcome.status,
            solve_s=outcome.solve_s,
            attempts=outcome.attempts,
            stop=outcome.stop,
        )
        if self.settings.budget.kind == "stall":
            info["improvements"] = outcome.improvements
        if outcome.watchdog_fired:
            info["watchdog"] = True
        if outcome.budget_spent:
            info["decision_limit_spent"] = True
        if not outcome.has_solution:
            if not rule_fits:
                info["postponed_all"] = (
                    f"no schedule within CP'19's version-1 horizon ({outcome.status})"
                )
                return Solved({}, outcome.solve_s)
            info["fallback"] = (
                "decision limit" if outcome.budget_spent else f"no solution ({outcome.status})"
            )
            self._check_hint(built, info, budget)
            return Solved(fallback, outcome.solve_s)
        solver = outcome.solver
        assert solver is not None
        starts = built.start_values(solver)
        objective = policy.objective_of(jobs, starts, d_max)
        info.update(objective=objective, bound=outcome.bound)
        if objective > rule.objective and rule_fits:
            info["fallback"] = "rule better"
            self._check_hint(built, info, budget)
            return Solved(fallback, outcome.solve_s)
        now = built.decode_now(solver)
        if not now and fallback and not inst.running:
            # a time-limited solution may leave an idle machine idle (every start > 0); shifting
            # it left would be better, and nothing running means no event would call us again
            info["fallback"] = "solution starts nothing on an idle machine"
            return Solved(fallback, outcome.solve_s)
        return Solved(now, outcome.solve_s)

    @staticmethod
    def _check_hint(
        built: BuiltModel, info: dict[str, Any], budget: DecisionBudget | None = None
    ) -> None:
        """Record whether the model accepts the rule's schedule (only after a fallback, which
        is rare; the check loads the model once more, and its time counts in the decision's).
        ``hint_feasible`` False with pcp20's ``unhinted_jobs`` > 0 is that model's position
        packing, which cannot always lay the rule's schedule out (docs/RESULTS-CP.md). With a
        decision limit the check draws on it like a search (its own 5 s wall-clock limit
        stays), and is skipped (``hint_feasible`` None, ``hint_check`` says why) when nothing
        is left of it."""
        t0 = time.perf_counter()
        if budget is not None and budget.bounded and budget.spent():
            info.update(hint_feasible=None, hint_check="skipped: decision limit")
            return
        try:
            info["hint_feasible"] = hint_is_solution(built.model, HINT_CHECK_S, budget)
        except Exception as exc:  # a diagnostic must never stop the system
            info["hint_feasible"] = None
            info["hint_check_error"] = f"{type(exc).__name__}: {exc}"
        info["hint_check_s"] = time.perf_counter() - t0

    # ------------------------------------------------------------------------------------
    def model_jobs(
        self, inst: DispatchInstance, policy: Policy, node_level: bool
    ) -> list[QueuedJob]:
        """The jobs of the model: the first ``m`` queued jobs by priority, without those that
        cannot start now (CP'19's reduced model) unless ``keep_blocked`` (all of them stay)
        or ``reserve`` (the first ``reserve`` of them stay); none when no job can start now
        (nothing to decide). Priority order is kept."""
        candidates = policy.order(inst.queued)[: self.settings.model.m]
        fits = [self._fits_now(inst, j, node_level) for j in candidates]
        if not any(fits):
            return []
        if self.options.keep_blocked:
            return candidates
        kept, blocked = [], 0
        for job, fit in zip(candidates, fits):
            if fit or blocked < self.options.reserve:
                kept.append(job)
                blocked += not fit
        return kept

    def _fits_now(self, inst: DispatchInstance, job: QueuedJob, node_level: bool) -> bool:
        """CP'19's reduced model: a job that cannot fit the free resources now is left out."""
        if not pooled_fits(inst.free.sum(axis=0).tolist(), job.unit_request, job.units):
            return False
        if not node_level:
            return True
        fits = units_fit_per_node(inst.free, job.unit_request, job.max_units_per_node)
        return int(fits.sum()) >= job.units

    def _place(
        self,
        inst: DispatchInstance,
        jobs: list[QueuedJob],
        chosen: dict[int, Allocation | None],
    ) -> Placement:
        """Put the jobs that start now on the real free capacity, in priority order."""
        free = np.array(inst.free, dtype=np.int64, order="F")
        placed: list[tuple[int, Allocation]] = []
        unplaced: list[int] = []
        for job in jobs:
            if job.index not in chosen:
                continue
            req = np.asarray(job.unit_request, dtype=np.int64)
            alloc = chosen[job.index]
            if alloc is not None and (
                not bool((free[alloc.nodes] >= alloc.units[:, None] * req).all())
                or (job.max_units_per_node > 0 and int(alloc.units.max()) > job.max_units_per_node)
            ):
                alloc = None  # the model's nodes are not free any more (v1) -> best fit
            if alloc is None:
                alloc = self._best_fit.allocate(job.units, req, free, job.max_units_per_node)
            if alloc is None:
                unplaced.append(job.index)
                continue
            free[alloc.nodes] -= alloc.units[:, None] * req
            placed.append((job.index, alloc))
        return Placement(placed, unplaced)
