"""``hpcdispatch slurm up|down|replay|dispatch``: an emulated Slurm cluster on this machine (Debian's
packages, loopback only) and a workload replayed on it (:mod:`hpcdispatch.slurm`)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console

from hpcdispatch.errors import Terminated

console = Console()


@click.group()
def slurm() -> None:
    """A real Slurm emulating a cluster on 127.0.0.1 (needs root and Debian's slurmctld, slurmd,
    slurm-client and munge)."""


@slurm.command("up")
@click.option(
    "--system", "-s", "system_spec", required=True, help="preset name or system TOML file"
)
@click.option(
    "--nodes",
    "-N",
    type=click.IntRange(min=1),
    default=None,
    help="emulate only the first N nodes of the system (its linear order)",
)
@click.option(
    "--dir",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="state directory (default /tmp/hpcdispatch-slurm-<system>, e.g. ...-machine-s-first16)",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=None,
    help="seconds to wait for every node to be idle (default 60 + 0.05 per node)",
)
@click.option(
    "--accounting",
    is_flag=True,
    help="also slurmdbd on a private MariaDB (127.0.0.1 only), so that sacct works "
    "(Debian: slurmdbd, mariadb-server)",
)
@click.option(
    "--recover",
    is_flag=True,
    help="the state directory holds a cluster whose slurmctld died: stop what is left of it "
    "and start a new cluster there (its jobs are lost)",
)
def up_cmd(
    system_spec: str,
    nodes: int | None,
    state_dir: Path | None,
    timeout: float | None,
    accounting: bool,
    recover: bool,
) -> None:
    """Start munged, slurmctld and one slurmd per node, and wait until every node is idle."""
    from hpcdispatch.slurm.cluster import cluster_name, default_state_dir, up, usage_text
    from hpcdispatch.slurm.config import first_nodes
    from hpcdispatch.system.io import load_system

    system = first_nodes(load_system(system_spec), nodes)
    state_dir = state_dir or default_state_dir(cluster_name(Path(system.name)))
    with console.status(f"starting {system.n_nodes} nodes in {state_dir} ..."):
        info = up(system, state_dir, timeout, accounting, recover=recover)
    click.echo(usage_text(info))


@slurm.command("down")
@click.option(
    "--dir",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="state directory of the cluster (default: the only one running)",
)
def down_cmd(state_dir: Path | None) -> None:
    """Cancel the cluster's jobs, stop the daemons it started (by pid file) and every other
    process of it (step daemons, jobs: found through its state directory), and remove its
    state directory; nothing to stop is no error."""
    from hpcdispatch.errors import ConfigError
    from hpcdispatch.slurm.cluster import down, find_running_cluster

    if state_dir is None:
        try:
            state_dir = Path(find_running_cluster(None).state_dir)
        except ConfigError as exc:
            click.echo(f"nothing to stop ({exc})")
            return
    if not state_dir.exists():
        click.echo(f"nothing to stop: {state_dir} does not exist")
        return
    pids = down(state_dir)
    click.echo(f"stopped {len(pids)} process(es); removed {state_dir}")


@slurm.command("replay")
@click.argument("workload")
@click.option(
    "--time-scale",
    "-x",
    type=float,
    required=True,
    help="real seconds per workload second (0.01: a 1000 s job sleeps 10 s)",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory to write (default results/slurm-replay)",
)
@click.option(
    "--dir",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="state directory of the cluster (default: $SLURM_CONF's, or the only one running)",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(min=1),
    default=None,
    help="seconds to wait for the jobs after the last submission (default: as if they ran one by one)",
)
@click.option("--force", is_flag=True, help="replace the run directory if it exists")
def replay_cmd(
    workload: str,
    time_scale: float,
    out: Path | None,
    state_dir: Path | None,
    max_wait: float | None,
    force: bool,
) -> None:
    """Submit WORKLOAD's jobs at their scaled submit times (sbatch --wrap "sleep T"), wait, and
    write Slurm's schedule as a run directory (validate and report read it)."""
    from hpcdispatch.results.outdir import check_output_dir
    from hpcdispatch.slurm.cluster import find_running_cluster
    from hpcdispatch.slurm.replay import plan_submissions, replay
    from hpcdispatch.validation.validator import validate_run_dir
    from hpcdispatch.workload import WorkloadSpec, load_workload

    out = out or Path("results/slurm-replay")
    check_output_dir(out, force)
    info = find_running_cluster(state_dir)
    system = info.load_system()
    jobs = load_workload(WorkloadSpec.parse(workload), system)
    if jobs.report.n_skipped or jobs.report.patched or jobs.report.notes:
        click.echo(jobs.report.describe(), err=True)
    subs = plan_submissions(
        jobs, system, time_scale
    )  # refuses what sbatch cannot express, before submitting
    last = max(s.offset_s for s in subs)
    click.echo(
        f"replaying {len(jobs)} jobs on cluster '{info.name}' ({info.n_nodes} nodes), submissions over "
        f"{last:.0f} s, time scale {time_scale:g}"
    )
    summary, record = replay(
        info, jobs, time_scale, out, force=force, max_wait_s=max_wait, progress=_every(10.0)
    )
    click.echo(
        f"wrote {out}: makespan {summary['makespan']:.6g} s, mean wait {summary['wait_mean']:.6g} s "
        f"(workload seconds); Slurm states {record['slurm_states']}"
    )
    report = validate_run_dir(out)
    click.echo(report.describe())
    if record["problems"]:
        click.echo(
            f"error: {len(record['problems'])} job(s) did not complete: {record['problems'][0]}",
            err=True,
        )
        raise click.exceptions.Exit(1)
    if not report.ok:
        raise click.exceptions.Exit(1)


@slurm.command("dispatch")
@click.argument("workload")
@click.option(
    "--dispatcher",
    "-d",
    "spec",
    required=True,
    help="dispatcher spec deciding for Slurm, e.g. easy, pcp20, aucsched, easy:allocator=best-fit",
)
@click.option(
    "--time-scale",
    "-x",
    type=float,
    required=True,
    help="real seconds per workload second (0.01: a 1000 s job sleeps 10 s)",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory to write (default results/slurm-dispatch); the journal is kept in OUT.bridge "
    "while the run lasts: the same command again resumes it",
)
@click.option(
    "--dir",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="state directory of the cluster (default: $SLURM_CONF's, or the only one running)",
)
@click.option(
    "--budget",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="seconds a dispatcher call may take; longer stops the bridge (jobs stay held)",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(min=1),
    default=None,
    help="seconds to wait for the jobs after the last submission (default: as if they ran one by one)",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="a .py file (or an importable module) that registers dispatchers of your own; repeat for several",
)
@click.option(
    "--uneven",
    type=click.Choice(["hetjob", "refuse"]),
    default="hetjob",
    show_default=True,
    help="a start giving its nodes different core counts: run it as a heterogeneous job "
    "(one component per node, pinned with --nodelist) or refuse it (the job stays held)",
)
@click.option("--force", is_flag=True, help="replace the run directory if it exists")
def dispatch_cmd(
    workload: str,
    spec: str,
    time_scale: float,
    out: Path | None,
    state_dir: Path | None,
    budget: float,
    max_wait: float | None,
    plugins: tuple[Path, ...],
    uneven: str,
    force: bool,
) -> None:
    """Let a dispatcher schedule WORKLOAD on the live cluster (external mode): jobs are
    submitted held (sbatch --hold), and each start the dispatcher decides is pinned
    (scontrol update JobId=.. NumNodes=k-k ReqNodeList=..) and released. Writes the schedule
    as a run directory; started again with the same arguments after a crash, it resumes."""
    from hpcdispatch.dispatchers.spec import make_dispatcher
    from hpcdispatch.plugins import load_plugins, resolve_plugin
    from hpcdispatch.results.outdir import check_output_dir
    from hpcdispatch.slurm.bridge import BridgeError, bridge_dir, dispatch
    from hpcdispatch.slurm.cluster import controller_running, find_running_cluster
    from hpcdispatch.slurm.replay import plan_submissions
    from hpcdispatch.validation.validator import validate_run_dir
    from hpcdispatch.workload import WorkloadSpec, load_workload

    out = out or Path("results/slurm-dispatch")
    if not bridge_dir(
        out
    ).exists():  # a journal there: resuming, the run directory is written at the end
        check_output_dir(out, force)
    load_plugins(tuple(resolve_plugin(str(p), Path.cwd()) for p in plugins))
    dispatcher = make_dispatcher(spec)
    info = find_running_cluster(state_dir)
    system = info.load_system()
    jobs = load_workload(WorkloadSpec.parse(workload), system)
    if jobs.report.n_skipped or jobs.report.patched or jobs.report.notes:
        click.echo(jobs.report.describe(), err=True)
    subs = plan_submissions(jobs, system, time_scale)
    click.echo(
        f"dispatching {len(jobs)} jobs on cluster '{info.name}' ({info.n_nodes} nodes) with "
        f"{dispatcher.describe()}, submissions over {max(s.offset_s for s in subs):.0f} s, time scale "
        f"{time_scale:g}; journal and log in {bridge_dir(out)}"
    )
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM as Ctrl-C: stop, jobs stay held
    try:
        summary, record = dispatch(
            info,
            jobs,
            dispatcher,
            time_scale,
            out,
            budget_s=budget,
            max_wait_s=max_wait,
            uneven=uneven,
        )
    except BridgeError as exc:
        if controller_running(info):
            state = "the cluster keeps running and the waiting jobs stay held"
        else:  # (its jobs, held or running, are gone with it: say so, and what to do)
            state = (
                f"the cluster's slurmctld is not running (it died): the cluster runs no job any "
                f"more and the jobs it held are lost; stop what is left of it with "
                f"'hpcdispatch slurm down --dir {info.state_dir}' (or start a new one in its "
                "place with 'slurm up --recover')"
            )
        click.echo(f"error: {exc}; {state} (log: {bridge_dir(out)}/bridge.log)", err=True)
        raise click.exceptions.Exit(1) from None
    except KeyboardInterrupt as exc:
        term = isinstance(exc, Terminated)
        click.echo(
            f"interrupted{' (SIGTERM)' if term else ''}: the waiting jobs stay held; the same "
            f"command resumes the run (journal in {bridge_dir(out)})",
            err=True,
        )
        raise click.exceptions.Exit(143 if term else 130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    check = record["placement"]
    click.echo(
        f"wrote {out}: makespan {summary['makespan']:.6g} s, mean wait {summary['wait_mean']:.6g} s "
        f"(workload seconds); {record['dispatcher_calls']} dispatcher calls; {check['exact']}/"
        f"{check['started']} jobs started on exactly the nodes chosen ({record['hetjobs']} uneven starts "
        "as heterogeneous jobs)"
    )
    report = validate_run_dir(out)
    click.echo(report.describe())
    if record["problems"]:
        click.echo(
            f"error: {len(record['problems'])} problem(s): {record['problems'][0]}", err=True
        )
        raise click.exceptions.Exit(1)
    if not report.ok:
        raise click.exceptions.Exit(1)


def _interrupt(signum: int, frame: object) -> None:
    raise Terminated


def _every(seconds: float) -> Callable[[str], None]:
    """A progress callback printing (to stderr) at most one line every ``seconds``."""
    last = [time.monotonic()]

    def show(message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            click.echo(message, err=True)
            last[0] = now

    return show
