"""One simulation, on whichever engine can run it: :func:`simulate`.

The Python engine (:class:`~hpcdispatch.sim.Simulator`) runs everything; the compiled engine
(:mod:`hpcdispatch.compiled`) runs plain FIFO and EASY runs about ten times faster with the
same decisions. ``SimulationOptions.engine`` chooses: ``"auto"`` (the compiled engine when
it can run the simulation and the workload has at least 20,000 jobs), ``"python"`` or
``"compiled"`` (an error naming the reason when it cannot).
"""

from __future__ import annotations

from pathlib import Path

from hpcdispatch.compiled import AUTO_MIN_JOBS, refusal
from hpcdispatch.dispatchers import DispatcherSpec
from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.protocol import Dispatcher, Predictor
from hpcdispatch.sim import ProgressCallback, SimulationOptions, SimulationResult, Simulator
from hpcdispatch.system.io import load_system
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Workload
from hpcdispatch.workload.loader import load_workload


def simulate(
    system: System | str,
    workload: Workload | str,
    dispatcher: Dispatcher | DispatcherSpec | str,
    predictor: Predictor | str | None = None,
    options: SimulationOptions | None = None,
    *,
    journal: str | Path | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: float = 600.0,
    keep_checkpoint: bool = False,
    progress: ProgressCallback | None = None,
) -> SimulationResult:
    """Simulate ``workload`` on ``system`` with ``dispatcher`` and return the result.

    ``system``: a :class:`System` or a preset name / TOML file; ``workload``: a
    :class:`Workload` or a spec (an SWF path, ``synthetic:lublin,jobs=500,seed=7``, ...);
    ``dispatcher``: an instance, a :class:`DispatcherSpec` or its text (``easy-L2:allocator=
    best-fit``: a predictor suffix counts when ``predictor`` is not given); ``predictor``:
    an instance or a name (W, L2, D, R; default W). ``journal`` / ``checkpoint``: resume an
    interrupted run (Python engine; the checkpoint is deleted at the end unless
    ``keep_checkpoint``). The result is not validated: see :func:`hpcdispatch.validate`.
    """
    if isinstance(system, str):
        system = load_system(system)
    if isinstance(workload, str):
        workload = load_workload(workload, system)
    if not isinstance(dispatcher, Dispatcher):
        spec = (
            dispatcher
            if isinstance(dispatcher, DispatcherSpec)
            else DispatcherSpec.parse(dispatcher)
        )
        predictor = predictor if predictor is not None else spec.predictor
        dispatcher = spec.build()
    if isinstance(predictor, str):
        predictor = make_predictor(predictor)
    sim = Simulator(
        system,
        workload,
        dispatcher,
        predictor,
        options,
        journal=journal,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        keep_checkpoint=keep_checkpoint,
    )
    if choose_engine(sim) == "python":
        return sim.run(progress)
    from hpcdispatch.compiled.runner import (
        run_compiled,  # (numba only when no ahead-of-time engine)
    )

    return run_compiled(sim, progress)


def choose_engine(sim: Simulator) -> str:
    """The engine that runs ``sim``: "compiled" or "python" (see ``SimulationOptions.engine``)."""
    wanted = sim.options.engine
    if wanted == "python":
        return "python"
    if sim.checkpoint is not None:
        if wanted == "compiled":
            raise ConfigError("the compiled engine cannot write checkpoints: use the Python engine")
        return "python"
    reason = refusal(sim)
    if reason is None and wanted == "auto" and len(sim.workload) < AUTO_MIN_JOBS:
        return "python"
    if reason is None:
        return "compiled"
    if wanted == "compiled":
        raise ConfigError(f"the compiled engine cannot run this simulation: {reason}")
    return "python"
