"""Checkpoints: resume a simulation whose dispatcher keeps state between calls.

A checkpoint is the simulation loop's whole state together with the dispatcher's and the
predictor's attributes, written every ``every`` seconds of wall clock at the end of an
instant; started again with the same file, the run continues and is the one that would have
happened without the interruption. The file is a JSON header (format, version, a digest of
the sources, the run's identity, where the run was), then two pickles; it resumes only with
the code that wrote it, refuses another run's file naming the differing fields, and is
replaced in one rename.

A checkpoint is data, not code: it is read back by an unpickler that builds only what a
run's state is made of (:data:`STATE_PACKAGES`, the run's own dispatcher's and predictor's
modules, numpy, :data:`PLAIN_GLOBALS`); anything else a pickle names (``os.system``, any
function) is refused before it is looked up, so nothing in a crafted file runs. Detail:
docs/ARCHITECTURE.md, "Checkpoints".
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import os
import pickle
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hpcdispatch._util import json_default
from hpcdispatch._version import __version__
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import DispatchView
from hpcdispatch.sim.cluster import ClusterState
from hpcdispatch.sim.journal import run_differences
from hpcdispatch.sim.result import CheckpointUse
from hpcdispatch.sim.state import LoopState
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Job, Workload

FORMAT = 2  # 2: the state is LoopState's fields, the run's dispatcher is its identity (data)

#: the loop's state a checkpoint holds: every field of :class:`LoopState`
LOOP_STATE = tuple(f.name for f in dataclasses.fields(LoopState))
#: per-job lists of the loop that nothing else holds, stored as typed arrays (one bytes blob
#: each); ``planned`` is not one of them: the view reads the same list
_TYPED = {"start_at": "d", "end_at": "d", "status": "b"}


class CheckpointError(ConfigError):
    """A checkpoint that cannot be used: another run's, or damaged."""


#: the packages of the project whose classes a run's state holds (a dispatcher's plan, the
#: loop's logs, the view): a checkpoint may build objects of their classes, and of no other
#: module of the project (the journal, the results store, the Slurm bridge, the CLI: classes
#: whose constructors touch files or processes)
STATE_PACKAGES = (
    "hpcdispatch.allocators",
    "hpcdispatch.cp",
    "hpcdispatch.dispatchers",
    "hpcdispatch.metrics",
    "hpcdispatch.planning",
    "hpcdispatch.predictors",
    "hpcdispatch.protocol",
    "hpcdispatch.sim",
    "hpcdispatch.system",
    "hpcdispatch.vocabulary",
    "hpcdispatch.workload",
)
#: modules of those packages that write files (or read them by name): never built from a file
_NOT_STATE = ("hpcdispatch.sim.checkpoint", "hpcdispatch.sim.journal", "hpcdispatch.system.io")
#: what else a checkpoint may name: plain containers and numpy's builders of arrays, dtypes
#: and scalars -- none of them runs a command, opens a file or imports a module
PLAIN_GLOBALS = frozenset(
    [("builtins", n) for n in ("set", "frozenset", "bytearray", "complex", "slice", "range")]
    + [("collections", n) for n in ("deque", "OrderedDict", "defaultdict", "Counter")]
    + [("array", "array"), ("array", "_array_reconstructor"), ("copyreg", "_reconstructor")]
    + [("numpy", "dtype"), ("numpy", "ndarray")]
    + [
        (f"numpy.{core}.{mod}", name)
        for core in ("core", "_core")
        for mod, name in (
            ("numeric", "_frombuffer"),
            ("multiarray", "_reconstruct"),
            ("multiarray", "scalar"),
        )
    ]
    + [
        ("sortedcontainers.sortedlist", "SortedList"),
        ("sortedcontainers.sorteddict", "SortedDict"),
        ("sortedcontainers.sortedset", "SortedSet"),
    ]
)


class ForbiddenContent(pickle.UnpicklingError):
    """A checkpoint names something that is not data (a function, a class outside the
    allowed ones): the file was crafted or is not a checkpoint; nothing of it was built."""


class Checkpoint:
    """Where a simulation saves its state, and how often (``every``: wall-clock seconds
    between two writes; 0 writes after every instant, which only tests want)."""

    def __init__(
        self,
        path: str | Path,
        run: dict[str, Any],
        every: float = 600.0,
        equivalent: dict[str, Callable[[Any], bool]] | None = None,
    ):
        if every < 0:
            raise ConfigError(f"checkpoint interval must be >= 0 s, got {every}")
        self.path = Path(path)
        self.run = json.loads(json.dumps(run, default=json_default))  # as it reads back
        self.every = float(every)
        self.equivalent = equivalent or {}
        self.writes = 0
        self.restored_at: dict[str, Any] | None = None
        self._tmp = self.path.with_name(self.path.name + ".tmp")

    def exists(self) -> bool:
        return self.path.exists()

    # ---- writing ---------------------------------------------------------------------------
    def save(
        self,
        loop: LoopState,
        dispatcher: object,
        predictor: object,
        system: System,
        workload: Workload,
        at: dict[str, Any],
    ) -> None:
        """Write the loop's state and the dispatcher's and predictor's attributes; ``at``:
        where the run is (for people)."""
        state = {
            k: (array(_TYPED[k], getattr(loop, k)) if k in _TYPED else getattr(loop, k))
            for k in LOOP_STATE
        }
        state["dispatcher"] = vars(dispatcher)
        state["predictor"] = vars(predictor)
        at = json.loads(
            json.dumps(at, default=json_default)
        )  # plain data (the header is read without classes)
        header = {
            "checkpoint": FORMAT,
            "version": __version__,
            "code": source_digest(),
            "run": self.run,
            "at": at,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._tmp.open("wb") as fh:
                pickle.dump(header, fh, protocol=pickle.HIGHEST_PROTOCOL)
                # the arrays others hold views of first, then everything else referring to them
                _Pickler(fh, _shared(system, workload)).dump((loop.cluster, loop.planned_np))
                _Pickler(
                    fh, _shared(system, workload, loop.cluster, loop.planned_np, loop.view)
                ).dump(state)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(self._tmp, self.path)
        except OSError as exc:
            raise CheckpointError(f"cannot write the checkpoint {self.path}: {exc}") from None
        self.writes += 1

    # ---- reading ---------------------------------------------------------------------------
    def load(
        self, dispatcher: object, predictor: object, system: System, workload: Workload
    ) -> LoopState:
        """The saved loop state; the dispatcher's and predictor's attributes are restored
        in place (the caller's objects are the run's objects)."""
        if self.path.is_dir():
            raise CheckpointError(f"{self.path} is a directory, not a checkpoint")
        try:
            with self.path.open("rb") as fh:
                header = _HeaderUnpickler(fh).load()
                if not isinstance(header, dict) or "checkpoint" not in header:
                    raise CheckpointError(
                        f"{self.path}: not a simulation checkpoint (format {FORMAT})"
                    )
                if header.get("checkpoint") != FORMAT:
                    raise CheckpointError(
                        f"{self.path} is a checkpoint of format {header.get('checkpoint')} (hpcdispatch "
                        f"{header.get('version')}); this version reads format {FORMAT}. Resume it with the "
                        "code that wrote it, or delete it"
                    )
                if header.get("code") != source_digest():
                    raise CheckpointError(
                        f"{self.path} was written by other code (hpcdispatch {header.get('version')}, source "
                        f"digest {header.get('code')}; this is {__version__}, {source_digest()}): the state it "
                        "holds may not fit this code. Resume it with the code that wrote it, or delete it"
                    )
                saved_run = header.get("run") or {}
                if not isinstance(saved_run, dict):
                    raise CheckpointError(
                        f"{self.path}: damaged checkpoint (its header's run is {saved_run!r})"
                    )
                fields = run_differences(saved_run, self.run, self.equivalent)
                if fields:
                    raise CheckpointError(
                        f"{self.path} was written for another run (differs in: {', '.join(fields)}); "
                        "use a new checkpoint file or delete this one"
                    )
                run_modules = _run_modules(dispatcher, predictor)
                cluster, planned_np = _Unpickler(
                    fh, _shared(system, workload), workload, run_modules
                ).load()
                state = _Unpickler(
                    fh, _shared(system, workload, cluster, planned_np), workload, run_modules
                ).load()
            saved = _checked_state(self.path, state)
            loop = LoopState(**{k: saved[k] for k in LOOP_STATE})
        except CheckpointError:
            raise
        except ForbiddenContent as exc:
            raise CheckpointError(
                f"{self.path}: refused, not a checkpoint this code wrote: {exc}; nothing of it "
                "was run or loaded (a checkpoint holds data only); delete it"
            ) from None
        except Exception as exc:  # whatever a damaged pickle raises
            raise CheckpointError(
                f"{self.path}: damaged checkpoint ({type(exc).__name__}: {str(exc)[:200]}); "
                "delete it to start the run from the beginning"
            ) from None
        _replace_vars(dispatcher, saved["dispatcher"])
        _replace_vars(predictor, saved["predictor"])
        self.restored_at = header.get("at")
        return loop

    def remove(self) -> None:
        """Delete the checkpoint (the run finished)."""
        for p in (self.path, self._tmp):
            p.unlink(missing_ok=True)

    def summary(self) -> CheckpointUse:
        return CheckpointUse(
            path=str(self.path), every_s=self.every, writes=self.writes, resumed_at=self.restored_at
        )


@functools.cache
def source_digest() -> str:
    """A digest of the package's Python sources: a checkpoint holds objects of this code's
    classes (a dispatcher's plan), so it only resumes with the code that wrote it."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _checked_state(path: Path, state: Any) -> dict[str, Any]:
    """The saved state as :class:`LoopState`'s fields plus the dispatcher's and predictor's
    attributes (typed arrays back to lists), or a :class:`CheckpointError` saying what is
    missing -- before anything of the run is touched."""
    if not isinstance(state, dict):
        raise CheckpointError(
            f"{path}: damaged checkpoint (its state is {type(state).__name__}, not a table)"
        )
    missing = [k for k in LOOP_STATE + ("dispatcher", "predictor") if k not in state]
    if missing:
        raise CheckpointError(f"{path}: damaged checkpoint (missing {', '.join(missing)})")
    for k in ("dispatcher", "predictor"):
        if not isinstance(state[k], dict) or not all(isinstance(a, str) for a in state[k]):
            raise CheckpointError(
                f"{path}: damaged checkpoint (the {k}'s attributes are not a table)"
            )
    out = dict(state)
    for k in _TYPED:
        if not isinstance(state[k], array):
            raise CheckpointError(f"{path}: damaged checkpoint ({k} is {type(state[k]).__name__})")
        out[k] = state[k].tolist()
    return out


def _replace_vars(obj: object, saved: dict[str, Any]) -> None:
    attrs = vars(obj)
    attrs.clear()
    attrs.update(saved)


def _shared(
    system: System,
    workload: Workload,
    cluster: ClusterState | None = None,
    planned_np: np.ndarray | None = None,
    view: DispatchView | None = None,
) -> dict[int, tuple[object, str]]:
    """Objects written as references, by ``id``: the run's own (system, workload, its request
    rows) and, once the cluster state and the planned durations are known, what others share
    of them (the free-capacity view and pooled totals, the planned durations' read-only view)
    -- a pickled numpy view would come back as a copy that no longer follows its base."""
    objects: dict[str, object] = {
        "system": system,
        "workload": workload,
        "requests": workload.unit_requests,
    }
    if cluster is not None and planned_np is not None:
        planned_ro = planned_np.view() if view is None else view.planned_durations
        planned_ro.flags.writeable = False
        objects.update(
            cluster=cluster,
            free_ro=cluster.free_readonly,
            free_total=cluster.free_total,
            planned_np=planned_np,
            planned_ro=planned_ro,
        )
    return {id(obj): (obj, key) for key, obj in objects.items()}


class _HeaderUnpickler(pickle.Unpickler):
    """The header is plain data (dicts, strings, numbers): an object of any class in it is
    damage (or not a checkpoint), never something to import and build."""

    def find_class(self, module: str, name: str) -> Any:
        raise ForbiddenContent(f"its header names {module}.{name}, not plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("the header holds a reference, not plain data")


class _Pickler(pickle.Pickler):
    """Writes jobs (by index) and the shared objects (by name) as references."""

    def __init__(self, fh: io.BufferedWriter, shared: dict[int, tuple[object, str]]):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = shared

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is Job:
            return ("job", obj.index)
        entry = self._shared.get(id(obj))
        return None if entry is None else (entry[1], 0)


def _run_modules(*objects: object) -> frozenset[str]:
    """The modules defining the classes of the run's dispatcher and predictor (and their
    bases): a plugin's dispatcher may keep objects of its own classes in its attributes."""
    return frozenset(
        cls.__module__
        for obj in objects
        for cls in type(obj).__mro__
        if cls.__module__ not in ("builtins", "abc", "typing")
    )


def _project_state_module(module: str) -> bool:
    return (
        any(module == p or module.startswith(p + ".") for p in STATE_PACKAGES)
        and module not in _NOT_STATE
    )


class _Unpickler(pickle.Unpickler):
    """Builds only data: the objects a checkpoint may name are checked against an allow-list
    (:func:`find_class`) before any module is imported or anything is looked up."""

    def __init__(
        self,
        fh: io.BufferedReader,
        shared: dict[int, tuple[object, str]],
        workload: Workload,
        run_modules: frozenset[str] = frozenset(),
    ):
        super().__init__(fh)
        self._shared = {key: obj for obj, key in shared.values()}
        self._jobs = workload.jobs
        self._run_modules = run_modules

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in PLAIN_GLOBALS:
            return super().find_class(module, name)
        if _project_state_module(module):
            obj = super().find_class(module, name)  # (the project's own modules: imported)
        elif module in self._run_modules and module in sys.modules:  # never imported here
            obj = getattr(sys.modules[module], name, None)
        else:
            raise ForbiddenContent(f"it names {module}.{name}")
        # a class, or a module's singleton value (info_log.MISSING); never a function
        if isinstance(obj, type) or (
            obj is not None and not callable(obj) and _project_state_module(type(obj).__module__)
        ):
            return obj
        raise ForbiddenContent(f"it names {module}.{name}, which is not a class")

    def persistent_load(self, pid: Any) -> Any:
        kind, index = pid
        if kind == "job":
            return self._jobs[index]
        if kind in self._shared:
            return self._shared[kind]
        raise pickle.UnpicklingError(f"unknown reference {pid!r}")
