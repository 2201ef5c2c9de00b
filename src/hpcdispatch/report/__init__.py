"""Reports: tables (CSV, markdown), figures (PNG) and one self-contained report.html.

- tables.py: metric catalogue, formatting, aggregation over cells;
- plots.py: every figure;
- document.py: report content (sections of text, tables, figures) and its markdown form;
- html.py: the same document as a self-contained HTML page;
- compare.py: the report of ``hpcdispatch compare``;
- sweep.py: the report of a sweep or of a folder of runs;
- run.py: the report of one run (Gantt chart, utilisation over time).

:func:`write_report` picks the right one for a directory; :func:`write_comparison_report`
writes ``hpcdispatch compare``'s. The names from the modules (pandas, matplotlib) are imported
on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcdispatch.errors import ConfigError, ScheduleValidationError
from hpcdispatch.results.outdir import atomic_dir

#: name -> module that defines it: imported on first use (pandas, matplotlib)
_LAZY = {
    "ComparedRun": "hpcdispatch.report.compare",
    "write_comparison_report": "hpcdispatch.report.compare",
    "comparison_frame": "hpcdispatch.report.tables",
    "display_rows": "hpcdispatch.report.tables",
    "format_value": "hpcdispatch.report.tables",
    "metric": "hpcdispatch.report.tables",
    "parse_range": "hpcdispatch.report.run",
}

if TYPE_CHECKING:
    from hpcdispatch.report.compare import ComparedRun, write_comparison_report
    from hpcdispatch.report.run import parse_range
    from hpcdispatch.report.tables import comparison_frame, display_rows, format_value, metric


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hpcdispatch.report' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def report_kind(path: str | Path) -> str:
    """``"sweep"``, ``"run"`` or ``"runs"`` (a folder of run directories) for ``path``."""
    p = Path(path)
    if not p.is_dir():
        raise ConfigError(f"{p}: not a directory")
    if (p / "sweep.json").is_file():
        return "sweep"
    if (p / "run.json").is_file():
        return "run"
    if any(
        (sub / "run.json").is_file() and (sub / "summary.json").is_file()
        for sub in p.iterdir()
        if sub.is_dir()
    ):
        return "runs"
    raise ConfigError(
        f"{p}: neither a sweep directory (sweep.json), a run directory (run.json) nor a folder of runs"
    )


def write_report(
    path: str | Path,
    out: str | Path | None = None,
    window: tuple[float, float] | None = None,
    nodes: tuple[int, int] | None = None,
    allow_unverified: bool = False,
) -> Path:
    """Write the report of ``path`` into ``out`` (default ``PATH/report``); returns report.html.
    The report directory is written as a whole and replaces the previous one, so no file of
    an older report stays beside the new ones. Every run it shows is validated first
    (:func:`refuse_unvalidated`): a run that does not validate stops the report, and nothing
    is written (``allow_unverified``: a run without violations whose workload cannot be
    re-derived -- a workload built in memory -- is reported)."""
    kind = report_kind(path)
    out = Path(out) if out is not None else Path(path) / "report"
    if kind != "run" and (window is not None or nodes is not None):
        raise ConfigError("--window and --nodes apply to the report of a single run directory")
    if kind == "run":
        refuse_unvalidated(path, [Path(path)], allow_unverified)
        with atomic_dir(out, force=True) as tmp:
            from hpcdispatch.report.run import write_run_report

            html = write_run_report(path, tmp, window=window, nodes=nodes)
        return out / html.relative_to(tmp)
    from hpcdispatch.report.sweep import load_run_collection, load_sweep_runs, write_runset_report

    runs = load_sweep_runs(path) if kind == "sweep" else load_run_collection(path)
    refuse_unvalidated(path, list(runs.dirs.values()), allow_unverified)
    with atomic_dir(out, force=True) as tmp:
        html = write_runset_report(runs, tmp)
    return out / html.relative_to(tmp)


def refuse_unvalidated(
    path: str | Path, run_dirs: list[Path], allow_unverified: bool = False
) -> None:
    """Validate every run directory a report would show (:func:`validate_run_dir`: its own
    rules, every number of ``summary.json`` recomputed); one whose verdict is not ``valid``
    (invalid, cannot validate; unverified unless ``allow_unverified``) is refused with one
    line naming it and why, so that no report publishes a number of a run that does not
    validate."""
    from hpcdispatch.validation import validate_run_dir

    accepted = ("valid", "unverified") if allow_unverified else ("valid",)
    bad = []
    for run_dir in run_dirs:
        report = validate_run_dir(run_dir)
        if report.verdict not in accepted:
            bad.append(f"{run_dir}: {report.headline()}")
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ScheduleValidationError(
            f"{path}: report refused, {len(bad)} run(s) do not validate "
            f"('hpcdispatch validate RUN' says why): {bad[0]}{more}"
        )


__all__ = [
    "ComparedRun",
    "comparison_frame",
    "display_rows",
    "format_value",
    "metric",
    "parse_range",
    "refuse_unvalidated",
    "report_kind",
    "write_comparison_report",
    "write_report",
]
