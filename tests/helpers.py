"""Builders shared by the tests. Every simulation run through :func:`simulate` is validated."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hpcdispatch.dispatchers import Dispatcher, make_dispatcher
from hpcdispatch.predictors import Predictor
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.system.model import NodeType, System
from hpcdispatch.validation import validate_result
from hpcdispatch.workload.job import Job, Workload

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


def trace(name: str) -> Path:
    """A real trace of ``../shared/traces``; the calling test is skipped, saying why, when it
    is not there (a clone without the shared folder beside it)."""
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"real trace {path} is absent: ../shared/traces is not beside this repository")
    return path


def all_traces() -> list[str]:
    """The names of the real traces in ``../shared/traces`` (empty when the folder is absent;
    a test that needs one of them skips through :func:`trace`)."""
    return sorted(p.name for p in TRACES.glob("*.swf*")) if TRACES.is_dir() else []


def cores_system(nodes: int, cores: int, name: str = "test") -> System:
    return System(
        name=name, resources=("core",), node_types=(NodeType("node", nodes, {"core": cores}),)
    )


def system_of(
    types: Sequence[tuple[int, dict[str, int]]], resources: Sequence[str], name: str = "test"
) -> System:
    return System(
        name=name,
        resources=tuple(resources),
        node_types=tuple(
            NodeType(f"t{i}", count, dict(cap)) for i, (count, cap) in enumerate(types)
        ),
    )


def job(
    id: int,
    submit: int,
    run: int,
    units: int = 1,
    req: Sequence[int] = (1,),
    wall: int | None = None,
    **extra: Any,
) -> Job:
    return Job(
        id=id,
        submit=submit,
        run_time=run,
        wall_time=run if wall is None else wall,
        units=units,
        unit_request=tuple(req),
        **extra,
    )


def workload(jobs: Sequence[Job], resources: Sequence[str] = ("core",)) -> Workload:
    return Workload(jobs, resources)


def simulate(
    system: System,
    jobs: Sequence[Job] | Workload,
    dispatcher: str | Dispatcher,
    predictor: Predictor | None = None,
    **options: Any,
) -> SimulationResult:
    wl = jobs if isinstance(jobs, Workload) else workload(jobs, system.resources)
    disp = make_dispatcher(dispatcher) if isinstance(dispatcher, str) else dispatcher
    result = Simulator(system, wl, disp, predictor, SimulationOptions(**options)).run()
    report = validate_result(result)
    assert report.ok, report.describe()
    return result


class Scaled(Predictor):
    """Predicts ``factor`` x the real run time, at least 1 s (under-estimates when factor < 1)."""

    name = "scaled"

    def __init__(self, factor: float):
        self.factor = factor

    def predict(self, job: Job, now: float) -> float:
        return max(1.0, job.run_time * self.factor)


def starts(result: SimulationResult) -> dict[int, float]:
    """Job id -> start time."""
    return {int(j.id): float(result.start[j.index]) for j in result.workload.jobs}


def placement(result: SimulationResult) -> dict[int, list[tuple[int, int]]]:
    """Job id -> [(node, units)] of its first allocation segment."""
    out = {}
    for j in result.workload.jobs:
        segs = result.segments.get(j.index)
        if segs:
            out[int(j.id)] = segs[0][1].pairs()
    return out


def pythonpath() -> dict[str, str]:
    """``{"PYTHONPATH": ...}`` when one is set, for the command lines tests start with a bare
    environment: run from a git worktree (``PYTHONPATH=src``), they then run the worktree's
    code, not the copy installed in editable mode from another checkout."""
    value = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": value} if value else {}
