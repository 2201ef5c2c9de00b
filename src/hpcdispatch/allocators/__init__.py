"""Allocators: where a job's units go (first fit, best fit; later contiguous, Hilbert, ...)."""

from hpcdispatch.allocators.base import ALLOCATORS, Allocator, BestFit, FirstFit, fill_in_order, make_allocator

__all__ = ["ALLOCATORS", "Allocator", "BestFit", "FirstFit", "fill_in_order", "make_allocator"]
