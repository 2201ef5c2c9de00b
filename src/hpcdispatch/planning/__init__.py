"""Planning ahead: the availability profile (free capacity per node over future time) that
reservation-based policies share (conservative backfilling, the CP dispatchers' priority
rule, later advance reservations and deadline checks)."""

from hpcdispatch.planning.profile import AvailabilityProfile, load_compiled_kernels

__all__ = ["AvailabilityProfile", "load_compiled_kernels"]
