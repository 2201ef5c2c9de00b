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
"""
