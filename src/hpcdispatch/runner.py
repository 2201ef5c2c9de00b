"""Run one simulation end to end (simulate, validate, write): shared by the CLI and sweeps."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hpcdispatch._util import return_free_memory
from hpcdispatch.dispatchers import DispatcherSpec
from hpcdispatch.engine import simulate
from hpcdispatch.metrics import summarize
from hpcdispatch.results.outdir import check_output_dir
from hpcdispatch.results.store import write_result
from hpcdispatch.sim import ProgressCallback, SimulationOptions, SimulationResult
from hpcdispatch.sim.checkpoint import Checkpoint
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


def prepared_spec(
    dispatcher: DispatcherSpec | str,
    allocator: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> DispatcherSpec:
    """The spec a run uses: ``dispatcher`` with ``allocator`` and ``overrides`` set where it has
    those parameters and does not set them itself."""
    spec = (
        dispatcher if isinstance(dispatcher, DispatcherSpec) else DispatcherSpec.parse(dispatcher)
    )
    overrides = dict(overrides or {})
    if allocator:
        overrides["allocator"] = allocator
    return spec.with_defaults(**overrides)


def check_run(
    system: System,
    dispatcher: DispatcherSpec | str,
    predictor: str = "walltime",
    allocator: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> DispatcherSpec:
    """Everything a run would refuse, found before it starts: the dispatcher is built and set
    up on ``system`` (its parameters checked) and its predictor made. Errors name the spec."""
    from hpcdispatch.errors import ConfigError
    from hpcdispatch.predictors import make_predictor

    written = dispatcher.written if isinstance(dispatcher, DispatcherSpec) else dispatcher
    try:
        spec = prepared_spec(dispatcher, allocator, overrides)
        spec.build().setup(system)
        make_predictor(spec.predictor or predictor)
    except ConfigError as exc:
        raise ConfigError(f"dispatcher '{written}': {exc}") from None
    return spec


def run_simulation(
    system: System,
    workload: Workload,
    dispatcher: DispatcherSpec | str,
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
    force: bool = False,
    validate_beside: bool | None = None,
    csv: bool = False,
) -> RunOutcome:
    """``dispatcher``: a spec (its predictor suffix, if any, wins over ``predictor``).
    ``overrides``: parameters set on the dispatcher when it has them and the spec does not.
    ``journal``: decision journal file; ``checkpoint``: checkpoint file written every
    ``checkpoint_every`` s -- an interrupted run started again with either resumes.
    ``out_dir``: checked before simulating (it must be writable and hold no result, unless
    ``force``), written as a whole; the checkpoint is deleted only once it is written.
    ``validate_beside``: validate on a second thread while ``out_dir`` is written (``None``:
    when this process may use more than one core; a sweep says whether its worker has a core
    to spare). ``csv``: also ``jobs.csv`` and each job's allocation as text in ``jobs.parquet``
    (the Parquet tables are always written)."""
    if out_dir is not None:
        check_output_dir(out_dir, force)
    spec = prepared_spec(dispatcher, allocator, overrides)
    t0 = time.perf_counter()
    result = simulate(
        system,
        workload,
        spec.build(),
        spec.predictor or predictor,
        options or SimulationOptions(),
        journal=journal,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        keep_checkpoint=out_dir is not None,
        progress=progress,
    )
    wall = time.perf_counter() - t0
    result.notes = replace(result.notes, sim_wall_s=wall)
    return_free_memory()  # the engine's scratch: the validation and the tables come next
    reports: list[ValidationReport] = []

    def check() -> None:
        report = validate_result(result) if validate else ValidationReport(jobs=len(workload))
        return_free_memory()  # the validation's temporaries
        reports.append(report)
        result.notes = replace(result.notes, valid=report.ok if validate else None)

    if out_dir is not None:
        summary = write_result(
            result, out_dir, csv=csv, force=force, alongside=check, beside=validate_beside
        )
        if checkpoint is not None:
            Checkpoint(
                checkpoint, {}
            ).remove()  # the results are safe: the checkpoint is no longer needed
    else:
        check()
        summary = summarize(result)
    summary["label"] = spec.run_label
    summary["display_label"] = spec.display_label
    return RunOutcome(spec.run_label, result, summary, reports[0], wall)
