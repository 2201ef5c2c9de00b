"""``hpcdispatch``: simulate, compare and validate HPC job dispatchers.

Errors a user can cause are printed as one line (``error: ...``) with exit code 2; an invalid
schedule gives exit code 1.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

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

from hpcdispatch._version import __version__
from hpcdispatch.cli.progress import plain_progress
from hpcdispatch.errors import HpcDispatchError, Terminated, raise_terminated

# (the rest of the package is imported inside the commands that need it: ``--help`` and the
# light commands stay fast; tests/test_cli.py checks what ``--help`` imports)
#: the unit mappings of ``hpcdispatch.workload.mapping.UNIT_MODES`` (a test keeps them equal)
UNIT_MODE_CHOICES = ("divisor", "processor", "node")

console = Console()
err_console = Console(stderr=True)

#: the embedded default (docs/getting-started.md, "Why this default"): half the machine's core-hours offered --
#: FIFO already cannot keep up (head-of-line blocking), backfilling can, at the same utilisation
DEFAULT_WORKLOAD = "synthetic:lublin,jobs=2000,seed=1,load=0.5"
DEFAULT_DISPATCHERS = "fifo,sjf,easy,conservative"


# ---------------------------------------------------------------------------------------
# shared options
# ---------------------------------------------------------------------------------------


def workload_options(default_workload: str | None) -> Any:
    def deco(fn: Any) -> Any:
        opts = [
            click.option(
                "--workload",
                "-w",
                default=default_workload,
                required=default_workload is None,
                show_default=True,
                help="SWF trace path (.swf/.swf.gz), Slurm-style requests (.csv/.jsonl), "
                "sacct --parsable2 output (.sacct), "
                "synthetic:lublin|kit|eurora,jobs=N,seed=S,load=L, "
                "synthetic:aucsched,workload=I-V,version=1-3,seed=S, "
                "synthetic:deadline,jobs=N,seed=S,load=normal|heavy|very-heavy,types=0-3|uniform,comm=async|sync "
                "or deadline jobs as PATH.deadline.jsonl",
            ),
            click.option(
                "--system",
                "-s",
                default="auto",
                show_default=True,
                help="preset name, TOML file, 'from-trace' (SWF header) or 'auto'",
            ),
            click.option(
                "--processors",
                type=click.Choice(["requested", "allocated"]),
                default="requested",
                show_default=True,
                help="SWF field used for the processor count (falls back to the other)",
            ),
            click.option(
                "--units",
                "unit_mode",
                type=click.Choice(UNIT_MODE_CHOICES),
                default="divisor",
                show_default=True,
                help="processors -> identical units: divisor, processor (1 core each) or node",
            ),
            click.option(
                "--cores-per-unit",
                type=int,
                default=None,
                help="largest cores per unit (default: smallest node)",
            ),
            click.option(
                "--missing-walltime",
                default="queue-max",
                show_default=True,
                help="when an SWF record has no requested time: queue-max, trace-max, runtime, skip or seconds",
            ),
            click.option(
                "--memory",
                type=click.Choice(["ignore", "requested", "used"]),
                default="ignore",
                show_default=True,
                help="map SWF memory fields onto a 'mem' resource",
            ),
            click.option(
                "--max-jobs", type=int, default=None, help="only the first N jobs by submit time"
            ),
            click.option(
                "--submit-jitter",
                type=click.IntRange(min=0),
                default=0,
                show_default=True,
                help="move each submission by up to this many seconds (a perturbed replica of the "
                "workload, to measure how far a metric moves; see --jitter-seed)",
            ),
            click.option(
                "--jitter-seed",
                type=int,
                default=0,
                show_default=True,
                help="seed of --submit-jitter",
            ),
        ]
        for opt in reversed(opts):
            fn = opt(fn)
        return fn

    return deco


def sim_options(fn: Any) -> Any:
    opts = [
        click.option(
            "--allocator",
            "-a",
            default=None,
            help="first-fit, best-fit or slurm-linear (default: the dispatcher's own)",
        ),
        click.option(
            "--predictor",
            "-p",
            default="walltime",
            show_default=True,
            help="duration predictor: walltime (W), last-two (L2), data-driven (D), oracle (R); "
            "a dispatcher spec may carry its own as a suffix, e.g. easy-L2",
        ),
        click.option(
            "--no-walltime-kill",
            is_flag=True,
            help="let jobs run past their wall-time (AccaSim behaviour)",
        ),
        click.option(
            "--charge-dispatch-time",
            is_flag=True,
            help="start decided jobs later by the dispatcher's measured wall-clock time",
        ),
        click.option(
            "--dispatch-interval",
            type=float,
            default=None,
            help="also call the dispatcher every N seconds",
        ),
        click.option(
            "--correct-predictions",
            type=click.Choice(["walltime", "ladder"]),
            default=None,
            help="revise the planned end of a running job that outlived its prediction: to its "
            "wall-time end, or by growing steps (1 min, 5 min, 15 min, ...); default: expect "
            "it to end in the next second, as the papers do",
        ),
        click.option(
            "--app-model",
            default=None,
            metavar="KEY=VALUE,...",
            help="deadline jobs' execution model parameters (docs/DEADLINE.md), e.g. network=none or "
            "overlap=0.3,growth=0.5/1/1.5; default: the documented defaults",
        ),
        click.option(
            "--engine",
            type=click.Choice(["auto", "python", "compiled"]),
            default="auto",
            show_default=True,
            help="simulation engine: compiled (numba; FIFO and EASY with first/best fit, W or R, plain jobs), "
            "python (everything), auto (compiled when it can and the workload has >= 20,000 jobs)",
        ),
        click.option(
            "--version",
            "cp_version",
            type=click.IntRange(1, 3),
            default=None,
            help="CP dispatchers: CP'19 version 1, 2 or 3 (default 3)",
        ),
        click.option(
            "--dump-instances",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="CP dispatchers: write every dispatching instance as JSON into this directory",
        ),
        click.option(
            "--plugin",
            "plugins",
            multiple=True,
            type=click.Path(dir_okay=False, path_type=Path),
            help="a .py file (or an importable module) that registers dispatchers of your own "
            "(docs/ADD_A_DISPATCHER.md); repeat for several",
        ),
        click.option("--quiet", "-q", is_flag=True, help="no progress bar"),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def load_plugin_options(kw: dict[str, Any]) -> None:
    """Load the ``--plugin`` files before any dispatcher spec is read."""
    from hpcdispatch.plugins import load_plugins, resolve_plugin

    load_plugins(tuple(resolve_plugin(str(p), Path.cwd()) for p in kw.get("plugins") or ()))


def load_inputs(kw: dict[str, Any], print_report: bool = True) -> tuple[Any, Any]:
    """The system and workload of the command's options; the reader's skipped and patched
    records are printed once (to stderr) unless ``print_report`` is False (the caller prints
    them itself)."""
    from hpcdispatch.workload import (
        SwfOptions,
        UnitMapping,
        WorkloadSpec,
        load_workload,
        resolve_system,
    )

    swf = SwfOptions(
        processors=kw["processors"],
        units=UnitMapping(mode=kw["unit_mode"], cores_per_unit_max=kw["cores_per_unit"]),
        missing_walltime=kw["missing_walltime"],
        memory=kw["memory"],
        max_jobs=kw["max_jobs"],
        submit_jitter=kw["submit_jitter"],
        jitter_seed=kw["jitter_seed"],
    )
    spec = WorkloadSpec.parse(kw["workload"])
    system = resolve_system(kw["system"], spec)
    with console.status(f"reading {spec} ..."):
        workload = load_workload(spec, system, swf)
    if not kw.get("quiet"):
        console.print(f"[bold]system[/] {system.name}: {system.summary()}")
        console.print(f"[bold]workload[/] {workload.source.spec}: {len(workload)} jobs")
    report = workload.report
    if print_report and (report.n_skipped or report.patched or report.notes):
        err_console.print(f"[yellow]{report.describe()}[/]")
    if len(workload) == 0:
        raise HpcDispatchError(f"workload {spec} has no job that can run on system {system.name}")
    if kw.get("app_model") and not workload.has_apps:
        err_console.print(
            "note: --app-model sets the execution model of deadline jobs; this workload has none, "
            "so it changes nothing"
        )
    return system, workload


def make_options(kw: dict[str, Any]) -> Any:
    """The :class:`~hpcdispatch.sim.SimulationOptions` of the command's options."""
    from hpcdispatch.sim import SimulationOptions
    from hpcdispatch.sim.execution import parse_app_model

    return SimulationOptions(
        walltime_kill=not kw["no_walltime_kill"],
        charge_dispatch_time=kw["charge_dispatch_time"],
        dispatch_interval=kw["dispatch_interval"],
        engine=kw.get("engine") or "auto",
        prediction_correction=kw.get("correct_predictions"),
        app_model=parse_app_model(kw["app_model"]) if kw.get("app_model") else None,
    )


def cp_overrides(kw: dict[str, Any], label: str | None) -> dict[str, Any]:
    """Parameters the CP options set on dispatchers that have them."""
    out: dict[str, Any] = {}
    if kw.get("cp_version") is not None:
        out["version"] = kw["cp_version"]
    if kw.get("dump_instances") is not None:
        out["dump_instances"] = (
            str(kw["dump_instances"] / label) if label else str(kw["dump_instances"])
        )
    return out


@contextmanager
def progress_bar(label: str, total: int, quiet: bool) -> Iterator[Any]:
    """A progress bar on a terminal; elsewhere (a log file, a pipe) a plain line at every
    5 % of the jobs and at least every minute."""
    if quiet:
        yield None
        return
    if not console.is_terminal:
        yield plain_progress(label)
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs done  sim t={task.fields[t]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total, t="0")

        def update(done: int, n: int, t: float) -> None:
            progress.update(task, completed=done, t=f"{t:,.0f}")

        yield update


def plain_table(
    title: str, header: list[str], rows: list[list[str]], first_left: bool = True
) -> Table:
    """A table whose texts are printed as they are (no rich markup: ``[s]`` stays a unit) and
    wrapped, not cut, when the terminal is narrow (the first column gets the most room)."""
    from rich import box
    from rich.text import Text

    natural = [max([len(h)] + [len(r[k]) for r in rows]) for k, h in enumerate(header)]
    widths: list[int | None] = [None] * len(header)
    # what rich adds around the texts: a space of padding each side of a column (none at the
    # table's edges) and a separator between columns and at both edges: 3 per column - 1
    frame = 3 * len(header)
    if sum(natural) + frame > console.width:  # narrow: headers wrap at words, names fold
        least = [
            max([len(w) for w in h.split()] + [len(r[k]) for r in rows])
            for k, h in enumerate(header)
        ]
        widths = least[:]
        widths[0] = max(least[0] // 3, 8, console.width - frame - sum(least[1:]))
        widths[0] = min(widths[0], natural[0])
    table = Table(title=Text(title), box=box.SIMPLE_HEAD, pad_edge=False)
    for k, h in enumerate(header):
        table.add_column(
            Text(h),
            justify="left" if k == 0 and first_left else "right",
            overflow="fold",
            width=widths[k],
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


#: the metrics ``simulate`` prints, in order (then every utilisation the summary has)
SIMULATE_KEYS = (
    "jobs",
    "started",
    "killed",
    "rejected",
    "wait_mean",
    "wait_p95",
    "slowdown_mean",
    "bounded_slowdown_mean",
    "makespan",
    "decisions",
    "decision_time_mean_s",
    "decision_time_max_s",
    "cp_rule_optimal",
    "cp_solves",
    "cp_solver_improved",
    "cp_fallbacks",
    "sim_wall_s",
)


def summary_table(title: str, summary: dict[str, Any]) -> Table:
    """One run's metrics, named with their units as the reports name them (``mean wait [s]``,
    ``max decision time [ms]``), a long time also in hours or days."""
    from hpcdispatch.report.tables import format_value, metric

    keys = [k for k in SIMULATE_KEYS if summary.get(k) is not None]
    keys += [k for k in summary if k.startswith("utilization_") and summary[k] is not None]
    rows = []
    for key in keys:
        m, v = metric(key), summary[key]
        text = format_value(m, v)
        if (
            m.title.endswith("[s]")
            and isinstance(v, float)
            and math.isfinite(v)
            and abs(v) >= 3 * 3600
        ):
            text += f" ({v / 86400:,.1f} days)" if abs(v) >= 3 * 86400 else f" ({v / 3600:,.1f} h)"
        rows.append([m.title, text])
    return plain_table(title, ["metric", "value"], rows)


def note_repeatability(label: str, result: Any) -> str | None:
    """Say so when a run cannot be repeated exactly (a solver stopped by the wall clock; the
    summary's ``repeatable``); returns the note (None: the run repeats)."""
    from hpcdispatch.metrics.summary import repeatable

    if repeatable(result.tags or {}):
        return None
    note = (
        f"{label} searched with wall-clock time limits, so another run may give another schedule (the "
        "machine's load decides how far each search gets); "
        + (
            "deterministic=true makes it repeatable"
            if "deterministic" in result.dispatcher["params"]
            else "its results are samples of a noisy search"
        )
    )
    err_console.print(f"note: {note}", markup=False)
    return note


def print_outcomes(items: list[tuple[str, Any]]) -> None:
    """The deadline outcome table (submitted / accepted / rejected by reason / cancelled
    waiting, running / on time, per behaviour type) of runs whose workload has deadlines;
    nothing for other runs."""
    from hpcdispatch.report.outcomes import outcome_rows

    header, rows = outcome_rows(items)
    if rows:
        console.print(plain_table("deadline outcomes", header, rows))


def print_validation(report: Any) -> None:
    verdict = getattr(report, "verdict", "valid" if report.ok else "invalid")
    if verdict == "valid":
        console.print(f"[green]schedule valid[/] ({report.describe()})")
    else:
        colour = "red" if verdict == "invalid" else "yellow"
        # one line per violation, never wrapped: each names its job or field on its own line
        console.print(
            report.describe(), style=colour, markup=False, highlight=False, soft_wrap=True
        )


# ---------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hpcdispatch")
def cli() -> None:
    """Design, simulate and compare on-line HPC job dispatchers."""


@cli.command()
def systems() -> None:
    """List the bundled system presets."""
    from hpcdispatch.system.io import load_system, preset_names

    table = Table(title="system presets")
    for col in ("name", "nodes", "totals", "node types", "description"):
        table.add_column(col, overflow="fold")
    for name in preset_names():
        s = load_system(name)
        totals = ", ".join(f"{int(v):,} {r}" for r, v in zip(s.resources, s.total_capacity))
        table.add_row(name, f"{s.n_nodes:,}", totals, s.summary(), s.description)
    console.print(table)


@cli.command()
def dispatchers() -> None:
    """List the available dispatchers and their parameters."""
    from hpcdispatch.dispatchers import DISPATCHERS

    table = Table(title="dispatchers", show_lines=True)
    table.add_column("name", no_wrap=True)
    table.add_column("parameters (defaults)", no_wrap=True)
    table.add_column("tags")
    table.add_column("description", ratio=1)
    for name, cls in sorted(DISPATCHERS.items()):
        d = cls()
        params = "\n".join(f"{k}={v}" for k, v in d.get_params().items())
        tags = ", ".join(k.replace("_", " ") for k, v in vars(d.get_tags()).items() if v)
        table.add_row(name, params, tags, docstring_summary(cls.__doc__))
    console.print(table)


def docstring_summary(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, as plain text: reST roles and
    literals (``:class:`~a.B```, ````x````) become their text; never cut inside a sentence."""
    import re

    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    text = re.sub(
        r":[a-z]+:`~?([^`<]*?)\s*(?:<[^`]*>)?`",
        lambda m: m.group(1).split(".")[-1] if m.group(0).count("~") else m.group(1),
        paragraph,
    )
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"\*\*([^*]*)\*\*|\*([^*]*)\*", lambda m: m.group(1) or m.group(2), text)
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z(])", text)
    return text[: match.start()] if match else text


@cli.command()
@workload_options(default_workload=None)
@click.option(
    "--dispatcher",
    "-d",
    default="easy",
    show_default=True,
    help="dispatcher spec, e.g. easy or easy:allocator=best-fit",
)
@sim_options
@click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="decision journal: record every decision; started again after an interruption, the "
    "run replays the recorded decisions and goes on from there (memoryless dispatchers)",
)
@click.option(
    "--checkpoint",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="checkpoint file: the whole simulation state is saved there every --checkpoint-every "
    "seconds; started again after an interruption, the run goes on from it (any dispatcher, "
    "also those that keep a plan between calls); deleted when the run finishes",
)
@click.option(
    "--checkpoint-every",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="wall-clock seconds between two checkpoints",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="output directory (written as a whole when the run ends)",
)
@click.option(
    "--csv",
    is_flag=True,
    help="also write jobs.csv and each job's allocation as text in jobs.parquet "
    "(the Parquet tables are always written; allocations.parquet holds every allocation)",
)
@click.option(
    "--force", is_flag=True, help="replace the output directory if it already holds files"
)
def simulate(**kw: Any) -> None:
    """Simulate one dispatcher on one workload and write the schedule."""
    from hpcdispatch.dispatchers import DispatcherSpec
    from hpcdispatch.results.outdir import check_output_dir
    from hpcdispatch.runner import run_simulation

    load_plugin_options(kw)
    spec = DispatcherSpec.parse(kw["dispatcher"])
    check_output_dir(kw["out"], kw["force"])  # before simulating: a run is not lost at the end
    system, workload = load_inputs(kw)
    with progress_bar(spec.run_label, len(workload), kw["quiet"]) as update:
        outcome = run_simulation(
            system,
            workload,
            spec,
            kw["predictor"],
            make_options(kw),
            out_dir=kw["out"],
            progress=update,
            allocator=kw["allocator"],
            overrides=cp_overrides(kw, None),
            journal=kw["journal"],
            checkpoint=kw["checkpoint"],
            checkpoint_every=kw["checkpoint_every"],
            force=kw["force"],
            csv=kw["csv"],
        )
    s = outcome.summary
    note_repeatability(spec.run_label, outcome.result)
    journal = outcome.result.notes.journal
    if journal:
        console.print(
            f"journal {journal.path}: {journal.replayed} decisions replayed, "
            f"{journal.recorded} recorded"
        )
    checkpoint = outcome.result.notes.checkpoint
    if checkpoint:
        at = checkpoint.resumed_at
        console.print(
            f"checkpoint {checkpoint.path}: "
            + (
                f"resumed at t={at['t']:,.0f} ({at['done']:,} of {at['jobs']:,} jobs done, {at['wall_s']:,.0f} s "
                f"simulated before), "
                if at
                else ""
            )
            + f"{checkpoint.writes} written, removed once the outputs were written"
        )
    console.print(summary_table(f"{s['dispatcher_params']} on {system.name}", s))
    print_outcomes([(spec.run_label, s)])
    print_validation(outcome.validation)
    console.print(f"outputs written to [bold]{kw['out']}[/]")
    if not outcome.validation.ok:
        raise click.exceptions.Exit(1)


@cli.command()
@workload_options(default_workload=DEFAULT_WORKLOAD)
@click.option(
    "--dispatchers",
    "-d",
    "dispatcher_list",
    default=DEFAULT_DISPATCHERS,
    show_default=True,
    help="comma-separated dispatcher specs",
)
@sim_options
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("hpcdispatch-out"),
    show_default=True,
    help="output directory (one sub-directory per dispatcher; written as a whole "
    "when every run has ended)",
)
@click.option(
    "--force", is_flag=True, help="replace the output directory if it already holds files"
)
def compare(**kw: Any) -> None:
    """Compare several dispatchers on one workload: a table, and OUT/report.html (figures of wait,
    slowdown by job class, utilisation and queue over time, decision time; report.md beside it)."""
    from hpcdispatch.dispatchers import parse_dispatcher_list
    from hpcdispatch.results.outdir import atomic_dir, check_output_dir, remove_stale_writing_dirs

    load_plugin_options(kw)
    specs = parse_dispatcher_list(kw["dispatcher_list"])
    if not specs:
        raise HpcDispatchError("--dispatchers names no dispatcher")
    labels = [spec.run_label for spec in specs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise HpcDispatchError(f"--dispatchers names '{twice[0]}' twice")
    out: Path = kw["out"]
    check_output_dir(out, kw["force"])  # before simulating: the runs are not lost at the end
    remove_stale_writing_dirs(out.parent)
    system, workload = load_inputs(kw)
    from hpcdispatch.runner import check_run

    for (
        spec
    ) in specs:  # every spec checked before the first run: a typo in the last one costs nothing
        check_run(system, spec, kw["predictor"], kw["allocator"], cp_overrides(kw, spec.run_label))
    with atomic_dir(out, kw["force"]) as tmp:
        invalid = _compare_into(tmp, specs, system, workload, kw)
    console.print(
        f"report: [bold]{out / 'report.html'}[/]  (report.md, tables and figures beside it; "
        f"per-dispatcher outputs under {out}/)",
        soft_wrap=True,
    )
    if invalid:
        raise click.exceptions.Exit(1)


def _compare_into(
    out: Path, specs: list[Any], system: Any, workload: Any, kw: dict[str, Any]
) -> bool:
    """Run every spec into ``out/<label>``, write the comparison report (report.html,
    report.md, tables, figures) into ``out`` and print the table; returns whether some
    schedule was invalid."""
    from hpcdispatch.report.compare import (
        ComparedRun,
        comparison_frame,
        display_rows,
        write_comparison_report,
    )
    from hpcdispatch.runner import run_simulation

    summaries, runs, notes = [], [], []
    spec_key: list[tuple[str, str, str]] = []
    invalid = False
    for spec in specs:
        label = spec.run_label
        with progress_bar(label, len(workload), kw["quiet"]) as update:
            outcome = run_simulation(
                system,
                workload,
                spec,
                kw["predictor"],
                make_options(kw),
                out_dir=out / label,
                progress=update,
                allocator=kw["allocator"],
                overrides=cp_overrides(kw, label),
            )
        summaries.append(outcome.summary)
        repeat_note = note_repeatability(label, outcome.result)
        if repeat_note:
            notes.append(f"Not repeatable: {repeat_note}.")
        runs.append(ComparedRun.from_result(spec.display_label, outcome.result))
        spec_key.append((spec.display_label, spec.written, label))
        if not outcome.validation.ok:
            invalid = True
            notes.append(f"{label}: {outcome.validation.describe()}")
        if not kw["quiet"]:
            console.print(f"  {label}: done in {outcome.wall_seconds:.1f} s")
    frame = comparison_frame(summaries)
    write_comparison_report(out, frame, runs, notes, spec_key=spec_key)
    header, rows = display_rows(frame, compact=True)
    console.print(
        plain_table(
            f"{len(workload)} jobs of {workload.source.spec} on {system.name}", header, rows
        )
    )
    print_outcomes([(spec.run_label, summary) for spec, summary in zip(specs, summaries)])
    return invalid


@cli.command()
@click.argument("out_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--no-reload",
    is_flag=True,
    help="do not re-derive the workload from its source; check against the stored table "
    "(the verdict is then at best 'unverified')",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="a .py file (or an importable module) that registers the run's dispatcher; repeat for "
    "several",
)
def validate(out_dir: Path, no_reload: bool, plugins: tuple[Path, ...]) -> None:
    """Check a run directory's schedule with the validator's own rules: capacities, starts
    after submission, durations, allocations, deadlines and bookings, and every number of
    summary.json recomputed. Only the schedule and what produced it (system, dispatcher,
    workload source) are read from OUT_DIR; the dispatcher's tags come from the registry, the
    workload is re-derived from its source (a file by absolute path and SHA-256, or a
    synthetic: spec), so the verdict is the same from any current directory.

    \b
    Exit codes (the verdict's line is printed last):
      0  valid            every rule holds, every input re-derived
      1  INVALID          a rule is broken (each violation names the job or field)
      2  error            the run directory cannot be read (bad input)
      3  unverified       no violation, but the workload source cannot be re-read, its
                          SHA-256 changed, or it is not re-derivable (a workload in memory)
      4  cannot validate  the run's dispatcher is not registered (load it with --plugin)
    """
    from hpcdispatch.validation.validator import validate_run_dir

    load_plugin_options({"plugins": plugins})
    report = validate_run_dir(out_dir, reload_workload=not no_reload)
    for note in report.notes:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    print_validation(report)
    if report.exit_code:
        raise click.exceptions.Exit(report.exit_code)


@cli.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--to",
    "fmt",
    type=click.Choice(["batsim"]),
    default="batsim",
    show_default=True,
    help="the format: batsim = Batsim's jobs.csv (what Evalys reads)",
)
@click.option(
    "--out", "-o", type=click.Path(path_type=Path), required=True, help="output directory"
)
@click.option("--force", is_flag=True, help="replace OUT if it holds files")
def export(run_dir: Path, fmt: str, out: Path, force: bool) -> None:
    """Write the run in RUN_DIR in another tool's format: Batsim's jobs.csv (open it with
    Evalys: ``JobSet.from_csv("OUT/jobs.csv")``). Batsim's ``stretch`` is the unbounded
    slowdown; the bounded one is in ``metadata``."""
    from hpcdispatch.results.batsim import export_batsim

    path = export_batsim(run_dir, out, force=force)
    console.print(f"wrote {path}")


@cli.group("workload", invoke_without_command=True)
@workload_options(default_workload="")
@click.pass_context
def workload_info(ctx: click.Context, **kw: Any) -> None:
    """Read a workload and describe it (jobs, skipped records, offered load); ``workload
    convert IN OUT`` writes it in another format."""
    if ctx.invoked_subcommand is not None:
        return
    if not kw["workload"]:
        raise click.UsageError("Missing option '--workload' / '-w' (or a subcommand: convert)")
    kw["quiet"] = False
    system, workload = load_inputs(kw, print_report=False)
    load = workload.offered_load(system.total_capacity)
    rows = [
        ["jobs", f"{len(workload):,}"],
        ["span [days]", f"{(workload.submit[-1] - workload.submit[0]) / 86400:,.1f}"],
    ]
    rows += [
        [f"offered load ({name})", f"{load[r]:.3f}"] for r, name in enumerate(system.resources)
    ]
    rows += [
        ["mean run time [s]", f"{workload.run_time.mean():,.0f}"],
        ["mean wall-time / run time", f"{(workload.wall_time / workload.run_time).mean():,.1f}"],
        ["jobs over their wall-time", f"{int((workload.run_time > workload.wall_time).sum()):,}"],
    ]
    console.print(
        plain_table(workload.source.spec, ["property", "value"], rows)
    )  # (units kept: no markup)
    console.print(workload.report.describe())


@workload_info.command("convert")
@click.argument("source")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--system",
    "-s",
    default="auto",
    show_default=True,
    help="preset name, TOML file, 'from-trace' (SWF header) or 'auto': the jobs must fit it",
)
@click.option("--force", is_flag=True, help="replace OUT if it exists")
def workload_convert(source: str, out: Path, system: str, force: bool) -> None:
    """Convert a workload (SWF, sacct --parsable2, Slurm-style CSV/JSONL, synthetic:...) into
    SWF (OUT.swf: 18 fields, a header with MaxNodes/MaxProcs and, as comments, what the reader
    skipped and patched), a Slurm-style request file (OUT.csv / OUT.jsonl: node counts, GRES
    and memory kept) or a Batsim workload (OUT.json: delay profiles), chosen by OUT's suffix;
    written atomically (a temporary file, then one rename)."""
    from hpcdispatch.errors import ConfigError
    from hpcdispatch.results.store import write_text
    from hpcdispatch.workload import (
        WorkloadSpec,
        batsim_workload_text,
        load_workload,
        resolve_system,
        slurm_requests_text,
        swf_text,
    )

    suffix = out.suffix.lower()
    if suffix not in (".swf", ".csv", ".jsonl", ".ndjson", ".json"):
        raise ConfigError(
            f"{out}: unknown output format '{suffix}' (use .swf, .csv, .jsonl or .json: Batsim)"
        )
    if out.exists() and not force:
        raise ConfigError(f"{out} exists (give --force to replace it)")
    spec = WorkloadSpec.parse(source)
    sys_ = resolve_system(system, spec)
    workload = load_workload(spec, sys_)
    report = workload.report
    if report.n_skipped or report.patched or report.notes:
        err_console.print(f"[yellow]{report.describe()}[/]")
    if suffix == ".swf":
        text = swf_text(workload, sys_)
    elif suffix == ".json":
        text = batsim_workload_text(workload, sys_)
    else:
        text = slurm_requests_text(workload, suffix)
    write_text(out, text)
    console.print(f"wrote {len(workload):,} jobs to {out}")


def _register_subgroups() -> None:
    from hpcdispatch.cli.instances import instances
    from hpcdispatch.cli.rl import rl
    from hpcdispatch.cli.slurm import slurm
    from hpcdispatch.cli.sweep import report, sweep

    cli.add_command(instances)
    cli.add_command(sweep)
    cli.add_command(report)
    cli.add_command(slurm)
    cli.add_command(rl)


_register_subgroups()


def _interrupted(exc: BaseException) -> NoReturn:
    """Ctrl-C (exit 130) or SIGTERM (exit 143): one line, the same path for both."""
    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, Terminated):  # (click wraps it in Abort)
        seen = seen.__cause__ or seen.__context__
    err_console.print("interrupted" if seen is None else "interrupted (SIGTERM)")
    sys.exit(130 if seen is None else 143)


def _fix_mmap_threshold(nbytes: int = 32 << 20) -> None:
    """Let the C heap serve every block under ``nbytes`` from the first one (glibc's
    ``mallopt(M_MMAP_THRESHOLD)``; nothing elsewhere, nor when the user set
    ``MALLOC_MMAP_THRESHOLD_``). glibc starts by giving each block over 128 kB a mapping of its
    own and raises that threshold as such blocks are freed, so a run's early arrays (a trace's
    parse: blocks of 8 MB on two threads) are mapped and unmapped while later ones reuse the
    heap. Fixed from the start, a whole HPC2N run's peak was 241 MB instead of 251, in the same
    time (``benchmarks/memory_timeline.py``); the heap's free pages still go back to the system
    between phases (``hpcdispatch._util.return_free_memory``)."""
    import ctypes
    import os

    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "mmap_threshold" in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return  # (the user's choice)

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (Windows: TypeError)
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(-3, nbytes)  # M_MMAP_THRESHOLD


def main(argv: list[str] | None = None) -> None:
    """The ``hpcdispatch`` command: :func:`cli`, with errors as one line and exit codes;
    SIGTERM takes Ctrl-C's path (exit 143)."""
    import os
    import signal
    import threading

    # Arrow's buffers from the C library's heap, not mimalloc (Arrow's default), unless the
    # user chose: mimalloc keeps what making and writing a run's tables freed as its own, on
    # top of the run's other phases (a whole HPC2N run's writing: 22 MB more RSS at its peak
    # on the C heap, 57 MB on mimalloc). Read when pyarrow is first imported: here, before.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    _fix_mmap_threshold()
    previous = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (kill, a batch system's time limit, a container stopped) takes Ctrl-C's path
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> None:
    try:
        code = cli.main(args=argv, prog_name="hpcdispatch", standalone_mode=False)
        if isinstance(code, int) and code != 0:  # click returns Exit codes when not standalone
            sys.exit(code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:  # (click's name for Ctrl-C)
        _interrupted(exc)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except HpcDispatchError as exc:
        err_console.print(f"[red]error:[/] {exc}", soft_wrap=True)  # one line, never wrapped
        sys.exit(2)
    except KeyboardInterrupt as exc:
        _interrupted(exc)


if __name__ == "__main__":
    main()
