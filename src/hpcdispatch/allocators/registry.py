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


def make_allocator(name: str | Allocator, system: System) -> Allocator:
    """The allocator ``name`` (or the given instance), set up for ``system``."""
    if isinstance(name, Allocator):
        allocator = name
    else:
        key = str(name).lower().replace("_", "-")
        key = ALIASES.get(key, key)
        if key not in ALLOCATORS:
            raise ConfigError(
                f"unknown allocator '{name}'; available: {', '.join(sorted(ALLOCATORS))}"
            )
        allocator = ALLOCATORS[key]()
    allocator.setup(system)
    return allocator
