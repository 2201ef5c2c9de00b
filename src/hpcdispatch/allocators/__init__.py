"""Allocators: where a job's units go (first fit, best fit, Slurm's linear best-fit sets).

An allocator is a pure function of a free-capacity matrix; it sits below the protocol so
that every dispatcher (and the planning profile) can place jobs with any of them.
``ALLOCATORS`` maps each name to its class, ``ALIASES`` the short spellings to names;
:func:`make_allocator` builds one by name, :func:`canonical_allocator` names it.
"""

from hpcdispatch.allocators.base import (
    Allocator,
    BestFit,
    FirstFit,
    allocate_job,
    capacity_weights,
    fill_in_order,
)
from hpcdispatch.allocators.registry import ALIASES, ALLOCATORS, canonical_allocator, make_allocator
from hpcdispatch.allocators.slurm_linear import SlurmLinear, slurm_select

__all__ = [
    "ALIASES",
    "ALLOCATORS",
    "Allocator",
    "BestFit",
    "FirstFit",
    "SlurmLinear",
    "allocate_job",
    "canonical_allocator",
    "capacity_weights",
    "fill_in_order",
    "make_allocator",
    "slurm_select",
]
