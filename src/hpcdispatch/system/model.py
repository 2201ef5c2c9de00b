"""The system model: nodes with integer capacities per resource type, grouped into node types.

Nodes are kept in one fixed order (the "linear" order Slurm uses): node types in the order
they are declared, nodes of a type consecutively. Node ``i`` is row ``i`` of
:attr:`System.capacity`. A :class:`Topology` lays the nodes out in other ways (a 2-D mesh or
torus for the deadline-oriented allocators, numbered row-major) without changing that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.grid import Grid, grid_of

#: more nodes than any machine has (the capacity array of a system is n_nodes x resources)
MAX_NODES = 10_000_000
#: the largest capacity of a resource on a node (exact in float64, far from int64's end)
MAX_AMOUNT = 2**50


@dataclass(frozen=True)
class NodeType:
    """``count`` identical nodes, each with ``capacity[resource]`` units of every resource."""

    name: str
    count: int
    capacity: Mapping[str, int]

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("a node type needs a name")
        if (
            not isinstance(self.count, int)
            or isinstance(self.count, bool)
            or not 0 < self.count <= MAX_NODES
        ):
            raise ConfigError(
                f"node type '{self.name}': count must be a positive integer (at most {MAX_NODES:,}), "
                f"got {self.count!r}"
            )
        for res, amount in self.capacity.items():
            if (
                not isinstance(amount, int)
                or isinstance(amount, bool)
                or not 0 <= amount <= MAX_AMOUNT
            ):
                raise ConfigError(
                    f"node type '{self.name}': capacity of '{res}' must be a non-negative integer (at most 2^50), "
                    f"got {amount!r}"
                )


#: the layouts a system can declare
TOPOLOGY_KINDS = ("linear", "grid2d", "torus2d")


@dataclass(frozen=True)
class Topology:
    """How nodes are laid out. ``linear`` (default): a 1-D array in node order.

    ``grid2d``: a 2-D mesh, ``shape = (rows, cols)``, node ``i`` at row ``i // cols``, column
    ``i % cols`` (row-major: the node order is unchanged). ``torus2d``: the same with
    wrap-around links. :attr:`grid` gives the geometry (distances, neighbours, XY routes,
    Hilbert and snake orders; ``system/grid.py``) the deadline-oriented allocators use.
    """

    kind: str = "linear"
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in TOPOLOGY_KINDS:
            raise ConfigError(
                f"unknown topology kind '{self.kind}' (expected 'linear', 'grid2d' or 'torus2d')"
            )
        if self.is_grid and (
            len(self.shape) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in self.shape)
            or min(self.shape) <= 0
        ):
            raise ConfigError(
                f"topology {self.kind} needs shape = [rows, cols] of positive integers, "
                f"got {list(self.shape)}"
            )
        if self.is_grid and self.shape[0] * self.shape[1] > MAX_NODES:
            raise ConfigError(
                f"topology {self.kind} {self.shape[0]}x{self.shape[1]} has more than "
                f"{MAX_NODES:,} nodes"
            )

    @property
    def is_grid(self) -> bool:
        return self.kind in ("grid2d", "torus2d")

    @property
    def grid(self) -> Grid:
        """The 2-D geometry of a ``grid2d`` or ``torus2d`` topology (cached per shape)."""
        if not self.is_grid:
            raise ConfigError(f"topology {self.kind} is not a 2-D grid (kind grid2d or torus2d)")
        rows, cols = self.shape
        return grid_of(rows, cols, self.kind == "torus2d")

    def coordinates(self, n_nodes: int) -> np.ndarray:
        """Coordinates of every node: ``(n, 1)`` for linear, ``(n, 2)`` (row, col) for a grid."""
        idx = np.arange(n_nodes)
        if self.kind == "linear":
            return idx[:, None]
        rows, cols = self.shape
        if rows * cols != n_nodes:
            raise ConfigError(f"topology {self.kind} {rows}x{cols} does not hold {n_nodes} nodes")
        return np.stack([idx // cols, idx % cols], axis=1)


@dataclass(frozen=True)
class System:
    """An HPC system: resource types and an ordered list of node types.

    ``capacity`` is an ``(n_nodes, n_resources)`` read-only integer array; column ``r`` is
    resource ``resources[r]``.
    """

    name: str
    resources: tuple[str, ...]
    node_types: tuple[NodeType, ...]
    topology: Topology = field(default_factory=Topology)
    description: str = ""

    def __post_init__(self) -> None:
        if not self.resources:
            raise ConfigError(f"system '{self.name}' declares no resource types")
        if len(set(self.resources)) != len(self.resources):
            raise ConfigError(
                f"system '{self.name}': duplicate resource names in {list(self.resources)}"
            )
        if not self.node_types:
            raise ConfigError(f"system '{self.name}' has no node types")
        names = [nt.name for nt in self.node_types]
        if len(set(names)) != len(names):
            raise ConfigError(f"system '{self.name}': duplicate node type names in {names}")
        for nt in self.node_types:
            unknown = set(nt.capacity) - set(self.resources)
            if unknown:
                raise ConfigError(
                    f"system '{self.name}', node type '{nt.name}': unknown resource(s) {sorted(unknown)}; "
                    f"declared resources are {list(self.resources)}"
                )
        if self.n_nodes > MAX_NODES:
            raise ConfigError(
                f"system '{self.name}' has {self.n_nodes:,} nodes, more than {MAX_NODES:,}"
            )
        if self.topology.is_grid:
            rows, cols = self.topology.shape
            if rows * cols != self.n_nodes:  # (before coordinates() builds arrays of that size)
                raise ConfigError(
                    f"topology {self.topology.kind} {rows}x{cols} does not hold {self.n_nodes} nodes"
                )

    @cached_property
    def n_nodes(self) -> int:
        return sum(nt.count for nt in self.node_types)

    @cached_property
    def capacity(self) -> np.ndarray:
        """``(n_nodes, n_resources)`` int64, read-only."""
        rows = []
        for nt in self.node_types:
            row = [int(nt.capacity.get(r, 0)) for r in self.resources]
            rows.extend([row] * nt.count)
        cap = np.asarray(rows, dtype=np.int64).reshape(self.n_nodes, len(self.resources))
        cap.flags.writeable = False
        return cap

    @cached_property
    def node_type_index(self) -> np.ndarray:
        """Index into :attr:`node_types` of every node (read-only)."""
        idx = np.repeat(np.arange(len(self.node_types)), [nt.count for nt in self.node_types])
        idx.flags.writeable = False
        return idx

    @cached_property
    def total_capacity(self) -> np.ndarray:
        tot = self.capacity.sum(axis=0)
        tot.flags.writeable = False
        return tot

    @cached_property
    def max_node_capacity(self) -> np.ndarray:
        """Largest per-node capacity of each resource (used to normalise best-fit scores)."""
        m = self.capacity.max(axis=0)
        m.flags.writeable = False
        return m

    def resource_index(self, name: str) -> int:
        try:
            return self.resources.index(name)
        except ValueError:
            raise ConfigError(
                f"system '{self.name}' has no resource '{name}' (it has {list(self.resources)})"
            ) from None

    def node_name(self, node: int) -> str:
        return f"n{node:0{max(4, len(str(self.n_nodes - 1)))}d}"

    def summary(self) -> str:
        parts = []
        for nt in self.node_types:
            caps = ", ".join(
                f"{nt.capacity[r]} {r}" for r in self.resources if nt.capacity.get(r, 0)
            )
            parts.append(f"{nt.count} x ({caps})")
        layout = ""
        if self.topology.is_grid:
            layout = (
                f" on a {self.topology.kind} {self.topology.shape[0]} x {self.topology.shape[1]}"
            )
        return " + ".join(parts) + layout
