"""Run one simulation end to end (load, simulate, validate, write): shared by CLI and sweeps."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.predictors import make_predictor, split_predictor_suffix
from hpcdispatch.results.store import write_result
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.simulator import ProgressCallback, SimulationOptions, Simulator
from hpcdispatch.system.model import System
from hpcdispatch.validation.validator import ValidationReport, validate_result
from hpcdispatch.workload.job import Workload


@dataclass
class RunOutcome:
    label: str
    result: SimulationResult
    summary: dict[str, Any]
    validation: ValidationReport
    wall_seconds: float


def label_for(spec: str) -> str:
    """A file-system friendly label for a dispatcher spec: ``easy:allocator=best-fit`` -> ``easy-allocator_best-fit``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", spec.replace("=", "_")).strip("-")


def run_simulation(
    system: System,
    workload: Workload,
    dispatcher_spec: str,
    predictor: str = "walltime",
    options: SimulationOptions | None = None,
    out_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
    allocator: str | None = None,
    validate: bool = True,
    overrides: dict[str, Any] | None = None,
    journal: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: float = 600.0,
) -> RunOutcome:
    """``overrides``: parameters set on the dispatcher when it has them and the spec does not.
    ``journal``: decision journal file; ``checkpoint``: checkpoint file written every
    ``checkpoint_every`` s -- an interrupted run started again with either resumes."""
    overrides = dict(overrides or {})
    if allocator:
        overrides["allocator"] = allocator
    base_spec, suffix_predictor = split_predictor_suffix(dispatcher_spec)
    dispatcher = make_dispatcher(base_spec, **overrides)
    sim = Simulator(system, workload, dispatcher, make_predictor(suffix_predictor or predictor), options or SimulationOptions(),
                    journal=journal, checkpoint=checkpoint, checkpoint_every=checkpoint_every)
    t0 = time.perf_counter()
    result = sim.run(progress=progress)
    wall = time.perf_counter() - t0
    result.extra["sim_wall_s"] = wall
    report = validate_result(result) if validate else ValidationReport(jobs=len(workload))
    result.extra["valid"] = report.ok if validate else None
    if out_dir is not None:
        summary = write_result(result, out_dir)
    else:
        summary = result.summary()
    summary["label"] = label_for(dispatcher_spec)
    return RunOutcome(label_for(dispatcher_spec), result, summary, report, wall)
