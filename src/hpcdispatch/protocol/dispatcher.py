"""The dispatcher contract: the base class every dispatcher derives from, and its tags.

A dispatcher is a small class (scikit-learn's estimator contract): ``__init__`` only stores
its keyword parameters under the same names, so a sweep can clone it and set parameters
generically; :meth:`Dispatcher.setup` builds its working state once per simulation;
:meth:`Dispatcher._dispatch` is the policy. The public :meth:`Dispatcher.dispatch` wraps it
(normalises the return value). The simulator knows nothing of any policy: it calls these
methods and verifies every start.

Hooks with safe defaults leave room for richer policies:

- :meth:`Dispatcher.admit`: accept or reject a job when it is submitted (deadline-oriented
  admission);
- :meth:`Dispatcher.on_resize`: grant or refuse a running job's request for more units;
- ``Decision.wakeup``: ask to be called again at a given time (periodic policies).

A dispatcher's identity is data, ``{"name": ..., "params": {...}}`` (:meth:`identity`): the
decision journal, the checkpoint and ``run.json`` store it, and compare it as data.

Nothing here assumes simulated time: the view may as well be built from a live cluster.
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcdispatch._util import json_default
from hpcdispatch.allocators import Allocator, allocate_job, make_allocator
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol.constraints import ALLOCATOR, ParamConstraint, check_params
from hpcdispatch.protocol.decision import (
    ACCEPT,
    Admission,
    Booking,
    Decision,
    ForkRequest,
    RunningJob,
    Start,
)
from hpcdispatch.protocol.view import DispatchView
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import GrowthRequest, Job, Workload


@dataclass(frozen=True)
class Tags:
    """What a dispatcher declares about itself. The simulator and the conformance suite
    (:mod:`hpcdispatch.testing`) read every field; a capability nothing reads is not a tag.

    - ``deterministic``: the same input gives the same decisions (the suite runs a workload
      twice and compares the schedules);
    - ``memoryless``: decisions depend on the view alone -- what the dispatcher keeps between
      calls, if anything, is a cache a fresh instance rebuilds. Only such runs may resume
      from a decision journal (:mod:`hpcdispatch.sim.journal`), which skips the calls already
      recorded; the simulator refuses a journal for any other dispatcher, and the suite
      interrupts a journalled run and compares the resumed one with the uninterrupted one;
    - ``uses_solver``: every decision may solve a model; the suite gives it small instances;
    - ``node_constraints``: the dispatcher handles Slurm-style node constraints (an exact
      node count, per-node extras such as GPUs per node, contiguity). When False, the
      simulator refuses a workload with such a job before the run, naming the job and the
      reason (:meth:`Dispatcher.unsupported`), and the suite checks that it does;
    - ``rejects``: :meth:`Dispatcher.admit` may turn jobs away at submission. A dispatcher
      without it rejects nothing: the simulator refuses such a rejection as an invalid
      decision, and the validator refuses a schedule with rejected jobs from such a
      dispatcher (every rejection must carry the dispatcher's reason).
    - ``forks``: the dispatcher places the processes deadline jobs fork while they run
      (:meth:`Dispatcher.on_resize` with a ``ForkRequest``, the leak): the simulator asks it
      when a child finds no free core on the job's nodes, and gives a node back as soon as
      no process of the job is left on it (a join). Without it a deadline job keeps exactly
      the nodes it started with, and its children share them (design note A11);
    - ``contiguous_grants``: every node granted at a fork touches (is a 4-neighbour of) a
      node the job holds then; the validator checks it.
    - ``app_model``: deadline jobs run through the simulator's execution model (their run
      time is an output of the placement). False (the count-only baseline, Fig. 6 line 0
      alone): they run exactly their trace run time on the whole nodes they start on.
    - ``per_core``: deadline jobs hold cores, not whole nodes (the leak's ``overbook``
      reading): jobs share a node core by core, and a start may time-share the
      least-loaded node when no core is free anywhere; the simulator's and the validator's
      capacity rules for such jobs are per core (:mod:`hpcdispatch.sim.simulator`,
      ``_start_app``).
    """

    deterministic: bool = True
    memoryless: bool = False
    uses_solver: bool = False
    node_constraints: bool = True
    rejects: bool = False
    forks: bool = False
    contiguous_grants: bool = False
    app_model: bool = True
    per_core: bool = False


@dataclass(frozen=True)
class KernelSpec:
    """A dispatcher's compiled twin (:mod:`hpcdispatch.compiled`): the compiled policy's name
    (a key of ``hpcdispatch.compiled.layout.POLICIES``), its numeric parameters, and the
    names of the per-call info values it records (``info_jobs``: those holding a job index,
    reported as the job id; ``info_ints``: integers)."""

    policy: str
    params: tuple[float, ...] = ()
    info: tuple[str, ...] = ()
    info_jobs: tuple[str, ...] = ()
    info_ints: tuple[str, ...] = ()


class Dispatcher(ABC):
    """Base class of every dispatcher: subclass it, set ``name`` (and ``tags``), store the
    keyword parameters in ``__init__``, write :meth:`_dispatch` (``docs/ADD_A_DISPATCHER.md``)."""

    name: ClassVar[str] = "dispatcher"
    tags: ClassVar[Tags] = Tags()
    #: parameters added after runs had been journaled, each with the value that behaves as
    #: the dispatcher did before it existed (see :meth:`matches_identity`)
    ADDED_PARAMS: ClassVar[dict[str, Any]] = {}
    #: spec keys that are not parameters but text :meth:`expand_params` turns into parameters;
    #: in a spec string an unquoted value of such a key runs to the end of the spec, commas
    #: included (slurm-bf's ``scheduler_parameters``: a slurm.conf line as it is)
    TEXT_TAIL_KEYS: ClassVar[tuple[str, ...]] = ()
    #: what each ``__init__`` parameter accepts (:mod:`hpcdispatch.protocol.constraints`),
    #: checked by :meth:`setup` before ``_setup``; a subclass extends its parent's:
    #: ``{**Parent.parameter_constraints, "order": OneOf("fifo", "edf")}``
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {"allocator": ALLOCATOR}

    def __init__(self, allocator: str = "first-fit"):
        self.allocator = allocator

    # ---- parameters (scikit-learn style) -------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    @classmethod
    def param_defaults(cls) -> dict[str, Any]:
        """Every parameter with its default (``inspect.Parameter.empty`` when it has none)."""
        sig = inspect.signature(cls.__init__)
        return {p.name: p.default for p in sig.parameters.values() if p.name != "self"}

    @classmethod
    def expand_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters a spec gives, with keys of :attr:`TEXT_TAIL_KEYS` turned into
        parameters (called once when a spec is made; the default changes nothing)."""
        return params

    @classmethod
    def test_params(cls) -> list[dict[str, Any]]:
        """Cheap parameter sets for the conformance suite (:mod:`hpcdispatch.testing`): a
        dispatcher that solves models returns short time limits and deterministic search."""
        return [{}]

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self.param_names()}

    def set_params(self, **params: Any) -> Dispatcher:
        valid = set(self.param_names())
        for key, value in params.items():
            if key not in valid:
                raise ConfigError(
                    f"dispatcher '{self.name}' has no parameter '{key}' (parameters: {sorted(valid)})"
                )
            setattr(self, key, value)
        return self

    def clone(self) -> Dispatcher:
        return type(self)(**self.get_params())

    def get_tags(self) -> Tags:
        """The tags of this instance: the class's ``tags``, unless parameters change them
        (a CP dispatcher is deterministic only with ``deterministic=true``)."""
        return self.tags

    # ---- identity ------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}`` with every parameter, as JSON reads it back:
        what a journal, a checkpoint and ``run.json`` store of the dispatcher."""
        return json.loads(
            json.dumps({"name": self.name, "params": self.get_params()}, default=json_default)
        )

    def _at_added_value(self, params: dict[str, Any]) -> set[str]:
        """The keys of ``params`` (an identity's) that are :attr:`ADDED_PARAMS` at the value
        they were added with, i.e. that behave as before the parameter existed."""
        added = json.loads(json.dumps(self.ADDED_PARAMS, default=json_default))
        return {k for k, v in params.items() if k in added and added[k] == v}

    def cell_identity(self) -> dict[str, Any]:
        """:meth:`identity` without the parameters added later (:attr:`ADDED_PARAMS`) while they
        have the value they were added with: what keys a sweep cell, so that a parameter added
        with the old behaviour as its default leaves the cells run before it valid (as
        ``SimulationOptions.identity`` does for the simulation options)."""
        ident = self.identity()
        old = self._at_added_value(ident["params"])
        ident["params"] = {k: v for k, v in ident["params"].items() if k not in old}
        return ident

    def matches_identity(self, saved: Any) -> bool:
        """Whether ``saved`` (an earlier :meth:`identity`) is this dispatcher: the same name
        and parameters, where a parameter ``saved`` lacks must be one of
        :attr:`ADDED_PARAMS` at the value it was added with -- the identity of a run from
        before the parameter existed, which this one repeats (a decision journal resumes
        across such an addition)."""
        if (
            not isinstance(saved, dict)
            or saved.get("name") != self.name
            or not isinstance(saved.get("params"), dict)
        ):
            return False
        ours = self.identity()["params"]
        theirs = saved["params"]
        if not set(theirs) <= set(ours):
            return False
        old = self._at_added_value(ours)
        return all(theirs[k] == v if k in theirs else k in old for k, v in ours.items())

    def describe(self) -> str:
        """``name(key=value, ...)``, for people (never parsed back: :meth:`identity` is the data)."""
        return describe_identity(self.identity())

    # ---- lifecycle -----------------------------------------------------------------------
    def setup(self, system: System) -> None:
        """Called once before a simulation: check the parameters (:attr:`parameter_constraints`),
        build the allocator and any working state."""
        check_params(f"dispatcher '{self.name}'", self.get_params(), self.parameter_constraints)
        self.system = system
        self._allocator: Allocator = make_allocator(self.allocator, system)
        self._setup(system)

    def _setup(self, system: System) -> None:  # noqa: B027 (an optional hook, empty by default)
        """Override to build policy state."""

    def unsupported(self, workload: Workload) -> tuple[Job, str] | None:
        """The first job of ``workload`` this dispatcher cannot handle and why, or ``None``.
        The default reads the tags (``node_constraints``); the simulator calls it before a
        run and refuses the run with the job and the reason."""
        if not self.get_tags().node_constraints and workload.has_constraints:
            job = next(j for j in workload.jobs if j.constrained)
            return job, (
                "it has Slurm-style node constraints (node count, per-node extras or contiguity), "
                f"which '{self.name}' does not model; use a dispatcher that does (slurm-bf, "
                "aucsched, easy, conservative, fifo, sjf)"
            )
        return None

    def simulation_hints(self) -> dict[str, Any]:
        """Simulation options this dispatcher needs when the user gives none (e.g. a periodic
        scheduler: ``{"dispatch_interval": 5.0, "dispatch_on_events": False}``). Applied by
        :func:`hpcdispatch.sim.options.resolve_options` when no ``dispatch_interval`` is set."""
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

    def bookings(self) -> list[Booking]:
        """The advance reservations made so far (empty for dispatchers that book nothing);
        the result keeps them (``SimulationResult.bookings``) and the validator checks that
        every booked job ran at its booked start on exactly its booked nodes."""
        return []

    def on_resize(
        self, running: RunningJob, request: GrowthRequest | ForkRequest, view: DispatchView
    ) -> Allocation | None:
        """Grant a running job more: ``request.units`` more units (a ``GrowthRequest``), or
        one whole free node for a forked process (a ``ForkRequest``, only to dispatchers
        tagged ``forks``) -- an allocation -- or refuse (None)."""
        return None

    # ---- helpers for policies ------------------------------------------------------------
    def place(self, job: Job, free: np.ndarray, view: DispatchView) -> Allocation | None:
        """Where the allocator would put ``job`` on ``free`` (not modified)."""
        return allocate_job(self._allocator, job, view.requests[job.index], free)


def describe_identity(identity: dict[str, Any]) -> str:
    """``name(key=value, ...)`` of a dispatcher identity, for tables and titles."""
    params = ", ".join(f"{k}={v}" for k, v in identity.get("params", {}).items())
    return f"{identity.get('name')}({params})"
