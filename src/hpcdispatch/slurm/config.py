"""slurm.conf and gres.conf for an emulated cluster, generated from a :class:`System`.

One ``slurmd`` per emulated node, all on this machine: every node is
``NodeHostname=localhost NodeAddr=127.0.0.1`` with its own ``Port`` (node ``i`` of the
cluster listens on ``node_port_base + i``), and ``CommunicationParameters=NoInAddrAny,
NoCtldInAddrAny`` binds slurmctld and every slurmd to 127.0.0.1 only. The other choices, each
from the measured note (``../shared/notes/slurm-emulation.md``), are listed in the docs.

Design notes, decisions and measurements: docs/RESULTS-SLURM.md,
"From the module docstrings".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import NodeType, System, Topology

#: the note's scheduler timers for short jobs (section 5)
SCHEDULER_PARAMETERS = (
    "bf_interval=1,bf_resolution=1,bf_continue,bf_max_job_test=1000,"
    "sched_interval=2,sched_min_interval=100000,default_queue_depth=1000"
)
#: memory per core (MB) given to nodes of a system without a ``mem`` resource
_MEM_PER_CORE_MB = 256
#: seconds a finished job stays in slurmctld (``squeue -t all`` lists it that long)
_MIN_JOB_AGE = 3600
_CORE = "core"
_MEM = "mem"
_GPU = "gpu"
#: the character device major number of NVIDIA GPUs, for the fake device files
_GPU_DEVICE_MAJOR = 195


@dataclass(frozen=True)
class ClusterLayout:
    """Where one emulated cluster lives: its state directory and its ports."""

    name: str  # ClusterName (lower case letters, digits, '-')
    state_dir: Path
    ctld_port: int
    node_port_base: int  # node i listens on node_port_base + i
    dbd_port: int = 0  # slurmdbd's port with accounting, else 0
    db_port: int = 0  # MariaDB's port with accounting, else 0

    @property
    def etc(self) -> Path:
        return self.state_dir / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.state_dir / "munge" / "run" / "munge.socket.2"

    @property
    def dev(self) -> Path:
        return self.state_dir / "dev"

    def node_port(self, node: int) -> int:
        return self.node_port_base + node


def first_nodes(system: System, n_nodes: int | None) -> System:
    """The first ``n_nodes`` nodes of ``system`` in its linear order (all when ``None``), as a
    system named ``NAME`` (all nodes) or ``NAME-first{n}``; a grid topology becomes linear for
    a part of the machine (a part of a mesh is no mesh of the declared shape)."""
    if n_nodes is None or n_nodes == system.n_nodes:
        return system
    if not 0 < n_nodes <= system.n_nodes:
        raise ConfigError(
            f"--nodes must be between 1 and {system.n_nodes} (the nodes of system "
            f"'{system.name}'), got {n_nodes}"
        )
    types: list[NodeType] = []
    left = n_nodes
    for nt in system.node_types:
        if left == 0:
            break
        take = min(nt.count, left)
        types.append(NodeType(nt.name, take, dict(nt.capacity)))
        left -= take
    return System(
        name=f"{system.name}-first{n_nodes}",
        resources=system.resources,
        node_types=tuple(types),
        topology=Topology(),
        description=f"the first {n_nodes} nodes of {system.name}: {system.description}",
    )


def _capacity(nt: NodeType, resource: str) -> int:
    return int(nt.capacity.get(resource, 0))


def _check_slurm_system(system: System) -> None:
    """A :class:`ConfigError` when Slurm cannot emulate ``system``: every node needs cores."""
    if _CORE not in system.resources:
        raise ConfigError(
            f"system '{system.name}' has no '{_CORE}' resource: Slurm's nodes are made of CPUs "
            f"(resources: {', '.join(system.resources)})"
        )
    for nt in system.node_types:
        if _capacity(nt, _CORE) < 1:
            raise ConfigError(
                f"system '{system.name}', node type '{nt.name}': Slurm needs at least one core per node"
            )


def _gres_names(system: System) -> list[str]:
    """The system's resources Slurm sees as GRES (all but cores and memory), in system order;
    a typed one is named ``NAME:TYPE`` (``gpu:a100``), as in ``--gres=gpu:a100:2``."""
    return [r for r in system.resources if r not in (_CORE, _MEM)]


def _is_gpu(resource: str) -> bool:
    return resource.split(":", 1)[0] == _GPU


def _gres_types(system: System) -> list[str]:
    """``GresTypes``: the GRES names without their types, each once."""
    names: list[str] = []
    for r in _gres_names(system):
        base = r.split(":", 1)[0]
        if base not in names:
            names.append(base)
    return names


def _node_memory(nt: NodeType, system: System) -> int:
    """``RealMemory`` (MB) of a node of type ``nt``."""
    if _MEM in system.resources:
        return max(1, _capacity(nt, _MEM))
    return _capacity(nt, _CORE) * _MEM_PER_CORE_MB


def _def_mem_per_cpu(system: System) -> int:
    """``DefMemPerCPU`` (MB): the smallest memory per core over the node types (so a job without
    ``--mem`` can use every core of any node)."""
    return max(1, min(_node_memory(nt, system) // _capacity(nt, _CORE) for nt in system.node_types))


def _range(first: int, last: int, width: int) -> str:
    return f"{first:0{width}d}" if first == last else f"[{first:0{width}d}-{last:0{width}d}]"


def _node_range(system: System, first: int, last: int) -> str:
    """Nodes ``first..last`` (inclusive) as one Slurm host list: ``n[0000-0015]``."""
    name = system.node_name(first)
    width = len(name) - 1
    return name[0] + _range(first, last, width)


def _type_runs(system: System) -> list[tuple[NodeType, int, int]]:
    runs, first = [], 0
    for nt in system.node_types:
        runs.append((nt, first, first + nt.count - 1))
        first += nt.count
    return runs


def slurm_conf_text(
    system: System, layout: ClusterLayout, scheduler_parameters: str = SCHEDULER_PARAMETERS
) -> str:
    """The whole slurm.conf of the cluster (see the module docstring for every choice)."""
    _check_slurm_system(system)
    d = layout.state_dir
    gres = _gres_names(system)
    lines = [
        f"# generated by hpcdispatch slurm up: system {system.name}, {system.n_nodes} nodes",
        f"ClusterName={layout.name}",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={layout.ctld_port}",
        f"SlurmdPort={layout.node_port_base}",
        "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={layout.munge_socket}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}/%n",
        f"SlurmctldPidFile={d / 'run'}/slurmctld.pid",
        f"SlurmdPidFile={d / 'run'}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'log'}/slurmctld.log",
        f"SlurmdLogFile={d / 'log'}/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        *_accounting_lines(system, layout),
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d / 'log'}/jobcomp.txt",
        f"MinJobAge={_MIN_JOB_AGE}",
        "ReturnToService=2",
        "SlurmdTimeout=300",
        "InactiveLimit=0",
        "KillWait=5",
        "SchedulerType=sched/backfill",
        f"SchedulerParameters={scheduler_parameters}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"DefMemPerCPU={_def_mem_per_cpu(system)}",
        "SlurmdParameters=config_overrides",
    ]
    if gres:
        lines.append(f"GresTypes={','.join(_gres_types(system))}")
    for nt, first, last in _type_runs(system):
        cores = _capacity(nt, _CORE)
        node_gres = ",".join(f"{r}:{_capacity(nt, r)}" for r in gres if _capacity(nt, r) > 0)
        ports = _range(layout.node_port(first), layout.node_port(last), 0)
        lines.append(
            f"NodeName={_node_range(system, first, last)} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports} "
            f"CPUs={cores} Sockets=1 CoresPerSocket={cores} ThreadsPerCore=1 RealMemory={_node_memory(nt, system)}"
            + (f" Gres={node_gres}" if node_gres else "")
            + " State=UNKNOWN"
        )
    lines.append("PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _accounting_lines(system: System, layout: ClusterLayout) -> list[str]:
    """Without accounting: none. With it (``--accounting``): the cluster's slurmdbd, reached
    with the cluster's own munge socket (``AccountingStoragePass`` names it), GRES counted
    as TRES (so sacct's AllocTRES has ``gres/gpu=K``)."""
    if not layout.dbd_port:
        return ["AccountingStorageType=accounting_storage/none"]
    lines = [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=localhost",
        f"AccountingStoragePort={layout.dbd_port}",
        f"AccountingStoragePass={layout.munge_socket}",
    ]
    tres = [f"gres/{name}" for name in _gres_types(system)]
    if tres:
        lines.append(f"AccountingStorageTRES={','.join(tres)}")
    return lines


def _database_name(layout: ClusterLayout) -> str:
    return "slurm_acct_db_" + layout.name.replace("-", "_")


def _slurmdbd_conf_text(layout: ClusterLayout, db_password: str) -> str:
    """slurmdbd.conf (beside slurm.conf: slurmdbd reads it from ``SLURM_CONF``'s directory;
    mode 600, it holds the database password): slurmdbd on 127.0.0.1 only
    (``CommunicationParameters=NoInAddrAny`` -- without it slurmdbd listens on 0.0.0.0), the
    cluster's MariaDB over TCP on 127.0.0.1."""
    d = layout.state_dir
    return (
        "\n".join(
            [
                "# generated by hpcdispatch slurm up --accounting",
                "AuthType=auth/munge",
                f"AuthInfo=socket={layout.munge_socket}",
                "DbdHost=localhost",
                "DbdAddr=127.0.0.1",
                f"DbdPort={layout.dbd_port}",
                "CommunicationParameters=NoInAddrAny",
                "SlurmUser=root",
                f"PidFile={d / 'run'}/slurmdbd.pid",
                f"LogFile={d / 'log'}/slurmdbd.log",
                "DebugLevel=info",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={layout.db_port}",
                "StorageUser=slurm",
                f"StoragePass={db_password}",
                f"StorageLoc={_database_name(layout)}",
            ]
        )
        + "\n"
    )


def _gpu_device(layout: ClusterLayout, index: int) -> Path:
    """The fake device file of GPU ``index`` (shared by every emulated node)."""
    return layout.dev / f"gpu{index}"


def _node_gpus(nt: NodeType, system: System) -> int:
    return sum(_capacity(nt, r) for r in _gres_names(system) if _is_gpu(r))


def _max_gpus(system: System) -> int:
    """The most GPUs (of all types) on one node: the number of fake device files."""
    return max((_node_gpus(nt, system) for nt in system.node_types), default=0)


def gres_conf_text(system: System, layout: ClusterLayout) -> str:
    """gres.conf: ``AutoDetect=off``, GPUs with ``File=`` fake devices (the GPUs of a node
    numbered across their types: ``gpu:a100`` 0-1, then ``gpu:v100`` 2-3), other GRES by
    count; a typed resource ``NAME:TYPE`` is ``Name=NAME Type=TYPE``."""
    lines = ["# generated by hpcdispatch slurm up", "AutoDetect=off"]
    for nt, first, last in _type_runs(system):
        nodes = _node_range(system, first, last)
        device = 0
        for r in _gres_names(system):
            count = _capacity(nt, r)
            if count <= 0:
                continue
            name, _, kind = r.partition(":")
            typed = f" Type={kind}" if kind else ""
            if _is_gpu(r):
                files = f"{layout.dev}/gpu" + _range(device, device + count - 1, 0)
                device += count
                lines.append(f"NodeName={nodes} Name={name}{typed} File={files}")
            else:
                lines.append(f"NodeName={nodes} Name={name}{typed} Count={count}")
    return "\n".join(lines) + "\n"
