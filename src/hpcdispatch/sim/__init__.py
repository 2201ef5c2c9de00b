"""The discrete-event simulator and what flows through it (view, decisions, results)."""

from hpcdispatch.sim.allocation import Allocation, fits, pooled_fits, units_fit_per_node
from hpcdispatch.sim.decision import ACCEPT, Admission, Decision, RunningJob, Start
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.sim.view import DispatchView, QueueView

__all__ = [
    "ACCEPT",
    "Admission",
    "Allocation",
    "Decision",
    "DispatchView",
    "QueueView",
    "RunningJob",
    "SimulationOptions",
    "SimulationResult",
    "Simulator",
    "Start",
    "fits",
    "pooled_fits",
    "units_fit_per_node",
]


def __getattr__(name: str):
    # Simulator imports the dispatcher base, which imports sim.*: resolve lazily to avoid a cycle.
    if name in ("Simulator", "SimulationOptions"):
        from hpcdispatch.sim import simulator

        return getattr(simulator, name)
    raise AttributeError(name)
