"""A real Slurm on loopback: ``slurm up`` (16 nodes), ``slurm replay`` of 25 short jobs, and
``slurm down``, through the command line; a second cluster beside the first; no daemon
listening on anything but 127.0.0.1; ``--accounting`` (MariaDB + slurmdbd) and the sacct round
trip (needs Debian's slurmdbd and mariadb-server too).

Needs root and Debian's slurmctld, slurmd, slurm-client and munge (``.ci/run`` installs them
and sets ``HPCDISPATCH_REQUIRE_SLURM=1``, which turns a skip into a failure); elsewhere these
tests skip, saying why. The cluster is torn down in a ``finally`` (also on failure). About
one minute in all (the replay: 28 s of submissions at time scale 0.1, then the last jobs).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from hpcdispatch.errors import ConfigError
from hpcdispatch.slurm import cluster as cluster_mod
from hpcdispatch.slurm.cluster import (
    _daemon_pids,
    _find_binaries,
    _is_our_daemon,
    down,
    read_cluster,
    up,
)
from hpcdispatch.slurm.config import first_nodes
from hpcdispatch.system.io import load_system

DATA = Path(__file__).parent / "data" / "slurm"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (jobs run as root, fake GPU devices need mknod)"
    try:
        _find_binaries()
    except ConfigError as exc:
        return str(exc)
    if shutil.which("ss") is None:
        return "needs ss (iproute2) to list listening sockets"
    return None


def _require_slurm() -> None:
    why = _why_not()
    if why is None:
        return
    if os.environ.get("HPCDISPATCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"HPCDISPATCH_REQUIRE_SLURM=1 but the Slurm tests cannot run: {why}")
    pytest.skip(f"real Slurm tests: {why}")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "300"},
    )


@pytest.fixture(scope="module")
def cluster_dir():
    _require_slurm()
    state = Path(f"/tmp/hpcdispatch-slurm-pytest-{os.getpid()}")
    try:
        proc = run_cli("slurm", "up", "--system", "machine-s", "--nodes", "16", "--dir", str(state))
        assert proc.returncode == 0, proc.stderr + proc.stdout
        assert f"export SLURM_CONF={state}/etc/slurm.conf" in proc.stdout
        yield state
    finally:
        info = read_cluster(state)
        down(state)
        if info is not None:
            assert _daemon_pids(info) == []  # every daemon it started is gone
        assert not state.exists()


def _listeners(pids: set[int]) -> list[tuple[str, int]]:
    """``(local address, pid)`` of every listening TCP socket of ``pids`` (``ss -ltnp``)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        for pid in map(int, re.findall(r"pid=(\d+)", line)):
            if pid in pids:
                found.append((parts[3], pid))
    return found


@pytest.mark.slow
def test_nodes_idle_and_every_daemon_on_loopback_only(cluster_dir: Path) -> None:
    info = read_cluster(cluster_dir)
    assert info is not None and info.n_nodes == 16
    states = cluster_mod._node_states(info)
    assert states == {f"n{i:04d}": "idle" for i in range(16)}
    pids = set(_daemon_pids(info))
    assert len(pids) == 18  # 16 slurmd, slurmctld, munged
    listening = _listeners(pids)
    # slurmctld on its port, each slurmd on its own; munged only on its unix socket
    ports = sorted(int(addr.rsplit(":", 1)[1]) for addr, _ in listening)
    assert ports == list(range(info.ctld_port, info.ctld_port + 17))
    assert all(addr.startswith("127.0.0.1:") for addr, _ in listening), listening
    # gres survived (trap 1: the daemons run under the names slurmctld / slurmd)
    out = subprocess.run(
        [info.binaries["scontrol"], "-o", "show", "node", "n0007"],
        env=info.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Gres=gpu:2" in out and "CfgTRES=cpu=8,mem=2G" in out
    # fake GPUs: character devices 195:0 and 195:1 (root may mknod)
    import stat

    devices = [os.lstat(cluster_dir / "dev" / f"gpu{k}") for k in range(2)]
    assert all(stat.S_ISCHR(d.st_mode) for d in devices)
    assert [(os.major(d.st_rdev), os.minor(d.st_rdev)) for d in devices] == [(195, 0), (195, 1)]


@pytest.mark.slow
def test_replay_every_job_completed_and_the_run_validates(
    cluster_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "replay"
    proc = run_cli(
        "slurm",
        "replay",
        str(DATA / "replay-25.csv"),
        "--dir",
        str(cluster_dir),
        "--time-scale",
        "0.1",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    run = json.loads((out / "run.json").read_text())
    assert (
        run["dispatcher"]["name"] == "slurm-real"
        and run["dispatcher_tags"]["deterministic"] is False
    )
    replay = run["replay"]
    assert replay["slurm_states"] == {"COMPLETED": 25} and replay["problems"] == []
    assert replay["time_scale"] == 0.1 and run["time_tolerance"] == pytest.approx(30.0)
    assert replay["jobcomp"]["records"] == 25 and replay["jobcomp"]["agree"] == 25
    jobs = pd.read_parquet(out / "jobs.parquet").set_index("job_id")
    assert (
        len(jobs) == 25 and (jobs["start"] >= jobs["submit"]).all()
    )  # submissions at whole seconds, rounded up
    assert (
        jobs.loc[25, "status"] == "killed" and (jobs.drop(index=25)["status"] == "completed").all()
    )
    # whole seconds / 0.1: every time is a multiple of 10 workload seconds (first submit 20)
    assert ((jobs["start"] - 20.0) % 10 == 0).all() and ((jobs["end"] - 20.0) % 10 == 0).all()
    valid = run_cli("validate", str(out))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "valid" in valid.stdout


@pytest.mark.slow
def test_second_cluster_beside_the_first(cluster_dir: Path) -> None:
    first = read_cluster(cluster_dir)
    assert first is not None
    second_dir = Path(f"/tmp/hpcdispatch-slurm-pytest2-{os.getpid()}")
    try:
        second = up(first_nodes(load_system("machine-s"), 2), second_dir)
        lo, hi = second.ctld_port, second.node_port_base + second.n_nodes - 1
        assert hi < first.ctld_port or lo > first.node_port_base + first.n_nodes - 1
        assert len(_daemon_pids(second)) == 4 and len(_daemon_pids(first)) == 18
    finally:
        down(second_dir)
    assert not second_dir.exists() and len(_daemon_pids(first)) == 18  # the first one untouched
    assert down(second_dir) == []  # idempotent
    proc = run_cli("slurm", "down", "--dir", str(second_dir))
    assert proc.returncode == 0 and "nothing to stop" in proc.stdout


def _processes_naming(path: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(path).encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_up_timeout_stops_the_daemons_again(
    cluster_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = Path(f"/tmp/hpcdispatch-slurm-pytest3-{os.getpid()}")
    try:
        # the daemons really start; sinfo is made to report a node that never comes up
        with monkeypatch.context() as m:
            m.setattr(cluster_mod, "_node_states", lambda info: {"n0000": "down*", "n0001": "idle"})
            with pytest.raises(
                ConfigError,
                match=r"the nodes were not all idle after 1 s \(1 not idle: n0000 down\*\); "
                r"the daemons were stopped; logs: ",
            ):
                up(first_nodes(load_system("machine-s"), 2), state, timeout=1.0)
        assert _processes_naming(state) == []
        assert (state / "cluster.json.failed").is_file() and (
            state / "log" / "slurmctld.log"
        ).is_file()
        again = up(
            first_nodes(load_system("machine-s"), 2), state
        )  # a failed up's directory is reused
        assert len(_daemon_pids(again)) == 4
    finally:
        down(state)
        shutil.rmtree(state, ignore_errors=True)
    assert _processes_naming(state) == []


@pytest.mark.slow
def test_a_pid_is_signalled_only_while_it_is_that_daemon(cluster_dir: Path) -> None:
    info = read_cluster(cluster_dir)
    assert info is not None
    assert not _is_our_daemon(os.getpid(), "slurmd", info)
    ctld = int((cluster_dir / "run" / "slurmctld.pid").read_text())
    assert _is_our_daemon(ctld, "slurmctld", info) and not _is_our_daemon(ctld, "slurmd", info)


def test_missing_packages_say_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cluster_mod, "_SEARCH_PATH", str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"slurmctld, slurmd, slurmstepd, munged, sbatch.* not found; install "
        r"Debian's Slurm and munge as root: apt-get update && apt-get install -y "
        r"--no-install-recommends slurmctld slurmd slurm-client munge",
    ):
        _find_binaries()


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    proc = run_cli(
        "slurm",
        "replay",
        str(DATA / "replay-25.csv"),
        "--dir",
        str(tmp_path / "none"),
        "-x",
        "0.1",
        "-o",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert f"{tmp_path / 'none'}: no emulated cluster there" in proc.stderr


@pytest.mark.slow
def test_accounting_round_trip_through_sacct(tmp_path: Path) -> None:
    """``slurm up --accounting`` (private MariaDB + slurmdbd, on 127.0.0.1 only), a replay, and
    its ``slurm.sacct`` read back by the sacct reader: the same jobs (count, sizes, node
    counts, all COMPLETED), run times within the time scale's granularity: Slurm's whole
    seconds, 1 s / 0.1 = 10 workload seconds (measured at 100 jobs and time scale 1: every
    Elapsed equal to the sleep, docs/RESULTS-SLURM.md)."""
    _require_slurm()
    try:
        _find_binaries(accounting=True)
    except ConfigError as exc:
        if os.environ.get("HPCDISPATCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"HPCDISPATCH_REQUIRE_SLURM=1 but accounting cannot run: {exc}")
        pytest.skip(f"accounting: {exc}")
    from hpcdispatch.workload.loader import load_workload

    state = Path(f"/tmp/hpcdispatch-slurm-pytest-acct-{os.getpid()}")
    out = tmp_path / "acct"
    try:
        proc = run_cli(
            "slurm",
            "up",
            "--system",
            "machine-s",
            "--nodes",
            "4",
            "--accounting",
            "--dir",
            str(state),
        )
        assert proc.returncode == 0, proc.stderr + proc.stdout
        info = read_cluster(state)
        assert info is not None and info.accounting
        pids = set(_daemon_pids(info))
        assert len(pids) == 8  # 4 slurmd, slurmctld, slurmdbd, mariadbd, munged
        listening = _listeners(pids)
        assert sorted(int(a.rsplit(":", 1)[1]) for a, _ in listening) == list(
            range(info.ctld_port, info.ctld_port + 7)
        )
        assert all(addr.startswith("127.0.0.1:") for addr, _ in listening), listening
        proc = run_cli(
            "slurm",
            "replay",
            str(DATA / "replay-6.csv"),
            "--dir",
            str(state),
            "-x",
            "0.1",
            "-o",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr + proc.stdout
    finally:
        down(state)
    assert not state.exists()
    run = json.loads((out / "run.json").read_text())
    assert run["replay"]["sacct"] == "slurm.sacct"
    system = load_system(str(out / "system.toml"))
    original = load_workload(str(DATA / "replay-6.csv"), system)
    back = load_workload(str(out / "slurm.sacct"), system)
    assert len(back) == len(original) == 6 and back.report.skipped == {"job-step": 6}
    assert run["replay"]["slurm_states"] == {"COMPLETED": 6}
    slurm_id = {int(k): v for k, v in run["replay"]["slurm_job_ids"].items()}
    by_slurm_id = {int(j.id): j for j in back.jobs}
    assert sorted(by_slurm_id) == sorted(slurm_id.values())
    for job in original.jobs:
        got = by_slurm_id[slurm_id[int(job.id)]]
        assert got.total_request == job.total_request, job.id
        if job.node_count:
            assert got.exact_nodes == job.node_count, job.id
        assert abs(got.run_time / 0.1 - job.duration(True)) <= 10.0, (job.id, got.run_time)


def _cluster_processes(state: Path) -> dict[int, str]:
    """pid -> command line of every process (but this one) whose command line, environment or
    working directory names the state directory: what ``slurm down`` must leave none of."""
    mark = str(state).encode()
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes()
            cwd = os.readlink(proc / "cwd").encode()
        except OSError:
            continue
        if mark in cmd or mark in env or cwd.startswith(mark):
            found[int(proc.name)] = cmd.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def _kill_controller_under_running_steps(state: Path) -> dict[int, str]:
    """Two jobs running (one with an ``srun`` step), then slurmctld killed with SIGKILL: the
    processes of the cluster at that moment."""
    import signal
    import time

    info = read_cluster(state)
    assert info is not None
    for wrap in ("srun sleep 300", "sleep 300"):
        subprocess.run(
            [info.binaries["sbatch"], "-N1", "-t", "10", "-o", "/dev/null", "--wrap", wrap],
            env=info.env(),
            cwd=state,
            check=True,
            capture_output=True,
        )
    deadline = time.monotonic() + 60
    while sum(c.startswith("slurmstepd") for c in _cluster_processes(state).values()) < 3:
        assert time.monotonic() < deadline, _cluster_processes(state)
        time.sleep(0.2)
    os.kill(int((state / "run" / "slurmctld.pid").read_text()), signal.SIGKILL)
    time.sleep(0.5)
    return _cluster_processes(state)


@pytest.mark.slow
def test_down_after_a_killed_controller_ends_every_process_of_the_cluster(
    cluster_dir: Path,
) -> None:
    """slurmctld killed with job steps running: `slurm up` says the cluster is broken and how
    to recover, `slurm up --recover` starts a new one in its place, and `slurm down` leaves
    no process of the cluster (step daemons and jobs included); the other cluster runs on."""
    other = read_cluster(cluster_dir)
    assert other is not None
    state = Path(f"/tmp/hpcdispatch-slurm-pytest4-{os.getpid()}")
    try:
        run_cli("slurm", "up", "-s", "machine-s", "-N", "2", "--dir", str(state)).check_returncode()
        before = _kill_controller_under_running_steps(state)
        assert sum(c.startswith("slurmstepd") for c in before.values()) >= 3
        refused = run_cli("slurm", "up", "-s", "machine-s", "-N", "2", "--dir", str(state))
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert (
            f"the cluster in {state} is broken: its slurmctld is not running (it died), its "
            "munged, slurmd still run; stop what is left and start a new cluster there with "
            "'hpcdispatch slurm up --recover'"
        ) in refused.stderr
        assert set(before) <= set(_cluster_processes(state))  # refused: nothing touched
        again = run_cli(
            "slurm", "up", "-s", "machine-s", "-N", "2", "--dir", str(state), "--recover"
        )
        assert again.returncode == 0, again.stderr
        assert not set(before) & set(_cluster_processes(state))  # the old processes are gone
        before = _kill_controller_under_running_steps(state)
        stopped = run_cli("slurm", "down", "--dir", str(state))
        assert stopped.returncode == 0, stopped.stderr
        assert _cluster_processes(state) == {}
        assert not state.exists()
    finally:
        down(state)
        shutil.rmtree(state, ignore_errors=True)
    assert len(_daemon_pids(other)) == 18  # the module's cluster untouched
