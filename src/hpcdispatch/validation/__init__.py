"""The independent schedule validator (``hpcdispatch validate``)."""

from hpcdispatch.validation.validator import (
    EXIT_CODES,
    RULES,
    Rule,
    RunTables,
    ValidationReport,
    Violation,
    validate,
    validate_result,
    validate_run_dir,
    validate_tables,
)

__all__ = [
    "EXIT_CODES",
    "RULES",
    "Rule",
    "RunTables",
    "ValidationReport",
    "Violation",
    "validate",
    "validate_result",
    "validate_run_dir",
    "validate_tables",
]
