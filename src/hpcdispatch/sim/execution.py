"""The application execution model: how long a deadline job's phases take where it runs.

Linnert, De Rose and Heiss (2024) simulate the programs themselves (sec. 2, 5): phases of
computation and messages, processes forked and joined, a run time that is an *output* of the
placement. Their simulator could not be found; this is our model (design note 3.3, every
constant in :class:`AppModelParams`, every choice in docs/DEADLINE.md, "The execution
model"). It is policy-free: the simulator asks it for phase durations and child placements,
and hands fork requests to the dispatcher through a callback.

Design notes, decisions and measurements: docs/DEADLINE.md,
"From the module docstrings".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.grid import Grid, grid_of
from hpcdispatch.system.partition import manhattan_partition

NETWORKS = ("mean", "max", "distance", "none")


@dataclass(frozen=True)
class AppModelParams:
    """Every constant of the execution model (docs/DEADLINE.md, "The execution model").

    - ``phases``: phases per job (``K``, design note A7; a job of ``R < K`` seconds has ``R``);
    - ``growth``: the factors ``g`` a dynamic job's (types 2, 3) phase process count is
      ``round(n g)`` of, drawn uniformly per phase (mean 1);
    - ``comm_share``: the communication share ``phi`` of a phase on the baseline placement per
      behaviour type 0-3 (type 0: in its first and last phase only, 0 in between; a phase
      without messages has 0);
    - ``overlap``: ``omega``, the part of the shorter of computation and communication an
      async job hides behind the longer;
    - ``h_intra``, ``h_inj``: a message's cost inside a node, and outside it on top of one per hop;
    - ``peers``: random partners per rank (types 2, 3);
    - ``network``: link sharing ``Gamma`` over the job's links as the traffic-weighted
      ``mean`` (default, design note Revision 2: ``sum(own + others) / sum(own)``) or the
      ``max`` (the first build's worst link, ``max((own + others) / own)``); ``distance`` (no
      sharing, ``Gamma = 1``), ``none`` (communication costs its baseline wherever the job
      runs);
    - ``seed``: mixed with the job id into each job's random peers and process counts.
    """

    phases: int = 10
    growth: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5)
    comm_share: tuple[float, float, float, float] = (0.5, 0.3, 0.2, 0.2)
    overlap: float = 0.5
    h_intra: float = 0.1
    h_inj: float = 1.0
    peers: int = 2
    network: str = "mean"
    seed: int = 34

    def __post_init__(self) -> None:
        if self.phases < 1:
            raise ConfigError(f"execution model: phases must be >= 1, got {self.phases}")
        if not self.growth or not all(g > 0 for g in self.growth):  # (also NaN)
            raise ConfigError("execution model: growth factors must be > 0")
        if len(self.comm_share) != 4 or not all(0 <= s < 1 for s in self.comm_share):
            raise ConfigError("execution model: comm_share needs four shares in [0, 1)")
        if not 0 <= self.overlap <= 1:
            raise ConfigError(f"execution model: overlap must be in [0, 1], got {self.overlap}")
        if self.network == "contention":
            raise ConfigError(
                "execution model: network 'contention' is now 'max' (the worst link; the "
                "default 'mean' weights the links by the job's traffic)"
            )
        if self.network not in NETWORKS:
            raise ConfigError(
                f"execution model: network must be one of {', '.join(NETWORKS)}, got '{self.network}'"
            )
        if self.peers < 1:
            raise ConfigError(f"execution model: peers must be >= 1, got {self.peers}")
        for name in ("h_intra", "h_inj"):
            if not getattr(self, name) >= 0:  # (also NaN)
                raise ConfigError(
                    f"execution model: {name} must be >= 0, got {getattr(self, name)}"
                )
        if self.seed < 0:
            raise ConfigError(f"execution model: seed must be >= 0, got {self.seed}")


def app_model_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``overrides`` of :class:`AppModelParams` fields checked and in canonical form (ints,
    finite floats, strings; lists of floats for the tuple fields), keeping only the fields
    that differ from the defaults, so that equal models have equal options (sweep cell ids,
    journal headers); ``None`` when nothing differs. A wrong key or value is a one-line
    :class:`ConfigError`."""
    if overrides is None:
        return None
    if not isinstance(overrides, Mapping):
        raise ConfigError(
            f"execution model: expected a table of parameters (e.g. network=none), got {overrides!r}"
        )
    defaults = AppModelParams()
    known = [f.name for f in fields(AppModelParams)]
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in known:
            raise ConfigError(
                f"execution model: unknown parameter '{key}'; known: {', '.join(known)}"
            )
        default = getattr(defaults, key)
        if isinstance(default, tuple):
            items = value if isinstance(value, (list, tuple)) else [value]
            canonical: Any = [_number(key, x, "numbers separated by '/'") for x in items]
            same = canonical == list(default)
        elif isinstance(default, int):
            canonical = _whole(key, value)
            same = canonical == default
        elif isinstance(default, float):
            canonical = _number(key, value, "a number")
            same = canonical == default
        else:
            if not isinstance(value, str):
                raise ConfigError(f"execution model: {key} must be a name, got {value!r}")
            canonical = value
            same = canonical == default
        if not same:
            out[key] = canonical
    app_model_params(out)  # the ranges (AppModelParams checks them)
    return out or None


def _number(key: str, value: Any, kind: str) -> float:
    """``value`` as a finite float (a number or a numeric string; not a boolean)."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"execution model: {key} must be {kind}, got {value!r}") from None
    if not math.isfinite(number):
        raise ConfigError(f"execution model: {key} must be {kind} (finite), got {value!r}")
    return number


def _whole(key: str, value: Any) -> int:
    """``value`` as an int: an int, an integer string, or a float / numeric string that is
    whole (``5.0``, ``"5e0"``); exact for large ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    number = _number(key, value, "a whole number")
    if number != int(number):
        raise ConfigError(f"execution model: {key} must be a whole number, got {value!r}")
    return int(number)


def app_model_params(overrides: Mapping[str, Any] | None) -> AppModelParams:
    """The execution model's parameters: the defaults with ``overrides`` (canonical form,
    :func:`app_model_overrides`) applied."""
    if not overrides:
        return AppModelParams()
    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()
    }
    return AppModelParams(**values)


def parse_app_model(text: str) -> dict[str, Any] | None:
    """``network=none,overlap=0.3,growth=0.5/1/1.5`` (the command line's ``--app-model``) ->
    canonical overrides; the tuple fields take values separated by ``/``."""
    raw: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(
                f"execution model: '{part}' is not KEY=VALUE (e.g. network=none,overlap=0.3)"
            )
        value = value.strip()
        raw[key.strip()] = value.split("/") if "/" in value else value
    return app_model_overrides(raw)


def combine(a: float, b: float, sync: bool, overlap: float) -> float:
    """A phase's relative length from its computation ``a`` and communication ``b``."""
    if sync:
        return a + b
    return max(a, b) + (1.0 - overlap) * min(a, b)


@lru_cache(maxsize=4096)
def _halo(p: int) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D halo exchange of ``p`` ranks on a ``ceil(sqrt p) x ceil(p / that)`` rank grid."""
    rows = math.ceil(math.sqrt(p))
    cols = math.ceil(p / rows)
    r = np.arange(p, dtype=np.int64)
    right = r + 1
    ok_r = ((r % cols) != cols - 1) & (right < p)
    down = r + cols
    ok_d = down < p
    a = np.concatenate([r[ok_r], r[ok_d]])
    b = np.concatenate([right[ok_r], down[ok_d]])
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    src.flags.writeable = dst.flags.writeable = False  # shared by every job of that size (cached)
    return src, dst


def _random_peers(
    rng: np.random.Generator, senders: np.ndarray, pool: int, peers: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each sender (a rank < ``pool``) to ``peers`` random other ranks of ``0 .. pool - 1``."""
    if pool < 2 or len(senders) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    src = np.repeat(senders, peers)
    x = rng.integers(0, pool - 1, size=len(src))
    return src, x + (x >= src)  # skip the sender itself


@dataclass(frozen=True, slots=True)
class ExecutionSummary:
    """A run's totals in the execution model: phases run, the share of them with time-shared
    cores and with shared links, the mean link sharing ``Gamma`` (NaN without phases), fork
    requests and grants, and the network mode. In ``summary.json`` as the ``exec_*`` and
    ``fork*`` keys (:meth:`summary_fields`)."""

    phases: int
    oversubscribed_share: float
    shared_link_share: float
    gamma_mean: float
    forks_asked: int
    forks_granted: int
    network: str

    @property
    def fork_grant_rate(self) -> float:
        """Grants per fork request (NaN without requests)."""
        return self.forks_granted / self.forks_asked if self.forks_asked else float("nan")

    def summary_fields(self) -> dict[str, Any]:
        return {
            "exec_phases": self.phases,
            "exec_oversubscribed_share": self.oversubscribed_share,
            "exec_shared_link_share": self.shared_link_share,
            "exec_gamma_mean": self.gamma_mean,
            "forks_asked": self.forks_asked,
            "forks_granted": self.forks_granted,
            "fork_grant_rate": self.fork_grant_rate,
            "exec_network": self.network,
        }


@dataclass(frozen=True, eq=False)
class AppProgram:
    """A job's program and its calibration (see the module docstring)."""

    behaviour: int
    sync: bool
    cores: int  # per node
    procs: np.ndarray  # (K,) processes per phase
    base: int  # ranks that live through the job
    nominal: np.ndarray  # (K,) D*_k, whole seconds, summing to R
    share: np.ndarray  # (K,) phi_k (0 for a phase without messages)
    src: tuple[np.ndarray, ...]  # per phase: message senders (ranks)
    dst: tuple[np.ndarray, ...]  # per phase: receivers
    base_cost: np.ndarray  # (K,) mean message cost on the baseline placement (0: no message)
    denom: np.ndarray  # (K,) combine(1 - phi_k, phi_k)

    @property
    def phases(self) -> int:
        return len(self.procs)

    def work(self) -> np.ndarray:
        """``W_k``: core-seconds of computation per phase (on its own core each process does
        ``W_k / p_k`` seconds)."""
        return self.procs * (1.0 - self.share) * self.nominal / self.denom

    def comm_scale(self) -> np.ndarray:
        """``kappa_k``: seconds of communication per unit of mean message cost."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                self.base_cost > 0, self.share * self.nominal / self.denom / self.base_cost, 0.0
            )


@dataclass(slots=True)
class AppRun:
    """One running deadline job in the model: its nodes (in the order obtained), where its
    base ranks sit, the current phase and its contribution to the link load."""

    program: AppProgram
    nodes: list[int]
    base_node: np.ndarray  # (b,) node of every base rank
    phase: int = -1
    rank_node: np.ndarray | None = None  # (p_k,) node of every rank in the current phase
    node_load: np.ndarray | None = None  # processes on each of ``nodes`` in the current phase
    links: np.ndarray | None = None  # link ids the current phase loads
    load: np.ndarray | None = None  # delta x F on those links
    # per-phase records for the metrics
    # the last phase computed: (its messages, its placement, cost ratio, links, messages per link)
    cache: tuple | None = None
    oversubscription: float = 1.0  # max processes per core in the current phase
    gamma: float = 1.0
    asked: int = 0
    granted: int = 0
    # per-core jobs (a dispatcher tagged ``per_core``): the cores held on each of ``nodes``;
    # None: whole nodes of ``cores`` cores each
    cap: np.ndarray | None = None
    # a static job on more nodes than its request (``static_request=peak``): children of a
    # type-2 job may use the partition's free cores too, as type 3's do
    spread: bool = False


@dataclass
class ExecutionModel:
    """The model for one system: its grid (a ``1 x n`` line when the system has none), the
    cores per node and the machine-wide link load of the phases now running. Lives in the
    simulator's loop state (pickled with a checkpoint)."""

    grid: Grid
    cores: int
    params: AppModelParams = field(default_factory=AppModelParams)
    link_load: np.ndarray = field(init=False)
    #: cores held per node by per-core jobs (can exceed ``cores``: a time-shared start)
    core_load: np.ndarray = field(init=False)
    # what happened, for the run's summary
    phases_run: int = field(default=0, init=False)
    oversubscribed_phases: int = field(default=0, init=False)
    shared_phases: int = field(default=0, init=False)  # Gamma > 1
    gamma_sum: float = field(default=0.0, init=False)
    forks_asked: int = field(default=0, init=False)
    forks_granted: int = field(default=0, init=False)
    _programs: dict[int, AppProgram] = field(default_factory=dict, init=False, repr=False)
    _baselines: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.link_load = np.zeros(self.grid.n_links, dtype=np.float64)
        self.core_load = np.zeros(self.grid.n_nodes, dtype=np.int64)
        # distances by table lookup up to 1,024 nodes (8 MB), computed above
        self._dist = self.grid.distance_matrix if self.grid.n_nodes <= 1024 else None

    def baseline_slots(self, m: int) -> np.ndarray:
        """The baseline placement's cores (A9): node of every core of the Manhattan partition
        of ``m`` nodes grown from node 0 of the empty machine, nodes ascending."""
        slots = self._baselines.get(m)
        if slots is None:
            part = manhattan_partition(np.ones(self.grid.n_nodes, dtype=bool), self.grid, m)
            if part is None:  # larger than the machine: the machine in node order
                part = np.arange(self.grid.n_nodes, dtype=np.int64)
            slots = self._baselines[m] = np.repeat(np.sort(part), self.cores)
        return slots

    @classmethod
    def for_system(cls, system, params: AppModelParams | None = None) -> ExecutionModel:
        topo = system.topology
        grid = topo.grid if topo.is_grid else grid_of(1, system.n_nodes)
        cores = (
            system.capacity[:, system.resource_index("core")]
            if "core" in system.resources
            else None
        )
        if cores is None or len(cores) == 0 or cores.min() != cores.max() or cores[0] < 1:
            raise ConfigError(
                f"system '{system.name}': the execution model needs the same number of cores on every node"
            )
        return cls(grid, int(cores[0]), params or AppModelParams())

    def __getstate__(self) -> dict:  # programs and caches are rebuilt
        state = dict(vars(self))
        state["_programs"] = {}
        state["_baselines"] = {}
        state["_dist"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self._dist = self.grid.distance_matrix if self.grid.n_nodes <= 1024 else None

    # ---- programs ----------------------------------------------------------------------------
    def program(self, job) -> AppProgram:
        """The calibrated program of ``job`` (built once, from the job alone)."""
        prog = self._programs.get(job.index)
        if prog is None:
            prog = self._programs[job.index] = self.build_program(
                job.id, job.app.behaviour, job.app.comm, job.app.processes, int(job.run_time)
            )
        return prog

    def build_program(
        self, job_id: int, behaviour: int, comm: str, n: int, run_time: int
    ) -> AppProgram:
        prm = self.params
        k_phases = max(1, min(prm.phases, int(run_time)))
        rng = np.random.default_rng([prm.seed, int(job_id)])
        if behaviour in (2, 3):
            g = np.asarray(prm.growth, dtype=np.float64)[
                rng.integers(0, len(prm.growth), size=k_phases)
            ]
            procs = np.maximum(1, np.rint(n * g)).astype(np.int64)
        else:
            procs = np.full(k_phases, n, dtype=np.int64)
        base = int(procs.min())
        srcs: list[np.ndarray] = []
        dsts: list[np.ndarray] = []
        empty = np.zeros(0, np.int64)
        for k in range(k_phases):
            p = int(procs[k])
            if behaviour == 0:
                others = np.arange(1, p, dtype=np.int64)
                if k == 0:
                    s, d = np.zeros(p - 1, np.int64), others
                elif k == k_phases - 1:
                    s, d = others, np.zeros(p - 1, np.int64)
                else:
                    s, d = empty, empty
            elif behaviour == 1:
                s, d = _halo(p)
            elif behaviour == 2:
                s1, d1 = _random_peers(rng, np.arange(base, dtype=np.int64), base, prm.peers)
                child = np.arange(base, p, dtype=np.int64)
                parent = (child - base) % base
                s = np.concatenate([s1, child, parent])
                d = np.concatenate([d1, parent, child])
            else:
                s, d = _random_peers(rng, np.arange(p, dtype=np.int64), p, prm.peers)
            srcs.append(s)
            dsts.append(d)
        # nominal durations: whole seconds summing to R
        cuts = np.floor(run_time * np.arange(k_phases + 1, dtype=np.float64) / k_phases)
        nominal = np.diff(cuts)
        share = np.zeros(k_phases)
        phi = prm.comm_share[behaviour]
        for k in range(k_phases):
            if len(srcs[k]) and (behaviour != 0 or k in (0, k_phases - 1)):
                share[k] = phi
        # the baseline placement: Manhattan partition from node 0 of the empty machine
        slots = self.baseline_slots(-(-int(procs.max()) // self.cores))
        base_cost = np.zeros(k_phases)
        last: tuple[int, float] = (-1, 0.0)
        for k in range(k_phases):
            if len(srcs[k]):
                if id(srcs[k]) == last[0]:  # the same messages (a halo of the same size)
                    base_cost[k] = last[1]
                    continue
                rank_node = (
                    slots[: int(procs[k])]
                    if int(procs[k]) <= len(slots)
                    else slots[np.arange(int(procs[k])) % len(slots)]
                )
                base_cost[k] = self._mean_cost(rank_node[srcs[k]], rank_node[dsts[k]])
                last = (id(srcs[k]), float(base_cost[k]))
        sync = comm == "sync"
        denom = np.array([combine(1.0 - s, s, sync, prm.overlap) for s in share])
        return AppProgram(
            behaviour,
            sync,
            self.cores,
            procs,
            base,
            nominal,
            share,
            tuple(srcs),
            tuple(dsts),
            base_cost,
            denom,
        )

    def _mean_cost(self, a: np.ndarray, b: np.ndarray) -> float:
        prm = self.params
        d = self._dist[a, b] if self._dist is not None else self.grid.distance(a, b)
        inter = int(np.count_nonzero(d))  # distance 0: the same node
        return (prm.h_inj * inter + float(d.sum()) + prm.h_intra * (len(d) - inter)) / len(d)

    # ---- placement ------------------------------------------------------------------------------
    def start(self, job, nodes: list[int], cores: np.ndarray | None = None) -> AppRun:
        """A job starting on ``nodes`` (in the order given): base rank ``r`` on the ``r``-th
        core of the nodes, round-robin when there are fewer cores than base ranks. ``cores``
        (a per-core job): the cores it holds on each node, instead of all of them; they count
        in :attr:`core_load` until :meth:`leave`."""
        prog = self.program(job)
        held = None if cores is None else np.asarray(cores, dtype=np.int64)
        slots = np.repeat(np.asarray(nodes, dtype=np.int64), self.cores if held is None else held)
        base_node = slots[np.arange(prog.base) % len(slots)]
        if held is not None:
            self.core_load[np.asarray(nodes, dtype=np.int64)] += held
        spread = held is None and len(nodes) > -(-int(job.app.processes) // self.cores)
        return AppRun(prog, list(nodes), base_node, cap=held, spread=spread)

    def leave(self, run: AppRun) -> None:
        """A per-core job ended or was cancelled: its cores leave :attr:`core_load`."""
        if run.cap is not None:
            self.core_load[np.asarray(run.nodes, dtype=np.int64)] -= run.cap
            run.cap = None

    def place_phase(
        self, run: AppRun, k: int, forks: bool, ask: Callable[[int], int | None] | None
    ) -> list[int]:
        """Place phase ``k``'s ranks (the children per the module docstring); returns the
        nodes granted by ``ask`` (already appended to ``run.nodes``)."""
        prog = run.program
        c: Any = self.cores if run.cap is None else run.cap  # cores of the job per node
        b = prog.base
        q = int(prog.procs[k]) - b
        nodes = run.nodes
        posmap = np.full(self.grid.n_nodes, -1, dtype=np.int64)
        posmap[nodes] = np.arange(len(nodes))
        base_pos = posmap[run.base_node]
        load = np.bincount(base_pos, minlength=len(nodes)).astype(np.int64)
        granted: list[int] = []
        if q > 0:
            parent_pos = base_pos[np.arange(q) % b]
            want = np.bincount(parent_pos, minlength=len(nodes))
            here = np.minimum(want, np.maximum(0, c - load))  # free cores on the parent's node
            load += here
            rem_all = want - here
            # overflow placements: (parent position, order, destination position, count)
            over_u: list[int] = []
            over_v: list[int] = []
            over_c: list[int] = []
            remote = forks or prog.behaviour == 3 or run.spread
            asker = ask if forks else None  # None once a fork was refused
            for u in np.flatnonzero(rem_all).tolist():
                rem = int(rem_all[u])
                if remote:
                    free = c - load
                    free[u] = 0
                    cand = np.flatnonzero(free > 0)
                    if len(cand):
                        node_arr = np.asarray(nodes, dtype=np.int64)
                        d = (
                            self._dist[node_arr[u], node_arr[cand]]
                            if self._dist is not None
                            else self.grid.distance(node_arr[u], node_arr[cand])
                        )
                        cand = cand[np.lexsort((node_arr[cand], d))]
                        for v in cand.tolist():
                            take = min(rem, int(free[v]))
                            over_u.append(u)
                            over_v.append(v)
                            over_c.append(take)
                            load[v] += take
                            rem -= take
                            if not rem:
                                break
                while rem and asker is not None:
                    run.asked += 1
                    self.forks_asked += 1
                    g = asker(nodes[u])
                    if g is None:
                        asker = None
                        break
                    run.granted += 1
                    self.forks_granted += 1
                    granted.append(g)
                    nodes.append(g)
                    load = np.append(load, 0)
                    v = len(nodes) - 1
                    take = min(rem, c)
                    over_u.append(u)
                    over_v.append(v)
                    over_c.append(take)
                    load[v] += take
                    rem -= take
                if rem:
                    if forks or prog.behaviour == 2:  # time-share the parent's node
                        over_u.append(u)
                        over_v.append(u)
                        over_c.append(rem)
                        load[u] += rem
                    else:  # static type 3: the least-loaded nodes of the partition, one child at a time
                        for _ in range(rem):
                            v = int(np.argmin(load / c))
                            over_u.append(u)
                            over_v.append(v)
                            over_c.append(1)
                            load[v] += 1
            # children in rank order, grouped by parent node, take their parent's destinations
            # in turn: its own node first, then the overflow in the order placed
            local = np.flatnonzero(here)
            u_all = np.concatenate([local, np.asarray(over_u, dtype=np.int64)])
            o_all = np.concatenate(
                [np.zeros(len(local), np.int64), np.arange(1, len(over_u) + 1, dtype=np.int64)]
            )
            v_all = np.concatenate([local, np.asarray(over_v, dtype=np.int64)])
            c_all = np.concatenate([here[local], np.asarray(over_c, dtype=np.int64)])
            order = np.lexsort((o_all, u_all))
            child_pos = np.empty(q, dtype=np.int64)
            child_pos[np.argsort(parent_pos, kind="stable")] = np.repeat(v_all[order], c_all[order])
            run.rank_node = np.concatenate(
                [run.base_node, np.asarray(nodes, dtype=np.int64)[child_pos]]
            )
        else:
            run.rank_node = run.base_node
        run.node_load = load
        if run.cap is None:
            run.oversubscription = float(-(-int(load.max()) // c)) if len(load) else 1.0
        else:  # per core: its own cores, and the node's cores shared beyond capacity
            shared = np.maximum(1.0, self.core_load[np.asarray(nodes, dtype=np.int64)] / self.cores)
            run.oversubscription = float((np.ceil(load / c) * shared).max())
        return granted

    def idle_nodes(self, run: AppRun) -> list[int]:
        """The job's nodes with no process in the current phase (a forking dispatcher's job
        gives them back)."""
        return [run.nodes[i] for i in np.flatnonzero(run.node_load == 0).tolist()]

    # ---- durations -------------------------------------------------------------------------------
    def begin_phase(self, run: AppRun, k: int) -> float:
        """Phase ``k``'s duration on the placement of :meth:`place_phase`; adds the phase's
        traffic to the machine's link load."""
        prog = run.program
        run.phase = k
        rank_node = run.rank_node
        if rank_node is None:
            raise RuntimeError(f"phase {k} begins before its ranks are placed (place_phase first)")
        share = float(prog.share[k])
        a = (1.0 - share) * run.oversubscription
        b = 0.0
        run.gamma = 1.0
        if share > 0.0:
            net = self.params.network
            if net == "none":
                b = share
            else:
                cache = run.cache
                if cache is not None and cache[0] is prog.src[k] and cache[1] is rank_node:
                    ratio, links, count = cache[
                        2:
                    ]  # the same messages on the same placement (types 0, 1)
                else:
                    src = rank_node[prog.src[k]]
                    dst = rank_node[prog.dst[k]]
                    ratio = self._mean_cost(src, dst) / float(prog.base_cost[k])
                    links = count = None
                    if net in ("mean", "max"):
                        inter = src != dst
                        if inter.any():
                            links, count = self._link_counts(src[inter], dst[inter])
                    run.cache = (prog.src[k], rank_node, ratio, links, count)
                gamma = 1.0
                if links is not None:
                    others = self.link_load[links]
                    if net == "mean":  # traffic-weighted: sum(own + others) / sum(own)
                        gamma = float((count.sum() + others.sum()) / count.sum())
                    else:  # the worst link
                        gamma = float(((count + others) / count).max())
                    delta = share if prog.sync else 1.0
                    run.links, run.load = links, delta * count
                    self.link_load[links] += run.load
                run.gamma = gamma
                b = share * ratio * gamma
        self.phases_run += 1
        self.oversubscribed_phases += run.oversubscription > 1.0
        self.shared_phases += run.gamma > 1.0
        self.gamma_sum += run.gamma
        return float(prog.nominal[k]) * (
            combine(a, b, prog.sync, self.params.overlap) / float(prog.denom[k])
        )

    def summary(self) -> ExecutionSummary:
        """The run's totals in the model (they go into the run's summary)."""
        n = self.phases_run
        nan = float("nan")
        return ExecutionSummary(
            phases=n,
            oversubscribed_share=self.oversubscribed_phases / n if n else nan,
            shared_link_share=self.shared_phases / n if n else nan,
            gamma_mean=self.gamma_sum / n if n else nan,
            forks_asked=self.forks_asked,
            forks_granted=self.forks_granted,
            network=self.params.network,
        )

    def end_phase(self, run: AppRun) -> None:
        """The current phase is over: its traffic leaves the links."""
        if run.links is not None:
            self.link_load[run.links] -= run.load
            np.maximum(self.link_load, 0.0, out=self.link_load)  # float noise
            run.links = run.load = None

    def _link_counts(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The links XY routes of ``src -> dst`` cross and how many messages cross each
        (difference arrays on a mesh: no per-hop expansion)."""
        g = self.grid
        if g.torus:
            links = g.routes(src, dst).link
            count = np.bincount(links, minlength=g.n_links)
        else:
            rows, cols = g.rows, g.cols
            ra, ca = np.divmod(src, cols)
            rb, cb = np.divmod(dst, cols)
            lo, hi = np.minimum(ca, cb), np.maximum(ca, cb)
            size = rows * cols
            h = np.bincount(ra * cols + lo, minlength=size) - np.bincount(
                ra * cols + hi, minlength=size
            )
            h = np.cumsum(h.reshape(rows, cols), axis=1)[:, : cols - 1].ravel()
            lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
            v = np.bincount(lo * cols + cb, minlength=size) - np.bincount(
                hi * cols + cb, minlength=size
            )
            v = np.cumsum(v.reshape(rows, cols), axis=0)[: rows - 1].ravel()
            count = np.concatenate([h, v])
        links = np.flatnonzero(count)
        return links, count[links].astype(np.float64)
