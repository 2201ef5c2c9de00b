"""The conformance suite every dispatcher passes: :func:`check_dispatcher`.

scikit-learn's ``check_estimator`` is the model: one function runs every check of the shared
contract on small random workloads, for a registered dispatcher or one of your own, and the
first check that fails raises an ``AssertionError`` naming the check, the parameters, the
scenario and what went wrong. ``tests/test_conformance.py`` runs it for every registered
dispatcher, each check as its own test (:func:`checks`).

The tags (:class:`~hpcdispatch.protocol.Tags`) pick what is checked:

- always: ``__init__`` only stores its parameters (clone, ``get_params``/``set_params``, the
  identity as data); every schedule passes the independent validator, and no job is lost
  (each ends or is rejected with a reason); a run interrupted between two instants and
  resumed from its checkpoint equals the uninterrupted one;
- ``deterministic``: the same workload run twice gives the same schedule and decisions;
- ``memoryless``: a run interrupted after some calls and resumed from its decision journal
  equals the uninterrupted one;
- ``uses_solver``: smaller workloads;
- ``node_constraints``: with it, workloads include Slurm-style jobs (exact node counts, GPUs
  per node, contiguity); without it, such a workload is refused before the run with an
  error naming the job and the reason.

The parameter sets come from the dispatcher's :meth:`~hpcdispatch.protocol.Dispatcher.test_params`
(cheap ones: short, deterministic solver limits) when a class is checked.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch.engine import simulate
from hpcdispatch.errors import ConfigError, HpcDispatchError, UnsupportedJobError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.protocol import Dispatcher
from hpcdispatch.sim import SimulationOptions, SimulationResult, Simulator
from hpcdispatch.system.allocation import request_fits
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.validation import validate_result
from hpcdispatch.vocabulary import JobStatus
from hpcdispatch.workload.job import GrowthRequest, Job, Workload

#: scenarios per check (random systems and workloads, seeded)
SCENARIOS = 6


@dataclass(frozen=True)
class Scenario:
    """A small system, a workload on it and the predictor to plan with."""

    name: str
    system: System
    workload: Workload
    predictor: str

    def run(self, dispatcher: Dispatcher, **kw: Any) -> SimulationResult:
        options = SimulationOptions(engine="python", **kw.pop("options", {}))
        return simulate(
            self.system, self.workload, dispatcher, make_predictor(self.predictor), options, **kw
        )


def scenarios(seed: int, jobs: int, constrained: bool = False) -> Scenario:
    """A random scenario: one or two node types (cores, GPUs), ``jobs`` jobs submitted within
    a minute or two, some wall-times longer than the run time, some jobs growing while they
    run; with ``constrained``, also Slurm-style jobs (node counts, GPUs per node, contiguity)."""
    rng = np.random.default_rng(seed)
    types = tuple(
        NodeType(
            f"t{k}",
            int(rng.integers(2, 5)),
            {"core": int(rng.integers(2, 9)), "gpu": int(rng.integers(0, 3))},
        )
        for k in range(int(rng.integers(1, 3)))
    )
    system = System(name=f"conformance-{seed}", resources=("core", "gpu"), node_types=types)
    max_core = max(t.capacity["core"] for t in types)
    gpus = any(t.capacity["gpu"] for t in types)
    out: list[Job] = []
    while len(out) < jobs:
        run = int(rng.integers(1, 50))
        wall = run if rng.random() < 0.4 else run + int(rng.integers(0, 40))
        if rng.random() < 0.15:
            wall = max(1, run - int(rng.integers(1, run + 1)))  # killed at its wall-time
        fields: dict[str, Any] = dict(
            id=len(out) + 1,
            submit=int(rng.integers(0, 60)),
            run_time=run,
            wall_time=wall,
            units=int(rng.integers(1, 4)),
            unit_request=(int(rng.integers(1, max_core + 1)), 0),
            user=int(rng.integers(1, 4)),
            queue=int(rng.integers(0, 2)),
        )
        roll = rng.random()
        if constrained and roll < 0.4:
            fields.update(unit_request=(1, 0), units=int(rng.integers(2, 5)))
            kind = rng.integers(0, 3)
            if kind == 0:
                fields["node_count"] = int(rng.integers(1, 3))
            elif kind == 1 and gpus:
                fields["per_node_request"] = (0, 1)
            else:
                fields["contiguous"] = True
        elif roll < 0.55 and gpus:
            fields["unit_request"] = (1, 1)
        elif roll < 0.65 and run > 5:
            fields["growth"] = (GrowthRequest(after=float(rng.integers(1, run)), units=1),)
        job = Job(**fields)
        if _fits_empty(system, job):
            out.append(job)
    predictor = ("walltime", "last-two", "oracle")[seed % 3]
    name = f"seed {seed}, {len(out)} jobs{' with node constraints' if constrained else ''}, predictor {predictor}"
    return Scenario(name, system, Workload(out, system.resources), predictor)


def _fits_empty(system: System, job: Job) -> bool:
    return bool(
        request_fits(
            system.capacity,
            np.asarray(job.unit_request),
            job.units,
            job.max_units_per_node,
            job.node_count,
            np.asarray(job.per_node_request) if job.per_node_request else None,
            job.contiguous,
        )
    )


# ---- the checks ----------------------------------------------------------------------------
Factory = Callable[[], Dispatcher]


def check_parameters(make: Factory) -> None:
    """``__init__`` stores its keyword parameters and nothing else; the identity is data."""
    d = make()
    params = d.get_params()
    assert set(params) == set(d.param_names()), (
        f"get_params() {sorted(params)} != parameters {d.param_names()}"
    )
    again = type(d)(**params).get_params()
    assert again == params, (
        f"__init__ does not store its parameters under their names ({params} -> {again})"
    )
    clone = d.clone()
    assert clone is not d and clone.get_params() == params, "clone() does not repeat the parameters"
    identity = d.identity()
    assert identity == json.loads(json.dumps(identity)), "identity() is not plain JSON data"
    assert identity["name"] == d.name and d.matches_identity(identity), (
        "the identity does not match itself"
    )
    try:
        d.set_params(no_such_parameter_xyz=1)
    except ConfigError:
        pass
    else:
        raise AssertionError("set_params accepted an unknown parameter")


def check_valid_schedules(make: Factory) -> None:
    """Every schedule passes the validator and every job ends or is rejected with a reason."""
    d = make()
    for scenario in _scenarios(d):
        result = scenario.run(make())
        _assert_valid(result, scenario)


def check_deterministic(make: Factory) -> None:
    """The same workload run twice gives the same schedule and decisions."""
    for scenario in _scenarios(make())[:2]:
        a, b = scenario.run(make()), scenario.run(make())
        _assert_same(a, b, f"two runs of {scenario.name}")


def check_journal_resume(make: Factory) -> None:
    """A run interrupted after some calls and resumed from its decision journal equals the
    uninterrupted one (only the unrecorded calls are made again)."""
    for scenario in _scenarios(make())[:2]:
        _journal_resume(make, scenario)


def _journal_resume(make: Factory, scenario: Scenario) -> None:
    whole = scenario.run(make())
    calls = len(whole.decisions["time"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        sim = Simulator(
            scenario.system,
            scenario.workload,
            make(),
            make_predictor(scenario.predictor),
            SimulationOptions(engine="python"),
            journal=path,
        )
        st = sim.begin()
        while st.calls < max(1, calls // 2) and sim.step():
            pass
        recorded = st.calls
        sim.close()
        resumed = scenario.run(make(), journal=path)
    journal = resumed.notes.journal
    assert journal is not None and journal.replayed == recorded, journal
    _assert_valid(resumed, scenario)
    if make().get_tags().deterministic:
        _assert_same(
            resumed,
            whole,
            f"{scenario.name}: journal resumed after {recorded} of {calls} calls vs. uninterrupted",
        )


def check_checkpoint_resume(make: Factory) -> None:
    """A run interrupted between two instants and resumed from its checkpoint (the
    dispatcher's and predictor's state included) equals the uninterrupted one."""
    d = make()
    for scenario in _scenarios(d)[:3]:
        whole = scenario.run(make())
        instants = max(
            2,
            len(
                np.unique(
                    np.concatenate([scenario.workload.submit, whole.end[~np.isnan(whole.end)]])
                )
            ),
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run.ckpt"
            sim = Simulator(
                scenario.system,
                scenario.workload,
                make(),
                make_predictor(scenario.predictor),
                SimulationOptions(engine="python"),
                checkpoint=path,
            )
            sim.begin()
            for _ in range(instants // 2):
                if not sim.step():
                    break
            sim.save_checkpoint()
            sim.close()
            resumed = scenario.run(make(), checkpoint=path)
        used = resumed.notes.checkpoint
        assert used is not None and used.resumed_at is not None, "the checkpoint was not used"
        _assert_valid(resumed, scenario)
        if make().get_tags().deterministic:
            _assert_same(
                resumed, whole, f"{scenario.name}: resumed from a checkpoint vs. uninterrupted"
            )


def check_unsupported_jobs_refused(make: Factory) -> None:
    """A job the dispatcher cannot handle (its tags say which) is refused before the run,
    with an error naming the dispatcher, the job and the reason."""
    d = make()
    for seed in range(10):
        scenario = scenarios(seed, 12, constrained=True)
        refused = next((j for j in scenario.workload.jobs if j.constrained), None)
        if refused is None:
            continue
        try:
            scenario.run(make())
        except UnsupportedJobError as exc:
            assert exc.job_id == refused.id and exc.dispatcher == d.name and exc.reason, str(exc)
            assert f"job {refused.id}" in str(exc), str(exc)
            return
        raise AssertionError(
            f"{d.name} (node_constraints=False) ran {scenario.name} instead of refusing job {refused.id}"
        )
    raise AssertionError("no scenario with a constrained job was generated")


CHECKS: dict[str, Callable[[Factory], None]] = {
    "parameters": check_parameters,
    "valid_schedules": check_valid_schedules,
    "deterministic": check_deterministic,
    "journal_resume": check_journal_resume,
    "checkpoint_resume": check_checkpoint_resume,
    "unsupported_jobs_refused": check_unsupported_jobs_refused,
}


def checks(dispatcher: Dispatcher) -> Iterator[str]:
    """The names of the checks that apply to ``dispatcher`` (by its tags)."""
    tags = dispatcher.get_tags()
    yield "parameters"
    yield "valid_schedules"
    if tags.deterministic:
        yield "deterministic"
    if tags.memoryless:
        yield "journal_resume"
    yield "checkpoint_resume"
    if not tags.node_constraints:
        yield "unsupported_jobs_refused"


def check_dispatcher(dispatcher: type[Dispatcher] | Dispatcher) -> None:
    """Run every check that applies, for each of a class's ``test_params()`` (or for the
    given instance's parameters); raises ``AssertionError`` at the first failure."""
    for params, make in factories(dispatcher):
        for name in checks(make()):
            run_check(name, make, params)


def factories(dispatcher: type[Dispatcher] | Dispatcher) -> list[tuple[dict[str, Any], Factory]]:
    """``(parameters, factory of fresh instances)`` for each parameter set to check."""
    if isinstance(dispatcher, Dispatcher):
        params = dispatcher.get_params()
        cls = type(dispatcher)
        return [(params, lambda: cls(**params))]
    return [(p, (lambda p=p: dispatcher(**p))) for p in dispatcher.test_params()]


def run_check(name: str, make: Factory, params: dict[str, Any]) -> None:
    """One check, its failure message naming the dispatcher, the check and the parameters."""
    try:
        CHECKS[name](make)
    except AssertionError as exc:
        raise AssertionError(f"{make().name} {params}: check '{name}' failed: {exc}") from exc
    except HpcDispatchError as exc:  # the simulator refused a decision, or the run stalled
        raise AssertionError(
            f"{make().name} {params}: check '{name}' failed: {type(exc).__name__}: {exc}"
        ) from exc


# ---- helpers --------------------------------------------------------------------------------
def _scenarios(d: Dispatcher) -> list[Scenario]:
    tags = d.get_tags()
    jobs = 14 if tags.uses_solver else 30
    return [
        scenarios(seed, jobs, constrained=tags.node_constraints and seed % 2 == 1)
        for seed in range(SCENARIOS)
    ]


def _assert_valid(result: SimulationResult, scenario: Scenario) -> None:
    report = validate_result(result)
    assert report.ok, f"{scenario.name}: {report.describe()}"
    done = np.isin(result.status, (JobStatus.COMPLETED, JobStatus.REJECTED))
    assert done.all(), (
        f"{scenario.name}: jobs {result.workload.ids[~done][:5].tolist()} neither ended nor were rejected"
    )
    for idx in np.flatnonzero(result.status == JobStatus.REJECTED).tolist():
        assert result.reject_reason.get(idx), (
            f"{scenario.name}: job {int(result.workload.ids[idx])} rejected without a reason"
        )


def _assert_same(a: SimulationResult, b: SimulationResult, what: str) -> None:
    for name in ("start", "end", "status", "killed"):
        x, y = getattr(a, name), getattr(b, name)
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            k = int(
                np.flatnonzero(
                    ~((x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y)
                )[0]
            )
            raise AssertionError(
                f"{what}: {name} of job {int(a.workload.ids[k])} differs ({x[k]} vs {y[k]})"
            )
    ra, rb = a.allocation_rows(), b.allocation_rows()
    for name in ("job", "segment", "node", "units"):
        assert np.array_equal(getattr(ra, name), getattr(rb, name)), (
            f"{what}: allocations differ ({name})"
        )
    for key in ("time", "queue_length", "running", "started"):
        assert np.array_equal(a.decisions[key], b.decisions[key]), (
            f"{what}: decision log column '{key}' differs"
        )
