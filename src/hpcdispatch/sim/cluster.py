"""Mutable cluster state: free capacity per node and resource (numpy), kept by the simulator."""

from __future__ import annotations

import numpy as np

from hpcdispatch.sim.allocation import Allocation
from hpcdispatch.system.model import System


class ClusterState:
    """Free capacity ``(n_nodes, n_resources)``, column-major so per-resource scans are fast."""

    def __init__(self, system: System):
        self.system = system
        self.capacity = system.capacity
        self.free = np.asfortranarray(system.capacity.copy())
        self.free_total = system.capacity.sum(axis=0).astype(np.int64)
        self._free_ro = self.free.view()
        self._free_ro.flags.writeable = False

    @property
    def free_readonly(self) -> np.ndarray:
        return self._free_ro

    def check(self, allocation: Allocation, amounts: np.ndarray, units: int, max_per_node: int) -> str | None:
        """Why ``allocation`` cannot be taken now, or ``None`` when it can."""
        nodes = allocation.nodes
        if len(nodes) == 0:
            return "empty allocation"
        if len(nodes) > 1 and not (nodes[1:] > nodes[:-1]).all():
            return f"nodes must be unique and ascending (use Allocation(...)): {nodes.tolist()}"
        if nodes[0] < 0 or nodes[-1] >= self.free.shape[0]:
            return f"node index out of range 0..{self.free.shape[0] - 1}: {nodes.tolist()}"
        if (allocation.units <= 0).any():
            return f"non-positive unit count in {allocation.pairs()}"
        total = int(allocation.units.sum())
        if total != units:
            return f"allocation holds {total} units, the job requests {units}"
        if max_per_node > 0 and int(allocation.units.max()) > max_per_node:
            return f"more than {max_per_node} unit(s) per node in {allocation.pairs()}"
        short = self.free[nodes] < amounts
        if short.any():
            k, r = np.argwhere(short)[0]
            return (
                f"node {int(nodes[k])} has {int(self.free[nodes[k], r])} {self.system.resources[r]} free, "
                f"the allocation needs {int(amounts[k, r])}"
            )
        return None

    def take(self, nodes: np.ndarray, amounts: np.ndarray) -> None:
        self.free[nodes] -= amounts
        self.free_total -= amounts.sum(axis=0)

    def give(self, nodes: np.ndarray, amounts: np.ndarray) -> None:
        self.free[nodes] += amounts
        self.free_total += amounts.sum(axis=0)
