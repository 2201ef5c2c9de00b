"""A learned policy as a dispatcher: ``policy:path=FILE.npz``.

The policy scores each job of a *window* (the first ``window`` queued jobs, in queue order)
from the per-job features the reinforcement-learning environment (:mod:`hpcdispatch.rl`)
shows an agent, and picks the best-scoring one; the pick then behaves as every pick
dispatcher's (:mod:`hpcdispatch.dispatchers.pick`): it starts when it fits, and with
``backfill=on`` or ``rlscheduler`` other jobs start around it.

The features of a job, each in [0, 1] (:func:`job_features`):

0. its wait so far / ``wait_scale`` (clipped at 1);
1. its requested time / ``time_scale`` (clipped);
2. its requested processors / the system's total of the first resource (clipped);
3. 1 when it fits the free capacity now, else 0;
4. the predictor's planned duration / ``time_scale`` (clipped; the requested time with W).

The file format (``numpy.savez``; :func:`save_policy`, :func:`load_policy`): arrays ``w0,
b0, w1, b1, ...`` of a multi-layer perceptron applied to each job's feature row (tanh
between layers, one output: the job's score), ``scales`` = ``[wait_scale, time_scale]``,
``window`` (the window size). An optional hook loads a TorchScript module (``.pt``) when
torch is installed: it gets a ``(jobs, features)`` float32 tensor and returns one score per
job.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hpcdispatch.dispatchers.pick import PickBase, requested_processors
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol import (
    Decision,
    DispatchView,
    ParamConstraint,
    Scratch,
    Start,
    Text,
    register,
)
from hpcdispatch.system.allocation import job_fits
from hpcdispatch.workload.job import Job

N_FEATURES = 5
DEFAULT_WINDOW = 128
#: RLScheduler's MAX_WAIT_TIME and MAX_RUN_TIME: 12 hours
DEFAULT_WAIT_SCALE = 12 * 3600.0
DEFAULT_TIME_SCALE = 12 * 3600.0


def fits_now(
    view: DispatchView, jobs: list[Job], free: np.ndarray, free_total: list[int]
) -> np.ndarray:
    """Whether each job fits ``free`` (pooled totals ``free_total`` first, then node level
    unless every node holds at most one unit of a single resource, where pooled is exact)."""
    out = np.zeros(len(jobs), dtype=bool)
    if not jobs:
        return out
    idx = np.fromiter((j.index for j in jobs), dtype=np.int64, count=len(jobs))
    units = np.fromiter((j.units for j in jobs), dtype=np.int64, count=len(jobs))
    need = view.requests[idx] * units[:, None]
    pooled = (need <= np.asarray(free_total, dtype=np.int64)[None, :]).all(axis=1)
    system = view.system
    exact = len(system.resources) == 1 and int(system.capacity.max()) <= 1
    for k in np.flatnonzero(pooled).tolist():
        job = jobs[k]
        out[k] = (exact and not job.constrained) or job_fits(free, job, view.requests[job.index])
    return out


def job_features(
    now: float,
    submit: np.ndarray,
    requested: np.ndarray,
    processors: np.ndarray,
    planned: np.ndarray,
    fits: np.ndarray,
    total_processors: float,
    wait_scale: float,
    time_scale: float,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The ``(len(submit), N_FEATURES)`` float32 features of jobs (see the module docstring)."""
    n = len(submit)
    if out is None:
        out = np.zeros((n, N_FEATURES), dtype=np.float32)
    f = np.empty((N_FEATURES, n))
    np.subtract(now, submit, out=f[0])
    f[0] /= wait_scale
    np.divide(requested, time_scale, out=f[1])
    np.divide(processors, total_processors, out=f[2])
    f[3] = fits
    np.divide(planned, time_scale, out=f[4])
    np.minimum(f, 1.0, out=f)
    out[:n] = f.T
    return out


def total_processors(view_or_system: Any) -> float:
    system = getattr(view_or_system, "system", view_or_system)
    return float(max(int(system.capacity[:, 0].sum()), 1))


@dataclass
class NumpyPolicy:
    """A per-job MLP: ``score = w_k . tanh(... tanh(x w_0 + b_0) ...) + b_k``."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    wait_scale: float = DEFAULT_WAIT_SCALE
    time_scale: float = DEFAULT_TIME_SCALE
    window: int = DEFAULT_WINDOW

    def scores(self, x: np.ndarray) -> np.ndarray:
        """One score per row of ``x`` (``(jobs, N_FEATURES)``)."""
        h = x
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w + b
            if k < last:
                h = np.tanh(h)
        return h[:, 0]

    @classmethod
    def random(cls, hidden: tuple[int, ...] = (32, 16), seed: int = 0, **kw: Any) -> NumpyPolicy:
        """A freshly initialised network (Glorot-uniform weights, zero biases)."""
        rng = np.random.default_rng(seed)
        sizes = [N_FEATURES, *hidden, 1]
        ws, bs = [], []
        for a, b in zip(sizes[:-1], sizes[1:]):
            lim = np.sqrt(6.0 / (a + b))
            ws.append(rng.uniform(-lim, lim, size=(a, b)))
            bs.append(np.zeros(b))
        return cls(ws, bs, **kw)


def save_policy(policy: NumpyPolicy, path: str | Path) -> None:
    """Write ``policy`` as ``.npz`` (atomically: a temporary file, then a rename)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    for k, (w, b) in enumerate(zip(policy.weights, policy.biases)):
        arrays[f"w{k}"] = np.asarray(w, dtype=np.float64)
        arrays[f"b{k}"] = np.asarray(b, dtype=np.float64)
    arrays["scales"] = np.array([policy.wait_scale, policy.time_scale])
    arrays["window"] = np.array(policy.window)
    tmp = path.with_name(f".{path.name}.tmp")
    savez: Any = np.savez  # (numpy's stub types the keyword arrays as its options)
    with open(tmp, "wb") as fh:
        savez(fh, **arrays)
    tmp.replace(path)


def load_policy(path: str | Path) -> NumpyPolicy:
    """Read a policy file written by :func:`save_policy` (a clear error naming the file and
    what is wrong with it)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: policy file does not exist")
    if path.suffix == ".pt":
        return _load_torch(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as exc:  # a damaged or foreign file: one line naming it
        raise ConfigError(f"{path}: not a policy file ({exc})") from None
    ws: list[np.ndarray] = []
    bs: list[np.ndarray] = []
    while f"w{len(ws)}" in arrays:
        ws.append(arrays[f"w{len(ws)}"].astype(np.float64))
        bs.append(arrays.get(f"b{len(bs)}", np.zeros(ws[-1].shape[-1])).astype(np.float64))
    if not ws:
        raise ConfigError(f"{path}: not a policy file (no array 'w0')")
    prev = N_FEATURES
    for k, (w, b) in enumerate(zip(ws, bs)):
        if w.ndim != 2 or w.shape[0] != prev or b.shape != (w.shape[1],):
            raise ConfigError(
                f"{path}: layer {k} has weights {w.shape} and bias {b.shape}; expected ({prev}, m) and (m,)"
            )
        prev = w.shape[1]
    if prev != 1:
        raise ConfigError(f"{path}: the last layer has {prev} outputs; a policy scores with 1")
    scales = arrays.get("scales", np.array([DEFAULT_WAIT_SCALE, DEFAULT_TIME_SCALE]))
    window = int(arrays.get("window", np.array(DEFAULT_WINDOW)))
    if scales.shape != (2,) or not (scales > 0).all() or window < 1:
        raise ConfigError(f"{path}: 'scales' must be two positive numbers and 'window' >= 1")
    return NumpyPolicy(ws, bs, float(scales[0]), float(scales[1]), window)


class _TorchPolicy(NumpyPolicy):
    def __init__(self, module: Any):
        super().__init__([], [])
        self.module = module

    def scores(self, x: np.ndarray) -> np.ndarray:
        torch: Any = importlib.import_module("torch")
        with torch.no_grad():
            out = self.module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
        return np.asarray(out.detach().cpu().numpy(), dtype=np.float64).reshape(-1)


def _load_torch(path: Path) -> NumpyPolicy:
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError:
        raise ConfigError(
            f"{path}: a TorchScript policy needs torch, which is not installed"
        ) from None
    return _TorchPolicy(torch.jit.load(str(path)))


@register
class PolicyDispatcher(PickBase):
    """Picks the job of the window a learned policy scores best (``path``: a ``.npz`` written
    by :func:`save_policy`, or a TorchScript ``.pt``)."""

    name = "policy"
    _cache: ClassVar[dict[tuple[str, float], NumpyPolicy]] = {}
    parameter_constraints: ClassVar[dict[str, ParamConstraint]] = {
        **PickBase.parameter_constraints,
        "path": Text(),
    }

    def __init__(self, path: str = "", backfill: str = "off", allocator: str = "first-fit"):
        self.path = path
        self.backfill = backfill
        self.allocator = allocator

    @classmethod
    def test_params(cls) -> list[dict[str, object]]:
        tiny = str(Path(__file__).with_name("tiny_policy.npz"))
        return [{"path": tiny, "backfill": b} for b in ("off", "on")]

    def _setup(self, system) -> None:
        if not self.path:
            raise ConfigError("dispatcher 'policy' needs path=FILE (a policy .npz)")
        p = Path(self.path)
        key = (str(p.resolve()), p.stat().st_mtime if p.exists() else 0.0)
        if key not in self._cache:
            self._cache[key] = load_policy(p)
        self._policy = self._cache[key]
        super()._setup(system)

    def choose(self, view: DispatchView, scratch: Scratch, window: list[Job]) -> Job:
        pol = self._policy
        n = len(window)
        submit = np.fromiter((j.submit for j in window), dtype=np.float64, count=n)
        requested = np.fromiter((j.wall_time for j in window), dtype=np.float64, count=n)
        procs = np.fromiter((requested_processors(j) for j in window), dtype=np.float64, count=n)
        planned = view.planned_durations[[j.index for j in window]]
        x = job_features(
            view.now,
            submit,
            requested,
            procs,
            planned,
            fits_now(view, window, scratch.free, scratch.total),
            total_processors(view),
            pol.wait_scale,
            pol.time_scale,
        )
        return window[int(np.argmax(pol.scores(x)))]

    def _dispatch(self, view: DispatchView) -> Decision | list[Start]:
        scratch = Scratch(view, self._allocator)
        started: set[int] = set()
        while True:
            head = self.kept_pick(view)
            if head is None:
                window: list[Job] = []
                for job in view.queue:
                    if job.index not in started:
                        window.append(job)
                        if len(window) == self._policy.window:
                            break
                if not window:
                    return scratch.starts
                head = self.choose(view, scratch, window)
            if not self.try_pick(view, scratch, head):
                self.backfill_around(view, scratch, head)
                return Decision(starts=scratch.starts, wakeup=self.wakeup_for(view, head))
            started.add(head.index)
