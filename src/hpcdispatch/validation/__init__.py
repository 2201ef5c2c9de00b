"""The independent schedule validator (``hpcdispatch validate``)."""

from hpcdispatch.validation.validator import (
    ValidationReport,
    Violation,
    validate,
    validate_result,
    validate_run_dir,
    validate_tables,
)

__all__ = [
    "ValidationReport",
    "Violation",
    "validate",
    "validate_result",
    "validate_run_dir",
    "validate_tables",
]
