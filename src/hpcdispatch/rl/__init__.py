"""Reinforcement learning on the simulator (``pip install ".[rl]"``: gymnasium).

- :class:`~hpcdispatch.rl.env.SchedulingEnv`, registered as ``hpcdispatch/Scheduling-v0``
  (``ENV_ID``; its rewards ``REWARDS``) when this package is imported: ``gymnasium.make("hpcdispatch/Scheduling-v0",
  workload=..., system=...)``;
- :mod:`hpcdispatch.rl.sequences`: cleaning profiles (``CLEANING_PROFILES``), RLScheduler's
  sampling of evaluation sequences, job slices;
- :mod:`hpcdispatch.rl.evaluate`: RLScheduler's evaluation protocol (``hpcdispatch rl
  evaluate``).

Gymnasium 1.x has no plugin entry points; ``gymnasium.make("hpcdispatch.rl:hpcdispatch/
Scheduling-v0", ...)`` imports this package (and so registers the environment) by itself.

The heuristics the RL papers compare against (``fcfs``, ``sjf-pick``, ``wfp3``, ``unicep``,
``f1``) and a learned policy (``policy:path=FILE.npz``) are ordinary dispatchers
(:mod:`hpcdispatch.dispatchers.pick`, :mod:`hpcdispatch.dispatchers.policy`).
"""

from __future__ import annotations

ENV_ID = "hpcdispatch/Scheduling-v0"


def _register() -> None:
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="hpcdispatch.rl.env:SchedulingEnv")


_register()

from hpcdispatch.rl.env import REWARDS, SchedulingEnv, episode_metrics  # noqa: E402
from hpcdispatch.rl.evaluate import evaluate, write_csv  # noqa: E402
from hpcdispatch.rl.sequences import (  # noqa: E402
    CLEANING_PROFILES,
    job_slice,
    load_rlscheduler,
    rlscheduler_starts,
)

__all__ = [
    "CLEANING_PROFILES",
    "ENV_ID",
    "REWARDS",
    "SchedulingEnv",
    "episode_metrics",
    "evaluate",
    "job_slice",
    "load_rlscheduler",
    "rlscheduler_starts",
    "write_csv",
]
