"""``hpcdispatch rl evaluate``: the RL papers' evaluation protocols (:mod:`hpcdispatch.rl`)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

console = Console()


@click.group()
def rl() -> None:
    """Reinforcement learning: evaluation protocols of the RL scheduling papers."""


@rl.command("evaluate")
@click.option("--workload", "-w", "trace", required=True, help="an SWF trace")
@click.option(
    "--dispatchers",
    "-d",
    "specs",
    default="fcfs,wfp3,unicep,sjf,f1",
    show_default=True,
    help="comma-separated dispatcher specs; fcfs, sjf, wfp3, unicep, f1 are the pick "
    "heuristics (sjf: sjf-pick), policy:path=FILE.npz a learned policy",
)
@click.option(
    "--protocol", default="rlscheduler", show_default=True, type=click.Choice(["rlscheduler"])
)
@click.option(
    "--backfill",
    default="off",
    show_default=True,
    type=click.Choice(["off", "on", "easy"]),
    help="on: the protocol's own backfilling (RLScheduler's); easy: EASY around the pick",
)
@click.option("--iterations", default=10, show_default=True, help="sequences sampled")
@click.option("--jobs", default=1024, show_default=True, help="jobs per sequence")
@click.option("--seed", default=1, show_default=True)
@click.option(
    "--job-slice",
    default=0,
    show_default=True,
    help="sample from the first N jobs only (RLScheduler's batch_job_slice; 0: all)",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="CSV file"
)
def evaluate(
    trace: str,
    specs: str,
    protocol: str,
    backfill: str,
    iterations: int,
    jobs: int,
    seed: int,
    job_slice: int,
    out: Path | None,
) -> None:
    """Evaluate dispatchers as RLScheduler (SC'20) does: mean bounded slowdown and
    utilisation over sampled job sequences."""
    from hpcdispatch.dispatchers.spec import split_dispatcher_list
    from hpcdispatch.rl.evaluate import evaluate as run
    from hpcdispatch.rl.evaluate import write_csv

    rows = run(
        trace,
        split_dispatcher_list(specs),
        backfill=backfill,
        protocol=protocol,
        iterations=iterations,
        seed=seed,
        jobs=jobs,
        job_slice_n=job_slice,
    )
    table = Table(title=f"{Path(trace).name}: {protocol} protocol, backfill {backfill}")
    for col in ("dispatcher", "backfill", "mean bounded slowdown", "utilization"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r.dispatcher, r.backfill, f"{r.mean_bounded_slowdown:.2f}", f"{r.utilization:.3f}"
        )
    console.print(table)
    if out is not None:
        write_csv(rows, out)
        console.print(f"wrote {out}")
