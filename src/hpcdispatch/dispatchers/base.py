"""The dispatcher contract.

A dispatcher is a small class: ``__init__`` only stores its keyword parameters under the same
names (so sweeps can clone it and set parameters generically); :meth:`Dispatcher.setup` builds
its working state once per simulation; :meth:`Dispatcher._dispatch` is the policy. The public
:meth:`Dispatcher.dispatch` wraps it (normalises the return value). The simulator knows
nothing of any policy: it calls these methods and verifies every start.

Hooks with safe defaults leave room for richer policies:

- :meth:`admit`: accept or reject a job when it is submitted (deadline-oriented admission);
- :meth:`on_resize`: grant or refuse a running job's request for more units;
- ``Decision.wakeup``: ask to be called again at a given time (periodic policies).
"""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcdispatch.allocators.base import Allocator, allocate_job, make_allocator
from hpcdispatch.errors import ConfigError
from hpcdispatch.sim.allocation import Allocation, held_amounts
from hpcdispatch.sim.decision import ACCEPT, Admission, Decision, RunningJob, Start
from hpcdispatch.sim.view import DispatchView
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import GrowthRequest, Job


@dataclass(frozen=True)
class Tags:
    """Capabilities the framework and the conformance tests read."""

    needs_walltime: bool = True  # plans with (predicted) durations
    uses_solver: bool = False
    deterministic: bool = True  # same input -> same decisions
    supports_admission: bool = False
    supports_resize: bool = False
    contiguous: bool = False
    backfilling: bool = False
    periodic: bool = False  # called at fixed steps only (see Dispatcher.simulation_hints)
    #: decisions depend on the view alone: what it keeps between calls, if anything, is a
    #: cache a fresh instance rebuilds. Such runs can resume from a decision journal
    #: (:mod:`hpcdispatch.sim.journal`), which skips the calls already recorded.
    memoryless: bool = False


@dataclass(frozen=True)
class KernelSpec:
    """A dispatcher's compiled twin (:mod:`hpcdispatch.compiled`): the compiled policy's name
    (a key of ``hpcdispatch.compiled.kernels.POLICIES``), its numeric parameters, and the
    names of the per-call info values it records (``info_jobs``: those holding a job index,
    reported as the job id; ``info_ints``: integers)."""

    policy: str
    params: tuple[float, ...] = ()
    info: tuple[str, ...] = ()
    info_jobs: tuple[str, ...] = ()
    info_ints: tuple[str, ...] = ()


class Dispatcher(ABC):
    name: ClassVar[str] = "dispatcher"
    tags: ClassVar[Tags] = Tags()
    #: parameters added after runs had been journaled, each with the value that behaves as
    #: the dispatcher did before it existed (see :meth:`is_described_by`)
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {}

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    # ---- parameters (scikit-learn style) -------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self.param_names()}

    def set_params(self, **params: Any) -> Dispatcher:
        valid = set(self.param_names())
        for key, value in params.items():
            if key not in valid:
                raise ConfigError(f"dispatcher '{self.name}' has no parameter '{key}' (parameters: {sorted(valid)})")
            setattr(self, key, value)
        return self

    def clone(self) -> Dispatcher:
        return type(self)(**self.get_params())

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.get_params().items())
        return f"{self.name}({params})"

    def is_described_by(self, text: str) -> bool:
        """Whether ``text`` (an earlier :meth:`describe`) describes this dispatcher: the same
        text, or the same name and values where every parameter the text lacks is one of
        :attr:`ADDED_PARAMS` at the value it was added with -- a description written before
        that parameter existed, whose run this one repeats (a decision journal resumes across
        such an addition; a later change of the parameter's default changes nothing here)."""
        if text == self.describe():
            return True
        match = re.fullmatch(r"([\w.-]+)\((.*)\)", text, flags=re.S)
        if match is None or match[1] != self.name:
            return False
        theirs = dict(part.split("=", 1) for part in re.split(r", (?=\w+=)", match[2])) if match[2] else {}
        ours = {k: str(v) for k, v in self.get_params().items()}
        if not set(theirs) <= set(ours):
            return False
        added = self.ADDED_PARAMS
        return all(theirs[k] == v if k in theirs else k in added and str(added[k]) == v for k, v in ours.items())

    # ---- lifecycle -----------------------------------------------------------------------
    def setup(self, system: System) -> None:
        """Called once before a simulation: build the allocator and any working state."""
        self.system = system
        self._allocator: Allocator = make_allocator(self.allocator, system)
        self._setup(system)

    def _setup(self, system: System) -> None:
        """Override to build policy state."""

    def simulation_hints(self) -> dict[str, Any]:
        """Simulation options this dispatcher needs when the user gives none (e.g. a periodic
        scheduler: ``{"dispatch_interval": 5.0, "dispatch_on_events": False}``). Applied by
        :func:`hpcdispatch.sim.simulator.resolve_options` when no ``dispatch_interval`` is set."""
        return {}

    def kernel(self) -> KernelSpec | None:
        """The compiled policy that takes exactly this dispatcher's decisions, or ``None``
        (the default: the simulator's Python loop runs it)."""
        return None

    def dispatch(self, view: DispatchView) -> Decision:
        out = self._dispatch(view)
        if isinstance(out, Decision):
            return out
        return Decision(starts=list(out))

    @abstractmethod
    def _dispatch(self, view: DispatchView) -> Decision | list[Start]:
        """Decide which queued jobs start now and where."""

    def admit(self, job: Job, view: DispatchView) -> Admission:
        return ACCEPT

    def on_resize(self, running: RunningJob, request: GrowthRequest, view: DispatchView) -> Allocation | None:
        """Grant ``request.units`` more units to a running job (an allocation) or refuse (None)."""
        return None

    # ---- helpers for policies ------------------------------------------------------------
    def place(self, job: Job, free: np.ndarray, view: DispatchView) -> Allocation | None:
        """Where the allocator would put ``job`` on ``free`` (not modified)."""
        return allocate_job(self._allocator, job, view.requests[job.index], free)


class Scratch:
    """A dispatcher's working copy of the free capacity during one decision.

    ``try_start`` checks the pooled totals first (cheap), then asks the allocator, and on
    success subtracts the allocation so later jobs of the same decision see it taken. The
    free matrix is copied only when the first job is taken.
    """

    __slots__ = ("free", "total", "_view", "_allocator", "starts", "_owned")

    def __init__(self, view: DispatchView, allocator: Allocator):
        self.free = view.free
        self._owned = False
        self.total = list(view._free_total)
        self._view = view
        self._allocator = allocator
        self.starts: list[Start] = []

    def pooled_ok(self, job: Job) -> bool:
        """Necessary condition: the pooled free totals cover the job's (smallest) total need."""
        units = job.units
        for tot, amount in zip(self.total, job.unit_request):
            if amount and tot < amount * units:
                return False
        if job.per_node_request:
            nodes = max(job.exact_nodes, 1)
            for tot, amount, extra in zip(self.total, job.unit_request, job.per_node_request):
                if extra and tot < amount * units + extra * nodes:
                    return False
        return True

    def allocate(self, job: Job) -> Allocation | None:
        if not self.pooled_ok(job):
            return None
        return allocate_job(self._allocator, job, self._view.requests[job.index], self.free)

    def take(self, job: Job, allocation: Allocation) -> None:
        if not self._owned:
            self.free = np.array(self.free, order="F")
            self._owned = True
        nodes = allocation.nodes
        if job.per_node_request:
            amounts = held_amounts(allocation, self._view.requests[job.index], job.per_node_request)
            self.free[nodes] -= amounts
            self.total = [t - a for t, a in zip(self.total, amounts.sum(axis=0).tolist())]
            self.starts.append(Start(job, allocation))
            return
        units = job.units
        if len(nodes) == 1:  # scalar writes: numpy row arithmetic costs more on one node
            free, node, here = self.free, int(nodes[0]), int(allocation.units[0])
            for r, a in enumerate(job.unit_request):
                if a:
                    free[node, r] -= here * a
        else:
            self.free[nodes] -= allocation.units[:, None] * self._view.requests[job.index]
        self.total = [t - units * a for t, a in zip(self.total, job.unit_request)]
        self.starts.append(Start(job, allocation))

    def try_start(self, job: Job) -> Allocation | None:
        allocation = self.allocate(job)
        if allocation is not None:
            self.take(job, allocation)
        return allocation

    def nothing_free(self) -> bool:
        return not any(self.total)


# --------------------------------------------------------------------------------------
# registry and the function-based convenience
# --------------------------------------------------------------------------------------

DISPATCHERS: dict[str, type[Dispatcher]] = {}


def register(cls: type[Dispatcher]) -> type[Dispatcher]:
    """Class decorator: make a dispatcher available by its ``name`` (CLI, sweeps)."""
    if cls.name in DISPATCHERS and DISPATCHERS[cls.name] is not cls:
        raise ConfigError(f"two dispatchers are registered as '{cls.name}'")
    DISPATCHERS[cls.name] = cls
    return cls


def dispatcher_function(name: str, tags: Tags = Tags()) -> Callable[[Callable[..., Any]], type[Dispatcher]]:
    """Turn a ten-line function ``policy(view, scratch) -> None`` into a registered dispatcher.

    The function calls ``scratch.try_start(job)`` for the jobs it wants to start::

        @dispatcher_function("largest-first")
        def largest_first(view, scratch):
            for job in sorted(view.queue, key=lambda j: -j.units):
                scratch.try_start(job)
    """

    def wrap(fn: Callable[..., Any]) -> type[Dispatcher]:
        def _dispatch(self: Dispatcher, view: DispatchView) -> list[Start]:
            scratch = Scratch(view, self._allocator)
            fn(view, scratch)
            return scratch.starts

        cls = type(
            f"FunctionDispatcher_{name}",
            (Dispatcher,),
            {"name": name, "tags": tags, "_dispatch": _dispatch, "__doc__": fn.__doc__},
        )
        return register(cls)

    return wrap
