"""How a processor count (SWF, Lublin) becomes the papers' request: ``rn`` identical units.

Three named modes (``--units``):

``divisor`` (default)
    Each unit gets the largest divisor of the processor count ``p`` that does not exceed
    ``C`` cores, so the job keeps exactly ``p`` cores: ``rn = p / unit``. E.g. with C = 8,
    p = 12 gives 2 units of 6 cores, p = 7 gives 7 units of 1 core.
``processor``
    One unit per processor (``rn = p``, 1 core each): AccaSim's SWF mapping; the allocator may
    pack any number of units on a node.
``node``
    Whole nodes: ``rn = ceil(p / C)`` units of ``C`` cores (may round the core count up).

``C`` is ``cores_per_unit_max`` when given, else the smallest per-node core count among the
system's node types that have cores, so that any unit fits on any node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import System

UNIT_MODES = ("divisor", "processor", "node")


@dataclass(frozen=True)
class UnitMapping:
    """How a job's processors become allocation units (``mode``: one of ``UNIT_MODES``)."""

    mode: str = "divisor"
    cores_per_unit_max: int | None = None
    core_resource: str = "core"

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in UNIT_MODES:
            raise ConfigError(
                f"unknown unit mapping '{self.mode}' (expected one of {', '.join(UNIT_MODES)})"
            )
        c = self.cores_per_unit_max
        if c is not None and (
            not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c <= 0
        ):
            raise ConfigError(f"cores_per_unit_max must be positive, got {self.cores_per_unit_max}")

    def unit_core_limit(self, system: System) -> int:
        if self.cores_per_unit_max is not None:
            return self.cores_per_unit_max
        col = system.resource_index(self.core_resource)
        per_type = [nt.capacity.get(self.core_resource, 0) for nt in system.node_types]
        per_type = [c for c in per_type if c > 0]
        if not per_type:
            raise ConfigError(
                f"system '{system.name}' has no node with '{self.core_resource}' (column {col})"
            )
        return min(per_type)

    def map(self, processors: np.ndarray, system: System) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(units, cores_per_unit)`` for an array of positive processor counts."""
        p = np.asarray(processors, dtype=np.int64)
        limit = self.unit_core_limit(system)
        if self.mode == "processor":
            return p.copy(), np.ones_like(p)
        if self.mode == "node":
            return -(-p // limit), np.full_like(p, limit)
        per_unit = np.ones_like(p)
        todo = np.ones(p.shape, dtype=bool)
        for d in range(limit, 1, -1):
            hit = todo & (p % d == 0)
            per_unit[hit] = d
            todo &= ~hit
        return p // per_unit, per_unit
