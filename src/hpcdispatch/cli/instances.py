"""``hpcdispatch instances eval``: solve dumped dispatching instances with several CP dispatchers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

console = Console()


@click.group()
def instances() -> None:
    """Dumped CP dispatching instances (simulate ... --dump-instances DIR)."""


@instances.command("eval")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--dispatchers",
    "-d",
    "specs",
    default="hcp,pcp19,pcp20",
    show_default=True,
    help="comma-separated CP dispatcher specs",
)
@click.option(
    "--baseline",
    default=None,
    help="dispatcher the ratios are relative to (default: the second one)",
)
@click.option(
    "--limit", type=int, default=None, help="only the first N instances (after --min-queued)"
)
@click.option(
    "--min-queued",
    type=int,
    default=1,
    show_default=True,
    help="skip instances with fewer queued jobs",
)
@click.option(
    "--force-model/--as-dispatched",
    default=True,
    show_default=True,
    help="build and solve every model even where the rule already starts every job now",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="output directory (default: DIRECTORY/eval)",
)
def eval_cmd(
    directory: Path,
    specs: str,
    baseline: str | None,
    limit: int | None,
    min_queued: int,
    force_model: bool,
    out: Path | None,
) -> None:
    """Per-instance model size, decision time and objective, and their ratios (PCP'20 Figs 6-7)."""
    import numpy as np

    from hpcdispatch.dispatchers import DispatcherSpec, parse_dispatcher_list
    from hpcdispatch.instance_eval import evaluate, ratios

    spec_list = parse_dispatcher_list(specs)
    labels = [s.run_label for s in spec_list]
    base = (
        DispatcherSpec.parse(baseline).run_label
        if baseline
        else (labels[1] if len(labels) > 1 else labels[0])
    )
    if base not in labels:
        raise click.BadParameter(f"baseline '{base}' is not among {labels}")
    from hpcdispatch.cli.progress import plain_progress
    from hpcdispatch.results.store import write_frame, write_text

    out = out or directory / "eval"
    out.mkdir(parents=True, exist_ok=True)
    record = (
        out / "progress.jsonl"
    )  # each instance's rows as soon as they are known: a rerun resumes
    if record.is_file():
        console.print(f"resuming from {record} (instances evaluated before are not solved again)")
    if console.is_terminal:
        with Progress(
            TextColumn("instances"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("eval", total=None)

            def update(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            frame = evaluate(
                directory,
                spec_list,
                limit,
                update,
                force_model=force_model,
                min_queued=min_queued,
                record=record,
            )
    else:  # a log file or a pipe: a plain line every 5 % and at least every minute
        lines = plain_progress("instances eval", unit="instances")
        frame = evaluate(
            directory,
            spec_list,
            limit,
            lambda done, total: lines(done, total, None),
            force_model=force_model,
            min_queued=min_queued,
            record=record,
        )
    write_frame(out / "instances.csv", frame)
    rat = ratios(frame, base)
    write_frame(out / "ratios.csv", rat)
    table = Table(title=f"{frame['instance'].nunique()} instances from {directory}")
    for col in (
        "dispatcher",
        "mean vars",
        "max vars",
        "mean decision ms",
        "median decision ms",
        "fallbacks",
    ):
        table.add_column(col, justify="left" if col == "dispatcher" else "right")
    md = [
        "| dispatcher | mean vars | max vars | mean decision ms | median decision ms | fallbacks |",
        "|---|---|---|---|---|---|",
    ]
    for label in labels:
        part = frame[frame["dispatcher"] == label]
        cells = [
            label,
            f"{part['variables'].mean():,.0f}",
            f"{part['variables'].max():,}",
            f"{1000 * part['decision_s'].mean():.1f}",
            f"{1000 * part['decision_s'].median():.1f}",
            str(int((part["fallback"] != "").sum())),
        ]
        table.add_row(*cells)
        md.append("| " + " | ".join(cells) + " |")
    console.print(table)
    lines = ["", f"ratios against {base} (per instance):", ""]
    for label in labels:
        if label == base:
            continue
        part = rat[rat["dispatcher"] == label]
        built = part[np.isfinite(part["variables_ratio"])]
        line = (
            f"- {label}: variables ratio max {built['variables_ratio'].max():.4f}, median "
            f"{built['variables_ratio'].median():.4f}, <= 0.1 on {int((built['variables_ratio'] <= 0.1).sum())} of "
            f"{len(built)} instances with a model; time ratio median "
            f"{part['time_ratio'].median():.3f}; objective ratio median {part['objective_ratio'].median():.3f}"
        )
        console.print(line)
        lines.append(line)
    _plot(rat, base, out)
    write_text(out / "summary.md", "\n".join(md + lines) + "\n")
    console.print(f"written {out}/instances.csv, ratios.csv, summary.md, ratios.png")


def _plot(rat: Any, base: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, title in (
        (axes[0], "variables_ratio", "variables"),
        (axes[1], "time_ratio", "decision time"),
    ):
        for label in rat["dispatcher"].unique():
            v = rat[rat["dispatcher"] == label][col].to_numpy(dtype=float)
            v = v[np.isfinite(v) & (v > 0)]  # instances where both built a model
            ax.plot(np.arange(len(v)), v, ".", ms=2, label=label)
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("instance")
        ax.set_ylabel(f"{title} / {base}")
        ax.set_title(f"{title} ratio per instance")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    from hpcdispatch.results.store import write_atomic

    write_atomic(out / "ratios.png", lambda p: fig.savefig(p, dpi=120, format="png"))
    plt.close(fig)
