"""Output directories: write a run's tables atomically, read them back."""

from hpcdispatch.results.batsim import export_batsim
from hpcdispatch.results.outdir import atomic_dir, check_output_dir, remove_stale_writing_dirs
from hpcdispatch.results.store import (
    StoredRun,
    file_sha256,  # noqa: E402
    read_run,
    workload_columns,
    write_atomic,
    write_frame,
    write_json,
    write_result,
    write_text,
)

__all__ = [
    "StoredRun",
    "atomic_dir",
    "check_output_dir",
    "export_batsim",
    "file_sha256",
    "read_run",
    "remove_stale_writing_dirs",
    "workload_columns",
    "write_atomic",
    "write_frame",
    "write_json",
    "write_result",
    "write_text",
]
