"""How a simulation runs: :class:`SimulationOptions`, and the options a dispatcher asks for."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import Dispatcher
from hpcdispatch.sim.correction import check_correction
from hpcdispatch.sim.execution import app_model_overrides

ENGINES = ("auto", "python", "compiled")
#: options added after decision journals existed, with the value that means "as before"
ADDED_OPTIONS: dict[str, Any] = {"prediction_correction": None, "app_model": None}


@dataclass(frozen=True)
class SimulationOptions:
    """How a simulation runs: wall-time kills, when the dispatcher is called, what is recorded,
    which engine (the execution model's overrides included)."""

    walltime_kill: bool = True
    charge_dispatch_time: bool = False
    dispatch_interval: float | None = None
    dispatch_on_events: bool = True
    record_decisions: bool = True
    #: "auto": the compiled engine (:mod:`hpcdispatch.compiled`) when it can run the
    #: simulation and the workload has at least ``AUTO_MIN_JOBS`` (20,000) jobs, else the
    #: Python loop; "python" / "compiled": that one (compiled fails with the reason when it
    #: cannot). Both take the same decisions. Read by :func:`hpcdispatch.simulate`.
    engine: str = "auto"
    #: revise the planned end of a running job that outlived it: None (the papers': it is
    #: expected to end in the next second), "walltime" or "ladder"
    #: (:mod:`hpcdispatch.sim.correction`)
    prediction_correction: str | None = None
    #: the execution model of deadline jobs (:class:`~hpcdispatch.sim.execution.AppModelParams`):
    #: field -> value for the fields that differ from the defaults (e.g. ``{"network": "none"}``,
    #: an ablation of docs/RESULTS-DEADLINE.md); None: the defaults. Plain jobs ignore it.
    app_model: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_correction(self.prediction_correction)
        object.__setattr__(
            self, "app_model", app_model_overrides(self.app_model)
        )  # checked, canonical
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got '{self.engine}'")
        if self.dispatch_interval is not None and self.dispatch_interval <= 0:
            raise ConfigError(f"dispatch_interval must be positive, got {self.dispatch_interval}")
        if not self.dispatch_on_events and self.dispatch_interval is None:
            raise ConfigError(
                "dispatch_on_events=False needs a dispatch_interval, or the dispatcher is never called"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> dict[str, Any]:
        """The options that identify a run (decision journal headers, sweep cell ids): all
        but the engine, which changes no decision, and without the options added later
        (``ADDED_OPTIONS``) while they have the value that behaves as before they existed,
        so journals and sweeps written before an addition stay valid."""
        return {
            k: v
            for k, v in asdict(self).items()
            if k != "engine" and not (k in ADDED_OPTIONS and v == ADDED_OPTIONS[k])
        }


def resolve_options(
    dispatcher: Dispatcher, options: SimulationOptions | None = None
) -> SimulationOptions:
    """The options a run uses: ``options`` (default ones when ``None``), completed by the
    dispatcher's own invocation hints (:meth:`Dispatcher.simulation_hints`, e.g. a periodic
    scheduler's step) when no ``dispatch_interval`` was given explicitly."""
    options = options or SimulationOptions()
    hints = dispatcher.simulation_hints()
    if hints and options.dispatch_interval is None:
        options = replace(options, **hints)
    return options
