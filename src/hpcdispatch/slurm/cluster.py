"""``hpcdispatch slurm up`` / ``slurm down``: an emulated cluster's daemons, started and stopped.

``up`` writes the state directory (default ``/tmp/hpcdispatch-slurm-<name>``)::

    cluster.json      what was started: name, ports, nodes, system, binaries (the handle of `down`)
    system.toml       the emulated system (the first N nodes of the one asked for)
    env.sh            export SLURM_CONF=...
    etc/              slurm.conf, gres.conf (hpcdispatch.slurm.config)
    bin/              symlinks named exactly slurmctld, slurmd, slurmstepd (trap 1: Slurm 22.05
                      keeps the nodes' Gres= only in processes named so)
    munge/            the cluster's own munge key, pid, log, seed and socket (run/, mode 755)
    dev/              fake GPU devices (mknod c 195 k; a symlink to /dev/null without CAP_MKNOD)
    run/ log/ state/ spool/   pid files, logs (jobcomp.txt too), slurmctld state, slurmd spools

``down`` ends every process of its cluster (step daemons and job processes too, found
through the state directory); ``up --recover`` restarts on the state of a dead cluster.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hpcdispatch.errors import ConfigError
from hpcdispatch.slurm.config import (
    _GPU_DEVICE_MAJOR,
    ClusterLayout,
    _check_slurm_system,
    _database_name,
    _gpu_device,
    _max_gpus,
    _slurmdbd_conf_text,
    gres_conf_text,
    slurm_conf_text,
)
from hpcdispatch.system.io import dump_system, load_system
from hpcdispatch.system.model import System

#: the Debian packages and how to install them (note section 1)
_INSTALL_HINT = (
    "install Debian's Slurm and munge as root: apt-get update && "
    "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
)
#: what ``--accounting`` needs on top
_ACCOUNTING_HINT = (
    "install slurmdbd and MariaDB as root: apt-get update && "
    "apt-get install -y --no-install-recommends slurmdbd mariadb-server"
)
_ACCOUNTING_PROGRAMS = {
    "slurmdbd": ("slurmdbd",),
    "mariadbd": ("mariadbd", "mysqld"),
    "mariadb-install-db": ("mariadb-install-db", "mysql_install_db"),
    "mariadb": ("mariadb", "mysql"),
    "sacctmgr": ("sacctmgr",),
    "sacct": ("sacct",),
}
#: daemons (the ``-wlm`` binaries first: installing slurm-wlm-emulator re-points the plain names)
_DAEMONS = {
    "slurmctld": ("slurmctld-wlm", "slurmctld"),
    "slurmd": ("slurmd-wlm", "slurmd"),
    "slurmstepd": ("slurmstepd-wlm", "slurmstepd"),
    "munged": ("munged",),
}
_CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel")
_SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/local/sbin"]
)
_DEFAULT_PREFIX = "/tmp/hpcdispatch-slurm-"
_FIRST_PORT = 17000
_LAST_PORT = 60000
_STATE_FILE = "cluster.json"


@dataclass(frozen=True)
class ClusterInfo:
    """What ``up`` started (``cluster.json``)."""

    name: str
    state_dir: str
    ctld_port: int
    node_port_base: int
    system: str
    n_nodes: int
    nodes: list[str]
    binaries: dict[str, str]
    slurm_version: str
    accounting: bool = False  # slurmdbd on a private MariaDB (sacct works)
    dbd_port: int = 0
    db_port: int = 0

    @property
    def layout(self) -> ClusterLayout:
        return ClusterLayout(
            self.name,
            Path(self.state_dir),
            self.ctld_port,
            self.node_port_base,
            self.dbd_port,
            self.db_port,
        )

    @property
    def last_port(self) -> int:
        return max(self.node_port_base + self.n_nodes - 1, self.dbd_port, self.db_port)

    @property
    def slurm_conf(self) -> Path:
        return self.layout.slurm_conf

    def env(self) -> dict[str, str]:
        """The environment for Slurm's commands on this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.slurm_conf), "PATH": _SEARCH_PATH}

    def load_system(self) -> System:
        return load_system(Path(self.state_dir) / "system.toml")


def default_state_dir(name: str) -> Path:
    """Where ``slurm up`` keeps the state of the cluster named ``name`` by default."""
    return Path(f"{_DEFAULT_PREFIX}{name}")


def cluster_name(state_dir: Path) -> str:
    """A ClusterName from the directory's name: lower case letters, digits and '-'."""
    base = state_dir.name.removeprefix("hpcdispatch-slurm-") or "emu"
    name = re.sub(r"[^a-z0-9-]", "-", base.lower()).strip("-") or "emu"
    return name[:32]


def _find_binaries(accounting: bool = False) -> dict[str, str]:
    """The daemons' and clients' paths; a :class:`ConfigError` naming the missing ones and the
    one command that installs them."""
    found: dict[str, str] = {}
    missing = []
    for role, names in _DAEMONS.items():
        path = next((p for p in (shutil.which(n, path=_SEARCH_PATH) for n in names) if p), None)
        if path is None:
            missing.append(role)
        else:
            found[role] = path
    for client in _CLIENTS:
        path = shutil.which(client, path=_SEARCH_PATH)
        if path is None:
            missing.append(client)
        else:
            found[client] = path
    if missing:
        raise ConfigError(f"{', '.join(missing)} not found; {_INSTALL_HINT}")
    if accounting:
        for role, names in _ACCOUNTING_PROGRAMS.items():
            path = next((p for p in (shutil.which(n, path=_SEARCH_PATH) for n in names) if p), None)
            if path is None:
                missing.append(role)
            else:
                found[role] = path
        if missing:
            raise ConfigError(
                f"{', '.join(missing)} not found (needed by --accounting); {_ACCOUNTING_HINT}"
            )
    return found


def _require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise ConfigError(
            f"{what} needs root (the emulated nodes run jobs as root and make fake GPU devices); "
            "run it as root or with sudo"
        )


def read_cluster(state_dir: Path) -> ClusterInfo | None:
    """The cluster of ``state_dir`` (its ``cluster.json``), ``None`` when there is none."""
    path = state_dir / _STATE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ClusterInfo(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"{path}: damaged cluster record ({type(exc).__name__}: {exc})") from None


def find_running_cluster(state_dir: str | Path | None) -> ClusterInfo:
    """The cluster a command talks to: ``state_dir``, else the one ``SLURM_CONF`` points into,
    else the only one under ``/tmp/hpcdispatch-slurm-*``."""
    if state_dir is None:
        conf = os.environ.get("SLURM_CONF")
        if conf and (Path(conf).parent.parent / _STATE_FILE).is_file():
            state_dir = Path(conf).parent.parent
        else:
            found = sorted(
                p.parent for p in Path("/tmp").glob(f"{Path(_DEFAULT_PREFIX).name}*/{_STATE_FILE}")
            )
            if len(found) != 1:
                raise ConfigError(
                    "no cluster given: pass --dir DIR ("
                    + (
                        f"{len(found)} clusters run: {', '.join(map(str, found))}"
                        if found
                        else "no cluster runs; start one with: hpcdispatch slurm up --system PRESET"
                    )
                    + ")"
                )
            state_dir = found[0]
    info = read_cluster(Path(state_dir))
    if info is None:
        raise ConfigError(
            f"{state_dir}: no emulated cluster there (start one with: hpcdispatch slurm up --dir {state_dir})"
        )
    return info


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _claimed_ports(exclude: Path, root: Path) -> list[tuple[int, int]]:
    """Port blocks that other clusters' records under ``root`` claim (they may not have bound
    them yet)."""
    blocks = []
    for path in root.glob(f"{Path(_DEFAULT_PREFIX).name}*/{_STATE_FILE}"):
        if path.parent.resolve() == exclude.resolve():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            last = max(
                int(data["node_port_base"]) + int(data["n_nodes"]) - 1,
                int(data.get("dbd_port", 0)),
                int(data.get("db_port", 0)),
            )
            blocks.append((int(data["ctld_port"]), last))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return blocks


def _choose_ports(
    n_nodes: int, state_dir: Path, root: Path = Path("/tmp"), first: int = _FIRST_PORT
) -> tuple[int, int]:
    """``(slurmctld port, node port base)``: ``n_nodes + 1`` consecutive ports from ``first``
    on, all free on 127.0.0.1 and outside the blocks other clusters (records under ``root``)
    claim."""
    need = n_nodes + 1
    claimed = _claimed_ports(state_dir, root)
    base = first
    while base + need <= _LAST_PORT:
        clash = next((hi for lo, hi in claimed if lo <= base + need - 1 and base <= hi), None)
        if clash is not None:
            base = clash + 1
            continue
        busy = next((p for p in range(base, base + need) if not _port_free(p)), None)
        if busy is None:
            return base, base + 1
        base = busy + 1
    raise ConfigError(
        f"no block of {need} free ports on 127.0.0.1 between {_FIRST_PORT} and {_LAST_PORT}"
    )


def _make_gpu_devices(layout: ClusterLayout, count: int) -> str:
    """Fake GPU device files (trap 2: gres.conf's File= must be a character device): ``mknod``,
    or symlinks to /dev/null without CAP_MKNOD. Returns which."""
    layout.dev.mkdir(parents=True, exist_ok=True)
    kind = "mknod"
    for k in range(count):
        path = _gpu_device(layout, k)
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(_GPU_DEVICE_MAJOR, k))
        except PermissionError:
            path.symlink_to("/dev/null")
            kind = "symlink"
    return kind


def _run(
    cmd: list[str], env: dict[str, str], timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _slurm_version(binaries: dict[str, str]) -> str:
    out = _run([binaries["slurmctld"], "-V"], dict(os.environ)).stdout.strip()
    return out.removeprefix("slurm-wlm ").removeprefix("slurm ")


def up(
    system: System,
    state_dir: Path,
    timeout: float | None = None,
    accounting: bool = False,
    recover: bool = False,
) -> ClusterInfo:
    """Start an emulated cluster of ``system`` in ``state_dir`` (see the module docstring) and
    return it once every node is idle. ``accounting``: also a private MariaDB and slurmdbd on
    127.0.0.1, so that ``sacct`` works. ``recover``: a cluster whose slurmctld died is stopped
    (:func:`down`) and a new one started in its place; without it, that is an error."""
    binaries = _find_binaries(accounting)
    _require_root("slurm up")
    _check_slurm_system(system)
    state_dir = Path(state_dir).absolute()
    old = read_cluster(state_dir)
    if old is not None:
        live = _live_pids(old)
        if live and not recover:
            if any(role == "slurmctld" for role, _ in live):
                raise ConfigError(
                    f"a cluster already runs in {state_dir} (stop it with: hpcdispatch slurm down --dir {state_dir})"
                )
            left = ", ".join(sorted({role for role, _ in live}))
            raise ConfigError(
                f"the cluster in {state_dir} is broken: its slurmctld is not running (it died), "
                f"its {left} still run; stop what is left and start a new cluster there with "
                f"'hpcdispatch slurm up --recover' (its jobs are lost), or stop it with: "
                f"hpcdispatch slurm down --dir {state_dir}"
            )
        down(state_dir)
    elif (state_dir / f"{_STATE_FILE}.failed").is_file():  # a failed `up`'s logs: ours to replace
        shutil.rmtree(state_dir)
    elif state_dir.exists() and any(state_dir.iterdir()):
        raise ConfigError(
            f"{state_dir} exists and holds no cluster: give another --dir or remove it"
        )
    name = cluster_name(state_dir)
    ctld_port, node_base = _choose_ports(system.n_nodes + (2 if accounting else 0), state_dir)
    db_port, dbd_port = (
        (node_base + system.n_nodes, node_base + system.n_nodes + 1) if accounting else (0, 0)
    )
    layout = ClusterLayout(name, state_dir, ctld_port, node_base, dbd_port, db_port)
    for sub in ("etc", "bin", "munge/run", "dev", "run", "log", "state", "spool"):
        (state_dir / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(state_dir, 0o755)
    os.chmod(state_dir / "munge" / "run", 0o755)  # trap 5: munged wants 755 on its socket directory
    info = ClusterInfo(
        name=name,
        state_dir=str(state_dir),
        ctld_port=ctld_port,
        node_port_base=node_base,
        system=system.name,
        n_nodes=system.n_nodes,
        nodes=[system.node_name(i) for i in range(system.n_nodes)],
        binaries=binaries,
        slurm_version=_slurm_version(binaries),
        accounting=accounting,
        dbd_port=dbd_port,
        db_port=db_port,
    )
    (state_dir / _STATE_FILE).write_text(
        json.dumps(asdict(info), indent=2) + "\n", encoding="utf-8"
    )
    dump_system(system, state_dir / "system.toml")
    layout.slurm_conf.write_text(slurm_conf_text(system, layout), encoding="utf-8")
    (layout.etc / "gres.conf").write_text(gres_conf_text(system, layout), encoding="utf-8")
    _make_gpu_devices(layout, _max_gpus(system))
    for role in ("slurmctld", "slurmd", "slurmstepd", *(("slurmdbd",) if accounting else ())):
        (state_dir / "bin" / role).symlink_to(binaries[role])
    (state_dir / "env.sh").write_text(f"export SLURM_CONF={layout.slurm_conf}\n", encoding="utf-8")
    try:
        _start_daemons(info)
        _wait_idle(info, timeout if timeout is not None else 60.0 + 0.05 * system.n_nodes)
    except BaseException:
        down(state_dir, keep_logs=True)
        raise
    return info


def _daemon_env(info: ClusterInfo) -> dict[str, str]:
    return {**info.env(), "HPCDISPATCH_SLURM_DIR": info.state_dir}


def _start_daemons(info: ClusterInfo) -> None:
    d = Path(info.state_dir)
    env = _daemon_env(info)
    munge = d / "munge"
    key = munge / "munge.key"
    with open(key, "wb", opener=lambda p, f: os.open(p, f, 0o400)) as fh:
        fh.write(os.urandom(1024))
    _checked(
        [
            info.binaries["munged"],
            f"--socket={info.layout.munge_socket}",
            f"--key-file={key}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        ],
        env,
        "munged",
        munge / "munged.log",
    )
    if info.accounting:
        _start_accounting(info, env)
    conf = str(info.slurm_conf)
    _checked(
        [str(d / "bin" / "slurmctld"), "-f", conf, "-c"],
        env,
        "slurmctld",
        d / "log" / "slurmctld.log",
    )
    procs = [
        (
            node,
            subprocess.Popen(
                [
                    str(d / "bin" / "slurmd"),
                    "-f",
                    conf,
                    "-N",
                    node,
                    "-d",
                    str(d / "bin" / "slurmstepd"),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for node in info.nodes
    ]
    failed = []
    for node, proc in procs:
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            failed.append(f"{node}: {' '.join(err.split())[:160]}")
    if failed:
        raise ConfigError(
            f"slurmd failed to start for {len(failed)} node(s), first {failed[0]} "
            f"(logs under {d / 'log'})"
        )


def _wait_for(ready: Any, what: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise ConfigError(f"{what} did not come up within {timeout:.0f} s; log: {log}")
        time.sleep(0.2)


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start_accounting(info: ClusterInfo, env: dict[str, str]) -> None:
    """A private MariaDB (its own data directory, TCP on 127.0.0.1 only), its ``slurm`` user
    with a random password, slurmdbd on 127.0.0.1, and the cluster registered in it."""
    d = Path(info.state_dir)
    mysql = d / "mysql"
    data = mysql / "data"
    data.mkdir(parents=True)
    b = info.binaries
    _checked(
        [
            b["mariadb-install-db"],
            "--no-defaults",
            "--user=root",
            f"--datadir={data}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ],
        env,
        "mariadb-install-db",
        mysql / "error.log",
    )
    sock = mysql / "mysqld.sock"
    subprocess.Popen(
        [
            b["mariadbd"],
            "--no-defaults",
            "--user=root",
            f"--datadir={data}",
            f"--socket={sock}",
            f"--pid-file={mysql / 'mysqld.pid'}",
            f"--port={info.db_port}",
            "--bind-address=127.0.0.1",
            f"--log-error={mysql / 'error.log'}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait_for(lambda: sock.exists() and _listening(info.db_port), "MariaDB", mysql / "error.log")
    password = secrets.token_hex(16)
    sql = (
        f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
        f"GRANT ALL ON `{_database_name(info.layout)}`.* TO 'slurm'@'127.0.0.1';"
    )
    _checked(
        [b["mariadb"], "--no-defaults", f"--socket={sock}", "-u", "root", "-e", sql],
        env,
        "MariaDB set-up",
        mysql / "error.log",
    )
    conf = info.layout.etc / "slurmdbd.conf"
    with open(conf, "w", encoding="utf-8", opener=lambda p, f: os.open(p, f, 0o600)) as fh:
        fh.write(_slurmdbd_conf_text(info.layout, password))
    _checked([str(d / "bin" / "slurmdbd")], env, "slurmdbd", d / "log" / "slurmdbd.log")
    _wait_for(lambda: _listening(info.dbd_port), "slurmdbd", d / "log" / "slurmdbd.log")
    _checked(
        [b["sacctmgr"], "-i", "add", "cluster", info.name],
        env,
        "sacctmgr add cluster",
        d / "log" / "slurmdbd.log",
    )


def _checked(cmd: list[str], env: dict[str, str], what: str, log: Path) -> None:
    proc = _run(cmd, env, timeout=60)
    if proc.returncode != 0:
        why = " ".join((proc.stderr or proc.stdout).split())[:200]
        raise ConfigError(f"{what} failed to start (exit {proc.returncode}: {why}); log: {log}")


def _node_states(info: ClusterInfo) -> dict[str, str]:
    """``node -> state`` as sinfo prints it (``idle``, ``down*``, ``drained`` ...)."""
    proc = _run([info.binaries["sinfo"], "-h", "-N", "-o", "%N %T"], info.env(), timeout=20)
    states: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1].lower()
    return states


def _wait_idle(info: ClusterInfo, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = _node_states(info)
        if len(states) == info.n_nodes and all(s == "idle" for s in states.values()):
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    not_idle = {n: s for n, s in states.items() if s != "idle"} if states else {}
    shown = (
        ", ".join(f"{n} {s}" for n, s in list(not_idle.items())[:5]) or "slurmctld did not answer"
    )
    raise ConfigError(
        f"the nodes were not all idle after {timeout:.0f} s ({len(not_idle) or info.n_nodes} not idle: "
        f"{shown}); the daemons were stopped; logs: {Path(info.state_dir) / 'log'}"
    )


# ---- stopping ----------------------------------------------------------------------------------


def _pid_files(info: ClusterInfo) -> list[tuple[str, Path]]:
    d = Path(info.state_dir)
    files = [("slurmd", d / "run" / f"slurmd-{node}.pid") for node in info.nodes]
    files.append(("slurmctld", d / "run" / "slurmctld.pid"))
    if info.accounting:
        files.append(("slurmdbd", d / "run" / "slurmdbd.pid"))
        files.append(("mariadbd", d / "mysql" / "mysqld.pid"))
    files.append(("munged", d / "munge" / "munged.pid"))
    return files


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _is_our_daemon(pid: int, role: str, info: ClusterInfo) -> bool:
    """True while ``pid`` is the ``role`` daemon of this cluster: its program is named ``role``
    and its command line names this cluster's slurm.conf (munged: its socket; slurmdbd: the
    cluster's symlink to it; mariadbd: its data directory)."""
    args = _cmdline(pid)
    if not args or Path(args[0]).name != role:
        return False
    d = Path(info.state_dir)
    mark = {
        "munged": str(info.layout.munge_socket),
        "slurmdbd": str(d / "bin" / "slurmdbd"),
        "mariadbd": str(d / "mysql"),
    }.get(role, str(info.slurm_conf))
    return any(mark in a for a in (args if role == "slurmdbd" else args[1:]))


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _live_pids(info: ClusterInfo) -> list[tuple[str, int]]:
    """``(role, pid)`` of this cluster's daemons that run (pid file + the checks above)."""
    live = []
    for role, path in _pid_files(info):
        pid = _read_pid(path)
        if pid is not None and _is_our_daemon(pid, role, info):
            live.append((role, pid))
    return live


def _daemon_pids(info: ClusterInfo) -> list[int]:
    return [pid for _, pid in _live_pids(info)]


def _stop(pids: list[tuple[str, int]], info: ClusterInfo, grace: float = 5.0) -> None:
    for role, pid in pids:
        if _is_our_daemon(pid, role, info):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_is_our_daemon(p, r, info) for r, p in pids):
        time.sleep(0.1)
    for role, pid in pids:
        if _is_our_daemon(pid, role, info):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _cancel_jobs(info: ClusterInfo, wait: float = 15.0) -> None:
    """scancel every job of the cluster and wait (at most ``wait`` s) until none runs."""
    env = info.env()
    try:
        _run([info.binaries["scancel"], "--partition=batch"], env, timeout=20)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            out = _run(
                [info.binaries["squeue"], "-h", "-t", "RUNNING,COMPLETING,CONFIGURING", "-o", "%i"],
                env,
                timeout=20,
            )
            if out.returncode != 0 or not out.stdout.strip():
                return
            time.sleep(0.5)
    except subprocess.TimeoutExpired:
        return


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _leftover_steps(state_dir: str) -> list[int]:
    """Processes of this cluster, found through its state directory, without this process
    and its ancestors: those whose environment names the directory as the daemons' (the
    daemons and slurmstepd inherit ``HPCDISPATCH_SLURM_DIR``), a job's processes (Slurm's
    ``SLURM_JOB_ID`` with this cluster's ``SLURM_CONF``: a shell that only sourced env.sh is
    not one), and the children of any of them."""
    mine = {os.getpid()}
    pid: int | None = os.getppid()
    while pid is not None and pid > 1 and pid not in mine:
        mine.add(pid)
        pid = _parent(pid)
    daemon_mark = f"HPCDISPATCH_SLURM_DIR={state_dir}".encode()
    conf_mark = f"SLURM_CONF={Path(state_dir) / 'etc' / 'slurm.conf'}".encode()
    found: set[int] = set()
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in mine:
            continue
        pid = int(proc.name)
        parent = _parent(pid)
        if parent is not None:
            parents[pid] = parent
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        job = conf_mark in env and any(v.startswith(b"SLURM_JOB_ID=") for v in env)
        if daemon_mark in env or job:
            found.add(pid)
    grew = True
    while grew:  # children of the cluster's processes (a job's programs that dropped the env)
        more = {c for c, p in parents.items() if p in found and c not in found and c not in mine}
        found |= more
        grew = bool(more)
    return sorted(found)


def _end_leftovers(state_dir: str, grace: float = 3.0) -> list[int]:
    """TERM every leftover process of the cluster, then KILL what still runs after ``grace``
    seconds (slurmstepd ignores TERM), found again each time (a pid is signalled only while it
    is one of the cluster's); returns the pids signalled."""
    signalled: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _leftover_steps(state_dir):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
            if pid not in signalled:
                signalled.append(pid)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _leftover_steps(state_dir):
            time.sleep(0.1)
        if not _leftover_steps(state_dir):
            break
    return signalled


def controller_running(info: ClusterInfo) -> bool:
    """Whether the cluster's slurmctld runs (its pid file names a live slurmctld of it)."""
    return any(role == "slurmctld" for role, _ in _live_pids(info))


def down(state_dir: Path, keep_logs: bool = False) -> list[int]:
    """Stop the cluster of ``state_dir`` and remove the directory (``keep_logs``: keep it, for a
    failed ``up``); returns the pids signalled. Idempotent: no cluster there is no error."""
    state_dir = Path(state_dir).absolute()
    info = read_cluster(state_dir)
    if info is None:
        return []
    live = _live_pids(info)
    if any(role == "slurmctld" for role, _ in live):
        _cancel_jobs(info)
    nodes = [(r, p) for r, p in live if r == "slurmd"]
    _stop(nodes, info)
    for role in ("slurmctld", "slurmdbd", "mariadbd", "munged"):
        _stop([(r, p) for r, p in live if r == role], info)
    leftovers = _end_leftovers(str(state_dir))
    if keep_logs:
        (state_dir / _STATE_FILE).rename(state_dir / f"{_STATE_FILE}.failed")
    else:
        shutil.rmtree(state_dir, ignore_errors=True)
    return [p for _, p in live] + leftovers


def usage_text(info: ClusterInfo) -> str:
    """How to use a running cluster (its daemons, ports, and the commands to talk to it)."""
    d = info.state_dir
    accounting = (
        f", slurmdbd on 127.0.0.1:{info.dbd_port} (MariaDB 127.0.0.1:{info.db_port}; sacct works)"
        if info.accounting
        else ""
    )
    return (
        f"cluster '{info.name}' up: {info.n_nodes} nodes ({info.nodes[0]}..{info.nodes[-1]}) of {info.system}, "
        f"Slurm {info.slurm_version}, slurmctld on 127.0.0.1:{info.ctld_port}, nodes on ports "
        f"{info.node_port_base}-{info.node_port_base + info.n_nodes - 1}{accounting}\n"
        f"  export SLURM_CONF={info.slurm_conf}     (or: source {d}/env.sh)\n"
        f"  sinfo; sbatch -N1 -t 1 --wrap 'sleep 10'; squeue\n"
        f"  hpcdispatch slurm replay WORKLOAD --dir {d} --time-scale X -o OUT\n"
        f"  hpcdispatch slurm down --dir {d}"
    )


def _as_dict(info: ClusterInfo) -> dict[str, Any]:
    return asdict(info)
