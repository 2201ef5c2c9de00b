"""Allocators by name: ``first-fit``, ``best-fit``, ``slurm-linear`` (and short aliases)."""

from __future__ import annotations

from hpcdispatch.allocators.base import Allocator, BestFit, FirstFit
from hpcdispatch.allocators.slurm_linear import SlurmLinear
from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import System

ALLOCATORS: dict[str, type[Allocator]] = {cls.name: cls for cls in (FirstFit, BestFit, SlurmLinear)}
ALIASES = {
    "ff": "first-fit",
    "bf": "best-fit",
    "firstfit": "first-fit",
    "bestfit": "best-fit",
    "slurm": "slurm-linear",
}


def canonical_allocator(name: str) -> str:
    """The registered name of an allocator given by any of its spellings (``bestfit``,
    ``BF``, ``best_fit`` -> ``best-fit``); a clear error for an unknown one."""
    key = str(name).strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in ALLOCATORS:
        raise ConfigError(f"unknown allocator '{name}'; available: {', '.join(sorted(ALLOCATORS))}")
    return key


def make_allocator(name: str | Allocator, system: System) -> Allocator:
    """The allocator ``name`` (or the given instance), set up for ``system``."""
    if isinstance(name, Allocator):
        allocator = name
    else:
        allocator = ALLOCATORS[canonical_allocator(name)]()
    allocator.setup(system)
    return allocator
