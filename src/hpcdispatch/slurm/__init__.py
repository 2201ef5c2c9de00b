"""A real Slurm (Debian's packages) emulating a cluster on this machine, on loopback only.

- :mod:`~hpcdispatch.slurm.config`: slurm.conf and gres.conf generated from a system;
- :mod:`~hpcdispatch.slurm.cluster`: ``slurm up`` / ``slurm down`` (munged, slurmctld, one
  slurmd per emulated node, all bound to 127.0.0.1; stopped by their pid files);
- :mod:`~hpcdispatch.slurm.records`: Slurm's own records of the schedule read back
  (``squeue --json -t all``, jobcomp/filetxt, host lists);
- :mod:`~hpcdispatch.slurm.replay`: a workload submitted with ``sbatch`` at its (scaled)
  submit times, its schedule collected and written as a run directory;
- :mod:`~hpcdispatch.slurm.bridge`: ``slurm dispatch``, any dispatcher as Slurm's scheduler
  (held jobs pinned to the chosen nodes and released; a journal to resume from).

The outer layer of the package (beside the runner and the CLI): nothing below imports it.
Measured facts and traps behind the choices here: ``../shared/notes/slurm-emulation.md``.
``SCHEDULER_PARAMETERS`` are the backfill settings the generated slurm.conf gives Slurm. The
replay itself is ``from hpcdispatch.slurm.replay import replay`` (the function is not in this
face: it would hide the module of the same name).
"""

from hpcdispatch.slurm.bridge import BridgeError, bridge_dir, dispatch
from hpcdispatch.slurm.cluster import (
    ClusterInfo,
    cluster_name,
    controller_running,
    default_state_dir,
    down,
    find_running_cluster,
    read_cluster,
    up,
    usage_text,
)
from hpcdispatch.slurm.config import (
    SCHEDULER_PARAMETERS,
    ClusterLayout,
    first_nodes,
    gres_conf_text,
    slurm_conf_text,
)
from hpcdispatch.slurm.records import (
    JobCompRecord,
    SlurmJobRecord,
    expand_hostlist,
    parse_jobcomp,
    parse_squeue_json,
    read_jobcomp,
)
from hpcdispatch.slurm.replay import Submission, plan_submissions, time_limit_minutes

__all__ = [
    "BridgeError",
    "ClusterInfo",
    "ClusterLayout",
    "JobCompRecord",
    "SCHEDULER_PARAMETERS",
    "SlurmJobRecord",
    "Submission",
    "bridge_dir",
    "cluster_name",
    "controller_running",
    "default_state_dir",
    "dispatch",
    "down",
    "expand_hostlist",
    "find_running_cluster",
    "first_nodes",
    "gres_conf_text",
    "parse_jobcomp",
    "parse_squeue_json",
    "plan_submissions",
    "read_cluster",
    "read_jobcomp",
    "slurm_conf_text",
    "time_limit_minutes",
    "up",
    "usage_text",
]
