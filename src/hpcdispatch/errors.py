"""Error types. Every error a user can cause derives from :class:`HpcDispatchError`.

The CLI prints such errors as one clear message (no traceback); any other exception is a bug.
"""

from __future__ import annotations


class HpcDispatchError(Exception):
    """Base class of all user-facing errors."""


class ConfigError(HpcDispatchError):
    """A broken system description, option or command-line value."""


class TraceFormatError(HpcDispatchError):
    """A workload file that cannot be read. Names the file, the line and the field."""

    def __init__(self, path: str, message: str, line: int | None = None, field: str | None = None):
        self.path = str(path)
        self.line = line
        self.field = field
        where = self.path
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")


class InvalidDecisionError(HpcDispatchError):
    """A dispatcher returned a decision the simulator refuses (names dispatcher and job)."""

    def __init__(self, dispatcher: str, job_id: int | None, time: float, reason: str):
        self.dispatcher = dispatcher
        self.job_id = job_id
        self.time = time
        self.reason = reason
        who = f"job {job_id}" if job_id is not None else "decision"
        super().__init__(f"dispatcher '{dispatcher}' at t={time:g}: invalid {who}: {reason}")


class SimulationStalledError(HpcDispatchError):
    """Jobs remain queued but nothing can ever happen again (a dispatcher that never starts them)."""


class ScheduleValidationError(HpcDispatchError):
    """A schedule violates a hard rule (capacity, start before submit, wrong duration ...)."""


class UnsupportedJobError(ConfigError):
    """A dispatcher cannot handle a job of the workload (refused before the run; names both)."""

    def __init__(self, dispatcher: str, job_id: int, reason: str):
        self.dispatcher = dispatcher
        self.job_id = job_id
        self.reason = reason
        super().__init__(f"dispatcher '{dispatcher}' cannot run job {job_id}: {reason}")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises ``KeyboardInterrupt`` (the CLI installs the
    handler): every path that stops a run cleanly on Ctrl-C -- the journal and checkpoint
    left as they were after the last decision, no half-written output, held Slurm jobs --
    runs for SIGTERM too; the CLI then exits 143 (128 + 15) instead of 130."""


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: ``signal.signal(signal.SIGTERM, raise_terminated)``."""
    raise Terminated
