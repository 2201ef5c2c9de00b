"""Output directories: write a run's tables atomically, read them back."""

from hpcdispatch.results.store import StoredRun, read_run, write_result

__all__ = ["StoredRun", "read_run", "write_result"]
