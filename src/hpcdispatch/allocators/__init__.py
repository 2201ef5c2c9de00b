"""Allocators: where a job's units go (first fit, best fit, Slurm's linear best-fit sets)."""

from hpcdispatch.allocators.base import (
    ALLOCATORS,
    Allocator,
    BestFit,
    FirstFit,
    allocate_job,
    fill_in_order,
    make_allocator,
)
from hpcdispatch.allocators.slurm_linear import SlurmLinear, slurm_select

ALLOCATORS.setdefault(SlurmLinear.name, SlurmLinear)

__all__ = ["ALLOCATORS", "Allocator", "BestFit", "FirstFit", "SlurmLinear", "allocate_job", "fill_in_order",
           "make_allocator", "slurm_select"]
