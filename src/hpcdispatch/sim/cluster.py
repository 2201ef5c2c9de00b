"""Mutable cluster state: free capacity per node and resource (numpy), kept by the simulator."""

from __future__ import annotations

import numpy as np

from hpcdispatch.system.allocation import Allocation
from hpcdispatch.system.model import System


class ClusterState:
    """Free capacity ``(n_nodes, n_resources)``, column-major so per-resource scans are fast,
    and the pooled free total per resource (Python ints)."""

    def __init__(self, system: System):
        self.system = system
        self.capacity = system.capacity
        self.n_nodes = system.n_nodes
        self.free = np.asfortranarray(system.capacity.copy())
        self.free_total: list[int] = [int(x) for x in system.capacity.sum(axis=0)]
        self._free_ro = self.free.view()
        self._free_ro.flags.writeable = False

    def __getstate__(self) -> dict:  # a checkpoint: the read-only view is re-made, not copied
        state = dict(vars(self))
        del state["_free_ro"]
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self._free_ro = self.free.view()
        self._free_ro.flags.writeable = False

    @property
    def free_readonly(self) -> np.ndarray:
        return self._free_ro

    def take_checked(
        self,
        allocation: Allocation,
        unit_request: np.ndarray,
        units: int,
        max_per_node: int,
        node_count: int = 0,
        per_node: np.ndarray | None = None,
        contiguous: bool = False,
    ) -> np.ndarray | str:
        """Take ``allocation`` if it is valid now and return the amounts taken per node;
        otherwise change nothing and return why it is invalid.

        Slurm-style constraints: ``node_count`` (exactly that many distinct nodes),
        ``per_node`` (amounts taken on every used node on top of the units) and
        ``contiguous`` (consecutive node indices)."""
        if node_count or contiguous or per_node is not None:
            return self._take_constrained(
                allocation, unit_request, units, max_per_node, node_count, per_node, contiguous
            )
        nodes = allocation.nodes
        counts = allocation.units
        m = len(nodes)
        if m == 1:  # one node: Python scalars throughout (numpy arithmetic on one row costs more)
            node = int(nodes[0])
            if node < 0 or node >= self.n_nodes:
                return f"node index out of range 0..{self.n_nodes - 1}: {nodes.tolist()}"
            count = int(counts[0])
            if count <= 0:
                return f"non-positive unit count in {allocation.pairs()}"
            if count != units:
                return f"allocation holds {count} units, the job requests {units}"
            if 0 < max_per_node < count:
                return f"more than {max_per_node} unit(s) per node in {allocation.pairs()}"
            free = self.free
            need_list = [a * count for a in unit_request.tolist()]
            for r, a in enumerate(need_list):
                if a and free[node, r] < a:
                    have = int(free[node, r])
                    name = self.system.resources[r]
                    return f"node {node} has {have} {name} free, the allocation needs {a}"
            ft = self.free_total
            for r, a in enumerate(need_list):
                if a:
                    free[node, r] -= a
                    ft[r] -= a
            return np.array([need_list], dtype=np.int64)
        problem = self._node_list_problem(nodes, m)
        if problem:
            return problem
        count_list = counts.tolist()
        if min(count_list) <= 0:
            return f"non-positive unit count in {allocation.pairs()}"
        total = sum(count_list)
        if total != units:
            return f"allocation holds {total} units, the job requests {units}"
        if max_per_node > 0 and max(count_list) > max_per_node:
            return f"more than {max_per_node} unit(s) per node in {allocation.pairs()}"
        amounts = counts[:, None] * unit_request
        problem = self._subtract(nodes, amounts)
        if problem:
            return problem
        ft = self.free_total
        for r, a in enumerate(unit_request.tolist()):
            if a:
                ft[r] -= a * units
        return amounts

    def _subtract(self, nodes: np.ndarray, amounts: np.ndarray) -> str | None:
        """Take ``amounts`` (one row per node of ``nodes``) if every node has them free;
        otherwise change nothing and say which node falls short."""
        left = self.free[nodes] - amounts
        if left.min() < 0:
            k, r = np.argwhere(left < 0)[0]
            return (
                f"node {int(nodes[k])} has {int(self.free[nodes[k], r])} {self.system.resources[r]} free, "
                f"the allocation needs {int(amounts[k, r])}"
            )
        self.free[nodes] = left
        return None

    def _node_list_problem(self, nodes: np.ndarray, m: int) -> str | None:
        """Why an allocation's node list is unusable (empty, unsorted, out of range), or None."""
        if m == 0:
            return "empty allocation"
        if m > 1 and not (nodes[1:] > nodes[:-1]).all():
            return f"nodes must be unique and ascending (use Allocation(...)): {nodes.tolist()}"
        if int(nodes[0]) < 0 or int(nodes[-1]) >= self.n_nodes:
            return f"node index out of range 0..{self.n_nodes - 1}: {nodes.tolist()}"
        return None

    def _take_constrained(
        self, allocation, unit_request, units, max_per_node, node_count, per_node, contiguous
    ):
        nodes = allocation.nodes
        counts = allocation.units
        m = len(nodes)
        problem = self._node_list_problem(nodes, m)
        if problem:
            return problem
        if int(counts.min()) <= 0:
            return f"non-positive unit count in {allocation.pairs()}"
        total = int(counts.sum())
        if total != units:
            return f"allocation holds {total} units, the job requests {units}"
        if max_per_node > 0 and int(counts.max()) > max_per_node:
            return f"more than {max_per_node} unit(s) per node in {allocation.pairs()}"
        if node_count and m != node_count:
            return f"allocation uses {m} node(s), the job requests exactly {node_count}"
        if contiguous and int(nodes[-1]) - int(nodes[0]) + 1 != m:
            return f"the job requests contiguous nodes, the allocation uses {nodes.tolist()}"
        amounts = counts[:, None] * unit_request[None, :]
        if per_node is not None:
            amounts = amounts + per_node[None, :]
        problem = self._subtract(nodes, amounts)
        if problem:
            return problem
        ft = self.free_total
        for r, a in enumerate(amounts.sum(axis=0).tolist()):
            ft[r] -= a
        return amounts

    def give(self, nodes: np.ndarray, amounts: np.ndarray) -> None:
        if len(nodes) == 1:
            free, node = self.free, int(nodes[0])
            totals = amounts[0].tolist()
            for r, a in enumerate(totals):
                if a:
                    free[node, r] += a
        else:
            self.free[nodes] += amounts
            totals = amounts.sum(axis=0).tolist()
        ft = self.free_total
        for r, a in enumerate(totals):
            ft[r] += a
