"""The independent schedule validator (``hpcdispatch validate``): :func:`validate` a result or
a run directory; its rules are the table ``RULES`` (:class:`Rule` over :class:`RunTables`),
its verdicts' exit codes ``EXIT_CODES`` (docs/VALIDATION.md)."""

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
