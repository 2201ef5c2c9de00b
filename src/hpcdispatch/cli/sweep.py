"""``hpcdispatch sweep run|status|plan`` and ``hpcdispatch report``."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hpcdispatch.cli.progress import plain_progress

console = Console()
err_console = Console(stderr=True)

MAX_LISTED = 20


@click.group()
def sweep() -> None:
    """Experiment sweeps: systems x workloads x dispatchers x predictors x repetitions."""


@sweep.command("run")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="output directory (resumable: finished cells are skipped)",
)
@click.option(
    "--workers",
    "-j",
    type=int,
    default=None,
    help="local worker processes (default: every core this process may use)",
)
@click.option(
    "--dask",
    "dask_address",
    default=None,
    metavar="ADDRESS",
    help="run the cells on a Dask scheduler (tcp://host:8786) or a LocalCluster it starts (local:N)",
)
@click.option(
    "--retry-failed", is_flag=True, help="run failed cells again (default: keep their error)"
)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def run_cmd(
    spec: Path,
    out: Path,
    workers: int | None,
    dask_address: str | None,
    retry_failed: bool,
    quiet: bool,
) -> None:
    """Run every unfinished cell of the sweep SPEC (a TOML file) into --out."""
    from hpcdispatch.sweep import load_sweep
    from hpcdispatch.sweep.store import sweep_lock

    sweep_spec = load_sweep(spec)

    def note(message: str) -> None:
        err_console.print(f"[yellow]{message}[/]", soft_wrap=True)

    with sweep_lock(out, note):  # (before anything is said: a second sweep here is refused)
        _run_locked(sweep_spec, out, workers, dask_address, retry_failed, quiet)


def _run_locked(
    sweep_spec: Any,
    out: Path,
    workers: int | None,
    dask_address: str | None,
    retry_failed: bool,
    quiet: bool,
) -> None:
    from hpcdispatch.sweep import make_executor, run_sweep
    from hpcdispatch.sweep.store import SweepStore

    store = SweepStore(out)
    already = store.scan(sweep_spec.cell_ids()) if store.cells.is_dir() else None
    executor = make_executor(workers=workers, dask=dask_address)
    n = len(sweep_spec.cells)
    if already is not None:
        to_run = len(already.pending) + (len(already.failed) if retry_failed else 0)
        kept = (
            "" if retry_failed or not already.failed else " (kept; --retry-failed runs them again)"
        )
        console.print(
            f"sweep [bold]{sweep_spec.name}[/]: {n} cells, {len(already.done)} already done, "
            f"{len(already.failed)} failed earlier{kept}; running {to_run} on {executor.description}"
        )
    else:
        to_run = n
        console.print(
            f"sweep [bold]{sweep_spec.name}[/]: {n} cells; running {n} on {executor.description}"
        )

    def report_failure(record: dict[str, Any]) -> None:
        if record["status"] == "failed":
            err = record.get("error") or {}
            console.print(f"[red]failed[/] {record['labels']['label']}: {err.get('message', '')}")

    if quiet:
        outcome = run_sweep(sweep_spec, out, executor, retry_failed=retry_failed)
    elif (
        not console.is_terminal
    ):  # a log file or a pipe: a line per 5 % of the cells, or a minute after the last
        lines = plain_progress(f"sweep {sweep_spec.name}", unit="cells", verb="finished")

        def line(done: int, failed: int, total: int, record: dict[str, Any]) -> None:
            report_failure(record)
            lines(done + failed, total, None)

        outcome = run_sweep(sweep_spec, out, executor, retry_failed=retry_failed, progress=line)
    else:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[green]{task.fields[done]} done[/] [red]{task.fields[failed]} failed[/]"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task("cells", total=to_run, done=0, failed=0)

            def update(done: int, failed: int, total: int, record: dict[str, Any]) -> None:
                progress.update(
                    task, completed=done + failed, total=total, done=done, failed=failed
                )
                report_failure(record)

            outcome = run_sweep(
                sweep_spec, out, executor, retry_failed=retry_failed, progress=update
            )
    console.print(
        f"{outcome.cells} cells: [green]{outcome.done} done[/], [red]{outcome.failed} failed[/], "
        f"{outcome.pending} pending; ran {outcome.ran} in {outcome.wall_seconds:.1f} s"
    )
    if outcome.set_aside:
        err_console.print(
            f"[yellow]{len(outcome.set_aside)} incomplete cell directories were set aside "
            f"(cells/.old-*) and run again[/]"
        )
    console.print(
        f"summary: [bold]{out / 'summary.parquet'}[/]  (report: hpcdispatch report {out})"
    )
    if outcome.failed:
        raise click.exceptions.Exit(1)


@sweep.command("status")
@click.argument("out", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--all", "list_all", is_flag=True, help="list every cell with its status")
def status_cmd(out: Path, list_all: bool) -> None:
    """Count the done, failed and pending cells of the sweep in OUT; list failed and pending ones."""
    from hpcdispatch.sweep import sweep_status

    st = sweep_status(out)
    console.print(
        f"sweep [bold]{st.name}[/] in {out}: {st.cells} cells: [green]{len(st.done)} done[/], "
        f"[red]{len(st.failed)} failed[/], {len(st.pending)} pending"
        + (f", {len(st.running)} being written now" if st.running else "")
        + (
            f", {len(st.abandoned)} left half written by a process that died (this host) or that "
            "has been silent for a day (another host); run again by the next 'sweep run'"
            if st.abandoned
            else ""
        )
    )
    if list_all:
        table = Table(title="cells")
        for col in ("cell", "label", "status", "wall s"):
            table.add_column(col, overflow="fold")
        state = {r["id"]: ("done", r) for r in st.done} | {
            r["id"]: ("failed", r) for r in st.failed
        }
        for entry in st.entries:
            status, rec = state.get(entry["id"], ("pending", None))
            wall = rec.get("cell_wall_s") if rec else None
            table.add_row(
                entry["id"],
                entry["labels"]["label"],
                status,
                f"{wall:.2f}" if wall is not None else "",
            )
        console.print(table)
        return
    if st.failed:
        table = Table(title="failed cells")
        for col in ("cell", "label", "error"):
            table.add_column(col, overflow="fold")
        for rec in st.failed:
            err = rec.get("error") or {}
            table.add_row(
                rec["id"], rec["labels"]["label"], f"{err.get('type')}: {err.get('message')}"
            )
        console.print(table)
    if st.pending:
        table = Table(title=f"pending cells ({len(st.pending)})")
        table.add_column("cell")
        table.add_column("label", overflow="fold")
        for entry in st.pending[:MAX_LISTED]:
            table.add_row(entry["id"], entry["labels"]["label"])
        if len(st.pending) > MAX_LISTED:
            table.add_row("...", f"and {len(st.pending) - MAX_LISTED} more")
        console.print(table)
    for cid, pid, host in st.running:
        console.print(f"being written: cell {cid} by process {pid} on {host}")
    for cid, pid, host in st.abandoned:
        gone = "which is gone" if host == socket.gethostname() else "silent for a day"
        console.print(f"left half written: cell {cid} by process {pid} on {host}, {gone}")
    if st.foreign:
        console.print(
            f"{len(st.foreign)} finished cells in {out}/cells belong to an earlier version of the spec "
            "(not in the summary)"
        )
    done_failed = len(st.done) + len(st.failed)
    if st.summary_rows is not None and st.summary_rows != done_failed:
        console.print(
            f"summary.parquet has {st.summary_rows} rows for {done_failed} finished cells: "
            "it is rewritten from the cells by the next 'sweep run'"
        )


@sweep.command("plan")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
def plan_cmd(spec: Path) -> None:
    """Validate SPEC and list its cells; nothing runs: the plugins SPEC names are not imported,
    and the dispatchers only they define are listed as written, unverified (no cell id)."""
    from hpcdispatch.sweep import load_sweep

    s = load_sweep(spec, run_plugins=False)
    table = Table(title=f"sweep {s.name}: {len(s.cells)} cells")
    table.add_column("#", justify="right")
    table.add_column("cell")
    table.add_column("label", overflow="fold")
    for c in s.cells:
        table.add_row(str(c.index), c.id or "(unverified)", c.label)
    console.print(table)
    if s.unverified:
        console.print(
            f"unverified: {', '.join(s.unverified)} -- not built-in dispatchers; plan does not run "
            "the sweep's plugins, so their names, parameters and cell ids are checked by "
            "'sweep run' only",
            soft_wrap=True,
        )


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="report directory (default: PATH/report)",
)
@click.option(
    "--window",
    default=None,
    metavar="START:END",
    help="single run: the Gantt chart's time window in seconds after the first submission (a "
    "trace's clock may start anywhere), e.g. 86400:172800 = the second day; a window that holds no "
    "job on the chosen nodes is an error (exit code 2) that says when the jobs run (default: a "
    "tenth of the run around its middle)",
)
@click.option(
    "--nodes",
    default=None,
    metavar="FIRST:LAST",
    help="single run: the Gantt chart's nodes (default: all, or the first 64 of a larger system)",
)
@click.option("--force", is_flag=True, help="replace an existing report")
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="report runs without violations whose workload cannot be re-derived (built in memory, "
    "its source file gone or changed); without it they are refused like invalid ones",
)
def report(
    path: Path,
    out: Path | None,
    window: str | None,
    nodes: str | None,
    force: bool,
    allow_unverified: bool,
) -> None:
    """Tables, plots and report.html of a sweep, a run directory or a folder of runs. Every
    run is validated first (as 'hpcdispatch validate' does); a run that does not validate
    is refused with one line naming it (exit code 2) and no report is written. An existing
    report is replaced only with --force (as a whole: no older file stays)."""
    from hpcdispatch.report import report_kind, write_report
    from hpcdispatch.report.run import parse_range
    from hpcdispatch.results.outdir import check_output_dir

    kind = report_kind(path)
    span = parse_range(window, "--window")
    node_range = parse_range(nodes, "--nodes", int)
    check_output_dir(out if out is not None else path / "report", force)
    with console.status(f"writing the report of {path} ..."):
        html = write_report(
            path, out, window=span, nodes=node_range, allow_unverified=allow_unverified
        )
    console.print(f"{kind} report: [bold]{html}[/] (tables, figures and report.md beside it)")
